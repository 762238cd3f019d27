"""Kernels B (``shared``) and D (``combined``): shared-memory tiles, modern and seed layouts."""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from .access import LD, LDNC, ST
from .config import FIXED
from .stencil import _make_phi_at
from .physics import mu, rate


# --------------------------------------------------------------------------------------------
# kernels B and D: shared-memory tiles
# --------------------------------------------------------------------------------------------
def _block3(block, nd):
    b = tuple(int(x) for x in block)
    if len(b) != nd:
        raise ValueError(f"block {block!r} must have {nd} entries (x = last axis first)")
    return b + (1,) * (3 - nd)


@functools.lru_cache(maxsize=None)
def modern_kernel(nd: int, bc: int, nc: bool, block: tuple, dtype: str):
    """Kernel B/D, modern layout: block (BX,BY,BZ) threads update BX×BY×BZ cells; the φ tile
    (block + 2-cell halo) is loaded cooperatively, μ is computed for tile + 1 ring in shared
    memory, then every thread updates its cell."""
    load = LDNC if nc else LD
    phi_at = _make_phi_at(nd, bc, nc)
    BX, BY, BZ = _block3(block, nd)
    a0, a1 = nd >= 3, nd >= 2
    HY = 2 if a1 else 0
    HZ = 2 if a0 else 0
    TX, TY, TZ = BX + 4, BY + 2 * HY, BZ + 2 * HZ  # φ tile
    MX, MY, MZ = BX + 2, BY + HY, BZ + HZ  # μ tile (block + 1 ring on active axes)
    OY, OZ = HY // 2, HZ // 2
    NT = BX * BY * BZ
    NPHI = TX * TY * TZ
    NMU = MX * MY * MZ
    TXY, MXY = TX * TY, MX * MY
    PX, PY, PZ = -(-TX // BX), -(-TY // BY), -(-TZ // BZ)  # φ-tile loads per thread per axis
    QX, QY, QZ = -(-MX // BX), -(-MY // BY), -(-MZ // BZ)  # μ-tile cells per thread per axis
    ftype = numba.float32 if dtype == "float32" else numba.float64
    fixed = bc == FIXED

    @cuda.jit
    def kernel(src, base, out, n0, n1, n2, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2, c3, vphi,
               vmu):
        sphi = cuda.shared.array(NPHI, ftype)
        smu = cuda.shared.array(NMU, ftype)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tz = cuda.threadIdx.z
        i0 = numba.int64(cuda.blockIdx.x) * BX
        j0 = numba.int64(cuda.blockIdx.y) * BY
        k0 = numba.int64(cuda.blockIdx.z) * BZ
        if a0:
            k0 += lo
        elif a1:
            j0 += lo
        else:
            i0 += lo
        sy = n2
        sz = n1 * n2
        # 1. cooperative load of the φ tile with its 2-cell halo
        inner = i0 >= 2 and i0 + BX + 2 <= n2
        if a1:
            inner = inner and j0 >= 2 and j0 + BY + 2 <= n1
        if a0:
            inner = inner and k0 >= 2 and k0 + BZ + 2 <= n0
        # constant trip counts (ceil(T/B) per axis), no integer division
        if inner:
            g0 = (k0 - HZ) * sz + (j0 - HY) * sy + (i0 - 2)
            for zz in range(PZ):
                z = tz + zz * BZ
                for yy in range(PY):
                    y = ty + yy * BY
                    for xx in range(PX):
                        x = tx + xx * BX
                        if z < TZ and y < TY and x < TX:
                            sphi[(z * TY + y) * TX + x] = load(src, g0 + z * sz + y * sy + x)
        else:
            for zz in range(PZ):
                z = tz + zz * BZ
                for yy in range(PY):
                    y = ty + yy * BY
                    for xx in range(PX):
                        x = tx + xx * BX
                        if z < TZ and y < TY and x < TX:
                            sphi[(z * TY + y) * TX + x] = phi_at(
                                src, k0 - HZ + z, j0 - HY + y, i0 - 2 + x, n0, n1, n2, vphi)
        cuda.syncthreads()
        # 2. μ on the block + 1 ring
        for zz in range(QZ):
            z = tz + zz * BZ
            for yy in range(QY):
                y = ty + yy * BY
                for xx in range(QX):
                    x = tx + xx * BX
                    if z >= MZ or y >= MY or x >= MX:
                        continue
                    q = (z + OZ) * TXY + (y + OY) * TX + x + 1  # position in the φ tile
                    c = sphi[q]
                    s = sphi[q - 1] + sphi[q + 1]
                    if a1:
                        s += sphi[q - TX] + sphi[q + TX]
                    if a0:
                        s += sphi[q - TXY] + sphi[q + TXY]
                    m = mu(c, s, kh2, nd2, c0, c1, c2, c3)
                    if fixed and not inner:
                        gi = i0 - 1 + x
                        outside = gi < 0 or gi >= n2
                        if a1:
                            gj = j0 - OY + y
                            outside = outside or gj < 0 or gj >= n1
                        if a0:
                            gk = k0 - OZ + z
                            outside = outside or gk < 0 or gk >= n0
                        if outside:
                            m = vmu
                    smu[(z * MY + y) * MX + x] = m
        cuda.syncthreads()
        # 3. update
        i = i0 + tx
        j = j0 + ty
        k = k0 + tz
        if a0:
            if k >= hi or j >= n1 or i >= n2:
                return
        elif a1:
            if j >= hi or i >= n2 or k >= n0:
                return
        else:
            if i >= hi or j >= n1 or k >= n0:
                return
        q = (tz + OZ) * MXY + (ty + OY) * MX + tx + 1
        m = smu[q]
        s = smu[q - 1] + smu[q + 1]
        if a1:
            s += smu[q - MX] + smu[q + MX]
        if a0:
            s += smu[q - MXY] + smu[q + MXY]
        g = k * sz + j * sy + i
        ST(out, g, LD(base, g) + coef * rate(s, m, mh2, nd2))

    return kernel


@functools.lru_cache(maxsize=None)
def seed_kernel(nd: int, bc: int, nc: bool, block: tuple, dtype: str):
    """Kernel B/D, seed layout (Hawick & Playne): a block of TX×TY×TZ threads loads one φ each
    (tile = block, 2-cell halo), and only the core (block − 4 per active axis) updates, reading
    its 13/25 values from shared memory."""
    phi_at = _make_phi_at(nd, bc, nc)
    load = LDNC if nc else LD
    TX, TY, TZ = _block3(block, nd)
    a0, a1 = nd >= 3, nd >= 2
    HY = 2 if a1 else 0
    HZ = 2 if a0 else 0
    CX, CY, CZ = TX - 4, TY - 2 * HY, TZ - 2 * HZ  # updating core
    if min(CX, CY, CZ) < 1:
        raise ValueError(f"seed layout needs more than 4 threads per active axis, got {block}")
    TXY = TX * TY
    NS = TX * TY * TZ
    ftype = numba.float32 if dtype == "float32" else numba.float64
    fixed = bc == FIXED

    @cuda.jit(device=True)
    def smu_at(sphi, q, gk, gj, gi, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu):
        if fixed:
            outside = gi < 0 or gi >= n2
            if a1:
                outside = outside or gj < 0 or gj >= n1
            if a0:
                outside = outside or gk < 0 or gk >= n0
            if outside:
                return vmu
        c = sphi[q]
        s = sphi[q - 1] + sphi[q + 1]
        if a1:
            s += sphi[q - TX] + sphi[q + TX]
        if a0:
            s += sphi[q - TXY] + sphi[q + TXY]
        return mu(c, s, kh2, nd2, c0, c1, c2, c3)

    @cuda.jit
    def kernel(src, base, out, n0, n1, n2, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2, c3, vphi,
               vmu):
        sphi = cuda.shared.array(NS, ftype)
        x = cuda.threadIdx.x
        y = cuda.threadIdx.y
        z = cuda.threadIdx.z
        i = numba.int64(cuda.blockIdx.x) * CX + x - 2
        j = numba.int64(cuda.blockIdx.y) * CY + y - HY
        k = numba.int64(cuda.blockIdx.z) * CZ + z - HZ
        if a0:
            k += lo
        elif a1:
            j += lo
        else:
            i += lo
        sy = n2
        sz = n1 * n2
        q = (z * TY + y) * TX + x
        inside = i >= 0 and i < n2
        if a1:
            inside = inside and j >= 0 and j < n1
        if a0:
            inside = inside and k >= 0 and k < n0
        if inside:
            sphi[q] = load(src, k * sz + j * sy + i)
        else:
            sphi[q] = phi_at(src, k, j, i, n0, n1, n2, vphi)
        cuda.syncthreads()
        core = x >= 2 and x < TX - 2
        if a1:
            core = core and y >= 2 and y < TY - 2
        if a0:
            core = core and z >= 2 and z < TZ - 2
        if not core:
            return
        if a0:
            if k >= hi or j >= n1 or i >= n2:
                return
        elif a1:
            if j >= hi or i >= n2 or k >= n0:
                return
        else:
            if i >= hi or j >= n1 or k >= n0:
                return
        m = smu_at(sphi, q, k, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu)
        s = smu_at(sphi, q - 1, k, j, i - 1, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu) + smu_at(
            sphi, q + 1, k, j, i + 1, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu)
        if a1:
            s += smu_at(sphi, q - TX, k, j - 1, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu) + smu_at(
                sphi, q + TX, k, j + 1, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu)
        if a0:
            s += smu_at(sphi, q - TXY, k - 1, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu) + smu_at(
                sphi, q + TXY, k + 1, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu)
        g = k * sz + j * sy + i
        ST(out, g, LD(base, g) + coef * rate(s, m, mh2, nd2))

    return kernel
