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

1. unless s = 0, up to 24 threads of the block each spin on the counter of one tile whose φ
   the tile's stored cells depend on (``ld.acquire.gpu``) until it is ≥ base + s — that tile
   has finished step s − 1, so its φ is written and it no longer reads the buffer this step
   overwrites; then a block barrier;
2. the tile body of :mod:`.fused_blocked` with K = 1 (φ loaded with ``ld.global.cg``, i.e. from
   L2: L1 is not coherent between multiprocessors), φ at s + 1 stored to the other buffer;
3. a block barrier (the body's last), then thread 0 publishes the tile's counter := base + s +
   1 with ``st.release.gpu`` (the pattern of CUTLASS's semaphore; ``sync="sc"``: a
   ``__threadfence()`` and an atomic exchange, and a fence after the readers' spin, as
   cooperative groups' grid barrier does).

Which tiles a tile waits on (:func:`_watch_fn`): per axis the tiles of the rows within 4 of its
stored rows, mapped as the loads map them (wrap, mirror fold, clamp) — the 8 tiles around it in
general, more when a periodic grid's last tile is shorter than 4 cells (the halo then reaches
two tiles away: found by the device tests on 257×300 with 8×8 tiles). Frame cells that no stored
cell depends on may be read while their tile is being written; they feed nothing that is stored.
The tile must be ≥ 4 cells in both directions. Step 0 waits for nothing: the previous launch (or
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
from .access import FENCE_ACQREL, LDACQ32, LDRLX32, STREL32
from .config import SIMULATOR
from .fused import SHARED_LIMIT, _fold_fn, _ftype
from .fused_blocked import (DEFAULT_BLOCKED_BLOCK, DEFAULT_BLOCKED_TILE, _tile_steps,
                            blocked_shared_bytes, frame_cells)

#: steps per launch at most (a launch of 8192 200² steps takes ≈ 20 ms: an interrupt or an
#: output stop never waits long for the kernel)
MAX_STEPS_PER_LAUNCH = 8192
#: the counters are reset to zero before ``base + steps`` could pass this
COUNTER_LIMIT = 1 << 30
#: ``fused: auto`` runs :class:`FlagPlan` on 2-D grids whose 8×8 tiles fit in one wave of
#: resident blocks (:func:`flags_auto`); False = the graph-replayed blocked step
FLAGS_AUTO = False


def flags_auto(shape3, sms=None) -> bool:
    """Whether ``fused: auto`` picks :class:`FlagPlan` for a 2-D field of ``shape3`` (1, n1,
    n2): :data:`FLAGS_AUTO` and the small-grid shape of
    :func:`~.fused_blocked.default_blocked_shape` (one resident block per tile)."""
    from .fused_blocked import default_blocked_shape

    if not FLAGS_AUTO:
        return False
    shape = default_blocked_shape(int(shape3[1]), int(shape3[2]), sms=sms)
    return shape == (DEFAULT_BLOCKED_BLOCK, DEFAULT_BLOCKED_TILE)


#: how a tile publishes its counter and its neighbours read it: "acqrel" (default) = block
#: barrier, then thread 0 ``st.release.gpu``; readers ``ld.acquire.gpu``, then a block barrier
#: (CUTLASS's semaphore); "relaxed" = the same release, readers poll with ``ld.relaxed.gpu``
#: and end with one ``fence.acq_rel.gpu`` (an acquire without invalidating L1 at every poll);
#: "sc" = ``__threadfence()`` + atomic exchange, readers spin and ``__threadfence()``
#: (cooperative groups' grid barrier)
SYNC_MODES = ("acqrel", "relaxed", "sc")
DEFAULT_SYNC = "acqrel"
#: int32 slots per tile counter (1: packed; 32: one counter per 128-byte line)
DEFAULT_PAD = 1


@functools.lru_cache(maxsize=None)
def _watch_fn(bc: int, tile: tuple):
    """Device function ``watched(w, tj, ti, n1, n2, ntx)``: the tile (flat index) that watcher
    ``w`` (0…24) of tile (tj, ti) waits on, or -1. Per axis five candidates: the tiles of the
    first and the last of the 4 rows before the tile, the tile's own, the tiles of the first and
    the last of the 4 rows after its last row — rows mapped as the φ loads map them (wrap,
    mirror fold, clamp). Four consecutive rows lie in at most two tiles (only the last tile may
    be shorter than 4 rows: then a periodic halo reaches two tiles away), so the pairs of
    candidates cover every tile whose φ the stored cells depend on. Watcher w takes the pair
    (w // 5, w % 5); pairs that repeat a candidate of the previous index, and the tile itself,
    wait on nothing."""
    fold = _fold_fn(bc)
    TY, TX = int(tile[0]), int(tile[1])

    @cuda.jit(device=True)
    def near(k, j0, T, n):
        e = min(j0 + T, n)
        if k == 0:
            r = j0 - 4
        elif k == 1:
            r = j0 - 1
        elif k == 2:
            r = j0
        elif k == 3:
            r = e
        else:
            r = e + 3
        return fold(r, n) // T

    @cuda.jit(device=True)
    def watched(w, tj, ti, n1, n2, ntx):
        ky = w // 5
        kx = w - ky * 5
        j0 = tj * TY
        i0 = ti * TX
        cy = near(ky, j0, TY, n1)
        cx = near(kx, i0, TX, n2)
        if ky > 0:
            if near(ky - 1, j0, TY, n1) == cy:
                return -1
        if kx > 0:
            if near(kx - 1, i0, TX, n2) == cx:
                return -1
        if cy == tj and cx == ti:
            return -1
        return cy * ntx + cx

    return watched


@functools.lru_cache(maxsize=None)
def _watch_table_kernel(bc: int, tile: tuple):
    watched = _watch_fn(bc, tile)
    TY, TX = int(tile[0]), int(tile[1])

    @cuda.jit
    def kernel(table, n1, n2):
        t = cuda.blockIdx.x
        w = cuda.threadIdx.x
        ntx = (n2 + TX - 1) // TX
        table[t, w] = watched(w, t // ntx, t % ntx, n1, n2, ntx)

    return kernel


def watched_tiles(bc: int, tile, shape) -> list:
    """For every tile (flat index, row-major) of a 2-D ``shape``, the set of tiles that
    :func:`flag_kernel_2d` waits on — computed on the device by the kernel's own device
    function (tests compare it with the tiles the stored cells depend on)."""
    TY, TX = int(tile[0]), int(tile[1])
    n1, n2 = (int(n) for n in shape)
    ntiles = math.ceil(n1 / TY) * math.ceil(n2 / TX)
    table = cuda.to_device(np.full((ntiles, 25), -1, dtype=np.int64))
    _watch_table_kernel(int(bc), (TY, TX))[ntiles, 25](table, n1, n2)
    return [set(int(v) for v in row if v >= 0) for row in table.copy_to_host()]


@functools.lru_cache(maxsize=None)
def flag_kernel_2d(bc: int, dtype: str, block: tuple, tile: tuple, sync: str = DEFAULT_SYNC,
                   pad: int = 1, backoff: int = 0, wait: bool = True):
    """The persistent flag-synchronised fused step (see the module docstring).

    Arguments ``(a, b, flags, base, nsteps, n0, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1, c2,
    c3, vphi, vmu)``: ``nsteps`` fused RK2 steps, a → b, b → a, …; the result is in ``b`` for
    an odd ``nsteps``, else in ``a``. ``flags``: int32, tile t's counter at ``t * pad``, all
    equal to ``base`` at the launch; ``base + nsteps`` afterwards. Launch a 1-D grid of
    ``block`` (BX, BY) threads (at least 25). ``backoff``: ns of ``nanosleep`` per unsuccessful
    poll (0: spin). ``wait=False`` is a timing diagnostic only (no waits: races, wrong
    numbers): what the steps cost without their synchronisation."""
    TY, TX = int(tile[0]), int(tile[1])
    if TY < 4 or TX < 4:
        raise ValueError(f"the flag-synchronised step needs tiles of at least 4x4 cells (the "
                         f"halo of 4 must reach only the adjacent tiles), not {TX}x{TY}")
    BX = int(block[0])
    if BX * int(block[1]) < 25:
        raise ValueError("the flag-synchronised step needs blocks of at least 25 threads")
    if sync not in SYNC_MODES:
        raise ValueError(f"sync must be one of {SYNC_MODES}, not {sync!r}")
    sc = sync == "sc"
    RELAXED = sync == "relaxed"
    PAD = int(pad)
    SLEEP = 0 if SIMULATOR else int(backoff)  # the simulator has no nanosleep
    WAIT = bool(wait)
    body = _tile_steps(bc, False, dtype, block, tile, 1, coherent=True)
    watched = _watch_fn(bc, (TY, TX))
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
        # one tile per block (the small grids this is for): the watched counter once
        one = cuda.gridDim.x >= ntiles
        first = numba.int64(cuda.blockIdx.x)
        mine = numba.int64(-1)
        if one and tid < 25 and first < ntiles:
            mine = watched(tid, first // ntx, first - (first // ntx) * ntx, n1, n2, ntx)
        src, out = a, b
        for s in range(nsteps):
            target = base + s
            t = first
            while t < ntiles:
                tj = t // ntx
                ti = t - tj * ntx
                if WAIT and s > 0:  # step 0 reads what the previous launch (or a copy) left
                    if tid < 25:
                        nt = mine
                        if not one:
                            nt = watched(tid, tj, ti, n1, n2, ntx)
                        if nt >= 0:
                            if RELAXED:
                                while LDRLX32(flags, nt * PAD) < target:
                                    if SLEEP > 0:
                                        cuda.nanosleep(SLEEP)
                                FENCE_ACQREL()
                            else:
                                while LDACQ32(flags, nt * PAD) < target:
                                    if SLEEP > 0:
                                        cuda.nanosleep(SLEEP)
                                if sc:
                                    cuda.threadfence()
                    cuda.syncthreads()
                body(src, out, ti * TX, tj * TY, n1, n2, coef1, coef2, mh2, kh2, nd2, c0, c1,
                     c2, c3, vphi, vmu, sphi, smu, sst)  # ends with a block barrier
                if tid == 0:
                    if sc:
                        cuda.threadfence()
                        cuda.atomic.exch(flags, t * PAD, numba.int32(target + 1))
                    else:
                        STREL32(flags, t * PAD, numba.int32(target + 1))
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
                 max_blocks=None, steps=1, sync=None, pad=None, backoff=0, wait=True):
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
        self.sync = sync or DEFAULT_SYNC
        self.pad = int(pad or DEFAULT_PAD)
        self.backoff, self.wait = int(backoff), bool(wait)
        self.fn = flag_kernel_2d(self.bc, self.dtype.name, self.block, self.tile, self.sync,
                                 self.pad, self.backoff, self.wait)
        _n0, n1, n2 = self.shape3
        self.tiles = math.ceil(n2 / self.tile[1]) * math.ceil(n1 / self.tile[0])
        self.max_blocks = None if max_blocks is None else max(1, int(max_blocks))
        self.blockdim = self.block + (1,)
        self.griddim = (1 if SIMULATOR else self.tiles, 1, 1)
        self.flags = cuda.to_device(np.zeros(self.tiles * self.pad, dtype=np.int32))
        self.base = 0  # every counter's value between launches
        self._grid = None
        self._kern = None
        self._fast = None  # set after the first launch (the solver's compile check)

    @property
    def description(self) -> str:
        blk = "x".join(str(b) for b in self.block)
        opts = [o for o, on in ((self.sync, self.sync != DEFAULT_SYNC),
                                (f"counters {4 * self.pad} B apart", self.pad != DEFAULT_PAD),
                                (f"backoff {self.backoff} ns", self.backoff),
                                ("NO WAITS: timing only", not self.wait)) if on]
        extra = f" ({', '.join(opts)})" if opts else ""
        return (f"fused RK2, persistent kernel with neighbour flags{extra}, block {blk}, "
                f"tile {self.tile[1]}x{self.tile[0]}")

    def counters(self) -> np.ndarray:
        """The tiles' step counters (host copy)."""
        return self.flags.copy_to_host()[::self.pad].copy()

    def _args(self, a, b, nsteps, coefs, scal):
        t = self.dtype.type
        n0, n1, n2 = self.shape3
        return (a, b, self.flags, np.int32(self.base), np.int64(nsteps), n0, n1, n2,
                t(coefs[0]), t(coefs[1]), *scal)

    def _launch(self, a, b, nsteps, coefs, scal):
        if self.base + nsteps >= COUNTER_LIMIT:  # between launches: every counter == base
            self.flags.copy_to_device(np.zeros(self.tiles * self.pad, dtype=np.int32))
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
