"""Minimum spanning forest weight of an undirected graph: Kruskal (sort + union–find) and Prim
(binary heap, restarted in every component).  Unweighted graphs use unit weights."""
from __future__ import annotations

import numpy as np
from numba import njit

from .components import _find
from .cpu.heap import heap_pop, heap_push


@njit(cache=True)
def _kruskal(n, s, d, w):
    parent = np.arange(n)
    total = 0.0
    used = 0
    for e in range(len(s)):
        a = _find(parent, s[e])
        b = _find(parent, d[e])
        if a != b:
            parent[max(a, b)] = min(a, b)
            total += w[e]
            used += 1
    return total, used


@njit(cache=True)
def _prim(indptr, indices, w):
    n = len(indptr) - 1
    intree = np.zeros(n, np.bool_)
    m = indptr[n]
    hk = np.empty(m + 1)
    hv = np.empty(m + 1, np.int64)
    total = 0.0
    used = 0
    for root in range(n):
        if intree[root]:
            continue
        size = heap_push(hk, hv, 0, 0.0, root)
        first = True
        while size > 0:
            k, v, size = heap_pop(hk, hv, size)
            if intree[v]:
                continue
            intree[v] = True
            if not first:
                total += k
                used += 1
            first = False
            for e in range(indptr[v], indptr[v + 1]):
                u = indices[e]
                if not intree[u]:
                    size = heap_push(hk, hv, size, w[e], u)
    return total, used


def _check(graph):
    if graph.directed:
        raise ValueError("minimum spanning forest needs an undirected graph")
    return graph.weights if graph.weights is not None else np.ones(graph.num_arcs)


def mst_kruskal(graph) -> tuple[float, int]:
    """(total weight, number of edges) of a minimum spanning forest, by Kruskal."""
    w = _check(graph)
    s, d = graph.arcs()
    fwd = s < d
    s, d, ww = s[fwd], d[fwd], w[fwd]
    order = np.argsort(ww, kind="stable")
    t, u = _kruskal(graph.n, s[order], d[order], ww[order])
    return float(t), int(u)


def mst_prim(graph) -> tuple[float, int]:
    """(total weight, number of edges) of a minimum spanning forest, by Prim."""
    w = _check(graph)
    t, u = _prim(graph.indptr, graph.indices, w)
    return float(t), int(u)


def minimum_spanning_forest_weight(graph, algorithm: str = "kruskal") -> float:
    if algorithm not in ("kruskal", "prim"):
        raise ValueError("algorithm must be kruskal or prim")
    return (mst_kruskal if algorithm == "kruskal" else mst_prim)(graph)[0]
