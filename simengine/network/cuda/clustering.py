"""Triangle counts per vertex on the GPU: one thread per vertex, the per-vertex bodies of
:mod:`simengine.network.triangles` compiled as device functions — the twin of
:mod:`simengine.network.cpu.clustering` (same signature, same integers)."""
from __future__ import annotations

import numpy as np
from numba import cuda

from . import device_context, device_graph, simulator
from ..triangles import vertex_kernels

THREADS = 32 if simulator() else 256

_out_triangles, _directed_triangles = vertex_kernels(lambda f: cuda.jit(device=True)(f))


@cuda.jit
def _out_counts(indptr, indices, out):
    u = cuda.grid(1)
    if u < out.size:
        out[u] = _out_triangles(u, indptr, indices)


@cuda.jit
def _directed_counts(indptr, indices, tindptr, tindices, out):
    u = cuda.grid(1)
    if u < out.size:
        out[u] = _directed_triangles(u, indptr, indices, tindptr, tindices)


def triangle_counts(graph, device=None):
    """As :func:`simengine.network.cpu.clustering.triangle_counts`, on GPU ``device`` (None: the
    current one); the graph's cached device copy (:func:`device_graph`) is used."""
    n = graph.n
    if n == 0:
        return np.zeros(0, np.int64), (np.zeros(0, np.int64) if graph.directed else None)
    with device_context(device):
        dg = device_graph(graph)
        blocks = -(-n // THREADS)
        out = cuda.device_array(n, np.int64)
        _out_counts[blocks, THREADS](dg.indptr, dg.indices, out)
        res = out.copy_to_host()
        if not graph.directed:
            return res, None
        d = cuda.device_array(n, np.int64)
        _directed_counts[blocks, THREADS](dg.indptr, dg.indices, dg.t_indptr, dg.t_indices, d)
        return res, d.copy_to_host()
