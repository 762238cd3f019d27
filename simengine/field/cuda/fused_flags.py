"""The fused RK2 step of small 2-D grids as one persistent launch per ``advance``, the thread
blocks kept in step by per-tile counters that only the neighbouring tiles wait on.

A 200² step is latency-bound (issue 12): one fused step replayed from a CUDA Graph costs a graph
node (≈ 1.3 µs on an H100) plus the kernel's own chain (one L2 load, four shared-memory phases,
one store). A persistent kernel removes the launches, but numba-cuda's grid-wide barrier
(``cuda.cg.this_grid().sync()``, :class:`~.fused_blocked.PersistentPlan`) costs ≈ 2 µs per step
there, more than the launch it saves. A tile does not need the whole grid, though: its next
step reads φ only within 4 cells of it, so it waits only for the (at most) 8 tiles around it.

**The kernel** (:func:`flag_kernel_2d`): the blocks of a 1-D grid, at most as many as can be
resident at once (a cooperative launch, so the driver guarantees it), walk the output tiles of
:func:`~.fused_blocked.blocked_kernel_2d` (``blockIdx.x``, then by ``gridDim.x``) for every step.
Step s of a launch whose counters start at ``base``:

1. unless s = 0, threads 0…8 of the block (but 4, the tile itself) each spin on one
   neighbouring tile's counter (``ld.acquire.gpu``) until it is ≥ base + s — that tile has
   finished step s − 1, so its φ is written and it no longer reads the buffer this step
   overwrites; a fence and a block barrier follow;
2. the tile body of :mod:`.fused_blocked` with K = 1 (φ loaded with ``ld.global.cg``, i.e. from
   L2: L1 is not coherent between multiprocessors), φ at s + 1 stored to the other buffer;
3. a block barrier, then thread 0: ``__threadfence()`` and the tile's counter := base + s + 1.

Neighbours wrap around the grid in both directions for every boundary (for mirror/fixed that
adds a few waits that are already satisfied). The tile must be ≥ 4 cells in both directions so
that the halo of 4 reaches only adjacent tiles. Step 0 waits for nothing: the previous launch (or
copy) has ended. Dependencies point to the previous step only, so with every block resident
nothing can deadlock.

The counters are one int32 per tile, owned by the plan: they only grow (``base`` += steps per
launch) and are reset to zero between launches before they could overflow. Per point the
arithmetic is fused.py's in the same order: under the simulator (one block walking every tile)
the result is bit-identical to unfused steps; on a GPU it agrees to rounding.

:class:`FlagPlan` has the interface of :class:`~.fused_blocked.PersistentPlan` (``persistent``:
the solver uses no CUDA Graphs; one launch per ``advance`` call, at most
:data:`MAX_STEPS_PER_LAUNCH` steps each).
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from . import launch as _launch_api
from .access import LDACQ32
from .config import SIMULATOR
from .fused import SHARED_LIMIT, _ftype
from .fused_blocked import (DEFAULT_BLOCKED_BLOCK, DEFAULT_BLOCKED_TILE, _tile_steps,
                            blocked_shared_bytes, frame_cells)

#: steps per launch at most (a launch of 8192 200² steps takes ≈ 20 ms: an interrupt or an
#: output stop never waits long for the kernel)
MAX_STEPS_PER_LAUNCH = 8192
#: the counters are reset to zero before ``base + steps`` could pass this
COUNTER_LIMIT = 1 << 30
#: ``fused: auto`` runs :class:`FlagPlan` on 2-D grids whose 8×8 tiles fit in one wave of
#: resident blocks (:func:`flags_auto`); False = the graph-replayed blocked step
FLAGS_AUTO = True


def flags_auto(shape3, sms=None) -> bool:
    """Whether ``fused: auto`` picks :class:`FlagPlan` for a 2-D field of ``shape3`` (1, n1,
    n2): :data:`FLAGS_AUTO` and the small-grid shape of
    :func:`~.fused_blocked.default_blocked_shape` (one resident block per tile)."""
    from .fused_blocked import default_blocked_shape

    if not FLAGS_AUTO:
        return False
    shape = default_blocked_shape(int(shape3[1]), int(shape3[2]), sms=sms)
    return shape == (DEFAULT_BLOCKED_BLOCK, DEFAULT_BLOCKED_TILE)


@functools.lru_cache(maxsize=None)
def flag_kernel_2d(bc: int, dtype: str, block: tuple, tile: tuple):
    """The persistent flag-synchronised fused step (see the module docstring).

    Arguments ``(a, b, flags, base, nsteps, n0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1, c2,
    c3, vphi, vmu)``: ``nsteps`` fused RK2 steps, a → b, b → a, …; the result is in ``b`` for
    an odd ``nsteps``, else in ``a``. ``flags``: int32 per tile, all equal to ``base`` at the
    launch; ``base + nsteps`` afterwards. Launch a 1-D grid of ``block`` (BX, BY) threads."""
    TY, TX = int(tile[0]), int(tile[1])
    if TY < 4 or TX < 4:
        raise ValueError(f"the flag-synchronised step needs tiles of at least 4x4 cells (the "
                         f"halo of 4 must reach only the adjacent tiles), not {TX}x{TY}")
    BX = int(block[0])
    body = _tile_steps(bc, False, dtype, block, tile, 1, coherent=True)
    NP = frame_cells(tile, 1)
    ftype = _ftype(dtype)

    @cuda.jit
    def kernel(a, b, flags, base, nsteps, n0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1, c2,
               c3, vphi, vmu):
        sphi = cuda.shared.array(NP, ftype)
        smu = cuda.shared.array(NP, ftype)
        sst = cuda.shared.array(NP, ftype)
        tid = cuda.threadIdx.y * BX + cuda.threadIdx.x
        ntx = (n2 + TX - 1) // TX
        nty = (n1 + TY - 1) // TY
        ntiles = ntx * nty
        # the neighbour this thread watches (threads 0…8 but 4): offsets -1, 0, 1 per axis
        dj = tid // 3 - 1
        di = tid - (tid // 3) * 3 - 1
        watch = tid < 9 and tid != 4
        src, out = a, b
        for s in range(nsteps):
            target = base + s
            t = numba.int64(cuda.blockIdx.x)
            while t < ntiles:
                tj = t // ntx
                ti = t - tj * ntx
                if s > 0:
                    if watch:
                        nj = tj + dj
                        if nj < 0:
                            nj += nty
                        elif nj >= nty:
                            nj -= nty
                        ni = ti + di
                        if ni < 0:
                            ni += ntx
                        elif ni >= ntx:
                            ni -= ntx
                        nt = nj * ntx + ni
                        while LDACQ32(flags, nt) < target:
                            pass
                        cuda.threadfence()
                    cuda.syncthreads()
                body(src, out, ti * TX, tj * TY, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1,
                     c2, c3, vphi, vmu, sphi, smu, sst)  # ends with a block barrier
                if tid == 0:
                    cuda.threadfence()
                    cuda.atomic.exch(flags, t, numba.int32(target + 1))
                t += cuda.gridDim.x
            src, out = out, src

    return kernel


class FlagPlan:
    """The fused RK2 step of a 2-D field as one persistent launch per :meth:`advance` call,
    blocks synchronised by neighbour counters (:func:`flag_kernel_2d`); the interface of
    :class:`~.fused_blocked.PersistentPlan`.

    ``block`` (threads, x first) and ``tile`` (TY, TX; both ≥ 4) default to the frame-sized
    shape of the small-grid step (16×16 threads, 8×8 tiles); ``max_blocks`` caps the grid below
    the co-resident blocks (tests: several tiles per block). Under the simulator the grid is one
    block."""

    layout = "fused"
    cpt = 1
    vec = 0
    persistent = True

    def __init__(self, kernel: str, ndim: int, shape3, bc: int, dtype, *, block=None, tile=None,
                 max_blocks=None, steps=1):
        if int(ndim) != 2:
            raise ValueError("the flag-synchronised fused step is for 2-D fields")
        if int(steps) != 1:
            raise ValueError("the flag-synchronised fused step runs one step per tile body")
        self.kernel_name, self.ndim, self.bc = kernel, 2, int(bc)
        self.dtype = np.dtype(dtype)
        self.shape3 = tuple(int(n) for n in shape3)
        self.steps = 1
        self.block = tuple(int(b) for b in (block or DEFAULT_BLOCKED_BLOCK))
        self.tile = tuple(int(t) for t in (tile or DEFAULT_BLOCKED_TILE))
        if len(self.block) != 2 or len(self.tile) != 2 or min(self.block) < 1:
            raise ValueError(f"flag-synchronised step: block {block!r} and tile {tile!r} must "
                             f"be two positive entries each")
        self.rows, self.march = 1, 0
        self.shared_bytes = blocked_shared_bytes(self.tile, 1, self.dtype.name)
        if self.shared_bytes > SHARED_LIMIT:
            raise ValueError(f"flag-synchronised step: tile {self.tile} needs "
                             f"{self.shared_bytes} B of shared memory (limit {SHARED_LIMIT})")
        self.fn = flag_kernel_2d(self.bc, self.dtype.name, self.block, self.tile)
        _n0, n1, n2 = self.shape3
        self.tiles = math.ceil(n2 / self.tile[1]) * math.ceil(n1 / self.tile[0])
        self.max_blocks = None if max_blocks is None else max(1, int(max_blocks))
        self.blockdim = self.block + (1,)
        self.griddim = (1 if SIMULATOR else self.tiles, 1, 1)
        self.flags = cuda.to_device(np.zeros(self.tiles, dtype=np.int32))
        self.base = 0  # every counter's value between launches
        self._grid = None
        self._kern = None
        self._fast = None  # set after the first launch (the solver's compile check)

    @property
    def description(self) -> str:
        blk = "x".join(str(b) for b in self.block)
        return (f"fused RK2, persistent kernel with neighbour flags, block {blk}, "
                f"tile {self.tile[1]}x{self.tile[0]}")

    def _args(self, a, b, nsteps, coefs, scal):
        t = self.dtype.type
        n0, n1, n2 = self.shape3
        return (a, b, self.flags, np.int32(self.base), np.int64(nsteps), n0, n1, n2,
                t(coefs[0]), t(coefs[1]), *scal)

    def _launch(self, a, b, nsteps, coefs, scal):
        if self.base + nsteps >= COUNTER_LIMIT:  # between launches: every counter == base
            self.flags.copy_to_device(np.zeros(self.tiles, dtype=np.int32))
            self.base = 0
        args = self._args(a, b, nsteps, coefs, scal)
        if SIMULATOR:
            self.fn[(1, 1, 1), self.blockdim](*args)
        else:
            if self._kern is None:
                self._kern = self.fn.compile(tuple(self.fn.typeof_pyval(v) for v in args))
                grid = self._kern.max_cooperative_grid_blocks(self.blockdim)
                if self.max_blocks is not None:
                    grid = min(grid, self.max_blocks)
                self._grid = max(1, min(self.tiles, int(grid)))
                self.griddim = (self._grid, 1, 1)
            # a cooperative launch: the driver refuses it unless every block can be resident
            stream, config, kernel, kargs = _launch_api.prepare(
                self._kern, _launch_api.default_stream(), self.griddim, self.blockdim, args,
                cooperative=True)
            _launch_api.launch(stream, config, kernel, kargs)
        self.base += int(nsteps)
        self._fast = True

    def __call__(self, src, out, coef1, coef2, scal):
        """One step: ``out`` = RK2 step of ``src``."""
        self._launch(src, out, 1, (coef1, coef2), scal)

    def advance(self, buffers, nsteps: int, coefs, scal) -> None:
        """``nsteps`` steps on a solver's buffer list (buffers[0] and buffers[2] ping-pong; the
        new φ ends in ``buffers[0]``): launches of at most :data:`MAX_STEPS_PER_LAUNCH`."""
        n = int(nsteps)
        while n > 0:
            m = min(n, MAX_STEPS_PER_LAUNCH)
            self._launch(buffers[0], buffers[2], m, coefs, scal)
            if m % 2:
                buffers[0], buffers[2] = buffers[2], buffers[0]
            n -= m
