"""Triangle counts per vertex on the CPU (numba, ``prange`` over vertices; each vertex writes only
its own entry).  The per-vertex bodies are :mod:`simengine.network.triangles`; the GPU twin is
:mod:`simengine.network.cuda.clustering` (same signature)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..triangles import vertex_kernels

_out_triangles, _directed_triangles = vertex_kernels(lambda f: njit(cache=True)(f))


@njit(cache=True, parallel=True)
def _out_counts(indptr, indices, out):
    for u in prange(len(indptr) - 1):
        out[u] = _out_triangles(u, indptr, indices)


@njit(cache=True, parallel=True)
def _directed_counts(indptr, indices, tindptr, tindices, out):
    for u in prange(len(indptr) - 1):
        out[u] = _directed_triangles(u, indptr, indices, tindptr, tindices)


def triangle_counts(graph, device=None):
    """``(out, directed)`` int64 arrays of length n: ``out`` = Σ_{v∈S(u)} |S(u)∩S(v)| (twice the
    triangles through u when undirected), ``directed`` = Fagiolo's T(u) (None for undirected
    graphs).  ``device`` must be None (the CPU has no devices)."""
    if device is not None:
        raise ValueError(f"the cpu backend has no devices (device={device!r}); pass None")
    out = np.zeros(graph.n, np.int64)
    _out_counts(graph.indptr, graph.indices, out)
    if not graph.directed:
        return out, None
    t = graph.transpose()
    directed = np.zeros(graph.n, np.int64)
    _directed_counts(graph.indptr, graph.indices, t.indptr, t.indices, directed)
    return out, directed
