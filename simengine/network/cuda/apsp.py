"""CUDA APSP-statistics driver: the ``backend="cuda"`` twin of
:func:`simengine.network.apsp.run_sources`.

Algorithms (``algorithm=``):

* ``msbfs`` (default for unweighted graphs) — bitset multi-source BFS, 32·W sources per sweep,
  statistics reduced on the device (:mod:`.msbfs`);
* ``bfs`` — level-synchronous BFS, a batch of sources per launch, reduced on the device (:mod:`.bfs`,
  :mod:`.reduce`);
* ``dijkstra`` / ``frontier`` — label-correcting frontier SSSP with ``atomic.min`` (the GPU stand-in
  for Dijkstra), many sources per launch; ``nearfar`` — its near–far variant (:mod:`.sssp`);
* ``fw`` / ``floyd_warshall`` — blocked Floyd–Warshall on the dense matrix (:mod:`.floyd_warshall`).

``auto``: unweighted → ``msbfs``; weighted → ``fw`` when at least a quarter of the vertices are
sources (Floyd–Warshall computes every row anyway), the n² matrix fits (≤ FW_MAX_BYTES) and either
n ≤ FW_MAX_N, or n ≤ FW_DENSE_MAX_N and the arc density m / (n(n−1)) ≥ FW_MIN_DENSITY; otherwise
``frontier``.  Cutoffs from H100 measurements (docs/network-gpu.md): FW beat the frontier SSSP
over all sources at every size tried up to n = 8192 — by 1.0× on sparse (degree 6) graphs at
8192, 6× at density 0.1 — and its O(n³) cost overtakes the frontier's O(n·m·iterations) beyond
about n = 8192 for sparse graphs and later for dense ones.
"""
from __future__ import annotations

import numpy as np

from ...errors import UserError

#: auto → Floyd–Warshall for every weighted graph up to this size (all-sources runs)
FW_MAX_N = 8192
#: … and for dense weighted graphs (density ≥ FW_MIN_DENSITY) up to this size
FW_DENSE_MAX_N = 32768
FW_MIN_DENSITY = 0.02
#: largest distance matrix auto will allocate (bytes)
FW_MAX_BYTES = 16 << 30

_NAMES = {"auto": "auto", "msbfs": "msbfs", "bfs": "bfs", "dobfs": "dobfs",
          "dijkstra": "frontier",
          "sssp": "frontier", "frontier": "frontier", "frontier_sssp": "frontier",
          "dial": "frontier", "nearfar": "nearfar",
          "near_far": "nearfar", "delta": "nearfar", "fw": "fw", "floyd_warshall": "fw"}


def check_weights(graph) -> None:
    """UserError for negative or non-finite weights."""
    from ..apsp import check_weights as _cpu_check

    _cpu_check(graph, "dijkstra")


def resolve_algorithm_cuda(graph, algorithm: str = "auto", num_sources: int | None = None) -> str:
    """Concrete CUDA algorithm: ``msbfs``, ``bfs``, ``dobfs``, ``frontier``, ``nearfar`` or ``fw``.

    ``num_sources`` (default n) is how many sources the run has; ``auto`` picks Floyd–Warshall
    only when it is at least n/4, and a per-source traversal (``dobfs`` / ``nearfar``) when there
    are few (:func:`simengine.network.per_source.choose_per_source`)."""
    a = _NAMES.get(str(algorithm).lower())
    if a is None:
        raise UserError(f"unknown APSP algorithm {algorithm!r}; expected one of "
                        "auto, msbfs, bfs, dobfs, dijkstra, nearfar, fw")
    if a == "auto":
        n = graph.n
        k = n if num_sources is None else int(num_sources)
        from ..per_source import choose_per_source

        per = choose_per_source(graph, k, "cuda")
        if per is not None:
            return per
        if not graph.weighted:
            return "msbfs"
        dens = graph.num_arcs / (n * (n - 1)) if n > 1 else 1.0
        if 4 * k >= n and 8 * n * n <= FW_MAX_BYTES and (
                n <= FW_MAX_N or (n <= FW_DENSE_MAX_N and dens >= FW_MIN_DENSITY)):
            return "fw"
        return "frontier"
    if a in ("msbfs", "bfs", "dobfs") and graph.weighted:
        raise UserError(f"algorithm {a!r} ignores weights; use dijkstra, nearfar, fw or auto for "
                        "a weighted graph")
    return a


def _default_batch(alg: str, n: int) -> int:
    if alg == "msbfs":
        from .msbfs import DEFAULT_WORDS
        return 32 * DEFAULT_WORDS
    if alg == "fw":
        return 1024
    from . import simulator
    cap = 8 if simulator() else 256
    limit = (1 << 26) if alg == "bfs" else (1 << 25)       # elements of the distance block
    return int(max(1, min(cap, limit // max(1, n))))


def iter_partials_cuda(graph, sources, algorithm="auto", store=None, batch=None, bin_width=1.0,
                       sort_by_degree=False, delta=None, persistent=True):
    """Generator of ChunkPartials computed on the GPU, one per batch, in source order."""
    from . import device_graph, graph_cache
    from .reduce import reduce_rows, copy_to_store
    from ..statistics import unreachable_sentinel

    sources = np.ascontiguousarray(sources, dtype=np.int64)
    alg = resolve_algorithm_cuda(graph, algorithm, len(sources))
    if graph.weighted:
        check_weights(graph)
    n = graph.n
    if len(sources) and (sources.min() < 0 or sources.max() >= n):
        raise ValueError("source id out of range")
    if store is not None and store.shape != (len(sources), n):
        raise ValueError(f"store must have shape {(len(sources), n)}")
    weighted = graph.weighted
    bw = float(bin_width) if weighted else 1.0
    B = int(batch) if batch else _default_batch(alg, n)
    if alg == "msbfs":
        from .msbfs import msbfs_partials
        yield from msbfs_partials(graph, sources, words=max(1, B // 32), store=store,
                                  persistent=persistent)
        return
    if alg == "dobfs":
        from .dobfs import dobfs_partials
        yield from dobfs_partials(graph, sources, batch=int(batch) if batch else 8, store=store)
        return
    dg = device_graph(graph)
    if alg == "fw":
        from .floyd_warshall import floyd_warshall_device
        cache = graph_cache(graph)
        D = cache.get("fw")
        if D is None:
            D = floyd_warshall_device(graph)
            cache["fw"] = D
        H = D.copy_to_host() if store is not None else None     # one download for all rows
        for lo in range(0, len(sources), B):
            s = sources[lo:lo + B]
            if H is not None:
                blk = H[s, :n]
                store[lo:lo + len(s)] = np.where(np.isfinite(blk), blk, 0).astype(store.dtype)
                store[lo:lo + len(s)][~np.isfinite(blk)] = unreachable_sentinel(store.dtype)
            yield reduce_rows(D, s, s, n, np.inf, weighted, bw)
        return
    B = max(1, min(B, len(sources)))
    rows = np.arange(B, dtype=np.int64)
    if alg == "bfs":
        from .bfs import BFSBuffers, bfs_batch, UNREACHED
        buf = BFSBuffers(n, B)
        for lo in range(0, len(sources), B):
            s = sources[lo:lo + B]
            bfs_batch(dg, s, buf, sort_by_degree)
            if store is not None:
                copy_to_store(buf.dist, rows[:len(s)], store, lo, float(UNREACHED))
            yield reduce_rows(buf.dist, rows[:len(s)], s, n, float(UNREACHED), False, 1.0)
        return
    from .sssp import SSSPBuffers, sssp_batch
    buf = SSSPBuffers(n, B)
    for lo in range(0, len(sources), B):
        s = sources[lo:lo + B]
        sssp_batch(dg, s, buf, alg, delta)
        if store is not None:
            copy_to_store(buf.dist, rows[:len(s)], store, lo, np.inf)
        yield reduce_rows(buf.dist, rows[:len(s)], s, n, np.inf, weighted, bw)


def run_sources_cuda(graph, sources, stats, algorithm: str = "auto", backend: str = "cuda",
                     store=None, batch=None, progress=None, **options):
    """Process ``sources`` on the GPU and add one ChunkPartial per batch to ``stats``, in order.

    Same signature and results as :func:`simengine.network.apsp.run_sources` (distances and
    integer statistics exactly, floating sums to rounding).  ``options``: ``sort_by_degree``
    (bfs), ``delta`` (nearfar), ``persistent`` (msbfs: one cooperative launch per batch, default
    True).  ``batch``: sources per batch (msbfs: 32·W, W = batch // 32).  Returns the concrete
    algorithm name.
    """
    if backend != "cuda":
        raise UserError(f"run_sources_cuda called with backend {backend!r}")
    from numba import cuda

    if not cuda.is_available():
        raise UserError("backend 'cuda' requested but no CUDA GPU is available "
                        "(numba.cuda.is_available() is False)")
    if stats.n != graph.n:
        raise ValueError("stats is for a graph of another size")
    alg = resolve_algorithm_cuda(graph, algorithm, len(np.asarray(sources).ravel()))
    done = 0
    for p in iter_partials_cuda(graph, sources, alg, store=store, batch=batch,
                                bin_width=stats.bin_width, **options):
        stats.add(p)
        done += len(p.sources)
        if progress is not None:
            progress(done)
    return alg
