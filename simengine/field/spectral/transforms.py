"""The transform each boundary kind is diagonalised by, and the Laplacian symbol in it.

The stencil kernels' Laplacian ``lap(g)_i = Σ_axes (g[i+1] + g[i−1] − 2g[i]) / h²`` with the
project's ghost rules (docs/field.md, "Boundaries") has these eigenvectors:

| boundary | ghost rule | transform | modes per axis | symbol of one axis (``fd``) |
|---|---|---|---|---|
| ``periodic`` | wrap | real FFT (``rfftn``) | k = 2π m / (N h) | (2cos(k h) − 2) / h² |
| ``mirror`` | φ₋₁ = φ₀, φ_N = φ_{N−1} (half-sample symmetric about the faces) | DCT-II (inverse: DCT-III), orthonormal | k = π m / (N h), m = 0 … N−1 | (2cos(k h) − 2) / h² |
| ``fixed`` | φ = v outside: ψ = φ − v vanishes at i = −1 and i = N (whole-sample antisymmetric) | DST-I, orthonormal | k = π m / ((N+1) h), m = 1 … N | (2cos(k h) − 2) / h² |

So the symbol ``fd`` is the exact eigenvalue of the stencil's Laplacian on each mode and a
spectral solve with it converges to the stencil solution as dt → 0 (tests/test_spectral.py checks
the symbol against the stencil Laplacian on random fields of every boundary). ``exact`` is −k²
(spectral accuracy in space). On fixed walls the chemical potential outside is f'(v) (the stencil
rule), so the transformed unknowns are ψ = φ − v and f'(φ) − f'(v), both zero outside.

Every routine takes the array module (NumPy with ``scipy.fft``, or CuPy with ``cupyx.scipy.fft``).
CuPy has no DST-I; there it is computed through one real FFT of the odd extension (length
2(N + 1)) per axis, the same values as SciPy's (tested on the host with NumPy).
"""
from __future__ import annotations

import math

import numpy as np

TRANSFORM_NAMES = {"periodic": "fft", "mirror": "dct-ii", "fixed": "dst-i"}
SYMBOLS = ("fd", "exact")


def axis_modes(n: int, h: float, kind: str, half: bool = False) -> np.ndarray:
    """Angular wavenumbers of one axis' modes in stored order (``half``: the last axis of an
    ``rfftn`` spectrum)."""
    if kind == "periodic":
        f = np.fft.rfftfreq(n, d=h) if half else np.fft.fftfreq(n, d=h)
        return 2 * math.pi * f
    if kind == "mirror":
        return math.pi * np.arange(n) / (n * h)
    if kind == "fixed":
        return math.pi * np.arange(1, n + 1) / ((n + 1) * h)
    raise ValueError(f"unknown boundary {kind!r}")


def axis_symbol(n: int, h: float, kind: str, symbol: str, half: bool = False) -> np.ndarray:
    """The Laplacian's eigenvalue along one axis (float64, ≤ 0)."""
    k = axis_modes(n, h, kind, half)
    if symbol == "fd":
        return (2.0 * np.cos(k * h) - 2.0) / (h * h)
    if symbol == "exact":
        return -(k * k)
    raise ValueError(f"unknown symbol {symbol!r}; choose one of {', '.join(SYMBOLS)}")


def laplacian_symbol(shape, h: float, kind: str, symbol: str = "fd") -> np.ndarray:
    """λ(k) = Σ_axes (axis symbol), float64, in the stored spectrum's shape (the last axis
    halved for ``periodic``)."""
    nd = len(shape)
    total = None
    for ax, n in enumerate(shape):
        half = kind == "periodic" and ax == nd - 1
        s = axis_symbol(int(n), float(h), kind, symbol, half)
        view = s.reshape([-1 if a == ax else 1 for a in range(nd)])
        total = view if total is None else total + view
    return np.ascontiguousarray(total)


def _dst1_axis_xp(x, axis, xp):
    """Orthonormal DST-I along ``axis`` through the real FFT of the odd extension: for
    y = [0, x₀ … x_{N−1}, 0, −x_{N−1} … −x₀] (length 2(N+1)), DST-I(x)_m = −Im(rfft(y))_{m+1},
    scaled by sqrt(2/(N+1)) (orthonormal; the transform is its own inverse)."""
    x = xp.moveaxis(x, axis, -1)
    n = x.shape[-1]
    zero = xp.zeros(x.shape[:-1] + (1,), dtype=x.dtype)
    y = xp.concatenate([zero, x, zero, -x[..., ::-1]], axis=-1)
    big = xp.fft.rfft(y, axis=-1)
    out = (-big.imag[..., 1:n + 1]) * (0.5 * math.sqrt(2.0 / (n + 1)))
    return xp.moveaxis(out.astype(x.dtype, copy=False), -1, axis)


class Transform:
    """Forward/inverse transform of one boundary kind on one whole grid, and its symbol.

    ``forward(real)`` → spectrum (complex for ``periodic``, real otherwise); ``inverse(spec)``
    → real array of the grid's shape. ``lam``: the Laplacian symbol (``fd`` or ``exact``) in the
    spectrum's shape, in the compute dtype, on the array module's device."""

    def __init__(self, shape, h, kind, symbol="fd", dtype=np.float64, xp=np, workers=None):
        if kind not in TRANSFORM_NAMES:
            raise ValueError(f"unknown boundary {kind!r}")
        self.shape = tuple(int(n) for n in shape)
        self.kind, self.symbol, self.xp = kind, symbol, xp
        self.dtype = np.dtype(dtype)
        self.name = TRANSFORM_NAMES[kind]
        self.workers = workers
        if xp is np:
            import scipy.fft as sfft

            self._fft = sfft
            self._kw = {"workers": workers} if workers else {}
        else:
            import cupyx.scipy.fft as cfft

            self._fft = cfft
            self._kw = {}
        self.lam = xp.asarray(laplacian_symbol(self.shape, h, kind, symbol).astype(self.dtype))
        self.complex = kind == "periodic"
        self.spectrum_shape = tuple(self.lam.shape)

    def forward(self, a):
        f, kw = self._fft, self._kw
        if self.kind == "periodic":
            return f.rfftn(a, **kw)
        if self.kind == "mirror":
            return f.dctn(a, type=2, norm="ortho", **kw)
        if self.xp is np:
            return f.dstn(a, type=1, norm="ortho", **kw)
        for ax in range(a.ndim):
            a = _dst1_axis_xp(a, ax, self.xp)
        return a

    def inverse(self, s):
        f, kw = self._fft, self._kw
        if self.kind == "periodic":
            return f.irfftn(s, s=self.shape, **kw)
        if self.kind == "mirror":
            return f.idctn(s, type=2, norm="ortho", **kw)
        if self.xp is np:
            return f.idstn(s, type=1, norm="ortho", **kw)
        for ax in range(s.ndim):  # orthonormal DST-I is its own inverse
            s = _dst1_axis_xp(s, ax, self.xp)
        return s
