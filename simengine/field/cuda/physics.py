"""The Cahn–Hilliard point arithmetic and the boundary index rules of the fused forms, once.

Small ``cuda.jit(device=True)`` functions that numba inlines into every kernel that calls them
(no call in the PTX): the chemical potential ``μ = f'(φ) − κ/h²·(Σ neighbour pairs − 2d·φ)``
(every stage kernel and fused form), the ghost rule of the unfused stages (an index within 2
cells of the domain), the fold of a fused form's load at any depth (4) and the outside tests.
One expression in one order everywhere, so that the forms agree bit for bit under the
simulator.
"""
from __future__ import annotations

import functools

import numba
import numpy as np
from numba import cuda

from .access import LD
from .config import MIRROR, PERIODIC

#: static shared memory of one block (numba-cuda allocates shared arrays statically)
SHARED_LIMIT = 48 * 1024


@cuda.jit(device=True)
def mu(p, s, kh2, nd2, c0, c1, c2, c3):
    """μ at a point of value ``p`` whose neighbour pairs sum to ``s``."""
    return c0 + p * (c1 + p * (c2 + p * c3)) - kh2 * (s - nd2 * p)


@cuda.jit(device=True)
def rate(s, m, mh2, nd2):
    """R = M/h²·lap μ at a point of potential ``m`` whose μ neighbour pairs sum to ``s``."""
    return mh2 * (s - nd2 * m)


@cuda.jit(device=True)
def pairs2(a, q, w):
    """(x₋ + x₊) + (y₋ + y₊) around flat index ``q`` of a 2-D array of row width ``w``."""
    s = LD(a, q - 1) + LD(a, q + 1)
    return s + (LD(a, q - w) + LD(a, q + w))


@functools.lru_cache(maxsize=None)
def ghost_map(bc: int):
    """The ghost rule of the unfused stages: the index of a cell within 2 cells of the domain,
    wrap (periodic) / edge-duplicating reflection (mirror) / clamp (fixed: the value is replaced
    by v anyway).

    The final clamp keeps tile cells that lie beyond a non-multiple domain end in range (their
    values are never used)."""
    if bc == PERIODIC:

        @cuda.jit(device=True)
        def amap(i, n):
            if i < 0:
                i += n
            elif i >= n:
                i -= n
            return min(max(i, 0), n - 1)
    elif bc == MIRROR:

        @cuda.jit(device=True)
        def amap(i, n):
            if i < 0:
                i = -1 - i
            elif i >= n:
                i = 2 * n - 1 - i
            return min(max(i, 0), n - 1)
    else:

        @cuda.jit(device=True)
        def amap(i, n):
            return min(max(i, 0), n - 1)

    return amap


@functools.lru_cache(maxsize=None)
def fold_fn(bc: int):
    """Index map of the φ loads at any depth outside the domain: wrap (periodic), the
    edge-duplicating reflection of ``np.pad(mode="symmetric")`` (mirror), clamp (fixed: the value
    is replaced by v anyway)."""
    if bc == PERIODIC:

        @cuda.jit(device=True)
        def fold(i, n):
            if i >= 0 and i < n:
                return i
            return i % n
    elif bc == MIRROR:

        @cuda.jit(device=True)
        def fold(i, n):
            if i >= 0 and i < n:
                return i
            m = i % (2 * n)
            if m >= n:
                m = 2 * n - 1 - m
            return m
    else:

        @cuda.jit(device=True)
        def fold(i, n):
            return min(max(i, 0), n - 1)

    return fold


@cuda.jit(device=True)
def outside2(j, i, n1, n2):
    """Whether (j, i) lies outside an n1 × n2 plane."""
    return i < 0 or i >= n2 or j < 0 or j >= n1


@cuda.jit(device=True)
def outside3(k, j, i, n0, n1, n2):
    """Whether (k, j, i) lies outside an n0 × n1 × n2 box."""
    return i < 0 or i >= n2 or j < 0 or j >= n1 or k < 0 or k >= n0


def ftype(dtype: str):
    return numba.float32 if dtype == "float32" else numba.float64


def itemsize(dtype: str) -> int:
    return np.dtype(dtype).itemsize
