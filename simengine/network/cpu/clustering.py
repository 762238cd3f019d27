"""Triangle counts per vertex on the CPU (numba) — the twin of
:mod:`simengine.network.cuda.clustering` (same signature, same integers; the definitions are in
:mod:`simengine.network.triangles`).

The CPU counts with a mark array per worker instead of merging sorted rows (the GPU's way, which
needs no per-thread n-long buffer): a worker marks u's neighbours, then scans neighbours of
neighbours and adds the marks it meets.

* undirected: rows oriented by rank (degree, then id) — v's *higher-ranked* neighbours N⁺(v)
  (an O(m) CSR built once); t(u) = 2 Σ_{v ∈ N(u)} Σ_{w ∈ N⁺(v)} mark[w] counts every edge v–w
  inside N(u) once, and the scans cost Σ_v d(v)·d⁺(v), small for hubs (few neighbours outrank
  them);
* directed, out-triangles: Σ_{v ∈ S(u)} Σ_{w ∈ S(v)} mark_S[w];
* directed, Fagiolo: with weight(k) = [k ∈ P(u)] + [k ∈ S(u)],
  T(u) = Σ_j weight(j) Σ_{k ∈ P(j) ⊎ S(j)} weight(k) — the four intersections of networkx's sum
  at once.

Vertices are dealt to the workers round-robin (``prange`` over workers), each writing only its
own vertices' entries.
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange


@njit(cache=True)
def _oriented(indptr, indices, rank):
    """CSR of each vertex's neighbours of higher rank."""
    n = len(indptr) - 1
    optr = np.zeros(n + 1, np.int64)
    for u in range(n):
        c = 0
        for e in range(indptr[u], indptr[u + 1]):
            if rank[indices[e]] > rank[u]:
                c += 1
        optr[u + 1] = optr[u] + c
    oidx = np.empty(optr[n], np.int32)
    for u in range(n):
        k = optr[u]
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            if rank[v] > rank[u]:
                oidx[k] = v
                k += 1
    return optr, oidx


@njit(cache=True, parallel=True)
def _marked_counts(indptr, indices, sptr, sidx, out, workers):
    """out[u] = Σ_{v ∈ N(u)} Σ_{w ∈ scan(v)} [w ∈ N(u)] (N = indptr/indices rows, scan = sptr/sidx)."""
    n = len(indptr) - 1
    for c in prange(workers):
        mark = np.zeros(n, np.uint8)
        for u in range(c, n, workers):
            lo = indptr[u]
            hi = indptr[u + 1]
            for e in range(lo, hi):
                mark[indices[e]] = 1
            s = 0
            for e in range(lo, hi):
                v = indices[e]
                for f in range(sptr[v], sptr[v + 1]):
                    s += mark[sidx[f]]
            for e in range(lo, hi):
                mark[indices[e]] = 0
            out[u] = s


@njit(cache=True)
def _weighted_sum(indptr, indices, tindptr, tindices, weight, j):
    s = 0
    for f in range(indptr[j], indptr[j + 1]):
        s += weight[indices[f]]
    for f in range(tindptr[j], tindptr[j + 1]):
        s += weight[tindices[f]]
    return s


@njit(cache=True, parallel=True)
def _fagiolo_counts(indptr, indices, tindptr, tindices, out, workers):
    n = len(indptr) - 1
    for c in prange(workers):
        weight = np.zeros(n, np.uint8)      # 0, 1 or 2
        for u in range(c, n, workers):
            for e in range(indptr[u], indptr[u + 1]):
                weight[indices[e]] += 1
            for e in range(tindptr[u], tindptr[u + 1]):
                weight[tindices[e]] += 1
            s = 0
            for e in range(indptr[u], indptr[u + 1]):
                s += _weighted_sum(indptr, indices, tindptr, tindices, weight, indices[e])
            for e in range(tindptr[u], tindptr[u + 1]):
                s += _weighted_sum(indptr, indices, tindptr, tindices, weight, tindices[e])
            for e in range(indptr[u], indptr[u + 1]):
                weight[indices[e]] = 0
            for e in range(tindptr[u], tindptr[u + 1]):
                weight[tindices[e]] = 0
            out[u] = s


def triangle_counts(graph, device=None):
    """``(out, directed)`` int64 arrays of length n: ``out`` = Σ_{v∈S(u)} |S(u)∩S(v)| (twice the
    triangles through u when undirected), ``directed`` = Fagiolo's T(u) (None for undirected
    graphs).  ``device`` must be None (the CPU has no devices)."""
    if device is not None:
        raise ValueError(f"the cpu backend has no devices (device={device!r}); pass None")
    n = graph.n
    workers = max(1, min(n, numba.get_num_threads()))
    out = np.zeros(n, np.int64)
    if not graph.directed:
        deg = np.diff(graph.indptr)
        rank = np.empty(n, np.int64)
        rank[np.lexsort((np.arange(n), deg))] = np.arange(n)
        optr, oidx = _oriented(graph.indptr, graph.indices, rank)
        _marked_counts(graph.indptr, graph.indices, optr, oidx, out, workers)
        return 2 * out, None
    _marked_counts(graph.indptr, graph.indices, graph.indptr, graph.indices, out, workers)
    t = graph.transpose()
    directed = np.zeros(n, np.int64)
    _fagiolo_counts(graph.indptr, graph.indices, t.indptr, t.indices, directed, workers)
    return out, directed
