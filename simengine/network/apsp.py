"""APSP statistics driver: runs a slice of sources through an engine and accumulates partials.

``run_sources`` takes an explicit array of sources (so MPI ranks / GPUs can each take a range) and
adds one :class:`~simengine.network.statistics.ChunkPartial` per batch to a
:class:`~simengine.network.statistics.PathStatistics`, in source order.
"""
from __future__ import annotations

import numpy as np

from ..errors import UserError
from .statistics import PathStatistics, unreachable_sentinel

ALGORITHMS = ("auto", "msbfs", "bfs", "dobfs", "dial", "dijkstra", "fw", "floyd_warshall")

#: ``auto`` uses Floyd–Warshall for weighted graphs with n ≤ FW_MAX_N and density ≥ FW_MIN_DENSITY
FW_MAX_N = 1500
FW_MIN_DENSITY = 0.1


def resolve_algorithm(graph, algorithm: str = "auto", num_sources: int | None = None) -> str:
    """Concrete algorithm for ``algorithm`` on ``graph``: ``msbfs``, ``bfs``, ``dobfs``, ``dial``,
    ``dijkstra`` or ``fw``.

    ``auto`` with few sources (``num_sources``, see :func:`per_source.choose_per_source`):
    ``dobfs`` (unweighted) or ``dial``/``dijkstra`` (weighted).  Otherwise unweighted →
    ``msbfs``; weighted with n ≤ FW_MAX_N and arc density m / (n(n-1)) ≥ FW_MIN_DENSITY →
    ``fw``; otherwise ``dial`` (bucket-queue Dijkstra) when every
    weight is an integer in [0, 4096], else ``dijkstra`` (binary heap).  ``msbfs``/``bfs`` on a
    weighted graph is an error (they ignore weights).
    """
    a = str(algorithm).lower()
    if a == "floyd_warshall":
        a = "fw"
    if a not in ("auto", "msbfs", "bfs", "dobfs", "dial", "dijkstra", "fw"):
        raise UserError(f"unknown APSP algorithm {algorithm!r}; expected one of "
                        "auto, msbfs, bfs, dobfs, dial, dijkstra, fw")
    from .sssp import dial_applicable

    if a == "dial" and not dial_applicable(graph):
        raise UserError("algorithm 'dial' needs integer weights in [0, 4096]")
    if a == "auto":
        if num_sources is not None:
            from .per_source import choose_per_source

            per = choose_per_source(graph, num_sources, "cpu")
            if per is not None:
                return per
        if not graph.weighted:
            return "msbfs"
        n = graph.n
        dens = graph.num_arcs / (n * (n - 1)) if n > 1 else 1.0
        if n <= FW_MAX_N and dens >= FW_MIN_DENSITY:
            return "fw"
        return "dial" if dial_applicable(graph) else "dijkstra"
    if a in ("msbfs", "bfs", "dobfs") and graph.weighted:
        raise UserError(f"algorithm {a!r} ignores weights; use dijkstra, fw or auto for a "
                        "weighted graph")
    return a


def store_dtype(graph):
    """Compact dtype for stored distances: uint8 / uint16 / uint32 hops (unweighted, sentinel =
    dtype max, chosen so that n-1 < sentinel), float64 (weighted, inf = unreachable)."""
    if graph.weighted:
        return np.dtype(np.float64)
    for dt in (np.uint8, np.uint16, np.uint32):
        if graph.n - 1 < np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)


def choose_sources(n: int, spec="all", seed=None) -> tuple[np.ndarray, bool]:
    """Sources for a run and whether they are a sample.

    ``spec``: ``"all"`` (every vertex), ``{"sample": K, "seed": s}`` (K distinct vertices drawn
    uniformly without replacement with ``numpy.random.default_rng(s)``, returned sorted), or an
    explicit list of vertex ids (kept in the given order; duplicates are an error).
    """
    if spec is None or (isinstance(spec, str) and spec == "all"):
        return np.arange(n, dtype=np.int64), False
    if isinstance(spec, dict):
        if set(spec) - {"sample", "seed"} or "sample" not in spec:
            raise UserError(f"sources: expected {{sample: K, seed: S}}, got {spec!r}")
        K = spec["sample"]
        if not isinstance(K, (int, np.integer)) or isinstance(K, bool) or K < 1:
            raise UserError(f"sources.sample must be a positive integer, got {K!r}")
        K = int(K)
        if K >= n:
            return np.arange(n, dtype=np.int64), False
        rng = np.random.default_rng(spec.get("seed", seed))
        return np.sort(rng.choice(n, size=K, replace=False)).astype(np.int64), True
    if isinstance(spec, str):
        raise UserError(f"sources: expected 'all', {{sample: K, seed: S}} or a list, got {spec!r}")
    arr = np.asarray(spec)
    if arr.ndim != 1 or (len(arr) and arr.dtype.kind not in "iu"):
        raise UserError("sources: an explicit list must be a flat list of vertex ids")
    arr = arr.astype(np.int64)
    if len(arr) and (arr.min() < 0 or arr.max() >= n):
        raise UserError(f"sources: vertex id out of range 0..{n - 1}")
    if len(np.unique(arr)) != len(arr):
        raise UserError("sources: duplicate vertex ids")
    return arr, False


def check_weights(graph, algorithm):
    if graph.weighted and algorithm in ("dial", "dijkstra", "fw") and len(graph.weights):
        if not np.all(np.isfinite(graph.weights)):
            raise UserError("graph has non-finite edge weights")
        if graph.weights.min() < 0:
            raise UserError(f"graph has negative edge weights (min {graph.weights.min():g}); "
                            "shortest paths here need weights >= 0")


def _sssp_batch(num_sources, threads=None) -> int:
    """Sources per Dijkstra/Dial batch: 32, or fewer so that a few sources still occupy every
    thread (one batch runs on one thread)."""
    import numba

    P = int(threads or numba.get_num_threads())
    return int(max(1, min(32, -(-int(num_sources) // P))))


def iter_partials(graph, sources, algorithm="auto", store=None, batch=None, bin_width=1.0,
                  threads=None):
    """Generator of ChunkPartials (CPU), one per batch, in source order."""
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    alg = resolve_algorithm(graph, algorithm, num_sources=len(sources))
    check_weights(graph, alg)
    if store is not None:
        if store.shape != (len(sources), graph.n):
            raise ValueError(f"store must have shape {(len(sources), graph.n)}")
        if store.dtype.kind in "iu" and graph.n - 1 >= unreachable_sentinel(store.dtype):
            raise ValueError(f"store dtype {store.dtype} cannot hold hop counts up to {graph.n-1}")
    if alg == "msbfs":
        words = None if batch is None else max(1, int(batch) // 64)
        from .msbfs import msbfs_partials
        return msbfs_partials(graph, sources, words=words, store=store, threads=threads)
    if alg == "dobfs":
        from .dobfs import dobfs_partials
        return dobfs_partials(graph, sources, batch=batch or 8, store=store)
    if alg == "bfs":
        from .bfs import bfs_partials
        return bfs_partials(graph, sources, batch=batch or 64, store=store, threads=threads)
    if alg == "dial":
        from .sssp import dial_partials
        return dial_partials(graph, sources, bin_width=bin_width,
                             batch=batch or _sssp_batch(len(sources), threads), store=store,
                             threads=threads)
    if alg == "dijkstra":
        from .sssp import dijkstra_partials
        return dijkstra_partials(graph, sources, bin_width=bin_width,
                                 batch=batch or _sssp_batch(len(sources), threads), store=store,
                                 threads=threads)
    from .floyd_warshall import fw_partials
    return fw_partials(graph, sources, bin_width=bin_width, batch=batch or 256, store=store)


def run_sources(graph, sources, stats: PathStatistics, algorithm: str = "auto",
                backend: str = "cpu", store=None, batch=None, progress=None):
    """Process ``sources`` (a slice of the run) and add their partials to ``stats`` in order.

    Parameters
    ----------
    graph : CSRGraph
    sources : int array of source vertex ids (this slice's share of the work).
    stats : PathStatistics for this graph (its ``bin_width`` bins weighted distances).
    algorithm : ``auto`` | ``msbfs`` | ``bfs`` | ``dobfs`` | ``dial`` | ``dijkstra`` | ``fw`` (see
        :func:`resolve_algorithm`; ``auto`` counts ``len(sources)`` as the run's sources).
    backend : ``cpu`` or ``cuda`` (lazily dispatches to
        ``simengine.network.cuda.apsp.run_sources_cuda`` with the same signature).
    store : optional preallocated (len(sources), n) array receiving the distances; dtype from
        :func:`store_dtype` (unreachable = :func:`unreachable_sentinel`).
    batch : sources per batch (msbfs: rounded down to a multiple of 64; default chosen per engine).
    progress : optional callable(done_sources:int) called after each batch.

    Returns the concrete algorithm name used.
    """
    if backend == "cuda":
        from .cuda.apsp import run_sources_cuda

        return run_sources_cuda(graph, sources, stats, algorithm=algorithm, backend=backend,
                                store=store, batch=batch)
    if backend != "cpu":
        raise UserError(f"unknown backend {backend!r}; expected cpu or cuda")
    if stats.n != graph.n:
        raise ValueError("stats is for a graph of another size")
    alg = resolve_algorithm(graph, algorithm, num_sources=len(np.asarray(sources).ravel()))
    done = 0
    for p in iter_partials(graph, sources, alg, store=store, batch=batch,
                           bin_width=stats.bin_width):
        stats.add(p)
        done += len(p.sources)
        if progress is not None:
            progress(done)
    return alg


def apsp_statistics(graph, sources="all", algorithm="auto", seed=None, bin_width=1.0,
                    elapsed=False) -> dict:
    """Convenience: choose sources, run them all, return ``PathStatistics.results()``."""
    import time

    src, sampled = choose_sources(graph.n, sources, seed)
    stats = PathStatistics.for_graph(graph, bin_width=bin_width, sampled=sampled,
                                     planned_sources=len(src))
    t0 = time.perf_counter()
    run_sources(graph, src, stats, algorithm)
    t = time.perf_counter() - t0
    return stats.results(elapsed=t if elapsed else None, graph=graph)
