"""Shortest-path predecessors from stored distance rows, on the CPU (numba).  Hop distances: the
levels are the distances, so each vertex scans its sorted in-arcs for the first p with
d[p] = d[u] − 1 (``prange`` over rows).  Weights: a breadth-first search over the tight arcs per
row (``prange`` over chunks of rows; each chunk owns its queue and level buffers).  The rule is
:mod:`simengine.network.predecessors`'s; the GPU twin is :mod:`simengine.network.cuda.predecessors`.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange


@njit(cache=True)
def _tight_bfs(indptr, indices, weights, s, drow, sentinel, prow, level, queue):
    """One source: breadth-first search over the tight arcs (d[v] + w(v,u) == d[u]) from ``s``;
    ``prow[u]`` = the smallest tight in-neighbour one level above u.  Returns how many vertices
    have a finite distance but were not reached (0 unless the distances are not shortest)."""
    n = len(indptr) - 1
    for t in range(n):
        prow[t] = -1
        level[t] = -1
    level[s] = 0
    queue[0] = s
    head = 0
    tail = 1
    while head < tail:
        v = queue[head]
        head += 1
        dv = np.float64(drow[v])
        lv = level[v] + 1
        for e in range(indptr[v], indptr[v + 1]):
            u = indices[e]
            du = np.float64(drow[u])
            if du == sentinel:
                continue
            if dv + weights[e] != du:
                continue
            if level[u] < 0:
                level[u] = lv
                prow[u] = v
                queue[tail] = u
                tail += 1
            elif level[u] == lv and v < prow[u]:
                prow[u] = v
    finite = 0
    for t in range(n):
        if np.float64(drow[t]) != sentinel:
            finite += 1
    return finite - tail


@njit(cache=True)
def _hop_row(tindptr, tindices, s, drow, sentinel, prow):
    """Hop distances: the BFS levels are the distances, so pred[u] is the first (smallest)
    in-neighbour p with d[p] = d[u] − 1 — one scan of u's sorted in-arcs, stopping at the first."""
    n = len(tindptr) - 1
    missing = 0
    for u in range(n):
        prow[u] = -1
        du = np.float64(drow[u])
        if u == s or du == sentinel:
            continue
        for e in range(tindptr[u], tindptr[u + 1]):
            p = tindices[e]
            if np.float64(drow[p]) + 1.0 == du:
                prow[u] = p
                break
        if prow[u] < 0:
            missing += 1
    return missing


@njit(cache=True, parallel=True)
def _hop_rows(tindptr, tindices, sources, dist, sentinel, pred, missing):
    for i in prange(len(sources)):
        missing[i] = _hop_row(tindptr, tindices, sources[i], dist[i], sentinel, pred[i])


@njit(cache=True, parallel=True)
def _rows(indptr, indices, weights, sources, dist, sentinel, pred, starts, missing):
    n = len(indptr) - 1
    for c in prange(len(starts) - 1):
        level = np.empty(n, np.int32)
        queue = np.empty(max(n, 1), np.int32)
        for i in range(starts[c], starts[c + 1]):
            missing[i] = _tight_bfs(indptr, indices, weights, sources[i], dist[i], sentinel,
                                    pred[i], level, queue)


def predecessor_rows(graph, sources, dist, sentinel: float, out, device=None) -> int:
    """Fill ``out`` (len(sources) × n int32) from the distance rows ``dist`` (same shape; entries
    equal to ``sentinel`` are unreachable).  Returns the number of reachable vertices left without
    a predecessor chain (0 for shortest-path distances).  ``device`` must be None."""
    if device is not None:
        raise ValueError(f"the cpu backend has no devices (device={device!r}); pass None")
    S = len(sources)
    if S == 0:
        return 0
    sources = np.ascontiguousarray(sources, np.int64)
    missing = np.zeros(S, np.int64)
    if graph.weights is None:
        t = graph.transpose()
        _hop_rows(t.indptr, t.indices, sources, dist, float(sentinel), out, missing)
        return int(missing.sum())
    chunks = min(S, 4 * numba.get_num_threads())
    starts = np.linspace(0, S, chunks + 1).astype(np.int64)
    _rows(graph.indptr, graph.indices, graph.weights, sources, dist, float(sentinel), out, starts,
          missing)
    return int(missing.sum())
