"""Edge betweenness on the CPU: Brandes' backward pass credits every arc of the shortest-path DAG.

Per source s (Brandes 2001; Brandes 2008, "On variants of shortest-path betweenness", §3.4):
after the forward sweep (a BFS by levels, or Dijkstra with a binary heap for weighted graphs; σ
counts the shortest paths), the backward sweep visits the vertices in reverse order and, for
every arc e = (v, w) with d(v) + len(e) = d(w),

    c_s(e) = σ_s(v) · (1 + δ_s(w)) / σ_s(w),        δ_s(v) = Σ_e c_s(e).

``edge_dependencies`` returns Σ_s c_s(e) per CSR arc (arc e = ``indices[e]`` of row v); the
scales (networkx ``edge_betweenness_centrality``) are in :mod:`simengine.network.edge_betweenness`.
Parallel over equal batches of sources (``prange``, one per thread); each batch owns a row of arc
sums, added in batch order.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from .heap import heap_pop, heap_push


@njit(cache=True, error_model="numpy")
def _bfs_source(indptr, indices, s, dist, sigma, order, tval, out):
    dist[s] = 0
    sigma[s] = 1.0
    order[0] = s
    lo, tail = 0, 1
    while lo < tail:
        v = order[lo]
        lo += 1
        dv = dist[v] + 1
        sv = sigma[v]
        for e in range(indptr[v], indptr[v + 1]):
            w = indices[e]
            if dist[w] < 0:
                dist[w] = dv
                sigma[w] = 0.0
                order[tail] = w
                tail += 1
            if dist[w] == dv:
                sigma[w] += sv
    for k in range(tail - 1, -1, -1):
        v = order[k]
        dv = dist[v] + 1
        sv = sigma[v]
        x = 0.0
        for e in range(indptr[v], indptr[v + 1]):
            w = indices[e]
            if dist[w] == dv:
                c = sv * tval[w]
                out[e] += c
                x += c
        tval[v] = (1.0 + x) / sv
    for k in range(tail):
        dist[order[k]] = -1


@njit(cache=True, error_model="numpy")
def _dijkstra_source(indptr, indices, wts, s, dist, sigma, order, tval, hk, hv, out):
    dist[s] = 0.0
    sigma[s] = 1.0
    size = heap_push(hk, hv, 0, 0.0, s)
    ns = 0
    while size > 0:
        d, v, size = heap_pop(hk, hv, size)
        if d > dist[v]:
            continue
        order[ns] = v
        ns += 1
        sv = sigma[v]
        for e in range(indptr[v], indptr[v + 1]):
            w = indices[e]
            nd = d + wts[e]
            if nd < dist[w]:
                dist[w] = nd
                sigma[w] = sv
                size = heap_push(hk, hv, size, nd, w)
            elif nd == dist[w]:
                sigma[w] += sv
    for k in range(ns - 1, -1, -1):
        v = order[k]
        dv = dist[v]
        sv = sigma[v]
        x = 0.0
        for e in range(indptr[v], indptr[v + 1]):
            w = indices[e]
            if dv + wts[e] == dist[w]:
                c = sv * tval[w]
                out[e] += c
                x += c
        tval[v] = (1.0 + x) / sv
    for k in range(ns):
        dist[order[k]] = np.inf
    return ns


@njit(cache=True, parallel=True, error_model="numpy")
def _bfs_group(indptr, indices, sources, starts, sums):
    n = len(indptr) - 1
    for b in prange(len(starts) - 1):
        dist = np.full(n, -1, np.int64)
        sigma = np.zeros(n)
        order = np.empty(n, np.int32)
        tval = np.zeros(n)
        for i in range(starts[b], starts[b + 1]):
            _bfs_source(indptr, indices, sources[i], dist, sigma, order, tval, sums[b])


@njit(cache=True, parallel=True, error_model="numpy")
def _dijkstra_group(indptr, indices, wts, sources, starts, sums):
    n = len(indptr) - 1
    m = indptr[n]
    for b in prange(len(starts) - 1):
        dist = np.full(n, np.inf)
        sigma = np.zeros(n)
        order = np.empty(n, np.int32)
        tval = np.zeros(n)
        hk = np.empty(m + 1)
        hv = np.empty(m + 1, np.int32)
        for i in range(starts[b], starts[b + 1]):
            _dijkstra_source(indptr, indices, wts, sources[i], dist, sigma, order, tval, hk,
                             hv, sums[b])


def edge_dependencies(graph, sources, threads=None) -> np.ndarray:
    """Σ over ``sources`` of c_s(e) for every arc e of ``graph`` (float64, ``num_arcs``)."""
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    m = int(graph.indptr[-1])
    P = int(threads or numba.get_num_threads())
    nb = max(1, min(P, len(sources)))
    starts = np.linspace(0, len(sources), nb + 1).astype(np.int64)
    sums = np.zeros((nb, m))
    if len(sources):
        if graph.weighted:
            w = np.ascontiguousarray(graph.weights, dtype=np.float64)
            _dijkstra_group(graph.indptr, graph.indices, w, sources, starts, sums)
        else:
            _bfs_group(graph.indptr, graph.indices, sources, starts, sums)
    out = np.zeros(m)
    for b in range(nb):                     # batch order: independent of the threads
        out += sums[b]
    return out
