"""CUDA backend of the network engine (numba.cuda): BFS, frontier SSSP (label-correcting with
``atomic.min``; near–far variant), bitset multi-source BFS with on-device statistics, blocked
Floyd–Warshall, and :mod:`.engine`, which picks one of them and yields the per-batch partials.

Devices: every entry point takes a device ordinal (``None`` = the current device); the graph's
device copies (:func:`device_graph`, :func:`graph_cache`) are cached per graph *and per device*.

Importing this package does not touch numba.cuda; the submodules do.  Works under the CUDA
simulator (``NUMBA_ENABLE_CUDASIM=1``, one device) with the same code paths except where noted
(warp votes are replaced by shared-memory atomics, block sizes are small).  Design notes:
``docs/network-gpu.md``.
"""
from __future__ import annotations

import contextlib

import numpy as np

__all__ = ["simulator", "device_count", "current_device", "device_context", "on_device",
           "device_graph", "DeviceGraph", "graph_cache", "clear_cache"]


def simulator() -> bool:
    """True when numba runs CUDA kernels in the Python simulator."""
    from numba import config

    return bool(config.ENABLE_CUDASIM)


class DeviceGraph:
    """The CSR arrays of one :class:`~simengine.network.graph.CSRGraph` on the device.

    ``indptr`` int64, ``indices`` int32, ``weights`` float64 (ones for unweighted graphs, made on
    first use), ``degree`` int32 (out-degree), and for directed graphs the transpose's
    ``t_indptr``/``t_indices`` (in-arcs, for pull steps); undirected graphs share the arrays.
    Uploaded to the current device (``device``) once and cached on the graph object per device
    (:func:`device_graph`).
    """

    def __init__(self, graph):
        from numba import cuda

        self.device = current_device()
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
            with device_context(self.device):
                self._weights = cuda.to_device(np.ascontiguousarray(w, dtype=np.float64))
        return self._weights

    @property
    def order(self):
        """Vertex ids sorted by out-degree (int32): neighbouring threads see similar degrees."""
        from numba import cuda

        if self._order is None:
            o = np.argsort(self.degree_host, kind="stable").astype(np.int32)
            with device_context(self.device):
                self._order = cuda.to_device(o)
        return self._order


def device_count() -> int:
    """Number of CUDA devices numba sees (0 when CUDA is unavailable; 1 under the simulator)."""
    from numba import cuda

    if not cuda.is_available():
        return 0
    return len(cuda.gpus)


def current_device() -> int:
    """Ordinal of the device whose context is current (the simulator has only device 0)."""
    from numba import cuda

    return int(getattr(cuda.get_current_device(), "id", 0))


def device_context(device: int | None):
    """Context manager making GPU ``device`` current (``None``: leave the current one)."""
    if device is None:
        return contextlib.nullcontext()
    from numba import cuda

    d = int(device)
    if not 0 <= d < device_count():
        raise ValueError(f"CUDA device {device} does not exist (this process sees "
                         f"{device_count()} device(s))")
    return cuda.gpus[d]


def on_device(partials, device: int | None):
    """Iterate ``partials`` (a generator) with GPU ``device`` current during each step.

    The context is pushed for each step and popped before the partial is handed on, so two such
    iterators on different devices can be interleaved by one thread."""
    it = iter(partials)
    while True:
        with device_context(device):
            try:
                p = next(it)
            except StopIteration:
                return
        yield p


_ATTR = "_simengine_cuda_cache"


def graph_cache(graph, device: int | None = None) -> dict:
    """Per-graph, per-device dict of cached device data: ``"graph"`` (the :class:`DeviceGraph`),
    ``"fw"`` (the Floyd–Warshall matrix and its "no path" value, :func:`.floyd_warshall.fw_matrix`).  ``device`` None: the current device."""
    key = current_device() if device is None else int(device)
    per_device = graph.__dict__.setdefault(_ATTR, {})
    return per_device.setdefault(key, {})


def device_graph(graph, device: int | None = None) -> DeviceGraph:
    """The :class:`DeviceGraph` of ``graph`` on ``device`` (None: the current device), uploaded on
    first use."""
    cache = graph_cache(graph, device)
    dg = cache.get("graph")
    if dg is None:
        with device_context(device):
            dg = DeviceGraph(graph)
        cache["graph"] = dg
    return dg


def clear_cache(graph, device: int | None = None) -> None:
    """Drop the device copies cached on ``graph``: on every device (``device`` None) or on one."""
    if device is None:
        graph.__dict__.pop(_ATTR, None)
    else:
        graph.__dict__.get(_ATTR, {}).pop(int(device), None)


def cached_buffers(graph, key, make):
    """Engine buffers kept with the graph on the current device (:func:`graph_cache`): every
    batch reinitialises them, and a run on ranks calls the engine once per claim (allocating and
    zeroing B·n distances each time cost more than a small claim's traversal)."""
    cache = graph_cache(graph)
    buf = cache.get(key)
    if buf is None:
        buf = cache[key] = make()
    return buf
