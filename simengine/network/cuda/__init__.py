"""CUDA backend of the network engine (numba.cuda): BFS, frontier SSSP (label-correcting with
``atomic.min``; near–far variant), bitset multi-source BFS with on-device statistics, blocked
Floyd–Warshall, and the driver :func:`simengine.network.cuda.apsp.run_sources_cuda`.

Importing this package does not touch numba.cuda; the submodules do.  Works under the CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``) with the same code paths except where noted (warp votes are
replaced by shared-memory atomics, block sizes are small).  Design notes: ``docs/network-gpu.md``.
"""
from __future__ import annotations

import numpy as np

__all__ = ["simulator", "device_graph", "DeviceGraph", "clear_cache"]


def simulator() -> bool:
    """True when numba runs CUDA kernels in the Python simulator."""
    from numba import config

    return bool(config.ENABLE_CUDASIM)


class DeviceGraph:
    """The CSR arrays of one :class:`~simengine.network.graph.CSRGraph` on the device.

    ``indptr`` int64, ``indices`` int32, ``weights`` float64 (ones for unweighted graphs, made on
    first use), ``degree`` int32 (out-degree), and for directed graphs the transpose's
    ``t_indptr``/``t_indices`` (in-arcs, for pull steps); undirected graphs share the arrays.
    Uploaded once and cached on the graph object (:func:`device_graph`).
    """

    def __init__(self, graph):
        from numba import cuda

        self.n = int(graph.n)
        self.num_arcs = int(graph.num_arcs)
        self.directed = bool(graph.directed)
        self.weighted = graph.weights is not None
        self.indptr = cuda.to_device(np.ascontiguousarray(graph.indptr, dtype=np.int64))
        self.indices = cuda.to_device(np.ascontiguousarray(graph.indices, dtype=np.int32))
        deg = np.diff(graph.indptr).astype(np.int32)
        self.degree_host = deg
        self.degree = cuda.to_device(deg)
        self._graph_weights = graph.weights
        self._weights = None
        if self.directed:
            gt = graph.transpose()
            self.t_indptr = cuda.to_device(np.ascontiguousarray(gt.indptr, dtype=np.int64))
            self.t_indices = cuda.to_device(np.ascontiguousarray(gt.indices, dtype=np.int32))
        else:
            self.t_indptr, self.t_indices = self.indptr, self.indices
        self._order = None

    @property
    def weights(self):
        """float64 arc weights on the device (ones for an unweighted graph)."""
        from numba import cuda

        if self._weights is None:
            w = self._graph_weights
            if w is None:
                w = np.ones(self.num_arcs)
            self._weights = cuda.to_device(np.ascontiguousarray(w, dtype=np.float64))
        return self._weights

    @property
    def order(self):
        """Vertex ids sorted by out-degree (int32): neighbouring threads see similar degrees."""
        from numba import cuda

        if self._order is None:
            o = np.argsort(self.degree_host, kind="stable").astype(np.int32)
            self._order = cuda.to_device(o)
        return self._order


_ATTR = "_simengine_cuda_cache"


def device_graph(graph) -> DeviceGraph:
    """The cached :class:`DeviceGraph` of ``graph`` (uploaded on first use)."""
    cache = graph.__dict__.get(_ATTR)
    if cache is None:
        cache = {}
        graph.__dict__[_ATTR] = cache
    dg = cache.get("graph")
    if dg is None:
        dg = DeviceGraph(graph)
        cache["graph"] = dg
    return dg


def graph_cache(graph) -> dict:
    """Per-graph dict for other cached device data (e.g. the Floyd–Warshall matrix)."""
    device_graph(graph)
    return graph.__dict__[_ATTR]


def clear_cache(graph) -> None:
    """Drop the device copies cached on ``graph`` (frees GPU memory)."""
    graph.__dict__.pop(_ATTR, None)
