"""The fused RK2 step of small 2-D grids: one thread per cell of the loaded frame.

A 200² grid is latency-bound: one fused step moves 0.6 MB in a fraction of a microsecond, but
every launch — even replayed from a CUDA Graph — costs its start-up, its four ``__syncthreads``
phases and its drain. This form makes each phase one pass per thread: a thread block exactly as
large as the frame (the output tile + 4 cells on every side) loads φⁿ on the frame into shared
memory, one cell per thread, then computes

* μ(φ) on the frame less 1 cell on every side,
* φ* = φ + c₁·M lap μ(φ) on the frame less 2,
* μ(φ*) on the frame less 3 (into the μ array),
* φⁿ⁺¹ = φ + c₂·M lap μ(φ*) on the tile (the frame less 4), written to global memory.

The halo is recomputed by every block that needs it. Boundaries at any depth: periodic loads wrap; mirror loads follow the edge-duplicating
reflection (the arithmetic is reflection-symmetric, so the frame stays the mirror image of the
domain through every phase); fixed writes v (φ, φ*) and f'(v) (μ) over every outside position
after every phase. Per point the arithmetic is that of the unfused direct stages
(:mod:`.stencil`: μ = c0 + φ(c1 + φ(c2 + φc3)) − κ/h²·((x₋ + x₊) + (y₋ + y₊) − 4φ), R = M/h²·(Σ
pairs of μ − 4μ), out = base + coef·R), in the same order, so under the simulator a frame step
is bit-identical to two unfused stages; on a GPU they agree to rounding (FMA contraction may
differ between kernels).

Measured on an H100 (docs/measurements/field-gpu-2026-11-25.md): 200² fp64 with CUDA Graphs
2.45–2.47 µs/step with a 16×16 block (tile 8×8), 1.9× the former shared-memory tile kernel
(``fused.py``, block 16×8). More steps per launch (temporal blocking, K = 2…4), a persistent
cooperative kernel, with or without neighbour flags, and the tile kernel (also its 3-D
streaming form, 2.1–2.5 ms at 256³ fp64 against 0.59 unfused) were built and measured slower;
they were removed on 2026-11-25 (docs/measurements/).
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from .access import LD, LDNC, ST
from .config import FIXED, SIMULATOR
from .fused_launch import FusedStep, output_rows
from .physics import SHARED_LIMIT, fold_fn, ftype, itemsize, mu, outside2, pairs2, rate

#: threads (x first) and output tile (TY, TX) on small 2-D grids whose tiles fit in one wave of
#: resident blocks: a block as large as the loaded frame (tile + 4 on every side). H100, 200²
#: fp64, CUDA Graphs (2026-11-24 night): 16×16 tile 8×8 2.45–2.47 µs/step, 20×16 / 12×8 2.61,
#: 24×16 / 16×8 2.64, 24×24 / 16×16 2.85
FRAME_BLOCK = (16, 16)
FRAME_TILE = (8, 8)
#: the same for grids with more 8×8 tiles than one wave of resident 256-thread blocks (8 per
#: SM): a 16×16 tile in a 24×24 block. H100, 512² fp64: 8.46 µs/step against 11.40 (tile 8×8:
#: four waves) and 9.71 (fused.py's 16×8)
LARGE_FRAME_BLOCK = (24, 24)
LARGE_FRAME_TILE = (16, 16)


def frame_shape(n1: int, n2: int, sms=None):
    """(block, tile) for an n1 × n2 grid: :data:`FRAME_BLOCK` / ``_TILE`` while its 8×8 tiles
    fit in one wave of resident 256-thread blocks (8 per SM on ``sms`` multiprocessors, the
    current device's by default; the simulator: the small shape), else :data:`LARGE_FRAME_BLOCK`
    / ``_TILE``."""
    ty, tx = FRAME_TILE
    tiles = math.ceil(int(n1) / ty) * math.ceil(int(n2) / tx)
    if sms is None:
        if SIMULATOR:  # no multiprocessors to fill: the small shape
            return FRAME_BLOCK, FRAME_TILE
        sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    per_sm = 2048 // (FRAME_BLOCK[0] * FRAME_BLOCK[1])
    if tiles <= int(sms) * per_sm:
        return FRAME_BLOCK, FRAME_TILE
    return LARGE_FRAME_BLOCK, LARGE_FRAME_TILE


def _frame_step(load, fold, fixed, PX, PY, TX, TY):
    """One fused RK2 step of a tile by a block of exactly its frame's size (PX × PY threads,
    frame = tile + 4 on every side): thread (ty, tx) owns frame cell q = ty·PX + tx through all
    four phases (the per-point arithmetic of :mod:`.fused`, in the same order). The active region of each phase is a compile-time
    rectangle, tested once per thread; the shared arrays are read and written with flat
    loads/stores (:mod:`.access`: no negative-index wraparound, so neighbour offsets fold into
    the instruction)."""

    @cuda.jit(device=True)
    def body(src, out, i0, j0, n1, n2, hi, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3, vphi,
             vmu, sphi, smu, sst):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        q = ty * PX + tx
        gj = j0 - 4 + ty  # this thread's frame cell in the grid (may lie outside)
        gi = i0 - 4 + tx
        inner = i0 >= 4 and i0 + TX + 4 <= n2 and j0 >= 4 and j0 + TY + 4 <= n1
        edge = fixed and not inner
        if inner:
            v = load(src, gj * n2 + gi)
        elif fixed and outside2(gj, gi, n1, n2):
            v = vphi
        else:
            v = load(src, fold(gj, n1) * n2 + fold(gi, n2))
        ST(sphi, q, v)
        # frame less 1 … less 4: the rectangles of the four phases
        in1 = tx >= 1 and tx < PX - 1 and ty >= 1 and ty < PY - 1
        in2 = tx >= 2 and tx < PX - 2 and ty >= 2 and ty < PY - 2
        in3 = tx >= 3 and tx < PX - 3 and ty >= 3 and ty < PY - 3
        in4 = tx >= 4 and tx < PX - 4 and ty >= 4 and ty < PY - 4
        out_here = edge and outside2(gj, gi, n1, n2)
        cuda.syncthreads()
        if in1:  # μ(φ)
            m = mu(LD(sphi, q), pairs2(sphi, q, PX), kh2, nd2, c0, c1, c2, c3)
            if out_here:
                m = vmu
            ST(smu, q, m)
        cuda.syncthreads()
        if in2:  # φ* = φ + coef1·M lap μ(φ)
            v = LD(sphi, q) + coef1 * rate(pairs2(smu, q, PX), LD(smu, q), mh2, nd2)
            if out_here:
                v = vphi
            ST(sst, q, v)
        cuda.syncthreads()
        if in3:  # μ(φ*) into the μ array
            m = mu(LD(sst, q), pairs2(sst, q, PX), kh2, nd2, c0, c1, c2, c3)
            if out_here:
                m = vmu
            ST(smu, q, m)
        cuda.syncthreads()
        if in4:  # φⁿ⁺¹ = φ + coef2·M lap μ(φ*), to the tile
            v = LD(sphi, q) + coef2 * rate(pairs2(smu, q, PX), LD(smu, q), mh2, nd2)
            if gj < hi and gi < n2:
                ST(out, gj * n2 + gi, v)
        cuda.syncthreads()

    return body


@functools.lru_cache(maxsize=None)
def frame_kernel_2d(bc: int, nc: bool, dtype: str, tile: tuple):
    """One fused RK2 step of a 2-D field, one output tile ``tile`` = (TY, TX) per block of
    (TX + 8, TY + 8) threads. Arguments: ``(src, out, n0, n1, n2, lo, hi, coef1, coef2, mh2,
    kh2, nd2, c0, c1, c2, c3, vphi, vmu)`` (coefficients and scalars in the array dtype, see
    :func:`simengine.field.params.stage_scalars`) with the field's 3-D view
    ``(1, n1, n2)``, rows ``lo:hi`` written (:func:`.fused_launch.output_rows`); ``src`` and
    ``out`` must be different buffers. Tiles at least 4 cells from
    every boundary load by flat offset and skip all boundary logic."""
    TY, TX = int(tile[0]), int(tile[1])
    PX, PY = TX + 8, TY + 8
    body = _frame_step(LDNC if nc else LD, fold_fn(bc), bc == FIXED, PX, PY, TX, TY)
    NP = PX * PY
    fdt = ftype(dtype)

    @cuda.jit
    def kernel(src, out, n0, n1, n2, lo, hi, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3, vphi,
               vmu):
        sphi = cuda.shared.array(NP, fdt)
        smu = cuda.shared.array(NP, fdt)
        sst = cuda.shared.array(NP, fdt)
        i0 = numba.int64(cuda.blockIdx.x) * TX
        j0 = lo + numba.int64(cuda.blockIdx.y) * TY
        body(src, out, i0, j0, n1, n2, hi, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3, vphi,
             vmu, sphi, smu, sst)

    return kernel


class FramePlan(FusedStep):
    """The frame-blocked fused step for one 2-D field shape (:func:`frame_kernel_2d`), the
    interface of :class:`~.fused_launch.FusedStep`. ``tile``: output tile (TY, TX), the block is
    the frame (TX + 8, TY + 8); unset: :func:`frame_shape` (``sms`` multiprocessors, default the
    current device's); ``rows``: the rows of axis 0 written (a slab's owned rows), default all."""

    def __init__(self, kernel: str, ndim: int, shape3, bc: int, dtype, *, tile=None, sms=None,
                 rows=None):
        if int(ndim) != 2:
            raise ValueError("the frame-blocked fused step is for 2-D fields")
        self.kernel_name, self.ndim, self.bc = kernel, 2, int(bc)
        self.dtype = np.dtype(dtype)
        self.shape3 = tuple(int(n) for n in shape3)
        self.lo, self.hi = output_rows(self.shape3, rows)
        if tile is None:
            _block, tile = frame_shape(self.hi - self.lo, self.shape3[2], sms=sms)
        self.tile = tuple(int(t) for t in tile)
        if len(self.tile) != 2 or min(self.tile) < 1:
            raise ValueError(f"frame-blocked fused step: tile {tile!r} must be two positive "
                             f"entries")
        self.block = (self.tile[1] + 8, self.tile[0] + 8)
        self.shared_bytes = 3 * itemsize(self.dtype.name) * self.block[0] * self.block[1]
        if self.shared_bytes > SHARED_LIMIT or self.block[0] * self.block[1] > 1024:
            raise ValueError(f"frame-blocked fused step: tile {self.tile} needs a block of "
                             f"{self.block[0]}x{self.block[1]} threads and "
                             f"{self.shared_bytes} B of shared memory; choose a smaller tile")
        nc = kernel in ("texture", "combined")
        self.fn = frame_kernel_2d(self.bc, nc, self.dtype.name, self.tile)
        n2 = self.shape3[2]
        self.griddim = (math.ceil(n2 / self.tile[1]), math.ceil((self.hi - self.lo) / self.tile[0]),
                        1)
        self.blockdim = self.block + (1,)
        self._init_launch()

    @property
    def description(self) -> str:
        blk = "x".join(str(b) for b in self.block)
        return f"fused RK2, 1 step/launch, block {blk}, tile {self.tile[1]}x{self.tile[0]}"
