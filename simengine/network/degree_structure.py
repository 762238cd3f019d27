"""Degree assortativity and k-core numbers (numba, CPU): definitions in docs/network.md,
"Structure statistics".

* :func:`degree_assortativity` = ``nx.degree_assortativity_coefficient(G)``: the Pearson
  correlation over arcs u → v of (deg u, deg v) — every edge both ways for undirected graphs;
  (out-degree of u, in-degree of v) for directed graphs (networkx's default ``x="out", y="in"``).
  NaN when it is undefined (no arcs, or every end has the same degree).
* :func:`core_numbers` = ``nx.core_number(G)`` (Batagelj–Zaversnik, O(m)): for directed graphs a
  vertex's degree is in- + out-degree and both arcs of a reciprocated pair count, as in networkx;
  the degeneracy is the largest core number.
"""
from __future__ import annotations

import numpy as np
from numba import njit


@njit(cache=True)
def _pearson(indptr, indices, x_of, y_of):
    n = len(indptr) - 1
    m = indptr[n]
    if m == 0:
        return np.nan
    sx = 0.0
    sy = 0.0
    for u in range(n):
        for e in range(indptr[u], indptr[u + 1]):
            sx += x_of[u]
            sy += y_of[indices[e]]
    mx = sx / m
    my = sy / m
    cxy = 0.0
    cxx = 0.0
    cyy = 0.0
    for u in range(n):
        dx = x_of[u] - mx
        for e in range(indptr[u], indptr[u + 1]):
            dy = y_of[indices[e]] - my
            cxy += dx * dy
            cxx += dx * dx
            cyy += dy * dy
    if cxx == 0.0 or cyy == 0.0:
        return np.nan
    return cxy / np.sqrt(cxx * cyy)


def degree_assortativity(graph) -> float:
    """Degree assortativity coefficient (see the module docstring)."""
    dout = graph.degree().astype(np.float64)
    din = graph.transpose().degree().astype(np.float64) if graph.directed else dout
    return float(_pearson(graph.indptr, graph.indices, dout, din))


@njit(cache=True)
def _cores(indptr, indices, tindptr, tindices, both):
    n = len(indptr) - 1
    deg = np.empty(n, np.int64)
    md = 0
    for v in range(n):
        d = indptr[v + 1] - indptr[v]
        if both:
            d += tindptr[v + 1] - tindptr[v]
        deg[v] = d
        if d > md:
            md = d
    start = np.zeros(md + 2, np.int64)
    for v in range(n):
        start[deg[v] + 1] += 1
    for d in range(md + 1):
        start[d + 1] += start[d]
    pos = np.empty(n, np.int64)
    vert = np.empty(n, np.int64)
    fill = start.copy()
    for v in range(n):
        pos[v] = fill[deg[v]]
        vert[pos[v]] = v
        fill[deg[v]] += 1
    for i in range(n):
        v = vert[i]
        for side in range(2 if both else 1):
            ip = indptr if side == 0 else tindptr
            ix = indices if side == 0 else tindices
            for e in range(ip[v], ip[v + 1]):
                u = ix[e]
                if deg[u] > deg[v]:
                    du = deg[u]
                    pu = pos[u]
                    pw = start[du]
                    w = vert[pw]
                    if u != w:
                        pos[u] = pw
                        vert[pu] = w
                        pos[w] = pu
                        vert[pw] = u
                    start[du] += 1
                    deg[u] = du - 1
    return deg


def core_numbers(graph) -> np.ndarray:
    """The core number of every vertex (int64; see the module docstring)."""
    t = graph.transpose()
    return _cores(graph.indptr, graph.indices, t.indptr, t.indices, bool(graph.directed))
