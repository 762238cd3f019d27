"""Shortest-path predecessors from distance rows on the GPU — the twin of
:mod:`simengine.network.cpu.predecessors` (same rule, same result).

Hop distances (unweighted graphs): one launch, one thread per (row, vertex) scanning the vertex's
sorted in-arcs for the first p with d[p] = d[u] − 1 (the levels are the distances).  Weights: one
thread per (row, vertex), one launch per level of the breadth-first search over tight arcs
(d[v] + w(v,u) == d[u]): a vertex of level L expands its tight out-arcs; an unlevelled target gets
level L+1 (concurrent writers store the same value) and ``atomic.min`` keeps the smallest
predecessor of level L, so the result does not depend on thread order.  The rows are uploaded from
the host's stored distances (the engines' device buffers are not shared); one int is read back per
level.
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from . import device_context, device_graph, simulator

THREADS = 32 if simulator() else 256
NONE = np.int32(2**31 - 1)


@cuda.jit
def _init(level, pred, sources):
    tid = cuda.grid(1)
    B, n = level.shape
    if tid < B * n:
        b = tid // n
        v = tid - b * n
        pred[b, v] = NONE
        level[b, v] = 0 if v == sources[b] else -1


@cuda.jit
def _expand(indptr, indices, weights, dist, sentinel, level, pred, L, changed):
    tid = cuda.grid(1)
    B, n = level.shape
    if tid < B * n:
        b = tid // n
        v = tid - b * n
        if level[b, v] == L:
            dv = np.float64(dist[b, v])
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                du = np.float64(dist[b, u])
                if du == sentinel:
                    continue
                if dv + weights[e] != du:
                    continue
                lu = level[b, u]
                if lu < 0 or lu == L + 1:
                    level[b, u] = L + 1
                    cuda.atomic.min(pred, (b, u), np.int32(v))
                    changed[0] = 1


@cuda.jit
def _hop(tindptr, tindices, dist, sentinel, sources, pred):
    """Hop distances: pred[b, u] = the first in-neighbour p with d[p] = d[u] − 1 (the BFS levels
    are the distances); one launch, no levels."""
    tid = cuda.grid(1)
    B, n = pred.shape
    if tid < B * n:
        b = tid // n
        u = tid - b * n
        p = -1
        du = np.float64(dist[b, u])
        if u != sources[b] and du != sentinel:
            for e in range(tindptr[u], tindptr[u + 1]):
                q = tindices[e]
                if np.float64(dist[b, q]) + 1.0 == du:
                    p = q
                    break
        pred[b, u] = p


def predecessor_rows(graph, sources, dist, sentinel: float, out, device=None) -> int:
    """As :func:`simengine.network.cpu.predecessors.predecessor_rows`, on GPU ``device``."""
    S, n = len(sources), graph.n
    if S == 0 or n == 0:
        return 0
    with device_context(device):
        dg = device_graph(graph)
        d = cuda.to_device(np.ascontiguousarray(dist))
        pred = cuda.device_array((S, n), np.int32)
        blocks = -(-(S * n) // THREADS)
        src = cuda.to_device(np.ascontiguousarray(sources, np.int64))
        if graph.weights is None:
            _hop[blocks, THREADS](dg.t_indptr, dg.t_indices, d, float(sentinel), src, pred)
            p = pred.copy_to_host()
            out[...] = p
            finite = np.asarray(dist, dtype=np.float64) != float(sentinel)
            finite[np.arange(S), np.asarray(sources, np.int64)] = False
            return int(np.count_nonzero(finite & (p < 0)))
        level = cuda.device_array((S, n), np.int32)
        _init[blocks, THREADS](level, pred, src)
        changed = cuda.device_array(1, np.int32)
        L = 0
        while True:
            changed.copy_to_device(np.zeros(1, np.int32))
            _expand[blocks, THREADS](dg.indptr, dg.indices, dg.weights, d, float(sentinel), level,
                                     pred, L, changed)
            if not changed.copy_to_host()[0]:
                break
            L += 1
        p = pred.copy_to_host()
        reached = level.copy_to_host() >= 0
    p[p == NONE] = -1
    out[...] = p
    finite = np.asarray(dist, dtype=np.float64) != float(sentinel)
    return int(np.count_nonzero(finite & ~reached))
