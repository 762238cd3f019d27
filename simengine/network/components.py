"""Connected components: weak (union–find over arcs) and strong (iterative Tarjan).

Labels are renumbered so that component 0 contains vertex 0, component 1 the smallest vertex not in
component 0, and so on (deterministic).
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _find(parent, x):
    r = x
    while parent[r] != r:
        r = parent[r]
    while parent[x] != r:
        nx_ = parent[x]
        parent[x] = r
        x = nx_
    return r


@njit(cache=True)
def _weak(indptr, indices):
    n = len(indptr) - 1
    parent = np.arange(n)
    for v in range(n):
        for e in range(indptr[v], indptr[v + 1]):
            a = _find(parent, v)
            b = _find(parent, indices[e])
            if a != b:
                if a < b:
                    parent[b] = a
                else:
                    parent[a] = b
    lab = np.empty(n, np.int64)
    for v in range(n):
        lab[v] = _find(parent, v)
    return lab


@njit(cache=True)
def _tarjan(indptr, indices):
    n = len(indptr) - 1
    index = np.full(n, -1, np.int64)
    low = np.zeros(n, np.int64)
    onstack = np.zeros(n, np.bool_)
    stack = np.empty(n, np.int64)
    sp = 0
    cs_v = np.empty(n, np.int64)
    cs_e = np.empty(n, np.int64)
    comp = np.full(n, -1, np.int64)
    counter = 0
    ncomp = 0
    for root in range(n):
        if index[root] >= 0:
            continue
        top = 0
        cs_v[0] = root
        cs_e[0] = indptr[root]
        index[root] = counter
        low[root] = counter
        counter += 1
        stack[sp] = root
        sp += 1
        onstack[root] = True
        while top >= 0:
            v = cs_v[top]
            e = cs_e[top]
            if e < indptr[v + 1]:
                cs_e[top] = e + 1
                w = indices[e]
                if index[w] < 0:
                    index[w] = counter
                    low[w] = counter
                    counter += 1
                    stack[sp] = w
                    sp += 1
                    onstack[w] = True
                    top += 1
                    cs_v[top] = w
                    cs_e[top] = indptr[w]
                elif onstack[w]:
                    if index[w] < low[v]:
                        low[v] = index[w]
            else:
                if low[v] == index[v]:
                    while True:
                        sp -= 1
                        w = stack[sp]
                        onstack[w] = False
                        comp[w] = ncomp
                        if w == v:
                            break
                    ncomp += 1
                top -= 1
                if top >= 0:
                    u = cs_v[top]
                    if low[v] < low[u]:
                        low[u] = low[v]
    return comp


def _canonical(lab):
    _, first, inv = np.unique(lab, return_index=True, return_inverse=True)
    order = np.argsort(np.argsort(first))
    return int(len(first)), order[inv].astype(np.int64)


def connected_components(graph):
    """(count, labels) of the (weakly, for directed graphs) connected components."""
    if graph.n == 0:
        return 0, np.zeros(0, np.int64)
    return _canonical(_weak(graph.indptr, graph.indices))


def strongly_connected_components(graph):
    """(count, labels) of the strongly connected components (= weak for undirected graphs)."""
    if not graph.directed:
        return connected_components(graph)
    if graph.n == 0:
        return 0, np.zeros(0, np.int64)
    return _canonical(_tarjan(graph.indptr, graph.indices))


def component_summary(graph) -> dict:
    """Counts and largest sizes of weak and strong components."""
    nw, lw = connected_components(graph)
    ns, ls = strongly_connected_components(graph)
    return {"weak_components": nw, "largest_weak": int(np.bincount(lw).max()) if nw else 0,
            "strong_components": ns, "largest_strong": int(np.bincount(ls).max()) if ns else 0}
