"""Triangle counts per vertex over a CSR graph with sorted adjacency: what is counted, and the
per-vertex bodies by sorted-row intersection that the GPU compiles
(:mod:`simengine.network.cuda.clustering`, ``cuda.jit(device=True)``; they also compile with
numba ``njit`` and serve as the plain reference).  The CPU counts the same integers with mark
arrays (:mod:`simengine.network.cpu.clustering`); the tests compare the two.

:func:`vertex_kernels` takes the compiler (``jit``) and returns the two per-vertex functions:

* ``out_triangles(u, indptr, indices)`` = Σ_{v ∈ S(u)} |S(u) ∩ S(v)| with S = the out-neighbours.
  For an undirected graph this is twice the number of triangles through u (networkx's ``t`` in
  ``clustering`` and ``transitivity``); for a directed graph it is what ``nx.transitivity`` counts
  on a ``DiGraph`` (ordered pairs of out-neighbours v, w of u with an arc v → w).
* ``directed_triangles(u, indptr, indices, tindptr, tindices)`` = Fagiolo's T(u) as networkx
  counts it for ``nx.clustering`` on a ``DiGraph``: Σ over j in P(u) and in S(u) (a reciprocal
  neighbour twice) of |P(u)∩P(j)| + |P(u)∩S(j)| + |S(u)∩P(j)| + |S(u)∩S(j)|, P = in-neighbours
  (the transpose's rows ``tindptr``/``tindices``).

Rows must be sorted and free of self-loops and duplicates (:class:`~simengine.network.graph.CSRGraph`
guarantees both); every intersection is a merge of two sorted rows.
"""
from __future__ import annotations


def count_common(a, alo, ahi, b, blo, bhi):
    """|a[alo:ahi] ∩ b[blo:bhi]| for two sorted rows without repeats: a merge, or — when one row
    is more than SKEW times longer — a binary search of each entry of the shorter one in what is
    left of the longer one (a hub's row against a leaf's costs the leaf's length × log)."""
    if ahi - alo > bhi - blo:
        a, alo, ahi, b, blo, bhi = b, blo, bhi, a, alo, ahi
    c = 0
    if (ahi - alo) * 8 < bhi - blo:
        lo = blo
        for i in range(alo, ahi):
            x = a[i]
            hi = bhi
            while lo < hi:
                mid = (lo + hi) // 2
                if b[mid] < x:
                    lo = mid + 1
                else:
                    hi = mid
            if lo == bhi:
                break
            if b[lo] == x:
                c += 1
                lo += 1
        return c
    while alo < ahi and blo < bhi:
        x = a[alo]
        y = b[blo]
        if x < y:
            alo += 1
        elif y < x:
            blo += 1
        else:
            c += 1
            alo += 1
            blo += 1
    return c


def vertex_kernels(jit):
    """``(out_triangles, directed_triangles)`` compiled by ``jit`` (e.g. ``njit(cache=True)`` or
    ``cuda.jit(device=True)``)."""
    common = jit(count_common)

    def out_triangles(u, indptr, indices):
        lo = indptr[u]
        hi = indptr[u + 1]
        s = 0
        for e in range(lo, hi):
            v = indices[e]
            s += common(indices, lo, hi, indices, indptr[v], indptr[v + 1])
        return s

    def pair_terms(plo, phi, slo, shi, j, indptr, indices, tindptr, tindices):
        jplo = tindptr[j]
        jphi = tindptr[j + 1]
        jslo = indptr[j]
        jshi = indptr[j + 1]
        return (common(tindices, plo, phi, tindices, jplo, jphi)
                + common(tindices, plo, phi, indices, jslo, jshi)
                + common(indices, slo, shi, tindices, jplo, jphi)
                + common(indices, slo, shi, indices, jslo, jshi))

    terms = jit(pair_terms)

    def directed_triangles(u, indptr, indices, tindptr, tindices):
        plo = tindptr[u]
        phi = tindptr[u + 1]
        slo = indptr[u]
        shi = indptr[u + 1]
        s = 0
        for e in range(plo, phi):
            s += terms(plo, phi, slo, shi, tindices[e], indptr, indices, tindptr, tindices)
        for e in range(slo, shi):
            s += terms(plo, phi, slo, shi, indices[e], indptr, indices, tindptr, tindices)
        return s

    return jit(out_triangles), jit(directed_triangles)
