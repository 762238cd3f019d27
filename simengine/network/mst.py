"""Minimum spanning forest weight of an undirected graph: Kruskal (sort + union–find) and Prim
(binary heap, restarted in every component).  Unweighted graphs use unit weights."""
from __future__ import annotations

import numpy as np
from numba import njit

from .components import _find


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
        size = 1
        hk[0] = 0.0
        hv[0] = root
        first = True
        while size > 0:
            k = hk[0]
            v = hv[0]
            size -= 1
            if size > 0:
                kk = hk[size]
                vv = hv[size]
                i = 0
                while True:
                    c = 2 * i + 1
                    if c >= size:
                        break
                    if c + 1 < size and hk[c + 1] < hk[c]:
                        c += 1
                    if hk[c] < kk:
                        hk[i] = hk[c]
                        hv[i] = hv[c]
                        i = c
                    else:
                        break
                hk[i] = kk
                hv[i] = vv
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
                    i = size
                    size += 1
                    while i > 0:
                        p = (i - 1) >> 1
                        if hk[p] > w[e]:
                            hk[i] = hk[p]
                            hv[i] = hv[p]
                            i = p
                        else:
                            break
                    hk[i] = w[e]
                    hv[i] = u
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
