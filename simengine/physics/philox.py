"""Philox4x32-10 (Salmon, Moraes, Dror & Shaw, SC 2011), a counter-based generator: the random
numbers of (key, counter) are a pure function of them, so a cell's noise at a step is the same
on the CPU and the GPU, on any rank count and after a resume.

The functions are plain Python on 64-bit integers masked to 32 bits: :data:`philox_cpu` is their
``numba.njit(inline='always')`` form, :func:`cuda_device` compiles the same source as CUDA
device functions. ``normal(seed, step, cell, axis)`` is one standard normal deviate (Box–Muller
of the first two words, in float64), keyed by seed (64 bits) and counted by (cell, step, axis)
(cell < 2⁶⁴, step < 2⁶², axis < 4).

Known-answer values (Random123's kat_vectors, philox4x32 10 rounds) are in the tests.
"""
from __future__ import annotations

import math

M0 = 0xD2511F53
M1 = 0xCD9E8D57
W0 = 0x9E3779B9
W1 = 0xBB67AE85
MASK = 0xFFFFFFFF
TWO32 = 4294967296.0


def _philox(c0, c1, c2, c3, k0, k1):
    """Philox4x32-10 of counter (c0..c3) and key (k0, k1), all 32-bit values in int64."""
    for _ in range(10):
        p0 = M0 * c0
        p1 = M1 * c2
        hi0, lo0 = (p0 >> 32) & MASK, p0 & MASK
        hi1, lo1 = (p1 >> 32) & MASK, p1 & MASK
        c0, c1, c2, c3 = (hi1 ^ c1 ^ k0) & MASK, lo1, (hi0 ^ c3 ^ k1) & MASK, lo0
        k0 = (k0 + W0) & MASK
        k1 = (k1 + W1) & MASK
    return c0, c1, c2, c3


def _normal(seed, step, cell, axis):
    """One N(0, 1) deviate for (seed, step, cell, axis)."""
    r0, r1, _, _ = philox4x32(cell & MASK, (cell >> 32) & MASK, step & MASK,
                              (((step >> 32) & 0x3FFFFFFF) << 2) | axis,
                              seed & MASK, (seed >> 32) & MASK)
    u1 = (r0 + 0.5) / TWO32
    u2 = (r1 + 0.5) / TWO32
    return math.sqrt(-2.0 * math.log(u1)) * math.cos(6.283185307179586 * u2)


philox4x32 = _philox      # pure Python (the reference)
normal_py = _normal


def _compiled():
    from numba import njit

    p = njit(inline="always", cache=True)(_philox)
    g = dict(_normal.__globals__, philox4x32=p)
    n = type(_normal)(_normal.__code__, g, "normal")
    return p, njit(inline="always")(n)


philox_cpu, normal_cpu = _compiled()


def cuda_device():
    """``(philox, normal)`` as CUDA device functions of the same source."""
    from numba import cuda

    p = cuda.jit(device=True, inline=True)(_philox)
    g = dict(_normal.__globals__, philox4x32=p)
    n = type(_normal)(_normal.__code__, g, "normal")
    return p, cuda.jit(device=True, inline=True)(n)
