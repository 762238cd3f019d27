"""Direction-optimising single-source BFS on the GPU (Beamer's push/pull switching).

* top-down (push) level: one thread per frontier vertex of a queue; an unvisited out-neighbour is
  claimed with ``atomic.cas(dist[v], UNREACHED, level)`` so exactly one thread appends it to the
  next queue (``atomic.add`` on a counter);
* bottom-up (pull) level: one thread per vertex; an unvisited vertex scans its in-arcs for a
  parent in the frontier bitmap and stops at the first; it writes only its own entries, so no
  atomics are needed except one per block for the level's totals (summed in shared memory);
* the frontier changes representation (queue ↔ bitmap) when the direction changes.

Two drivers with the same levels and the same switching rule as the CPU engine
(:mod:`simengine.network.cpu.dobfs`): :func:`dobfs_row_persistent` (default) runs the whole
traversal of a source in one cooperative launch — grid-stride loops, grid-wide barriers between
phases, every thread deciding the direction from the level counters — and :func:`dobfs_row`
launches each level and reads the counters on the host (also the fallback beyond
:data:`LEVEL_CAP` levels).  A batch of sources is traversed one after another into the rows of
one (B, n) distance block; the row statistics and the histogram come from the level counts, the
column sums from one pass over the block (:func:`_columns`), copied to the host through
page-locked staging (:func:`dobfs_partials`).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float64, int64

from . import device_graph, simulator
from .common import fill
from ..cpu.dobfs import ALPHA, BETA

#: int32 distance of a vertex not reached (yet)
UNREACHED = np.int32(np.iinfo(np.int32).max)
THREADS = 16 if simulator() else 256
#: levels whose counts the one-launch traversal keeps (a deeper graph falls back to the
#: launch-per-level traversal for that source)
LEVEL_CAP = 1 << 16


@cuda.jit
def _top_down(indptr, indices, rindptr, queue, nq, nxt, dist, level, slots, k):
    i = cuda.grid(1)
    tid = cuda.threadIdx.x
    counters = slots[k]
    if i < 4:
        slots[1 - k, i] = 0         # the next level's counters (the host has read them)
    # the level's arc totals are summed per block in shared memory: one global atomic per block
    # instead of two per discovered vertex (all on the same two addresses)
    acc = cuda.shared.array(2, int64)
    if tid < 2:
        acc[tid] = 0
    cuda.syncthreads()
    if i < nq:
        u = queue[i]
        mo = int64(0)
        mi = int64(0)
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            if dist[v] == UNREACHED:
                old = cuda.atomic.cas(dist, v, UNREACHED, level)
                if old == UNREACHED:
                    pos = cuda.atomic.add(counters, 0, 1)
                    nxt[pos] = v
                    mo += indptr[v + 1] - indptr[v]
                    mi += rindptr[v + 1] - rindptr[v]
        if mo != 0:
            cuda.atomic.add(acc, 0, mo)
        if mi != 0:
            cuda.atomic.add(acc, 1, mi)
    cuda.syncthreads()
    if tid < 2 and acc[tid] != 0:
        cuda.atomic.add(counters, tid + 1, acc[tid])


@cuda.jit
def _bottom_up(indptr, rindptr, rindices, front, nxt, dist, level, n, slots, k):
    v = cuda.grid(1)
    tid = cuda.threadIdx.x
    counters = slots[k]
    if v < 4:
        slots[1 - k, v] = 0
    acc = cuda.shared.array(3, int64)
    if tid < 3:
        acc[tid] = 0
    cuda.syncthreads()
    if v < n:
        hit = 0
        if dist[v] == UNREACHED:
            for e in range(rindptr[v], rindptr[v + 1]):
                if front[rindices[e]] != 0:
                    hit = 1
                    break
        nxt[v] = hit
        if hit:
            dist[v] = level
            cuda.atomic.add(acc, 0, 1)
            cuda.atomic.add(acc, 1, indptr[v + 1] - indptr[v])
            cuda.atomic.add(acc, 2, rindptr[v + 1] - rindptr[v])
    cuda.syncthreads()
    if tid < 3 and acc[tid] != 0:
        cuda.atomic.add(counters, tid, acc[tid])


@cuda.jit
def _queue_to_bitmap(queue, nq, bitmap):
    i = cuda.grid(1)
    if i < nq:
        bitmap[queue[i]] = 1


@cuda.jit
def _bitmap_to_queue(bitmap, n, queue, slots, k):
    v = cuda.grid(1)
    if v < n and bitmap[v] != 0:
        queue[cuda.atomic.add(slots, (k, 3), 1)] = v


@cuda.jit
def _start(dist, queue, s, slots):
    i = cuda.grid(1)
    if i == 0:
        dist[s] = 0
        queue[0] = s
    if i < 8:
        slots[i // 4, i % 4] = 0


@cuda.jit
def _columns(dist, srcs, nrows, ncols, col_sum, col_reach, col_harm):
    """Column sums of rows 0..nrows-1 of ``dist`` (one thread per target, sources in order: the
    arithmetic of :func:`.reduce._col_kernel`, without its histogram, which comes from the level
    counts)."""
    t = cuda.grid(1)
    if t < ncols:
        acc = 0.0
        harm = 0.0
        cnt = 0
        for b in range(nrows):
            d = dist[b, t]
            if t != srcs[b] and d != UNREACHED:
                x = float64(d)
                acc += x
                cnt += 1
                if x > 0.0:
                    harm += 1.0 / x
        col_sum[t] = acc
        col_reach[t] = cnt
        col_harm[t] = harm


@cuda.jit
def _dobfs_all(indptr, indices, rindptr, rindices, n, num_arcs, dist, s, mf0, mu0, alpha, beta,
               queues, fronts, ctr, level_count, cap, out):
    """The whole traversal from ``s`` in one cooperative launch (grid-stride loops, grid-wide
    barriers between phases): the same levels, kernels and switching rule as :func:`dobfs_row`,
    decided by every thread from the level counters, with no host round trip per level.

    ``queues`` (2, n) and ``fronts`` (2, n) hold the current and the next queue / bitmap;
    ``ctr`` (3, 4) three slots of level counters (level L adds into slot L % 3 and clears slot
    (L + 1) % 3, which nobody reads any more); ``level_count[L]`` = vertices at level L for
    L < cap; ``out`` = (levels, pull levels, 1 if the levels overflowed ``cap``)."""
    grid = cuda.cg.this_grid()
    g = cuda.grid(1)
    gs = cuda.gridsize(1)
    tid = cuda.threadIdx.x
    acc = cuda.shared.array(3, int64)
    for v in range(g, n, gs):
        dist[v] = UNREACHED
    if g < 12:
        ctr[g // 4, g % 4] = 0
    grid.sync()
    if g == 0:
        dist[s] = 0
        queues[0, 0] = s
        level_count[0] = 1
    grid.sync()
    nf = int64(1)
    prev_nf = int64(1)
    nq = int64(1)
    mf = int64(mf0)
    mu = int64(mu0)
    cq = 0                      # queues[cq] / fronts[cf]: the current frontier
    cf = 0
    bottom_up = False
    level = 0
    pulls = 0
    while nf > 0:
        level += 1
        k = level % 3
        if g < 4:
            ctr[(level + 1) % 3, g] = 0
        if not bottom_up and mf > mu // alpha and nf >= n // beta:
            for v in range(g, n, gs):
                fronts[cf, v] = 0
            grid.sync()
            for i in range(g, nq, gs):
                fronts[cf, queues[cq, i]] = 1
            grid.sync()
            bottom_up = True
        elif bottom_up and nf < prev_nf and nf < n // beta:
            for v in range(g, n, gs):
                if fronts[cf, v] != 0:
                    queues[cq, cuda.atomic.add(ctr, (k, 3), 1)] = v
            grid.sync()
            bottom_up = False
        prev_nf = nf
        if tid < 3:
            acc[tid] = 0
        cuda.syncthreads()
        mo = int64(0)
        mi = int64(0)
        cnt = int64(0)
        if bottom_up:
            for v in range(g, n, gs):
                hit = 0
                if dist[v] == UNREACHED:
                    for e in range(rindptr[v], rindptr[v + 1]):
                        if fronts[cf, rindices[e]] != 0:
                            hit = 1
                            break
                fronts[1 - cf, v] = hit
                if hit:
                    dist[v] = level
                    cnt += 1
                    mo += indptr[v + 1] - indptr[v]
                    mi += rindptr[v + 1] - rindptr[v]
            cf = 1 - cf
            pulls += 1
        else:
            for i in range(g, nq, gs):
                u = queues[cq, i]
                for e in range(indptr[u], indptr[u + 1]):
                    v = indices[e]
                    if dist[v] == UNREACHED:
                        old = cuda.atomic.cas(dist, v, UNREACHED, level)
                        if old == UNREACHED:
                            queues[1 - cq, cuda.atomic.add(ctr, (k, 0), 1)] = v
                            mo += indptr[v + 1] - indptr[v]
                            mi += rindptr[v + 1] - rindptr[v]
            cq = 1 - cq
        if cnt != 0:
            cuda.atomic.add(acc, 0, cnt)
        if mo != 0:
            cuda.atomic.add(acc, 1, mo)
        if mi != 0:
            cuda.atomic.add(acc, 2, mi)
        cuda.syncthreads()
        if tid < 3 and acc[tid] != 0:
            cuda.atomic.add(ctr, (k, tid), acc[tid])
        grid.sync()
        nf = ctr[k, 0]
        mf = ctr[k, 1]
        mu -= ctr[k, 2]
        nq = nf
        if g == 0 and level < cap:
            level_count[level] = nf
    if g == 0:
        out[0] = level - 1
        out[1] = pulls
        out[2] = 1 if level >= cap else 0


def _blocks(k: int) -> int:
    return max(1, (k + THREADS - 1) // THREADS)


class DOBFSBuffers:
    """Device buffers for direction-optimising BFS on an ``n``-vertex graph, ``B`` rows of
    distances (one per source of a batch)."""

    def __init__(self, n: int, B: int):
        self.n, self.B = n, B
        self.dist = cuda.device_array((B, n), np.int32)
        # current and next queue / bitmap (rows of one array each: the one-launch traversal
        # indexes them; the launch-per-level one swaps the row views)
        self.queues = cuda.device_array((2, max(1, n)), np.int32)
        self.fronts = cuda.to_device(np.zeros((2, max(1, n)), np.uint8))
        self.queue, self.nxt_q = self.queues[0], self.queues[1]
        self.front, self.nxt_b = self.fronts[0], self.fronts[1]
        self.ctr = cuda.to_device(np.zeros((3, 4), np.int64))
        self.cap = int(min(max(1, n) + 2, LEVEL_CAP))
        self.d_level_count = cuda.device_array(self.cap, np.int64)
        self.d_out = cuda.device_array(3, np.int64)
        self.out = cuda.pinned_array(3, np.int64)
        # two slots of level counters (new vertices, their out-arcs, their in-arcs, queue
        # position): level L adds into slot L % 2 and clears the other one for level L + 1
        self.slots = cuda.to_device(np.zeros((2, 4), np.int64))
        self.host_counters = cuda.pinned_array(4, np.int64)
        #: vertices per level of the last traversal (level 0 = the source)
        self.level_count = [1]


class ColumnBuffers:
    """Column sums of a batch on the device and their page-locked host staging (n each)."""

    def __init__(self, n: int):
        m = max(1, n)
        self.col_sum = cuda.device_array(m, np.float64)
        self.col_reach = cuda.device_array(m, np.int64)
        self.col_harm = cuda.device_array(m, np.float64)
        self.h_sum = self.h_reach = self.h_harm = None   # staging: on the first download

    def stage(self):
        """Allocate the page-locked host staging (only runs that download columns per batch)."""
        if self.h_sum is None:
            m = self.col_sum.size
            self.h_sum = cuda.pinned_array(m, np.float64)
            self.h_reach = cuda.pinned_array(m, np.int64)
            self.h_harm = cuda.pinned_array(m, np.float64)
        return self


def dobfs_row(dg, source: int, buf: DOBFSBuffers, row: int = 0, alpha: int = ALPHA,
              beta: int = BETA):
    """BFS from ``source`` into ``buf.dist[row]``; ``buf.level_count`` gets the vertices per
    level.  Returns (levels, pull levels)."""
    n = dg.n
    dist = buf.dist[row]
    fill[_blocks(n), THREADS](dist, UNREACHED)
    _start[1, 32](dist, buf.queue, int(source), buf.slots)
    deg = int(dg.degree_host[source])
    if dg.directed:
        rdeg_s = int(dg.t_indptr_host[source + 1] - dg.t_indptr_host[source])
    else:
        rdeg_s = deg
    nq, mf, mu = 1, deg, dg.num_arcs - rdeg_s
    queue, nxt_q, front, nxt_b = buf.queue, buf.nxt_q, buf.front, buf.nxt_b
    slots, hc = buf.slots, buf.host_counters
    counts = [1]
    level = 0
    pulls = 0
    bottom_up = False
    nf = prev_nf = 1
    while nf > 0:
        level += 1
        k = level & 1
        if not bottom_up and mf > mu // alpha and nf >= n // beta:
            fill[_blocks(n), THREADS](front, np.uint8(0))
            _queue_to_bitmap[_blocks(nq), THREADS](queue, nq, front)
            bottom_up = True
        elif bottom_up and nf < prev_nf and nf < n // beta:
            # the bitmap holds exactly the nf frontier vertices: the queue gets nq = nf entries
            _bitmap_to_queue[_blocks(n), THREADS](front, n, queue, slots, k)
            bottom_up = False
        prev_nf = nf
        if bottom_up:
            _bottom_up[_blocks(n), THREADS](dg.indptr, dg.t_indptr, dg.t_indices, front, nxt_b,
                                            dist, np.int32(level), n, slots, k)
            front, nxt_b = nxt_b, front
            pulls += 1
        else:
            _top_down[_blocks(nq), THREADS](dg.indptr, dg.indices, dg.t_indptr, queue, nq,
                                            nxt_q, dist, np.int32(level), slots, k)
            queue, nxt_q = nxt_q, queue
        slots[k].copy_to_host(hc)
        nf, mf = int(hc[0]), int(hc[1])
        mu -= int(hc[2])
        nq = nf
        counts.append(nf)
    buf.queue, buf.nxt_q, buf.front, buf.nxt_b = queue, nxt_q, front, nxt_b
    buf.level_count = counts
    return level - 1, pulls


_coop_blocks: dict = {}


def _grid_blocks() -> int:
    """Blocks of the one-launch traversal: all must be resident at once."""
    if simulator():
        return 1            # the simulator runs cooperative grids of one block only
    dev = cuda.get_current_device()
    key = int(getattr(dev, "id", 0))
    if key in _coop_blocks:
        return _coop_blocks[key]
    blocks = None
    for kern in list(_dobfs_all.overloads.values()):
        try:
            blocks = int(kern.max_cooperative_grid_blocks(THREADS))
        except Exception:       # pragma: no cover
            blocks = None
    if not blocks:
        return dev.MULTIPROCESSOR_COUNT     # before the first compilation: one block per SM fits
    _coop_blocks[key] = blocks
    return blocks


def dobfs_row_persistent(dg, source: int, buf: DOBFSBuffers, row: int = 0, alpha: int = ALPHA,
                         beta: int = BETA):
    """:func:`dobfs_row` as one cooperative launch (no host round trip per level); the same
    distances, level counts and return value.  A traversal deeper than ``buf.cap`` levels is
    redone by :func:`dobfs_row`."""
    n = dg.n
    deg = int(dg.degree_host[source])
    if dg.directed:
        rdeg_s = int(dg.t_indptr_host[source + 1] - dg.t_indptr_host[source])
    else:
        rdeg_s = deg
    _dobfs_all[_grid_blocks(), THREADS](
        dg.indptr, dg.indices, dg.t_indptr, dg.t_indices, np.int64(n), np.int64(dg.num_arcs),
        buf.dist[row], np.int64(source), np.int64(deg), np.int64(dg.num_arcs - rdeg_s),
        np.int64(alpha), np.int64(beta), buf.queues, buf.fronts, buf.ctr, buf.d_level_count,
        np.int64(buf.cap), buf.d_out)
    buf.d_out.copy_to_host(buf.out)
    levels, pulls, overflow = (int(x) for x in buf.out)
    if overflow:
        return dobfs_row(dg, source, buf, row, alpha, beta)
    buf.level_count = buf.d_level_count[:levels + 2].copy_to_host()
    return levels, pulls


def dobfs(graph, source: int) -> np.ndarray:
    """Hop distances from ``source`` (int64, -1 = unreachable), computed on the GPU."""
    dg = _prepared(graph)
    buf = DOBFSBuffers(dg.n, 1)
    dobfs_row(dg, int(source), buf)
    d = buf.dist.copy_to_host()[0].astype(np.int64)
    d[d == UNREACHED] = -1
    return d


def _prepared(graph):
    """The cached device graph, with host in-degree offsets for directed graphs."""
    dg = device_graph(graph)
    if dg.directed and not hasattr(dg, "t_indptr_host"):
        dg.t_indptr_host = np.ascontiguousarray(graph.transpose().indptr, dtype=np.int64)
    return dg


def dobfs_partials(graph, sources, batch: int = 8, store=None, persistent: bool = True,
                   columns=None):
    """Per-source direction-optimising BFS on the GPU: one ChunkPartial per batch of ``batch``
    sources (traversed one after another: one cooperative launch each when ``persistent``, else
    a launch per level), in source order.

    Row statistics and the histogram come from the level counts (as on the CPU,
    :func:`simengine.network.cpu.dobfs.row_from_levels`); the column sums from one pass over the
    batch's distance rows on the device (:func:`_columns`), copied through page-locked staging
    into fresh host arrays by all host threads — or folded into ``columns`` (a
    :class:`.columns.DeviceColumns`) on the device, the partials' columns then None."""
    from . import graph_cache
    from ..accumulate import parallel_copy
    from ..cpu.dobfs import row_from_levels
    from ..statistics import ChunkPartial
    from .reduce import copy_to_store

    sources = np.ascontiguousarray(sources, dtype=np.int64)
    dg = _prepared(graph)
    n = dg.n
    B = max(1, min(int(batch), len(sources)))
    # kept with the graph on this device (B·n distances + 4 n-long arrays: allocating and zeroing
    # them per call cost more than a BFS on a big graph; the column buffers and their page-locked
    # host staging do not depend on B)
    cache = graph_cache(graph)
    buf = cache.get(("dobfs", B))
    if buf is None:
        buf = cache[("dobfs", B)] = DOBFSBuffers(n, B)
    cols = cache.get("dobfs_columns")
    if cols is None:
        cols = cache["dobfs_columns"] = ColumnBuffers(n)
    rows = np.arange(B, dtype=np.int64)
    traverse = dobfs_row_persistent if persistent else dobfs_row
    for lo in range(0, len(sources), B):
        s = sources[lo:lo + B]
        k = len(s)
        row_sum, row_reach = np.zeros(k), np.zeros(k, np.int64)
        row_max, row_harm = np.zeros(k), np.zeros(k)
        hist = np.zeros(1, np.int64)
        for b, src in enumerate(s):
            levels, _ = traverse(dg, int(src), buf, b)
            rs, rr, rm, rh, h = row_from_levels(np.asarray(buf.level_count, np.int64), levels)
            row_sum[b], row_reach[b], row_max[b], row_harm[b] = rs, rr, rm, rh
            if len(h) > len(hist):
                hist = np.concatenate([hist, np.zeros(len(h) - len(hist), np.int64)])
            hist[:len(h)] += h
        if store is not None:
            copy_to_store(buf.dist, rows[:k], store, lo, float(UNREACHED))
        if n:
            _columns[_blocks(n), THREADS](buf.dist, cuda.to_device(s), k, n, cols.col_sum,
                                          cols.col_reach, cols.col_harm)
        if n and columns is not None:
            columns.add(cols.col_sum, cols.col_reach, cols.col_harm)
            col_sum = col_reach = col_harm = None
        elif n:
            cols.stage()
            cols.col_sum.copy_to_host(cols.h_sum)
            cols.col_reach.copy_to_host(cols.h_reach)
            cols.col_harm.copy_to_host(cols.h_harm)
            col_sum, col_reach = parallel_copy(cols.h_sum[:n]), parallel_copy(cols.h_reach[:n])
            col_harm = parallel_copy(cols.h_harm[:n])
        else:
            col_sum, col_reach, col_harm = np.zeros(0), np.zeros(0, np.int64), np.zeros(0)
        yield ChunkPartial(s.copy(), row_sum, row_reach, row_max, row_harm, col_sum, col_reach,
                           col_harm, hist)
