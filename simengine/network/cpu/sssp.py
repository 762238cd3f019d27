"""Dijkstra's single-source shortest paths with a binary heap (lazy deletion), and APSP batches.

Weights must be non-negative (checked by :func:`simengine.network.weights.check_weights` before a
run).  Each worker owns its heap and distance buffer and APSP parallelises over batches of sources,
so no two threads ever write the same distance entry.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .bfs import _reduce_row, group_partials
from .heap import heap_pop, heap_push
from ..weights import DIAL_MAX_WEIGHT, dial_applicable


@njit(cache=True)
def _store_row(store, i, dist, sentinel):
    """store[i] = dist with unreachable (inf) written as ``sentinel``."""
    for t in range(len(dist)):
        store[i, t] = sentinel if dist[t] == np.inf else dist[t]


@njit(cache=True)
def _dijkstra_into(indptr, indices, weights, s, dist, hk, hv):
    """Distances from s into dist (must be all +inf on entry); hk/hv: heap buffers (len ≥ m+1)."""
    dist[s] = 0.0
    size = heap_push(hk, hv, 0, 0.0, s)
    while size > 0:
        d, v, size = heap_pop(hk, hv, size)
        if d > dist[v]:
            continue
        for e in range(indptr[v], indptr[v + 1]):
            u = indices[e]
            nd = d + weights[e]
            if nd < dist[u]:
                dist[u] = nd
                size = heap_push(hk, hv, size, nd, u)


def dijkstra(graph, source: int) -> np.ndarray:
    """Weighted distances (float64) from ``source``; ``inf`` marks unreachable vertices.
    Unweighted graphs use unit weights."""
    n = graph.n
    if not 0 <= source < n:
        raise ValueError("source out of range")
    w = graph.weights if graph.weights is not None else np.ones(graph.num_arcs)
    dist = np.full(n, np.inf)
    m = graph.num_arcs
    _dijkstra_into(graph.indptr, graph.indices, w, int(source), dist, np.empty(m + 1),
                   np.empty(m + 1, np.int32))
    return dist


@njit(cache=True, parallel=True)
def _dijkstra_group(indptr, indices, weights, bin_width, sources, starts, row_sum, row_reach,
                    row_max, row_harm, col_sum, col_reach, col_harm, hist, store, do_store,
                    sentinel):
    n = len(indptr) - 1
    m = indptr[n]
    nb = len(starts) - 1
    for b in prange(nb):
        dist = np.empty(n)
        hk = np.empty(m + 1)
        hv = np.empty(m + 1, np.int32)
        for i in range(starts[b], starts[b + 1]):
            dist[:] = np.inf
            s = sources[i]
            _dijkstra_into(indptr, indices, weights, s, dist, hk, hv)
            _reduce_row(dist, s, i, False, bin_width, row_sum, row_reach, row_max, row_harm,
                        col_sum[b], col_reach[b], col_harm[b], hist[b])
            if do_store:
                _store_row(store, i, dist, sentinel)


def dijkstra_partials(graph, sources, bin_width: float = 1.0, batch: int = 32, store=None,
                      threads=None, hist_len=None):
    """Per-source Dijkstra APSP: one ChunkPartial per batch of ``batch`` sources, in order."""
    w = graph.weights if graph.weights is not None else np.ones(graph.num_arcs)
    if hist_len is None:
        # longest possible shortest path ≤ (n-1)·max weight
        wmax = float(w.max()) if len(w) else 0.0
        hist_len = int(np.floor((graph.n - 1) * wmax / bin_width)) + 2
        hist_len = min(hist_len, 1 << 22)
    return group_partials(_dijkstra_group, graph, sources, batch, store, threads, hist_len,
                          extra=(w, float(bin_width)), bin_width=float(bin_width))


# ---------------------------------------------------------------------------- Dial (bucket queue)
@njit(cache=True)
def _dial_into(indptr, indices, iw, C, s, dist, head, ev, enext, done, stamp):
    """Dial's algorithm: circular array of C+1 buckets (linked lists with lazy deletion).
    Integer weights 0..C; dist (float64) must be +inf on entry; done[] < stamp on entry."""
    nb = C + 1
    for b in range(nb):
        head[b] = -1
    dist[s] = 0.0
    ev[0] = s
    enext[0] = -1
    head[0] = 0
    ne = 1
    pending = 1
    cur = 0
    while pending > 0:
        b = cur % nb
        while head[b] != -1:
            k = head[b]
            head[b] = enext[k]
            pending -= 1
            v = ev[k]
            if done[v] == stamp or dist[v] != cur:
                continue
            done[v] = stamp
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                nd = cur + iw[e]
                if nd < dist[u]:
                    dist[u] = nd
                    bb = nd % nb
                    ev[ne] = u
                    enext[ne] = head[bb]
                    head[bb] = ne
                    ne += 1
                    pending += 1
        cur += 1


@njit(cache=True, parallel=True)
def _dial_group(indptr, indices, iw, C, bin_width, sources, starts, row_sum, row_reach,
                row_max, row_harm, col_sum, col_reach, col_harm, hist, store, do_store,
                sentinel):
    n = len(indptr) - 1
    m = indptr[n]
    nb = len(starts) - 1
    for b in prange(nb):
        dist = np.empty(n)
        head = np.empty(C + 1, np.int64)
        ev = np.empty(m + 1, np.int32)
        enext = np.empty(m + 1, np.int64)
        done = np.zeros(n, np.int64)
        for i in range(starts[b], starts[b + 1]):
            dist[:] = np.inf
            s = sources[i]
            _dial_into(indptr, indices, iw, C, s, dist, head, ev, enext, done, i + 1)
            _reduce_row(dist, s, i, False, bin_width, row_sum, row_reach, row_max, row_harm,
                        col_sum[b], col_reach[b], col_harm[b], hist[b])
            if do_store:
                _store_row(store, i, dist, sentinel)


def dial(graph, source: int) -> np.ndarray:
    """Single-source distances by Dial's algorithm (integer weights; see dial_applicable)."""
    if not dial_applicable(graph):
        raise ValueError(f"dial needs integer weights in [0, {DIAL_MAX_WEIGHT}]")
    n, m = graph.n, graph.num_arcs
    iw = (graph.weights if graph.weights is not None else np.ones(m)).astype(np.int64)
    C = int(iw.max()) if m else 1
    dist = np.full(n, np.inf)
    _dial_into(graph.indptr, graph.indices, iw, C, int(source), dist, np.empty(C + 1, np.int64),
               np.empty(m + 1, np.int32), np.empty(m + 1, np.int64), np.zeros(n, np.int64), 1)
    return dist


def dial_partials(graph, sources, bin_width: float = 1.0, batch: int = 32, store=None,
                  threads=None):
    """Per-source Dial APSP: one ChunkPartial per batch of ``batch`` sources, in order."""
    m = graph.num_arcs
    iw = (graph.weights if graph.weights is not None else np.ones(m)).astype(np.int64)
    C = max(1, int(iw.max()) if m else 1)
    hist_len = min(int(np.floor((graph.n - 1) * C / bin_width)) + 2, 1 << 22)
    return group_partials(_dial_group, graph, sources, batch, store, threads, hist_len,
                          extra=(iw, C, float(bin_width)), bin_width=float(bin_width))
