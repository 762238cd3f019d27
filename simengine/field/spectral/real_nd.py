"""Orthonormal DST-I of a 2-D field through *one* real FFT of its odd extension — for CuPy,
which has no DST-I (:mod:`.transforms` otherwise builds it axis by axis from a real FFT of twice
the length, with a transpose and temporaries per axis: 4.9 ms a transform at 4096² fp64 on an
H200, against 0.235 ms for the periodic R2C; docs/measurements/spectral-2026-12-02.md).

With y = [0, x, 0, −x reversed] along every axis (length 2(N_a + 1)), the n-D FFT of y factorises
per axis: Y(m) = Π_a (−i) · S(m − 1), m_a = 1 … N_a, S the unnormalised DST-I (2 Σ x sin …); so
S = Re(i^d · Y) there, and the orthonormal transform (its own inverse) is S · Π_a ½√(2/(N_a+1)).
The extension holds 2^d times the field, so :mod:`.transforms` uses it for 2-D grids only.
``xp`` is NumPy or CuPy, ``fft`` the module with ``rfftn`` (``scipy.fft`` / ``cupyx.scipy.fft``):
the host tests check it against SciPy's ``dstn``.
"""
from __future__ import annotations

import math


def dst1(x, xp, fft):
    """Orthonormal n-D DST-I of real ``x`` (its own inverse)."""
    shape = x.shape
    nd = x.ndim
    for ax in range(nd):
        zero = xp.zeros(x.shape[:ax] + (1,) + x.shape[ax + 1:], dtype=x.dtype)
        x = xp.concatenate([zero, x, zero, -xp.flip(x, axis=ax)], axis=ax)
    y = fft.rfftn(x)[tuple(slice(1, n + 1) for n in shape)]
    scale = math.prod(0.5 * math.sqrt(2.0 / (n + 1)) for n in shape)
    # S = Re(i^d · Y): i^d = 1, i, −1, −i for d ≡ 0, 1, 2, 3 (mod 4)
    part, sign = (("real", 1.0), ("imag", -1.0), ("real", -1.0), ("imag", 1.0))[nd % 4]
    s = getattr(y, part) * (sign * scale)
    return xp.ascontiguousarray(s.astype(y.real.dtype, copy=False))
