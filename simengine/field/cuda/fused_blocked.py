"""Temporal blocking of the fused RK2 step: ``K`` steps per kernel launch on small 2-D grids
(and a persistent cooperative form, :class:`PersistentPlan`).

Measured on an H100 (docs/field-gpu.md): K ≥ 2 and the persistent kernel are slower than one
step per launch on 200²; ``fused: auto`` runs this module's kernel with K = 1 and a block as large
as the loaded frame (:func:`default_blocked_shape`: tile 8×8 in a 16×16 block on 200²), which
runs the one-pass body :func:`_frame_step`: 2.45–2.47 µs per step (1.9× fused.py's kernel with
block 16×8; the general loops of :func:`_tile_steps` with the same shape: 3.12).

A 200² grid is latency-bound: one fused step (:mod:`.fused`) moves 0.6 MB in a fraction of a
microsecond, but every launch — even replayed from a CUDA Graph — costs its start-up, its four
``__syncthreads`` phases and its drain (≈ 4.6 µs per step on an H100). This kernel advances
``K`` steps per launch without any grid-wide synchronisation: a thread block owns an output tile
(TY × TX cells) and loads φⁿ on the tile + ``4K`` cells into shared memory, then runs ``K`` fused
steps on chip. Step s (0-based) of the block computes, with e = 4s,

* μ(φ) on the frame less e + 1 cells on every side,
* φ* = φ + c₁·M lap μ(φ) on the frame less e + 2,
* μ(φ*) on the frame less e + 3 (into the μ array),
* φⁿ⁺¹ = φ + c₂·M lap μ(φ*) on the frame less e + 4 — written over φ in shared memory (each
  point reads only its own φ there), or to global memory (the tile) in the last step.

So the valid region shrinks by 4 cells per step and the halo is recomputed by every block that
needs it (redundant work ≈ ((T + 8K)² + … ) / (K·T²), cheap while latency dominates). The three
shared arrays (φ, μ, φ*) share one stride (the frame width TX + 8K), so one flat offset indexes
every phase; static shared memory is ``3 · w · (TY + 8K)(TX + 8K)`` bytes (numba-cuda's limit
48 KB: fp64 K = 2 with a 16×16 tile takes 24 KB, K = 4 with 16×16 55 KB — refused).

Boundaries and bits are those of :mod:`.fused` at any depth: periodic loads wrap; mirror loads
follow the edge-duplicating reflection (the arithmetic is reflection-symmetric, so the frame
stays the mirror image of the domain through every phase and step); fixed writes v (φ, φ*, φⁿ⁺ˢ)
and f'(v) (μ) over every outside position after every phase. Per point the arithmetic is
fused.py's (itself that of the unfused stages), in the same order, so under the simulator ``K``
blocked steps are bit-identical to ``K`` fused or unfused steps; on a GPU they agree to rounding
(FMA contraction may differ between kernels).

:class:`BlockedPlan` has the :class:`~.fused.FusedPlan` interface (``__call__``, ``record``,
``advance``, ``description``, ``_fast``); it compiles the kernel for every launch length
1 … K so that any step count is exact: :func:`launch_lengths` splits ``n`` steps into launches of
K steps and one shorter launch, and a recorded CUDA Graph (:class:`BlockedStepGraph`) of an even
number of steps into an even number of launches (the two buffers swap once per launch, so the
graph leaves them in their slots and can be replayed).
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from . import launch as _launch_api
from .access import LD, LDCG, LDNC, ST
from .config import FIXED, SIMULATOR
from .fused import SHARED_LIMIT, _fold_fn, _ftype, _itemsize

#: steps per launch of ``fused: auto`` on small 2-D grids (see :data:`BLOCKED_AUTO`). H100,
#: 200² fp64 with CUDA Graphs, µs/step (2026-11-24): K = 1 block 16×8 tile 16×8: 4.46–4.61
#: (fused.py's kernel, same shape: 4.75–4.78); K = 2 16×16: 5.36; K = 3: 6.46; K = 4 16×8:
#: 8.73 — more steps per launch lose (each adds 4 dependent phases over a larger frame); with
#: frame-sized blocks (evening): K = 1 3.15–3.28, K = 2 9.95–10.2, K = 3 13.0
DEFAULT_BLOCKED_STEPS = 1
#: threads (x first) and output tile (TY, TX) of ``fused: auto`` on small 2-D grids whose tiles
#: fit in one wave of resident blocks: a block as large as the loaded frame (tile + 4 on every
#: side), so that every phase is one pass per thread. H100, 200² fp64, CUDA Graphs (2026-11-24
#: evening, general loops): block 16×16 tile 8×8 3.15–3.28 µs/step, 24×16 / 16×8 3.25–3.30,
#: the former 16×8 / 8×16 (three passes per phase) 4.51; night, one-pass body: 16×16 tile 8×8
#: 2.45–2.47, 20×16 / 12×8 2.61, 24×16 / 16×8 2.64, 24×24 / 16×16 2.85
DEFAULT_BLOCKED_BLOCK = (16, 16)
DEFAULT_BLOCKED_TILE = (8, 8)
#: the same for grids with more 8×8 tiles than one wave of resident 256-thread blocks (8 per
#: SM): a 16×16 tile in a frame-sized 24×24 block. H100, 512² fp64: 8.46 µs/step against 11.40
#: (tile 8×8: four waves) and 9.71 (the former 16×8 / 8×16)
LARGE_BLOCKED_BLOCK = (24, 24)
LARGE_BLOCKED_TILE = (16, 16)

#: ``fused: auto`` runs this module's kernel (K = DEFAULT_BLOCKED_STEPS, the block and tile of
#: :func:`default_blocked_shape`) on 2-D grids of at most :data:`~.fused.FUSED_AUTO_MAX_CELLS`
#: cells: measured 1.45–1.5× faster than fused.py's kernel with block 16×8 on 200², 1.38× on
#: 512² (docs/field-gpu.md); False = fused.py's kernel (block 16×8)
BLOCKED_AUTO = True


def default_blocked_shape(n1: int, n2: int, sms=None):
    """(block, tile) of ``fused: auto`` for an n1 × n2 grid: :data:`DEFAULT_BLOCKED_BLOCK` /
    ``_TILE`` while its 8×8 tiles fit in one wave of resident 256-thread blocks (8 per SM on
    ``sms`` multiprocessors, the current device's by default), else :data:`LARGE_BLOCKED_BLOCK` /
    ``_TILE``."""
    ty, tx = DEFAULT_BLOCKED_TILE
    tiles = math.ceil(int(n1) / ty) * math.ceil(int(n2) / tx)
    if sms is None:
        if SIMULATOR:  # no multiprocessors to fill: the small shape
            return DEFAULT_BLOCKED_BLOCK, DEFAULT_BLOCKED_TILE
        sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    per_sm = 2048 // (DEFAULT_BLOCKED_BLOCK[0] * DEFAULT_BLOCKED_BLOCK[1])
    if tiles <= int(sms) * per_sm:
        return DEFAULT_BLOCKED_BLOCK, DEFAULT_BLOCKED_TILE
    return LARGE_BLOCKED_BLOCK, LARGE_BLOCKED_TILE


def blocked_shared_bytes(tile, steps, dtype) -> int:
    ty, tx = (int(t) for t in tile)
    h = 8 * int(steps)
    return 3 * _itemsize(dtype) * (ty + h) * (tx + h)


@functools.lru_cache(maxsize=None)
def _tile_steps(bc: int, nc: bool, dtype: str, block: tuple, tile: tuple, steps: int,
                coherent: bool = False, frame: bool = True):
    """Device function ``body(src, out, i0, j0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1,
    c2, c3, vphi, vmu, sphi, smu, sst)``: ``steps`` fused RK2 steps of the output tile at
    (j0, i0) computed by the calling thread block (``block`` threads) in the shared arrays
    ``sphi``, ``smu``, ``sst`` of :func:`frame_cells` cells each; ends with a barrier.
    ``coherent``: φ is loaded with ``ld.global.cg`` (L2 only), for kernels that read in one
    launch what other blocks wrote (:mod:`.fused_flags`); it overrides ``nc``. ``frame``: a
    block exactly as large as the frame of one step runs :func:`_frame_step` (with
    :data:`FRAME_BODY`); False: the general loops (the benchmark's comparison)."""
    load = LDCG if coherent else (LDNC if nc else LD)
    fold = _fold_fn(bc)
    fixed = bc == FIXED
    K = int(steps)
    del dtype  # the shared arrays come from the kernel
    if K < 1:
        raise ValueError("steps per launch must be >= 1")
    BX, BY = int(block[0]), int(block[1])
    TY, TX = int(tile[0]), int(tile[1])
    H = 4 * K  # halo of the loaded frame
    PX, PY = TX + 2 * H, TY + 2 * H
    LPX, LPY = -(-PX // BX), -(-PY // BY)

    @cuda.jit(device=True)
    def mu(p, s, kh2, nd2, c0, c1, c2, c3):
        return c0 + p * (c1 + p * (c2 + p * c3)) - kh2 * (s - nd2 * p)

    @cuda.jit(device=True)
    def outside(j, i, n1, n2):
        return i < 0 or i >= n2 or j < 0 or j >= n1

    if frame and FRAME_BODY and K == 1 and (BX, BY) == (PX, PY):
        return _frame_step(load, fold, fixed, mu, outside, PX, PY, TX, TY)

    @cuda.jit(device=True)
    def body(src, out, i0, j0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu,
             sphi, smu, sst):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        fj = j0 - H  # global row of frame row 0
        fi = i0 - H
        inner = i0 >= H and i0 + TX + H <= n2 and j0 >= H and j0 + TY + H <= n1
        edge = fixed and not inner
        # φⁿ on the frame (tile + 4K)
        g0 = fj * n2 + fi
        for yy in range(LPY):
            y = ty + yy * BY
            if y < PY:
                for xx in range(LPX):
                    x = tx + xx * BX
                    if x < PX:
                        if inner:
                            v = load(src, g0 + y * n2 + x)
                        else:
                            gj = fj + y
                            gi = fi + x
                            if fixed and outside(gj, gi, n1, n2):
                                v = vphi
                            else:
                                v = load(src, fold(gj, n1) * n2 + fold(gi, n2))
                        sphi[y * PX + x] = v
        cuda.syncthreads()
        for st in range(K):
            e = 4 * st
            # μ(φ) on the frame less e + 1
            a = e + 1
            ry, rx = PY - 2 * a, PX - 2 * a
            for yy in range((ry + BY - 1) // BY):
                y = ty + yy * BY
                if y < ry:
                    for xx in range((rx + BX - 1) // BX):
                        x = tx + xx * BX
                        if x < rx:
                            q = (y + a) * PX + x + a
                            s = sphi[q - 1] + sphi[q + 1]
                            s = s + (sphi[q - PX] + sphi[q + PX])
                            m = mu(sphi[q], s, kh2, nd2, c0, c1, c2, c3)
                            if edge:
                                if outside(fj + a + y, fi + a + x, n1, n2):
                                    m = vmu
                            smu[q] = m
            cuda.syncthreads()
            # φ* = φ + coef1·M lap μ(φ) on the frame less e + 2
            a = e + 2
            ry, rx = PY - 2 * a, PX - 2 * a
            for yy in range((ry + BY - 1) // BY):
                y = ty + yy * BY
                if y < ry:
                    for xx in range((rx + BX - 1) // BX):
                        x = tx + xx * BX
                        if x < rx:
                            q = (y + a) * PX + x + a
                            s = smu[q - 1] + smu[q + 1]
                            s = s + (smu[q - PX] + smu[q + PX])
                            r = mh2 * (s - nd2 * smu[q])
                            v = sphi[q] + coef1 * r
                            if edge:
                                if outside(fj + a + y, fi + a + x, n1, n2):
                                    v = vphi
                            sst[q] = v
            cuda.syncthreads()
            # μ(φ*) on the frame less e + 3 (into the μ array)
            a = e + 3
            ry, rx = PY - 2 * a, PX - 2 * a
            for yy in range((ry + BY - 1) // BY):
                y = ty + yy * BY
                if y < ry:
                    for xx in range((rx + BX - 1) // BX):
                        x = tx + xx * BX
                        if x < rx:
                            q = (y + a) * PX + x + a
                            s = sst[q - 1] + sst[q + 1]
                            s = s + (sst[q - PX] + sst[q + PX])
                            m = mu(sst[q], s, kh2, nd2, c0, c1, c2, c3)
                            if edge:
                                if outside(fj + a + y, fi + a + x, n1, n2):
                                    m = vmu
                            smu[q] = m
            cuda.syncthreads()
            # φⁿ⁺ˢ⁺¹ = φ + coef2·M lap μ(φ*) on the frame less e + 4: over φ in shared memory,
            # or (last step: the frame less 4K is the tile) to global memory
            a = e + 4
            ry, rx = PY - 2 * a, PX - 2 * a
            last = st == K - 1
            for yy in range((ry + BY - 1) // BY):
                y = ty + yy * BY
                if y < ry:
                    for xx in range((rx + BX - 1) // BX):
                        x = tx + xx * BX
                        if x < rx:
                            q = (y + a) * PX + x + a
                            s = smu[q - 1] + smu[q + 1]
                            s = s + (smu[q - PX] + smu[q + PX])
                            r = mh2 * (s - nd2 * smu[q])
                            v = sphi[q] + coef2 * r
                            gj = fj + a + y
                            gi = fi + a + x
                            if last:
                                if gj < n1 and gi < n2:
                                    ST(out, gj * n2 + gi, v)
                            else:
                                if edge:
                                    if outside(gj, gi, n1, n2):
                                        v = vphi
                                sphi[q] = v
            cuda.syncthreads()

    return body


#: a block exactly as large as the frame of one step (the ``fused: auto`` shapes) runs
#: :func:`_frame_step` (each thread owns one frame cell; no loops, no per-phase index
#: arithmetic, shared memory indexed without numba's negative-index wraparound); False: the
#: general loops of :func:`_tile_steps`
FRAME_BODY = True


def _frame_step(load, fold, fixed, mu, outside, PX, PY, TX, TY):
    """One fused RK2 step of a tile by a block of exactly its frame's size (PX × PY threads,
    frame = tile + 4 on every side): thread (ty, tx) owns frame cell q = ty·PX + tx through all
    four phases, which are the phases of :func:`_tile_steps` with K = 1 (the same per-point
    arithmetic in the same order). The active region of each phase is a compile-time
    rectangle, tested once per thread; the shared arrays are read and written with flat
    loads/stores (:mod:`.access`: no negative-index wraparound, so neighbour offsets fold into
    the instruction)."""

    @cuda.jit(device=True)
    def body(src, out, i0, j0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu,
             sphi, smu, sst):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        q = ty * PX + tx
        gj = j0 - 4 + ty  # this thread's frame cell in the grid (may lie outside)
        gi = i0 - 4 + tx
        inner = i0 >= 4 and i0 + TX + 4 <= n2 and j0 >= 4 and j0 + TY + 4 <= n1
        edge = fixed and not inner
        if inner:
            v = load(src, gj * n2 + gi)
        elif fixed and outside(gj, gi, n1, n2):
            v = vphi
        else:
            v = load(src, fold(gj, n1) * n2 + fold(gi, n2))
        ST(sphi, q, v)
        # frame less 1 … less 4: the rectangles of the four phases
        in1 = tx >= 1 and tx < PX - 1 and ty >= 1 and ty < PY - 1
        in2 = tx >= 2 and tx < PX - 2 and ty >= 2 and ty < PY - 2
        in3 = tx >= 3 and tx < PX - 3 and ty >= 3 and ty < PY - 3
        in4 = tx >= 4 and tx < PX - 4 and ty >= 4 and ty < PY - 4
        out_here = edge and outside(gj, gi, n1, n2)
        cuda.syncthreads()
        if in1:  # μ(φ)
            s = LD(sphi, q - 1) + LD(sphi, q + 1)
            s = s + (LD(sphi, q - PX) + LD(sphi, q + PX))
            m = mu(LD(sphi, q), s, kh2, nd2, c0, c1, c2, c3)
            if out_here:
                m = vmu
            ST(smu, q, m)
        cuda.syncthreads()
        if in2:  # φ* = φ + coef1·M lap μ(φ)
            s = LD(smu, q - 1) + LD(smu, q + 1)
            s = s + (LD(smu, q - PX) + LD(smu, q + PX))
            r = mh2 * (s - nd2 * LD(smu, q))
            v = LD(sphi, q) + coef1 * r
            if out_here:
                v = vphi
            ST(sst, q, v)
        cuda.syncthreads()
        if in3:  # μ(φ*) into the μ array
            s = LD(sst, q - 1) + LD(sst, q + 1)
            s = s + (LD(sst, q - PX) + LD(sst, q + PX))
            m = mu(LD(sst, q), s, kh2, nd2, c0, c1, c2, c3)
            if out_here:
                m = vmu
            ST(smu, q, m)
        cuda.syncthreads()
        if in4:  # φⁿ⁺¹ = φ + coef2·M lap μ(φ*), to the tile
            s = LD(smu, q - 1) + LD(smu, q + 1)
            s = s + (LD(smu, q - PX) + LD(smu, q + PX))
            r = mh2 * (s - nd2 * LD(smu, q))
            v = LD(sphi, q) + coef2 * r
            if gj < n1 and gi < n2:
                ST(out, gj * n2 + gi, v)
        cuda.syncthreads()

    return body


def frame_cells(tile, steps) -> int:
    """Cells of one shared array of the blocked kernels: the tile + 4·steps on every side."""
    return (int(tile[0]) + 8 * int(steps)) * (int(tile[1]) + 8 * int(steps))


@functools.lru_cache(maxsize=None)
def blocked_kernel_2d(bc: int, nc: bool, dtype: str, block: tuple, tile: tuple, steps: int,
                      frame: bool = True):
    """``steps`` fused RK2 steps of a 2-D field in one launch, one output tile per block.

    Launch with ``block`` = (BX, BY) threads over tiles ``tile`` = (TY, TX). Arguments as
    :func:`~.fused.fused_kernel_2d`: ``(src, out, n0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0,
    c1, c2, c3, vphi, vmu)`` with the field's 3-D view ``(1, n1, n2)``; ``src`` and ``out`` must
    be different buffers. Tiles at least 4·steps cells from every boundary load by flat offset
    and skip all boundary logic."""
    body = _tile_steps(bc, nc, dtype, block, tile, steps, frame=frame)
    TY, TX = int(tile[0]), int(tile[1])
    NP = frame_cells(tile, steps)
    ftype = _ftype(dtype)

    @cuda.jit
    def kernel(src, out, n0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu):
        sphi = cuda.shared.array(NP, ftype)
        smu = cuda.shared.array(NP, ftype)
        sst = cuda.shared.array(NP, ftype)
        i0 = numba.int64(cuda.blockIdx.x) * TX
        j0 = numba.int64(cuda.blockIdx.y) * TY
        body(src, out, i0, j0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu,
             sphi, smu, sst)

    return kernel


@functools.lru_cache(maxsize=None)
def persistent_kernel_2d(bc: int, nc: bool, dtype: str, block: tuple, tile: tuple, steps: int):
    """A persistent cooperative kernel: ``(a, b, nsync, n0, n1, n2, coef1, …, vmu)`` runs
    ``nsync`` rounds of ``steps`` fused RK2 steps, a → b, then b → a, …, with a grid-wide
    barrier (``cuda.cg.this_grid().sync()``) after each round; a 1-D grid of blocks (at most the
    co-resident blocks) walks the tiles of :func:`blocked_kernel_2d` (``blockIdx.x``, then by
    ``gridDim.x``). The result is in ``a`` for an even ``nsync``, else in ``b``."""
    body = _tile_steps(bc, nc, dtype, block, tile, steps)
    TY, TX = int(tile[0]), int(tile[1])
    NP = frame_cells(tile, steps)
    ftype = _ftype(dtype)

    @cuda.jit
    def kernel(a, b, nsync, n0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu):
        sphi = cuda.shared.array(NP, ftype)
        smu = cuda.shared.array(NP, ftype)
        sst = cuda.shared.array(NP, ftype)
        g = cuda.cg.this_grid()
        ntx = (n2 + TX - 1) // TX
        ntiles = ntx * ((n1 + TY - 1) // TY)
        src, out = a, b
        for _r in range(nsync):
            t = numba.int64(cuda.blockIdx.x)
            while t < ntiles:
                i0 = (t % ntx) * TX
                j0 = (t // ntx) * TY
                body(src, out, i0, j0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3,
                     vphi, vmu, sphi, smu, sst)
                t += cuda.gridDim.x
            g.sync()
            src, out = out, src

    return kernel


def launch_lengths(n: int, steps: int, even: bool = False) -> list:
    """Steps per launch for ``n`` steps with at most ``steps`` per launch: launches of ``steps``
    and one shorter launch for the rest. ``even``: an even number of launches (a graph that
    leaves the two buffers in their slots; ``n`` must be even then): the last launch is split in
    two when the count is odd."""
    n, k = int(n), int(steps)
    q, r = divmod(n, k)
    seq = [k] * q + ([r] if r else [])
    if even and len(seq) % 2:
        m = seq.pop()
        if m < 2:
            raise ValueError(f"{n} steps cannot be split into an even number of launches")
        seq += [m - m // 2, m // 2]
    return seq


class BlockedPlan:
    """``K`` fused RK2 steps per launch for one 2-D field shape (temporal blocking in shared
    memory, :func:`blocked_kernel_2d`); the interface of :class:`~.fused.FusedPlan`.

    ``plan(src, out, coef1, coef2, scal, steps=None)`` writes ``out`` = ``steps`` (default K)
    RK2 steps of ``src`` (1 ≤ steps ≤ K); :meth:`advance` runs any number of steps on a solver's
    buffer list (buffers[0] → buffers[2], swapped after every launch); :meth:`graph` records an
    even number of steps as a CUDA Graph. ``block``: threads (x first), ``tile``: output tile
    (TY, TX) (both unset: :func:`default_blocked_shape`), ``steps``: K (default
    :data:`DEFAULT_BLOCKED_STEPS`)."""

    layout = "fused"
    cpt = 1
    vec = 0

    def __init__(self, kernel: str, ndim: int, shape3, bc: int, dtype, *, steps=None,
                 block=None, tile=None, frame_body=True):
        if int(ndim) != 2:
            raise ValueError("the temporally blocked fused step is for 2-D fields")
        self.kernel_name, self.ndim, self.bc = kernel, 2, int(bc)
        self.dtype = np.dtype(dtype)
        self.shape3 = tuple(int(n) for n in shape3)
        self.steps = int(steps or DEFAULT_BLOCKED_STEPS)
        if self.steps < 1:
            raise ValueError("steps per launch must be >= 1")
        if block is None and tile is None:
            block, tile = default_blocked_shape(self.shape3[1], self.shape3[2])
        self.block = tuple(int(b) for b in (block or DEFAULT_BLOCKED_BLOCK))
        self.tile = tuple(int(t) for t in (tile or DEFAULT_BLOCKED_TILE))
        if len(self.block) != 2 or len(self.tile) != 2 or min(self.block + self.tile) < 1:
            raise ValueError(f"blocked fused step: block {block!r} and tile {tile!r} must be "
                             f"two positive entries each")
        self.rows = 1
        self.march = 0
        self.shared_bytes = blocked_shared_bytes(self.tile, self.steps, self.dtype.name)
        if self.shared_bytes > SHARED_LIMIT:
            raise ValueError(f"blocked fused step: tile {self.tile} x {self.steps} steps needs "
                             f"{self.shared_bytes} B of shared memory in {self.dtype.name} "
                             f"(limit {SHARED_LIMIT}); choose a smaller tile or fewer steps")
        nc = kernel in ("texture", "combined")
        self.frame_body = bool(frame_body)
        self.fns = {m: blocked_kernel_2d(self.bc, nc, self.dtype.name, self.block, self.tile, m,
                                         self.frame_body)
                    for m in range(1, self.steps + 1)}
        self.fn = self.fns[self.steps]
        _n0, n1, n2 = self.shape3
        self.griddim = (math.ceil(n2 / self.tile[1]), math.ceil(n1 / self.tile[0]), 1)
        self.blockdim = self.block + (1,)
        self._kargs, self._keep = {}, {}
        self._fast = None  # {steps: compiled kernel} once every length is compiled

    @property
    def description(self) -> str:
        blk = "x".join(str(b) for b in self.block)
        per = ("1 step/launch" if self.steps == 1
               else f"{self.steps} steps/launch (temporal blocking)")
        return f"fused RK2, {per}, block {blk}, tile {self.tile[1]}x{self.tile[0]}"

    def _args(self, src, out, coef1, coef2, scal):
        t = self.dtype.type
        n0, n1, n2 = self.shape3
        return (src, out, n0, n1, n2, t(coef1), t(coef2), *scal)

    def _compile(self, src, coef1, coef2, scal):
        """Compile every launch length (launched once on scratch buffers: the graphs need them
        all before recording)."""
        a, b = cuda.device_array_like(src), cuda.device_array_like(src)
        a.copy_to_device(src)
        fast = {}
        for m, fn in self.fns.items():
            configured = fn[self.griddim, self.blockdim]
            configured(*self._args(a, b, coef1, coef2, scal))
            fast[m] = _launch_api.compiled(fn)
        self._stream = configured.stream
        cuda.synchronize()
        if all(f is not None for f in fast.values()):
            self._fast = fast

    def __call__(self, src, out, coef1, coef2, scal, steps=None):
        """``out`` = ``steps`` RK2 steps of ``src`` on flat device buffers; ``scal`` = (mh2,
        kh2, nd2, c0, c1, c2, c3, vphi, vmu) in the array dtype."""
        m = self.steps if steps is None else int(steps)
        if not 1 <= m <= self.steps:
            raise ValueError(f"1 to {self.steps} steps per launch, not {m}")
        if SIMULATOR:
            self.fns[m][self.griddim, self.blockdim](*self._args(src, out, coef1, coef2, scal))
            return
        if self._fast is None:
            self._compile(src, coef1, coef2, scal)
            if self._fast is None:  # pragma: no cover - several overloads: ordinary launches
                self.fns[m][self.griddim, self.blockdim](
                    *self._args(src, out, coef1, coef2, scal))
                return
        key = (id(src), id(out), coef1, coef2, id(scal), m)
        kargs = self._kargs.get(key)
        if kargs is None:
            kargs = _launch_api.prepare(self._fast[m], self._stream, self.griddim, self.blockdim,
                                        self._args(src, out, coef1, coef2, scal))
            if len(self._kargs) > 32:
                self._kargs.clear()
                self._keep = {k: v for k, v in self._keep.items() if k[0] == "graph"}
            self._kargs[key] = kargs
            self._keep[key] = (src, out, scal)
        _launch_api.launch(*kargs)

    def record(self, target, src, out, coef1, coef2, scal, steps=None):
        """Record one launch of ``steps`` (default K) steps into ``target`` (a ``cuda.core``
        graph builder); the kernels must have been compiled (one launch)."""
        if self._fast is None:
            raise RuntimeError("the blocked fused kernels have not been compiled yet")
        m = self.steps if steps is None else int(steps)
        args = self._args(src, out, coef1, coef2, scal)
        _stream, config, kernel, kargs = _launch_api.prepare(
            self._fast[m], self._stream, self.griddim, self.blockdim, args)
        self._keep[("graph", id(src), id(out), coef1, coef2, m)] = (src, out, scal, kargs)
        _launch_api.record(target, config, kernel, kargs)

    def advance(self, buffers, nsteps: int, coefs, scal) -> None:
        """``nsteps`` steps on a solver's buffer list: launches of K steps and one shorter one,
        buffers[0] → buffers[2] and swapped after each (the new φ is ``buffers[0]``)."""
        c1, c2 = coefs
        for m in launch_lengths(int(nsteps), self.steps):
            self(buffers[0], buffers[2], c1, c2, scal, steps=m)
            buffers[0], buffers[2] = buffers[2], buffers[0]

    def graph(self, device_id, buffers, coefs, scal, steps):
        """A :class:`BlockedStepGraph` of ``steps`` (even) steps over ``buffers``."""
        return BlockedStepGraph(device_id, self, buffers, coefs, scal, steps)


class BlockedStepGraph:
    """``steps`` (even) steps of a :class:`BlockedPlan` as one CUDA Graph: an even number of
    launches (:func:`launch_lengths`), so that buffers[0] and buffers[2] are back in their
    slots afterwards; :meth:`replay` as :class:`~.graph.StepGraph`."""

    def __init__(self, device_id, plan, buffers, coefs, scal, steps):
        from .graph import core_device

        if int(steps) % 2:
            raise ValueError("a step graph records an even number of steps")
        self.steps = int(steps)
        self.lengths = launch_lengths(self.steps, plan.steps, even=True)
        c1, c2 = coefs
        dev = core_device(device_id)
        builder = dev.create_graph_builder()
        builder.begin_building()
        try:
            a, b = buffers[0], buffers[2]
            for m in self.lengths:
                plan.record(builder, a, b, c1, c2, scal, steps=m)
                a, b = b, a
        except BaseException:
            builder.end_building()
            raise
        self.graph = builder.end_building().complete()
        self.stream = _launch_api.default_stream()

    def replay(self, times: int = 1) -> None:
        for _ in range(int(times)):
            self.graph.launch(self.stream)


class PersistentPlan:
    """The fused RK2 step as one persistent cooperative launch per :meth:`advance` call:
    :func:`persistent_kernel_2d` with a grid-wide barrier after every ``steps`` (K) steps, the
    grid capped at the co-resident blocks (``max_cooperative_grid_blocks``). No CUDA Graphs
    (``persistent`` tells the solver): one ordinary launch runs all the steps of an advance (a
    remainder of n mod K steps: one more launch of the r-step kernel). Under the simulator the
    grid is one block (the simulator's grid barrier is a block barrier)."""

    layout = "fused"
    cpt = 1
    vec = 0
    persistent = True

    def __init__(self, kernel: str, ndim: int, shape3, bc: int, dtype, *, steps=1, block=None,
                 tile=None):
        if int(ndim) != 2:
            raise ValueError("the persistent fused step is for 2-D fields")
        self.kernel_name, self.ndim, self.bc = kernel, 2, int(bc)
        self.dtype = np.dtype(dtype)
        self.shape3 = tuple(int(n) for n in shape3)
        self.steps = int(steps)
        if self.steps < 1:
            raise ValueError("steps per round must be >= 1")
        self.block = tuple(int(b) for b in (block or (16, 8)))
        self.tile = tuple(int(t) for t in (tile or (8, 16)))
        self.rows, self.march = 1, 0
        self.shared_bytes = blocked_shared_bytes(self.tile, self.steps, self.dtype.name)
        if self.shared_bytes > SHARED_LIMIT:
            raise ValueError(f"persistent fused step: tile {self.tile} x {self.steps} steps "
                             f"needs {self.shared_bytes} B of shared memory (limit "
                             f"{SHARED_LIMIT})")
        self._nc = kernel in ("texture", "combined")
        self.fns = {}
        self.fn = self._fn(self.steps)
        _n0, n1, n2 = self.shape3
        self.tiles = math.ceil(n2 / self.tile[1]) * math.ceil(n1 / self.tile[0])
        self.blockdim = self.block + (1,)
        self.griddim = (1 if SIMULATOR else self.tiles, 1, 1)
        self._grids = {}
        self._fast = None  # set after the first launch (the solver's compile check)

    def _fn(self, m):
        if m not in self.fns:
            self.fns[m] = persistent_kernel_2d(self.bc, self._nc, self.dtype.name, self.block,
                                               self.tile, m)
        return self.fns[m]

    @property
    def description(self) -> str:
        blk = "x".join(str(b) for b in self.block)
        return (f"fused RK2, persistent cooperative kernel ({self.steps} step"
                f"{'s' if self.steps > 1 else ''}/grid barrier), block {blk}, "
                f"tile {self.tile[1]}x{self.tile[0]}")

    def _launch(self, m, a, b, nsync, coefs, scal):
        t = self.dtype.type
        n0, n1, n2 = self.shape3
        args = (a, b, np.int64(nsync), n0, n1, n2, t(coefs[0]), t(coefs[1]), *scal)
        fn = self._fn(m)
        grid = self._grids.get(m)
        if grid is None:
            if SIMULATOR:
                grid = 1
            else:
                kern = fn.compile(tuple(fn.typeof_pyval(v) for v in args))
                grid = max(1, min(self.tiles, kern.max_cooperative_grid_blocks(self.blockdim)))
            self._grids[m] = grid
            if m == self.steps:
                self.griddim = (grid, 1, 1)
        fn[(grid, 1, 1), self.blockdim](*args)
        self._fast = True

    def __call__(self, src, out, coef1, coef2, scal):
        """One step: ``out`` = RK2 step of ``src``."""
        self._launch(1, src, out, 1, (coef1, coef2), scal)

    def advance(self, buffers, nsteps: int, coefs, scal) -> None:
        """``nsteps`` steps on a solver's buffer list (buffers[0] and buffers[2] ping-pong; the
        new φ ends in ``buffers[0]``)."""
        q, r = divmod(int(nsteps), self.steps)
        for m, nsync in ((self.steps, q), (r, 1 if r else 0)):
            if nsync:
                self._launch(m, buffers[0], buffers[2], nsync, coefs, scal)
                if nsync % 2:
                    buffers[0], buffers[2] = buffers[2], buffers[0]
