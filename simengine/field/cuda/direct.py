"""Kernels A (``global``) and C (``texture``), direct form: one or a few cells per thread."""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from .access import LD, ST
from .stencil import _make_rhs_fast, _make_rhs_slow


# --------------------------------------------------------------------------------------------
# kernels A and C: direct loads
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def direct_kernel(nd: int, bc: int, nc: bool, dtype: str = "float64", cpt: int = 1):
    """Kernel A (``nc=False``) or C (``nc=True``). Launch with a (bx, by, bz) block over the cells
    of the slice; the first active axis is offset by ``lo`` and bounded by ``hi``. Cells at least
    2 away from every boundary take the register fast path, the others the address-mode path.

    ``cpt`` (1, 2 or 4) cells per thread: consecutive rows (y) in 2-D/3-D, cells ``blockDim.x``
    apart in 1-D. All loads of a thread's cells are issued before its stores, which puts more
    bytes in flight per thread (fp32 needs it to approach the memory roofline) and lets
    neighbouring rows share loads."""
    if cpt not in (1, 2, 4):
        raise ValueError("cells per thread must be 1, 2 or 4")
    rhs_fast = _make_rhs_fast(nd, nc)
    rhs_slow = _make_rhs_slow(nd, bc, nc)
    a0, a1 = nd >= 3, nd >= 2
    CPT = cpt
    del dtype  # one dispatcher per dtype (keeps the fast launch path to one overload)

    @cuda.jit(device=True)
    def valid(k, j, i, n0, n1, n2, hi):
        if a0:
            return k < hi and j < n1 and i < n2
        if a1:
            return j < hi and i < n2 and k < n0
        return i < hi and j < n1 and k < n0

    @cuda.jit(device=True)
    def inner(k, j, i, n0, n1, n2):
        ok = i >= 2 and i < n2 - 2
        if a1:
            ok = ok and j >= 2 and j < n1 - 2
        if a0:
            ok = ok and k >= 2 and k < n0 - 2
        return ok

    @cuda.jit(device=True)
    def cell_rhs(src, k, j, i, n0, n1, n2, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu):
        if inner(k, j, i, n0, n1, n2):
            return rhs_fast(src, k * sz + j * sy + i, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3)
        return rhs_slow(src, k, j, i, n0, n1, n2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)

    @cuda.jit
    def kernel(src, base, out, n0, n1, n2, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2, c3, vphi,
               vmu):
        if a1:
            i = numba.int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x
            j = (numba.int64(cuda.blockIdx.y) * cuda.blockDim.y + cuda.threadIdx.y) * CPT
            di, dj = 0, 1
        else:
            i = numba.int64(cuda.blockIdx.x) * (cuda.blockDim.x * CPT) + cuda.threadIdx.x
            j = numba.int64(cuda.blockIdx.y) * cuda.blockDim.y + cuda.threadIdx.y
            di, dj = numba.int64(cuda.blockDim.x), 0
        k = numba.int64(cuda.blockIdx.z) * cuda.blockDim.z + cuda.threadIdx.z
        if a0:
            k += lo
        elif a1:
            j += lo
        else:
            i += lo
        sy = n2
        sz = n1 * n2
        zero = coef - coef
        r0 = zero
        r1 = zero
        r2 = zero
        r3 = zero
        # whole column interior and valid: one straight-line block (rows share loads and μ)
        last = CPT - 1
        col = valid(k, j + last * dj, i + last * di, n0, n1, n2, hi) and inner(
            k, j, i, n0, n1, n2) and inner(k, j + last * dj, i + last * di, n0, n1, n2)
        if col:
            g = k * sz + j * sy + i
            dg = dj * sy + di
            r0 = rhs_fast(src, g, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3)
            if CPT >= 2:
                r1 = rhs_fast(src, g + dg, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3)
            if CPT >= 4:
                r2 = rhs_fast(src, g + 2 * dg, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3)
                r3 = rhs_fast(src, g + 3 * dg, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3)
            ST(out, g, LD(base, g) + coef * r0)
            if CPT >= 2:
                ST(out, g + dg, LD(base, g + dg) + coef * r1)
            if CPT >= 4:
                ST(out, g + 2 * dg, LD(base, g + 2 * dg) + coef * r2)
                ST(out, g + 3 * dg, LD(base, g + 3 * dg) + coef * r3)
            return
        ok0 = valid(k, j, i, n0, n1, n2, hi)
        if ok0:
            r0 = cell_rhs(src, k, j, i, n0, n1, n2, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)
        ok1 = False
        ok2 = False
        ok3 = False
        if CPT >= 2:
            ok1 = valid(k, j + dj, i + di, n0, n1, n2, hi)
            if ok1:
                r1 = cell_rhs(src, k, j + dj, i + di, n0, n1, n2, sy, sz, mh2, kh2, nd2, c0, c1,
                              c2, c3, vphi, vmu)
        if CPT >= 4:
            ok2 = valid(k, j + 2 * dj, i + 2 * di, n0, n1, n2, hi)
            if ok2:
                r2 = cell_rhs(src, k, j + 2 * dj, i + 2 * di, n0, n1, n2, sy, sz, mh2, kh2, nd2,
                              c0, c1, c2, c3, vphi, vmu)
            ok3 = valid(k, j + 3 * dj, i + 3 * di, n0, n1, n2, hi)
            if ok3:
                r3 = cell_rhs(src, k, j + 3 * dj, i + 3 * di, n0, n1, n2, sy, sz, mh2, kh2, nd2,
                              c0, c1, c2, c3, vphi, vmu)
        g = k * sz + j * sy + i
        dg = dj * sy + di
        if ok0:
            ST(out, g, LD(base, g) + coef * r0)
        if ok1:
            ST(out, g + dg, LD(base, g + dg) + coef * r1)
        if ok2:
            ST(out, g + 2 * dg, LD(base, g + 2 * dg) + coef * r2)
        if ok3:
            ST(out, g + 3 * dg, LD(base, g + 3 * dg) + coef * r3)

    return kernel
