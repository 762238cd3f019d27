"""The fused RK2 step: both stages of the explicit midpoint method in one kernel launch.

``φⁿ⁺¹ = φ + dt·R(φ*)``, ``φ* = φ + dt/2·R(φ)`` is computed by one pass over the field that
reads φⁿ once and writes φⁿ⁺¹ once (2 words of DRAM traffic per cell-step instead of 5); φ* never
leaves the chip. A thread block owns an output tile and recomputes stage 1 in a halo around it:

* φ is loaded on the tile + 4 cells (``ld.global.nc`` for ``texture``/``combined``),
* μ(φ) on the tile + 3, φ* = φ + c₁·M lap μ on the tile + 2, μ(φ*) on the tile + 1,
* φⁿ⁺¹ = φ + c₂·M lap μ(φ*) on the tile,

in shared memory (μ(φ) and μ(φ*) share one array). 1-D and 2-D: :func:`fused_kernel_2d` (a 1-D
field is the 2-D code with the y terms compiled out). 3-D: :func:`fused_kernel_3d` streams along
axis 0: a block owns an in-plane tile and walks a chunk of planes with rings of 3 planes of φ,
μ(φ), φ* and μ(φ*) in shared memory (a pipeline 4 planes deep) and φ of its own cells for the
last 5 planes in registers.

Boundaries — the values the halo holds outside the domain are exactly what the unfused stage 2
reads there:

* periodic: the loads wrap (any depth), so the halo's φ* equals the wrapped φ*;
* mirror: the loads follow the edge-duplicating reflection to depth 4 (``np.pad(symmetric)``);
  the stencil arithmetic is exactly reflection-symmetric (each neighbour pair is one IEEE sum,
  and a + b = b + a), so μ and φ* in the halo equal the reflected in-domain values bit for bit;
* fixed: φ = v and μ = f'(v) outside; φ* = v and μ(φ*) = f'(v) are written over every outside
  position of the halo.

Per point the arithmetic is that of the unfused direct kernels (:mod:`.stencil`): μ = c0 + φ(c1
+ φ(c2 + φc3)) − κ/h²·(((x₋ + x₊) + (y₋ + y₊)) + (z₋ + z₊) − 2d·φ), R = M/h²·(Σ pairs of μ −
2d·μ), out = base + coef·R, in that order. Under the simulator (no FMA contraction) the fused
step is bit-identical to two unfused ``texture``/``global`` stages (3-D: to the non-marching
direct kernel; the marching kernel adds its in-plane pairs in another order).

:class:`FusedPlan` holds the compiled kernel and launch geometry and launches through the fast
path of :mod:`.launch`; :func:`choose` decides ``fused: auto``.
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from ..integrator import Scheme, Stage
from .access import LD, LDNC, ST
from .config import FIXED
from .fused_launch import FusedStep
from .physics import SHARED_LIMIT, fold_fn, ftype, itemsize, mu, outside3

#: threads per block, x (the last axis) first: 2-D (32, 8), 3-D in-plane (32, 8), 1-D (256,)
DEFAULT_FUSED_BLOCK = {1: (256,), 2: (32, 8), 3: (32, 8)}
#: the 2-D block and rows of ``fused: true`` on grids of at most
#: :data:`simengine.field.plans.FUSED_SMALL_CELLS` cells (launch- and latency-bound: more,
#: smaller blocks). H100, 200² with CUDA Graphs, µs/step fp64 / fp32: 32×8 rows 2: 6.38 / 6.15;
#: 16×16 rows 1: 5.15 / 4.82; 16×8 rows 1: 4.65 / 4.57; 8×8 rows 1: 4.65 / 4.40
SMALL_FUSED_BLOCK = (16, 8)
SMALL_FUSED_ROWS = 1
#: rows (y) per thread in 2-D (cells along x per thread in 1-D): output tile = block × rows
DEFAULT_FUSED_ROWS = {1: 1, 2: 2, 3: 1}
#: planes one 3-D block walks (a chunk primes 4 planes on either side: (L + 8) / L loads)
DEFAULT_FUSED_MARCH = 64
def tile_2d(nd: int, block: tuple, rows: int) -> tuple:
    """(TY, TX) output tile of the 1-/2-D kernel for thread block ``block`` (x first)."""
    if nd == 1:
        return 1, int(block[0]) * rows
    return int(block[1]) * rows, int(block[0])


def shared_bytes(nd: int, block: tuple, rows: int, dtype: str) -> int:
    """Static shared memory of one block of the fused kernel."""
    w = itemsize(dtype)
    if nd == 3:
        bx, by = int(block[0]), int(block[1])
        return 3 * w * ((by + 8) * (bx + 8) + (by + 6) * (bx + 6) + (by + 4) * (bx + 4)
                        + (by + 2) * (bx + 2))
    ty, tx = tile_2d(nd, block, rows)
    hy = 1 if nd == 2 else 0
    return w * ((ty + 8 * hy) * (tx + 8) + (ty + 6 * hy) * (tx + 6) + (ty + 4 * hy) * (tx + 4))


# --------------------------------------------------------------------------------------------
# 1-D / 2-D
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def fused_kernel_2d(nd: int, bc: int, nc: bool, dtype: str, block: tuple, rows: int):
    """Fused RK2 step of a 1-D (``nd=1``) or 2-D field, one output tile per block.

    Launch with ``block`` threads (x first; 2-D (BX, BY), 1-D (BX,)) over tiles of BY·rows × BX
    cells (1-D: BX·rows cells). Arguments: ``(src, out, n0, n1, n2, coef1, coef2, mh2, kh2, nd2,
    c0, c1, c2, c3, vphi, vmu)`` with the field's 3-D view ``(n0, n1, n2)``. Every region loop
    has a constant trip count (no integer division); tiles at least 4 cells from every boundary
    load by flat offset and skip all boundary logic."""
    if nd not in (1, 2):
        raise ValueError("fused_kernel_2d is for 1-D and 2-D fields")
    load = LDNC if nc else LD
    fold = fold_fn(bc)
    fixed = bc == FIXED
    a1 = nd == 2
    R = int(rows)
    if R < 1:
        raise ValueError("rows per thread must be >= 1")
    BX = int(block[0])
    BY = int(block[1]) if a1 else 1
    TY, TX = tile_2d(nd, block, R)
    A = 1 if a1 else 0  # halo step along y
    PX, PY = TX + 8, TY + 8 * A  # φ: tile + 4
    MX, MY = TX + 6, TY + 6 * A  # μ(φ): tile + 3
    SX, SY = TX + 4, TY + 4 * A  # φ*: tile + 2
    NX, NY = TX + 2, TY + 2 * A  # μ(φ*): tile + 1 (in the μ array)
    NPHI, NMU, NST = PX * PY, MX * MY, SX * SY
    # loop trip counts per region (threads x, y)
    LPX, LPY = -(-PX // BX), -(-PY // BY)
    LMX, LMY = -(-MX // BX), -(-MY // BY)
    LSX, LSY = -(-SX // BX), -(-SY // BY)
    LNX, LNY = -(-NX // BX), -(-NY // BY)
    LTX, LTY = -(-TX // BX), -(-TY // BY)
    fdt = ftype(dtype)

    @cuda.jit(device=True)
    def outside(j, i, n1, n2):
        o = i < 0 or i >= n2
        if a1:
            o = o or j < 0 or j >= n1
        return o

    @cuda.jit
    def kernel(src, out, n0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu):
        sphi = cuda.shared.array(NPHI, fdt)
        smu = cuda.shared.array(NMU, fdt)
        sst = cuda.shared.array(NST, fdt)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        i0 = numba.int64(cuda.blockIdx.x) * TX
        j0 = numba.int64(cuda.blockIdx.y) * TY
        inner = i0 >= 4 and i0 + TX + 4 <= n2
        if a1:
            inner = inner and j0 >= 4 and j0 + TY + 4 <= n1
        # 1. φ on the tile + 4
        g0 = (j0 - 4 * A) * n2 + (i0 - 4)
        for yy in range(LPY):
            y = ty + yy * BY
            if y < PY:
                for xx in range(LPX):
                    x = tx + xx * BX
                    if x < PX:
                        if inner:
                            v = load(src, g0 + y * n2 + x)
                        else:
                            gj = j0 - 4 * A + y
                            gi = i0 - 4 + x
                            if fixed and outside(gj, gi, n1, n2):
                                v = vphi
                            else:
                                jj = fold(gj, n1) if a1 else gj
                                v = load(src, jj * n2 + fold(gi, n2))
                        sphi[y * PX + x] = v
        cuda.syncthreads()
        # 2. μ(φ) on the tile + 3
        for yy in range(LMY):
            y = ty + yy * BY
            if y < MY:
                for xx in range(LMX):
                    x = tx + xx * BX
                    if x < MX:
                        q = (y + A) * PX + x + 1
                        s = sphi[q - 1] + sphi[q + 1]
                        if a1:
                            s = s + (sphi[q - PX] + sphi[q + PX])
                        m = mu(sphi[q], s, kh2, nd2, c0, c1, c2, c3)
                        if fixed and not inner:
                            if outside(j0 - 3 * A + y, i0 - 3 + x, n1, n2):
                                m = vmu
                        smu[y * MX + x] = m
        cuda.syncthreads()
        # 3. φ* = φ + coef1·M lap μ(φ) on the tile + 2
        for yy in range(LSY):
            y = ty + yy * BY
            if y < SY:
                for xx in range(LSX):
                    x = tx + xx * BX
                    if x < SX:
                        q = (y + A) * MX + x + 1
                        s = smu[q - 1] + smu[q + 1]
                        if a1:
                            s = s + (smu[q - MX] + smu[q + MX])
                        r = mh2 * (s - nd2 * smu[q])
                        v = sphi[(y + 2 * A) * PX + x + 2] + coef1 * r
                        if fixed and not inner:
                            if outside(j0 - 2 * A + y, i0 - 2 + x, n1, n2):
                                v = vphi
                        sst[y * SX + x] = v
        cuda.syncthreads()
        # 4. μ(φ*) on the tile + 1 (into the μ array: μ(φ) is no longer read)
        for yy in range(LNY):
            y = ty + yy * BY
            if y < NY:
                for xx in range(LNX):
                    x = tx + xx * BX
                    if x < NX:
                        q = (y + A) * SX + x + 1
                        s = sst[q - 1] + sst[q + 1]
                        if a1:
                            s = s + (sst[q - SX] + sst[q + SX])
                        m = mu(sst[q], s, kh2, nd2, c0, c1, c2, c3)
                        if fixed and not inner:
                            if outside(j0 - A + y, i0 - 1 + x, n1, n2):
                                m = vmu
                        smu[y * NX + x] = m
        cuda.syncthreads()
        # 5. φⁿ⁺¹ = φ + coef2·M lap μ(φ*) on the tile
        for yy in range(LTY):
            y = ty + yy * BY
            gj = j0 + y
            if y < TY and gj < n1:
                for xx in range(LTX):
                    x = tx + xx * BX
                    gi = i0 + x
                    if x < TX and gi < n2:
                        q = (y + A) * NX + x + 1
                        s = smu[q - 1] + smu[q + 1]
                        if a1:
                            s = s + (smu[q - NX] + smu[q + NX])
                        r = mh2 * (s - nd2 * smu[q])
                        ST(out, gj * n2 + gi, sphi[(y + 4 * A) * PX + x + 4] + coef2 * r)

    return kernel


# --------------------------------------------------------------------------------------------
# 3-D: streaming along axis 0
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def fused_kernel_3d(bc: int, nc: bool, dtype: str, block: tuple, length: int):
    """Fused RK2 step of a 3-D field, streaming along axis 0 (z).

    A block of (BX, BY) threads owns a BY × BX in-plane tile and the planes ``[kb, kb + length)``
    of its chunk (``blockIdx.z``). Iteration t loads φ(t) on the tile + 4 into a ring of 3 planes,
    then computes μ(φ)(t−1) on the tile + 3, φ*(t−2) on the tile + 2, μ(φ*)(t−3) on the tile + 1
    (rings of 3 planes each) and writes φⁿ⁺¹(t−4); each thread keeps φ of its own cell for the
    last 5 planes in registers (the base of the second stage). A chunk runs t = kb−4 …
    kb+length+3. Arguments as :func:`fused_kernel_2d`."""
    load = LDNC if nc else LD
    fold = fold_fn(bc)
    fixed = bc == FIXED
    BX, BY = int(block[0]), int(block[1])
    L = int(length)
    if L < 1:
        raise ValueError("fused march length must be >= 1")
    TX, TY = BX, BY
    PX, PY = TX + 8, TY + 8
    MX, MY = TX + 6, TY + 6
    SX, SY = TX + 4, TY + 4
    NX, NY = TX + 2, TY + 2
    PP, MP, SP, NP = PX * PY, MX * MY, SX * SY, NX * NY  # plane sizes
    RPHI, RMU, RST, RNU = 3 * PP, 3 * MP, 3 * SP, 3 * NP  # rings of 3 planes
    LPX, LPY = -(-PX // BX), -(-PY // BY)
    LMX, LMY = -(-MX // BX), -(-MY // BY)
    LSX, LSY = -(-SX // BX), -(-SY // BY)
    LNX, LNY = -(-NX // BX), -(-NY // BY)
    fdt = ftype(dtype)

    @cuda.jit
    def kernel(src, out, n0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu):
        sphi = cuda.shared.array(RPHI, fdt)
        smu = cuda.shared.array(RMU, fdt)
        sst = cuda.shared.array(RST, fdt)
        snu = cuda.shared.array(RNU, fdt)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        i0 = numba.int64(cuda.blockIdx.x) * TX
        j0 = numba.int64(cuda.blockIdx.y) * TY
        kb = numba.int64(cuda.blockIdx.z) * L
        ke = min(kb + L, n0)
        P = n1 * n2
        inplane = i0 >= 4 and i0 + TX + 4 <= n2 and j0 >= 4 and j0 + TY + 4 <= n1
        # this thread's cell and φ of it at the last 4 planes (base of the second stage)
        gi = i0 + tx
        gj = j0 + ty
        mine = gi < n2 and gj < n1
        qc = (ty + 4) * PX + tx + 4
        b1 = vphi
        b2 = vphi
        b3 = vphi
        b4 = vphi
        b5 = vphi
        t = kb - 4
        while t < ke + 4:
            # 1. φ(t) on the tile + 4 (ring slot t mod 3)
            kin = t >= 0 and t < n0
            op = ((t - kb + 6) % 3) * PP
            if inplane and kin:
                g0 = t * P + (j0 - 4) * n2 + (i0 - 4)
                for yy in range(LPY):
                    y = ty + yy * BY
                    if y < PY:
                        for xx in range(LPX):
                            x = tx + xx * BX
                            if x < PX:
                                sphi[op + y * PX + x] = load(src, g0 + y * n2 + x)
            else:
                kk = fold(t, n0)
                for yy in range(LPY):
                    y = ty + yy * BY
                    if y < PY:
                        for xx in range(LPX):
                            x = tx + xx * BX
                            if x < PX:
                                pj = j0 - 4 + y
                                pi = i0 - 4 + x
                                if fixed and outside3(t, pj, pi, n0, n1, n2):
                                    v = vphi
                                else:
                                    v = load(src, kk * P + fold(pj, n1) * n2 + fold(pi, n2))
                                sphi[op + y * PX + x] = v
            cuda.syncthreads()
            b5 = b4
            b4 = b3
            b3 = b2
            b2 = b1
            b1 = sphi[op + qc]
            # planes t−4 … t inside and an interior in-plane tile: no fixed-boundary overrides
            edge = not (inplane and t - 4 >= 0 and t < n0)
            # 2. μ(φ)(t−1) on the tile + 3, from φ(t−2), φ(t−1), φ(t)
            u = t - 1
            if u >= kb - 3:
                om = ((u - kb + 6) % 3) * MP
                pc = ((u - kb + 6) % 3) * PP
                pm = ((u - kb + 5) % 3) * PP
                pp = ((u - kb + 7) % 3) * PP
                for yy in range(LMY):
                    y = ty + yy * BY
                    if y < MY:
                        for xx in range(LMX):
                            x = tx + xx * BX
                            if x < MX:
                                q = (y + 1) * PX + x + 1
                                s = (sphi[pc + q - 1] + sphi[pc + q + 1]) + (
                                    sphi[pc + q - PX] + sphi[pc + q + PX])
                                s = s + (sphi[pm + q] + sphi[pp + q])
                                m = mu(sphi[pc + q], s, kh2, nd2, c0, c1, c2, c3)
                                if fixed and edge:
                                    if outside3(u, j0 - 3 + y, i0 - 3 + x, n0, n1, n2):
                                        m = vmu
                                smu[om + y * MX + x] = m
            cuda.syncthreads()
            # 3. φ*(t−2) on the tile + 2, from μ(φ)(t−3 … t−1) and φ(t−2)
            u = t - 2
            if u >= kb - 2:
                os_ = ((u - kb + 6) % 3) * SP
                mc = ((u - kb + 6) % 3) * MP
                mm = ((u - kb + 5) % 3) * MP
                mp = ((u - kb + 7) % 3) * MP
                pc = ((u - kb + 6) % 3) * PP
                for yy in range(LSY):
                    y = ty + yy * BY
                    if y < SY:
                        for xx in range(LSX):
                            x = tx + xx * BX
                            if x < SX:
                                q = (y + 1) * MX + x + 1
                                s = (smu[mc + q - 1] + smu[mc + q + 1]) + (
                                    smu[mc + q - MX] + smu[mc + q + MX])
                                s = s + (smu[mm + q] + smu[mp + q])
                                r = mh2 * (s - nd2 * smu[mc + q])
                                v = sphi[pc + (y + 2) * PX + x + 2] + coef1 * r
                                if fixed and edge:
                                    if outside3(u, j0 - 2 + y, i0 - 2 + x, n0, n1, n2):
                                        v = vphi
                                sst[os_ + y * SX + x] = v
            cuda.syncthreads()
            # 4. μ(φ*)(t−3) on the tile + 1, from φ*(t−4 … t−2)
            u = t - 3
            if u >= kb - 1:
                on = ((u - kb + 6) % 3) * NP
                sc = ((u - kb + 6) % 3) * SP
                sm = ((u - kb + 5) % 3) * SP
                sp = ((u - kb + 7) % 3) * SP
                for yy in range(LNY):
                    y = ty + yy * BY
                    if y < NY:
                        for xx in range(LNX):
                            x = tx + xx * BX
                            if x < NX:
                                q = (y + 1) * SX + x + 1
                                s = (sst[sc + q - 1] + sst[sc + q + 1]) + (
                                    sst[sc + q - SX] + sst[sc + q + SX])
                                s = s + (sst[sm + q] + sst[sp + q])
                                m = mu(sst[sc + q], s, kh2, nd2, c0, c1, c2, c3)
                                if fixed and edge:
                                    if outside3(u, j0 - 1 + y, i0 - 1 + x, n0, n1, n2):
                                        m = vmu
                                snu[on + y * NX + x] = m
            cuda.syncthreads()
            # 5. φⁿ⁺¹(t−4) on the tile, from μ(φ*)(t−5 … t−3) and φ(t−4)
            u = t - 4
            if u >= kb and mine:
                nc_ = ((u - kb + 6) % 3) * NP
                nm = ((u - kb + 5) % 3) * NP
                npl = ((u - kb + 7) % 3) * NP
                q = (ty + 1) * NX + tx + 1
                s = (snu[nc_ + q - 1] + snu[nc_ + q + 1]) + (snu[nc_ + q - NX] + snu[nc_ + q + NX])
                s = s + (snu[nm + q] + snu[npl + q])
                r = mh2 * (s - nd2 * snu[nc_ + q])
                ST(out, u * P + gj * n2 + gi, b5 + coef2 * r)
            t += 1

    return kernel


# --------------------------------------------------------------------------------------------
# launch plan and the auto choice
# --------------------------------------------------------------------------------------------
class FusedPlan(FusedStep):
    """The compiled fused RK2 step for one field shape: ``plan(src, out, coef1, coef2, scal)``
    writes ``out = RK2 step of src`` (whole field, flat device buffers);
    :meth:`advance` runs steps on a solver's buffer list (φⁿ in ``buffers[0]``, written to
    ``buffers[2]``, then swapped: two buffers, ``buffers[1]`` (φ*) is not touched).

    ``kernel`` picks the loads (``texture``/``combined``: ``ld.global.nc``), ``block`` the
    threads (x first; default :data:`DEFAULT_FUSED_BLOCK`), ``rows`` the output rows per thread
    in 2-D (cells per thread in 1-D; default :data:`DEFAULT_FUSED_ROWS`), ``march`` the planes
    per 3-D block (default :data:`DEFAULT_FUSED_MARCH`). Attributes for the occupancy report:
    ``fn``, ``griddim``, ``blockdim``, ``kernel_name``, ``layout`` (``"fused"``)."""

    def __init__(self, kernel: str, ndim: int, shape3, bc: int, dtype, *, block=None, rows=None,
                 march=None):
        self.kernel_name, self.ndim, self.bc = kernel, int(ndim), int(bc)
        self.dtype = np.dtype(dtype)
        self.shape3 = tuple(int(n) for n in shape3)
        nc = kernel in ("texture", "combined")
        self.block = tuple(int(b) for b in (block or DEFAULT_FUSED_BLOCK[self.ndim]))
        if self.ndim == 3 and len(self.block) == 3 and self.block[2] == 1:
            self.block = self.block[:2]  # (bx, by, 1): one plane per thread, as the march blocks
        want = 1 if self.ndim == 1 else 2
        if len(self.block) != want:
            raise ValueError(f"fused block {block!r} must have {want} entries (x first"
                             f"{'; in-plane, or (bx, by, 1)' if self.ndim == 3 else ''})")
        if min(self.block) < 1:
            raise ValueError(f"fused block {block!r} must be positive")
        self.rows = int(rows or DEFAULT_FUSED_ROWS[self.ndim])
        self.march = 0
        n0, n1, n2 = self.shape3
        if self.ndim == 3:
            self.rows = 1
            self.march = int(march or DEFAULT_FUSED_MARCH)
            self.fn = fused_kernel_3d(self.bc, nc, self.dtype.name, self.block, self.march)
            self.tile = (self.block[1], self.block[0])
            self.griddim = (math.ceil(n2 / self.block[0]), math.ceil(n1 / self.block[1]),
                            math.ceil(n0 / self.march))
        else:
            self.fn = fused_kernel_2d(self.ndim, self.bc, nc, self.dtype.name, self.block,
                                      self.rows)
            self.tile = tile_2d(self.ndim, self.block, self.rows)
            ny = n1 if self.ndim == 2 else 1
            self.griddim = (math.ceil(n2 / self.tile[1]), math.ceil(ny / self.tile[0]), 1)
        self.blockdim = self.block + (1,) * (3 - len(self.block))
        self.shared_bytes = shared_bytes(self.ndim, self.block, self.rows, self.dtype.name)
        if self.shared_bytes > SHARED_LIMIT:
            raise ValueError(f"fused block {self.block} x {self.rows} rows needs "
                             f"{self.shared_bytes} B of shared memory in {self.dtype.name} "
                             f"(limit {SHARED_LIMIT}); choose a smaller block")
        self._init_launch()

    @property
    def description(self) -> str:
        blk = "x".join(str(b) for b in self.block)
        if self.ndim == 3:
            return f"fused RK2, block {blk}, {self.march} planes/block"
        return f"fused RK2, block {blk}, tile {'x'.join(str(t) for t in self.tile[::-1])}"


#: the fused step as a one-stage scheme for :class:`simengine.field.cuda.graph.StepGraph`:
#: buffers[0] → buffers[2], then swapped (period 2, so a graph of an even number of steps
#: leaves every buffer in its slot)
FUSED_SCHEME = Scheme("rk2-fused", (Stage(0, 0, 2, 1.0),), (2, 1, 0))


def graph_recording(plan: FusedPlan, coefs, scal):
    """``(scheme, coefs, record_stage)`` for :class:`~simengine.field.cuda.graph.StepGraph`:
    each recorded "stage" is one fused step with the solver's two RK2 coefficients."""
    c1, c2 = coefs

    def record_stage(target, src, base, out, coef):
        plan.record(target, src, out, c1, c2, scal)

    return FUSED_SCHEME, (c2,), record_stage
