"""Brandes' betweenness on the GPU for graphs of many BFS levels (rings, lattices, long chains):
one thread block per source, each with its own queue, looping over the levels inside the kernel.

The batched engine of :mod:`.brandes` sweeps every (vertex, source) entry of its batch once per
level; on a ring of n = 30 000 (about 3 000 levels per sweep) that is thousands of sweeps over a
block of B·n entries almost all idle. Here block b runs source ``srcs[b]`` alone, in rows b of
(B, n) arrays, level by level with ``syncthreads`` between levels (no launch, no host round
trip per level):

* forward: the threads take the level-L vertices of the block's queue; an arc (v, w) to an
  unreached w claims it with ``atomic.cas`` (d(w) = L + 1; the winner appends w to the queue with a
  shared-memory counter), and every arc to a level-(L + 1) vertex adds σ(v) to σ(w)
  (``atomic.add``). The start of every level in the queue is kept (``lstart``);
* backward, L = deepest … 1: every level-L vertex pulls
  δ(v) = σ(v) · Σ_{w ∈ out(v), d(w) = L + 1} t(w), where t(w) = (1 + δ(w)) / σ(w) was written
  over σ(w) when level L + 1 finished (one division per vertex, none per arc).

Each block touches only its own rows, so a batch needs no atomics across blocks; the
dependencies are summed over the batch's sources — one thread per vertex and chunk of
``SUM_CHUNK`` sources (coalesced across vertices), the chunks then added in order
(deterministic) — and, only when the run wants the path statistics, the column sums of each
vertex in the same pass. The row statistics come from the level starts (the size of each level), computed by the
block itself at the end of its forward sweep (level order, as the CPU engines), and the histogram
by one atomic per level and source.

Without betweenness (``betweenness=False``: APSP statistics on graphs of many levels, the
``bfs_blocks`` algorithm of :mod:`.engine`) the same kernel runs the forward BFS alone: no σ, no
backward sweep.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int32, int64

from . import simulator
from .bfs import UNREACHED

#: threads per block (= per source); the frontiers of deep graphs are narrow
THREADS = 8 if simulator() else 64
#: threads per block of the column sums, and sources per chunk (the column sums of a batch are
#: split over chunks of sources, each a grid row, then added in chunk order)
SUM_THREADS = 16 if simulator() else 256
SUM_CHUNK = 4 if simulator() else 256


def bytes_per_entry(betweenness: bool = True) -> int:
    """Device bytes per source and vertex: levels, queue, level starts (int32), and σ, δ
    (float64) with betweenness."""
    return 28 if betweenness else 12


#: bytes per source and vertex of the Brandes form
BYTES_PER_ENTRY = bytes_per_entry(True)


@cuda.jit
def _sources(indptr, indices, n, srcs, dist, sigma, delta, queue, lstart, deepest, btw_on,
             paths, row_sum, row_reach, row_max, row_harm, hist):
    """Block b: forward and (with ``btw_on``) backward sweeps of source srcs[b] in rows b of the
    flat (B·n) arrays (``lstart`` is (B·(n + 1))); with ``paths`` the row statistics of source b
    from its level sizes, and its level sizes added to ``hist``."""
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    tail = cuda.shared.array(1, int32)
    base = b * n
    lbase = b * (n + 1)
    s = srcs[b]
    v = tid
    while v < n:
        dist[base + v] = UNREACHED
        if btw_on:
            sigma[base + v] = 0.0
            delta[base + v] = 0.0
        v += nt
    cuda.syncthreads()
    if tid == 0:
        dist[base + s] = 0
        if btw_on:
            sigma[base + s] = 1.0
        queue[base] = s
        tail[0] = 1
        lstart[lbase] = 0
    cuda.syncthreads()
    lo = 0
    hi = 1
    L = 0
    while lo < hi:
        nd = L + 1
        k = lo + tid
        while k < hi:
            v = queue[base + k]
            sv = sigma[base + v] if btw_on else 0.0
            for e in range(indptr[v], indptr[v + 1]):
                w = indices[e]
                j = base + w
                dj = dist[j]
                if dj == UNREACHED:
                    dj = cuda.atomic.cas(dist, j, UNREACHED, nd)
                    if dj == UNREACHED:
                        queue[base + cuda.atomic.add(tail, 0, 1)] = w
                        dj = nd
                if btw_on and dj == nd:
                    cuda.atomic.add(sigma, j, sv)
            k += nt
        cuda.syncthreads()
        lo = hi
        hi = tail[0]
        L = nd
        if tid == 0:
            lstart[lbase + L] = lo
        cuda.syncthreads()
    top = L - 1                                          # the deepest level
    if tid == 0 and top > 0:
        cuda.atomic.max(deepest, 0, top)
    if paths:
        lev = 1 + tid                  # the histogram: the levels strided over the threads
        while lev <= top:
            cuda.atomic.add(hist, lev, int64(lstart[lbase + lev + 1] - lstart[lbase + lev]))
            lev += nt
        if tid == 0:                   # the row: level order, as every engine sums it
            rs = 0.0
            rh = 0.0
            rr = 0
            prev = lstart[lbase + 1]
            for lev in range(1, top + 1):
                nxt = lstart[lbase + lev + 1]
                c = nxt - prev
                prev = nxt
                rs += float(c) * lev
                rh += c / float(lev)
                rr += c
            row_sum[b] = rs
            row_reach[b] = rr
            row_max[b] = float(top) if rr else 0.0
            row_harm[b] = rh
    if not btw_on:
        return
    for lev in range(top, 0, -1):
        nd = lev + 1
        k = lstart[lbase + lev] + tid
        end = lstart[lbase + nd]
        while k < end:
            v = queue[base + k]
            acc = 0.0
            for e in range(indptr[v], indptr[v + 1]):
                j = base + indices[e]
                if dist[j] == nd:
                    acc += sigma[j]                      # t(w), see the module docstring
            sv = sigma[base + v]
            x = sv * acc
            delta[base + v] = x
            sigma[base + v] = (1.0 + x) / sv
            k += nt
        cuda.syncthreads()


@cuda.jit
def _column_parts(dist, delta, n, nsrc, chunk, parts, squares, btw_on, paths):
    """parts[q, c, v] for the sources b of chunk c (blockIdx.y): q = 0 Σ δ_b(v), 1 Σ δ_b(v)²
    (with ``squares``), 2 Σ d_b(v), 3 the reach, 4 Σ 1/d_b(v) (with ``paths``), in source
    order (δ is 0 at the source and at unreached vertices)."""
    v = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
    c = cuda.blockIdx.y
    if v < n:
        acc = 0.0
        sq = 0.0
        cs = 0.0
        ch = 0.0
        cr = 0
        for b in range(c * chunk, min(nsrc, (c + 1) * chunk)):
            if btw_on:
                x = delta[b * n + v]
                acc += x
                if squares:
                    sq += x * x
            if paths:
                d = dist[b * n + v]
                if d > 0 and d != UNREACHED:
                    y = float(d)
                    cs += y
                    cr += 1
                    ch += 1.0 / y
        parts[0, c, v] = acc
        parts[1, c, v] = sq
        parts[2, c, v] = cs
        parts[3, c, v] = cr
        parts[4, c, v] = ch


@cuda.jit
def _fold_parts(parts, n, nchunks, btw, btw_sq, col_sum, col_reach, col_harm, btw_on, paths):
    """The chunks' sums of :func:`_column_parts` added in chunk order (deterministic)."""
    v = cuda.grid(1)
    if v < n:
        a = 0.0
        q = 0.0
        cs = 0.0
        ch = 0.0
        cr = 0.0
        for c in range(nchunks):
            a += parts[0, c, v]
            q += parts[1, c, v]
            cs += parts[2, c, v]
            cr += parts[3, c, v]
            ch += parts[4, c, v]
        if btw_on:
            btw[v] = a
            btw_sq[v] = q
        if paths:
            col_sum[v] = cs
            col_reach[v] = int64(cr)                  # counts below 2^53: exact
            col_harm[v] = ch


class DeepBuffers:
    """Device buffers for batches of up to ``B`` sources, one row of ``n`` each (σ, δ only with
    ``betweenness``)."""

    def __init__(self, n: int, B: int, betweenness: bool = True):
        self.n, self.B = n, B
        self.betweenness = bool(betweenness)
        m = B * n if betweenness else 1
        self.dist = cuda.device_array((B, n), np.int32)
        self.sigma = cuda.device_array(m, np.float64)
        self.delta = cuda.device_array(m, np.float64)
        self.queue = cuda.device_array(B * n, np.int32)
        self.lstart = cuda.device_array(B * (n + 1), np.int32)
        self.deepest = cuda.to_device(np.zeros(1, np.int32))
        self.btw = cuda.device_array(n, np.float64)
        self.btw_sq = cuda.device_array(n, np.float64)
        self.col_sum = cuda.device_array(n, np.float64)
        self.col_reach = cuda.device_array(n, np.int64)
        self.col_harm = cuda.device_array(n, np.float64)
        self.row_sum = cuda.device_array(B, np.float64)
        self.row_reach = cuda.device_array(B, np.int64)
        self.row_max = cuda.device_array(B, np.float64)
        self.row_harm = cuda.device_array(B, np.float64)
        self.hist = cuda.device_array(max(1, n), np.int64)
        self.parts = cuda.device_array((5, -(-B // SUM_CHUNK), max(1, n)), np.float64)
        self.rows = self.dist                            # (B, n): the distance rows


def deep_batch(dg, srcs, buf: DeepBuffers, squares: bool = True, paths: bool = False) -> None:
    """The sweeps for the sources ``srcs`` (a device int64 array, ≤ buf.B): with betweenness
    their dependencies summed in ``buf.btw``/``buf.btw_sq``; with ``paths`` the row statistics
    in ``buf.row_*``, the histogram in ``buf.hist`` (zeroed here) and the column sums in
    ``buf.col_*``; their levels in rows 0..len(srcs)-1 of ``buf.dist``."""
    n, B = dg.n, len(srcs)
    flat = buf.dist.reshape(buf.B * n)
    if paths:
        buf.hist.copy_to_device(np.zeros(buf.hist.shape[0], np.int64))
    _sources[B, THREADS](dg.indptr, dg.indices, n, srcs, flat, buf.sigma, buf.delta,
                         buf.queue, buf.lstart, buf.deepest, buf.betweenness, bool(paths),
                         buf.row_sum, buf.row_reach, buf.row_max, buf.row_harm, buf.hist)
    if buf.betweenness or paths:
        nch = -(-B // SUM_CHUNK)
        grid = ((n + SUM_THREADS - 1) // SUM_THREADS, nch)
        _column_parts[grid, SUM_THREADS](flat, buf.delta, n, B, SUM_CHUNK, buf.parts,
                                         bool(squares), buf.betweenness, bool(paths))
        _fold_parts[grid[0], SUM_THREADS](buf.parts, n, nch, buf.btw, buf.btw_sq, buf.col_sum,
                                          buf.col_reach, buf.col_harm, buf.betweenness,
                                          bool(paths))


def deep_partials(graph, dg, sources, store, batch, squares, paths, columns,
                  betweenness=True, cache=False):
    """One ChunkPartial per batch of ``sources`` (host int64) with a thread block per source
    (runs with the device current): ``btw``/``btw_sq`` with ``betweenness``, the path
    statistics with ``paths``. ``cache``: keep the buffers with the graph (APSP runs call once
    per claim)."""
    from .brandes import default_batch
    from .brandes_sums import _columns, empty_rows
    from .reduce import copy_to_store, trim_hist
    from ..statistics import ChunkPartial

    n = graph.n
    B = int(batch) if batch else default_batch(n, len(sources), bytes_per_entry(betweenness))
    B = max(1, min(B, len(sources)))
    if cache:
        from . import cached_buffers

        buf = cached_buffers(graph, ("blocks", B, bool(betweenness)),
                      lambda: DeepBuffers(n, B, betweenness))
    else:
        buf = DeepBuffers(n, B, betweenness)
    rows = np.arange(B, dtype=np.int64)
    for lo in range(0, len(sources), B):
        s = sources[lo:lo + B]
        deep_batch(dg, cuda.to_device(s), buf, squares, paths)
        if store is not None:
            copy_to_store(buf.rows, rows[:len(s)], store, lo, float(UNREACHED))
        k = len(s)
        if paths:
            part = ChunkPartial(s.copy(), buf.row_sum.copy_to_host()[:k],
                                buf.row_reach.copy_to_host()[:k],
                                buf.row_max.copy_to_host()[:k],
                                buf.row_harm.copy_to_host()[:k], *_columns(buf, columns),
                                trim_hist(buf.hist.copy_to_host()))
        else:
            part = empty_rows(s, n)
        if betweenness:
            part.btw = buf.btw.copy_to_host()
            part.btw_sq = buf.btw_sq.copy_to_host() if squares else np.zeros(n)
        yield part
