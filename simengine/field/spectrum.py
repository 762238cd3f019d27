"""The structure factor S(k) of a field and its transforms, written once for NumPy and CuPy.

Which transform a boundary uses (its natural modes):

* ``periodic`` and ``fixed``: the discrete Fourier transform (real-to-complex, ``rfftn``), angular
  wavenumbers k = 2π·fftfreq(N, h) per axis. Only half the spectrum is stored (S(−k) = S(k)): the
  last-axis columns that stand for ±k count twice.
* ``mirror`` (no-flux, cell-centred even reflection at the walls): the orthonormal discrete
  cosine transform of type II on every axis (as ``scipy.fft.dctn(x, type=2, norm="ortho")``),
  k = π·m/(N h), m = 0 … N−1; a periodic FFT would see the walls as jumps and put spurious power
  at high k.

S(k) = |F(φ − φ̄)(k)|² / N for the Fourier transform and X(k)² for the orthonormal cosine
transform, so that in both Σ_{k≠0} S = N·variance(φ). The characteristic length is
L = 2π / k₁ with k₁ = Σ_{k≠0} |k| S(k) / Σ_{k≠0} S(k). The radial profile averages S over shells
of |k| of the width of the coarsest axis' fundamental, up to the Nyquist wavenumber π/h.

Every function takes the array module (``xp``: ``numpy`` or ``cupy``) so that the host and the
device compute the same definition; :mod:`simengine.field.spectrum_cuda` adds the device
reduction.
"""
from __future__ import annotations

import functools
import math

import numpy as np

FOURIER, COSINE = "fourier", "cosine"
#: a mode belongs to shell floor(|k|/Δk + 1/2 + SHELL_NUDGE): ties (exact half shells, frequent
#: on grids whose axes differ) go up on the host and the device alike, whatever the rounding
SHELL_NUDGE = 1e-9
#: modes up to the Nyquist wavenumber π/h times (1 + KMAX_TOL) enter the radial profile
KMAX_TOL = 1e-9


def transform_of(boundary_kind: str) -> str:
    """The transform S(k) uses for a boundary kind (``fourier`` or ``cosine``)."""
    if boundary_kind == "mirror":
        return COSINE
    if boundary_kind in ("periodic", "fixed"):
        return FOURIER
    raise ValueError(f"unknown boundary {boundary_kind!r}")


def dct2(x, axis: int, xp=np):
    """Orthonormal DCT-II of a real array along ``axis`` through one complex FFT of the same
    length (Makhoul 1980): equal to ``scipy.fft.dct(x, type=2, norm="ortho", axis=axis)``."""
    x = xp.moveaxis(x, axis, -1)
    n = x.shape[-1]
    v = xp.concatenate([x[..., ::2], x[..., 1::2][..., ::-1]], axis=-1)
    big = xp.fft.fft(v, axis=-1)
    m = xp.arange(n, dtype=np.float64)
    twiddle = xp.exp(-0.5j * math.pi * m / n)
    scale = xp.full(n, math.sqrt(2.0 / n))
    scale[0] = math.sqrt(1.0 / n)
    y = (big * twiddle).real * scale
    return xp.moveaxis(y, -1, axis)


def transform_axis(a, axis: int, kind: str, xp=np):
    """One axis of the transform of ``kind`` (complex FFT or real orthonormal DCT-II)."""
    if kind == COSINE:
        return dct2(a, axis, xp)
    return xp.fft.fft(a, axis=axis)


def spectrum(a, kind: str, xp=np):
    """The stored spectrum of a mean-free real field ``a``: the half spectrum of ``rfftn``
    (complex) for ``fourier``, the orthonormal DCT-II on every axis (real) for ``cosine``."""
    if kind == FOURIER:
        return xp.fft.rfftn(a)
    for ax in range(a.ndim):
        a = dct2(a, ax, xp)
    return a


def axis_wavenumbers(n: int, spacing: float, kind: str, half: bool = False) -> np.ndarray:
    """Angular wavenumbers of one axis' modes in stored order (``half``: the last axis of an
    ``rfftn`` spectrum)."""
    if kind == COSINE:
        return math.pi * np.arange(n) / (n * spacing)
    if half:
        return 2 * math.pi * np.fft.rfftfreq(n, d=spacing)
    return 2 * math.pi * np.fft.fftfreq(n, d=spacing)


def shell_width(shape, spacing: float, kind: str) -> float:
    """Width Δk of the radial shells: the coarsest axis' fundamental."""
    unit = math.pi if kind == COSINE else 2 * math.pi
    return max(unit / (int(n) * spacing) for n in shape)


def shells(shape, spacing: float, kind: str) -> int:
    """Number of radial shells (shell 0, |k| < Δk/2, holds only k = 0 and is left out)."""
    return int(math.floor((math.pi / spacing) / shell_width(shape, spacing, kind) + 0.5)) + 1


@functools.lru_cache(maxsize=8)
def mode_table(shape, spacing: float, kind: str):
    """``(|k|, weight)`` of every stored mode (NumPy, the spectrum's shape): the weight counts
    the modes an entry stands for (2 for the doubled ``rfftn`` columns), 0 at k = 0. Computed
    once per grid (a run observes the same shape every time); read-only arrays."""
    shape = tuple(int(n) for n in shape)
    nd = len(shape)
    freqs = [axis_wavenumbers(n, spacing, kind, half=(kind == FOURIER and ax == nd - 1))
             for ax, n in enumerate(shape)]
    ks = np.meshgrid(*freqs, indexing="ij")
    kmag = np.sqrt(sum(k * k for k in ks))
    if kind == FOURIER:
        w = np.full(shape[-1] // 2 + 1, 2.0)
        w[0] = 1.0
        if shape[-1] % 2 == 0:
            w[-1] = 1.0
        weight = np.where(kmag > 0, np.broadcast_to(w, kmag.shape), 0.0)
    else:
        weight = np.where(kmag > 0, 1.0, 0.0)
    for t in (kmag, weight):
        t.flags.writeable = False
    return kmag, weight


def power(spec, kind: str, cells: int, xp=np):
    """S of every stored mode (float64, the spectrum's shape)."""
    if kind == FOURIER:
        return (spec.real * spec.real + spec.imag * spec.imag) / cells
    return spec * spec


def shell_profile(count, ksum, ssum):
    """``(k, S)`` per shell from its sums, NaN where a shell holds no mode (fixed length:
    :func:`shells`; what an output stores at every observation)."""
    count = np.asarray(count, dtype=np.float64)
    with np.errstate(invalid="ignore", divide="ignore"):
        k = np.where(count > 0, np.asarray(ksum) / count, np.nan)
        s = np.where(count > 0, np.asarray(ssum) / count, np.nan)
    return k, s


def radial_sums(phi, spacing: float = 1.0, boundary: str = "periodic"):
    """Shell sums ``(Σ w, Σ w·|k|, Σ w·S)`` of a host field (:func:`radial_profile`)."""
    p = np.asarray(phi, dtype=np.float64)
    kind = transform_of(boundary)
    kmag, weight = mode_table(tuple(int(n) for n in p.shape), float(spacing), kind)
    s = power(spectrum(p - p.mean(), kind), kind, p.size)
    return radial_profile(s, kmag, weight, p.shape, spacing, kind)


def radial_structure_factor(phi, spacing: float = 1.0, boundary: str = "periodic"):
    """``(k, S)`` of a host field: S averaged over the shells of |k| that hold modes, ``k`` the
    mean |k| of each shell's modes (k = 0 left out)."""
    count, ksum, ssum = radial_sums(phi, spacing, boundary)
    ok = count > 0
    return ksum[ok] / count[ok], ssum[ok] / count[ok]


def radial_profile(s, kmag, weight, shape, spacing: float, kind: str):
    """Shell sums ``(Σ w, Σ w·|k|, Σ w·S)`` of shells 0 … :func:`shells` − 1 (host NumPy; shell 0
    and modes beyond π/h are left out, so their sums are 0)."""
    dk = shell_width(shape, spacing, kind)
    kmax = math.pi / spacing
    shell = np.floor(kmag / dk + 0.5 + SHELL_NUDGE).astype(np.int64).ravel()
    keep = ((weight.ravel() > 0) & (kmag.ravel() <= kmax * (1 + KMAX_TOL)) & (shell > 0))
    nb = shells(shape, spacing, kind)
    w = weight.ravel()[keep]
    count = np.bincount(shell[keep], weights=w, minlength=nb)[:nb]
    ssum = np.bincount(shell[keep], weights=w * s.ravel()[keep], minlength=nb)[:nb]
    ksum = np.bincount(shell[keep], weights=w * kmag.ravel()[keep], minlength=nb)[:nb]
    return count, ksum, ssum


def length_of_sums(wk: float, st: float, cells: int) -> float:
    """L = 2π Σ S / Σ |k| S (``inf`` where S vanishes, ``nan`` where it is not finite)."""
    if not (math.isfinite(st) and math.isfinite(wk)):
        return float("nan")
    if st <= 1e-300 * max(1, int(cells)) or wk <= 0:
        return float("inf")
    return float(2 * math.pi * st / wk)
