"""Single-source BFS (level-synchronous, double-buffered frontier) and per-source APSP batches.

A BFS is run by one thread on its own buffers, so it is race-free, and the frontier being expanded
and the next frontier are separate arrays, so a vertex found at level L+1 is never expanded at
level L.  APSP parallelises over batches of sources (``prange``), each worker owning its distance
buffer and column accumulators.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ..statistics import ChunkPartial, unreachable_sentinel


@njit(cache=True)
def _bfs_into(indptr, indices, s, dist, front, nxt):
    """Hop distances from s into dist (must be all -1 on entry). Returns the number of levels."""
    dist[s] = 0
    front[0] = s
    nf = 1
    level = 0
    while nf > 0:
        level += 1
        nn = 0
        for k in range(nf):
            v = front[k]
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                if dist[u] < 0:
                    dist[u] = level
                    nxt[nn] = u
                    nn += 1
        for k in range(nn):
            front[k] = nxt[k]
        nf = nn
    return level - 1


def bfs(graph, source: int) -> np.ndarray:
    """Hop distances (int32) from ``source`` along out-arcs; -1 marks unreachable vertices."""
    n = graph.n
    if not 0 <= source < n:
        raise ValueError("source out of range")
    dist = np.full(n, -1, np.int32)
    _bfs_into(graph.indptr, graph.indices, int(source), dist, np.empty(n, np.int32),
              np.empty(n, np.int32))
    return dist


@njit(cache=True)
def _reduce_row(dist, s, i, unweighted, bin_width, row_sum, row_reach, row_max, row_harm,
                col_sum, col_reach, col_harm, hist):
    """Fold one source's distance row (negative / inf = unreachable) into row i and the columns."""
    n = len(dist)
    # row sums are compensated (Neumaier), so they are accurate to a few ulps whatever n is and
    # agree with the CUDA engine's tree reductions to ~1e-15 relative
    rs = 0.0
    rs_c = 0.0
    rr = 0
    rm = 0.0
    rh = 0.0
    rh_c = 0.0
    for t in range(n):
        d = dist[t]
        if t == s or d < 0 or d == np.inf:
            continue
        x = np.float64(d)
        y = rs + x
        rs_c += (rs - y) + x if abs(rs) >= abs(x) else (x - y) + rs
        rs = y
        rr += 1
        if d > rm:
            rm = d
        col_sum[t] += d
        col_reach[t] += 1
        if d > 0:
            x = 1.0 / d
            y = rh + x
            rh_c += (rh - y) + x if abs(rh) >= abs(x) else (x - y) + rh
            rh = y
            col_harm[t] += x
        if unweighted:
            b = np.int64(d)
        else:
            b = np.int64(np.floor(d / bin_width))
        if b < len(hist):
            hist[b] += 1
        else:
            hist[len(hist) - 1] += 1  # folded into the last bin (see dijkstra_partials)
    row_sum[i] = rs + rs_c
    row_reach[i] = rr
    row_max[i] = rm
    row_harm[i] = rh + rh_c


@njit(cache=True, parallel=True)
def _bfs_group(indptr, indices, sources, starts, row_sum, row_reach, row_max, row_harm,
               col_sum, col_reach, col_harm, hist, store, do_store, sentinel):
    n = len(indptr) - 1
    nb = len(starts) - 1
    for b in prange(nb):
        dist = np.empty(n, np.int32)
        front = np.empty(n, np.int32)
        nxt = np.empty(n, np.int32)
        for i in range(starts[b], starts[b + 1]):
            dist[:] = -1
            s = sources[i]
            _bfs_into(indptr, indices, s, dist, front, nxt)
            _reduce_row(dist, s, i, True, 1.0, row_sum, row_reach, row_max, row_harm,
                        col_sum[b], col_reach[b], col_harm[b], hist[b])
            if do_store:
                for t in range(n):
                    store[i, t] = sentinel if dist[t] < 0 else dist[t]


def group_partials(kernel, graph, sources, batch, store, threads, hist_len, extra=(),
                   bin_width=1.0, dependencies=False):
    """Drive a per-batch kernel over groups of ``threads`` batches of ``batch`` sources each and
    yield a ChunkPartial per batch, in source order.  Shared by BFS, Dijkstra and Brandes
    (``dependencies``: the kernel also takes per-batch ``btw``, ``btw_sq`` (nb, n) arrays after
    ``hist``, which become the partials' betweenness fields).

    ``hist_len`` bounds the histogram by the longest possible path (up to 2²² bins for weighted
    graphs); each batch's histogram is cut after its last non-zero bin, which lies at
    ⌊max row maximum / bin_width⌋, so only that prefix is scanned (the rest of the zeroed
    array is never touched: scanning 32 MB per batch cost 9 ms, most of a small Dijkstra run)."""
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    n, S = graph.n, len(sources)
    P = threads or numba.get_num_threads()
    batch = int(batch)
    do_store = store is not None
    st = store if do_store else np.zeros((1, 1), np.float64)
    if do_store and st.shape != (S, n):
        raise ValueError(f"store must have shape {(S, n)}")
    sentinel = unreachable_sentinel(st.dtype)
    for g0 in range(0, S, batch * P):
        g1 = min(S, g0 + batch * P)
        gs = sources[g0:g1]
        starts = np.unique(np.append(np.arange(0, len(gs), batch, dtype=np.int64), len(gs)))
        nb = len(starts) - 1
        row_sum, row_reach = np.zeros(len(gs)), np.zeros(len(gs), np.int64)
        row_max, row_harm = np.zeros(len(gs)), np.zeros(len(gs))
        col_sum, col_reach = np.zeros((nb, n)), np.zeros((nb, n), np.int64)
        col_harm = np.zeros((nb, n))
        hist = np.zeros((nb, hist_len), np.int64)
        dep = (np.zeros((nb, n)), np.zeros((nb, n))) if dependencies else ()
        kernel(graph.indptr, graph.indices, *extra, gs, starts, row_sum, row_reach, row_max,
               row_harm, col_sum, col_reach, col_harm, hist, *dep,
               st[g0:g1] if do_store else st, do_store, sentinel)
        for b in range(nb):
            lo, hi = starts[b], starts[b + 1]
            h = hist[b]
            top = (int(np.floor(row_max[lo:hi].max() / bin_width)) + 2) if hi > lo else 1
            nz = np.flatnonzero(h[:min(top, len(h))])
            yield ChunkPartial(gs[lo:hi].copy(), row_sum[lo:hi], row_reach[lo:hi],
                               row_max[lo:hi], row_harm[lo:hi], col_sum[b], col_reach[b],
                               col_harm[b], h[: (nz[-1] + 1 if len(nz) else 1)].copy(),
                               *((dep[0][b], dep[1][b]) if dependencies else ()))


def bfs_partials(graph, sources, batch: int = 64, store=None, threads=None):
    """Per-source BFS APSP: one ChunkPartial per batch of ``batch`` sources, in source order."""
    return group_partials(_bfs_group, graph, sources, batch, store, threads, graph.n + 1)
