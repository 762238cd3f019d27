"""APSP statistics driver: runs any set of sources through a backend and accumulates the partials.

``run_sources`` takes an explicit array of sources (a rank's or a GPU's share, in any order, not
necessarily a range), a backend and a device, and adds one
:class:`~simengine.network.statistics.ChunkPartial` per batch to a
:class:`~simengine.network.statistics.PathStatistics`.  Which algorithm runs where is decided by
the registry (:mod:`simengine.network.backends`).
"""
from __future__ import annotations

import numpy as np

from .algorithms import check_applicable
from .backends import brandes_backend, get_backend, report_substitution
from .predecessors import check_predecessors, predecessor_rows
from .sources import check_sources, choose_sources
from .weights import check_weights
from .statistics import PathStatistics, unreachable_sentinel

__all__ = ["run_sources", "apsp_statistics", "store_dtype", "check_store", "choose_sources"]


def store_dtype(graph):
    """Compact dtype for stored distances: uint8 / uint16 / uint32 hops (unweighted, sentinel =
    dtype max, chosen so that n-1 < sentinel), float64 (weighted, inf = unreachable)."""
    if graph.weighted:
        return np.dtype(np.float64)
    for dt in (np.uint8, np.uint16, np.uint32):
        if graph.n - 1 < np.iinfo(dt).max:
            return np.dtype(dt)
    return np.dtype(np.uint64)


def check_store(graph, store, num_sources: int) -> None:
    """ValueError unless ``store`` is a (num_sources, n) array whose dtype holds every distance."""
    if store is None:
        return
    if store.shape != (num_sources, graph.n):
        raise ValueError(f"store must have shape {(num_sources, graph.n)}")
    if store.dtype.kind in "iu" and graph.n - 1 >= unreachable_sentinel(store.dtype):
        raise ValueError(f"store dtype {store.dtype} cannot hold hop counts up to {graph.n - 1}")


def run_sources(graph, sources, stats: PathStatistics, algorithm: str = "auto",
                backend: str = "cpu", store=None, batch=None, progress=None, *,
                device: int | None = None, log=None, predecessors=None, **options) -> str:
    """Process ``sources`` and add their partials to ``stats``.

    Parameters
    ----------
    graph : CSRGraph
    sources : int array of source vertex ids (any subset of the vertices, in any order; none of
        them may be in ``stats`` already).
    stats : PathStatistics for this graph (its ``bin_width`` bins weighted distances).
    algorithm : any name of :mod:`simengine.network.algorithms` (``auto`` included).  A run split
        into many calls chooses once (the run's plan, :mod:`simengine.plan`, or
        :func:`simengine.network.backends.choose` with ``num_sources`` = the whole run) and
        passes the concrete algorithm here: a concrete algorithm the backend runs is run as it
        is, nothing is chosen again.
    backend : ``cpu`` | ``cuda`` | ``auto``.
    store : optional preallocated (len(sources), n) array receiving the distances; dtype from
        :func:`store_dtype` (unreachable = :func:`unreachable_sentinel`).
    batch : sources per batch (msbfs: a multiple of 64 on the CPU, of 32 on the GPU; default chosen
        per engine).
    progress : optional callable(done_sources: int) called after each batch with the number of
        this call's sources done so far.
    device : GPU ordinal for ``cuda`` (None: the current device); must be None for ``cpu``.
    log : optional callable(str) told when the backend substitutes the algorithm (without it,
        an :class:`~simengine.network.backends.AlgorithmSubstitution` warning).
    predecessors : optional (len(sources), n) int32 array (needs ``store``) receiving the
        shortest-path predecessors (:mod:`simengine.network.predecessors`; −1 = none); where
        Floyd–Warshall's rows are not exact path sums another algorithm runs (logged as a
        substitution).
    options : engine options (cpu: ``threads``; cuda: ``columns`` (default: the accumulator's
        running sums on the GPU, :mod:`.cuda.columns`; None: each batch's columns to the host),
        ``sort_by_degree``, ``delta``,
        ``persistent``).

    With ``stats.betweenness`` on, Brandes' engine runs instead of ``algorithm`` (the path
    statistics come from its traversals; :func:`~simengine.network.backends.brandes_backend`
    says where it runs; ``algorithm`` is then not used).  Returns the concrete algorithm name used (``brandes`` then).
    """
    if stats.n != graph.n:
        raise ValueError("stats is for a graph of another size")
    b = get_backend(backend)
    sources = check_sources(graph.n, sources)
    check_store(graph, store, len(sources))
    if stats.betweenness:      # Brandes: the path statistics from the same traversals
        check_predecessors(graph, store, predecessors, len(sources))
        check_weights(graph)
        parts = _brandes_partials(graph, sources, b.name, store, batch, stats, device,
                                  options)
        algorithm = "brandes"
    else:
        fw_ok = predecessors is None or algorithm != "fw"
        if not (algorithm in b.runs and fw_ok):     # auto, or another backend's name: choose
            p = b.choose(graph, algorithm, len(sources), predecessors=predecessors is not None)
            report_substitution(p, log)
            algorithm = p.algorithm
        else:
            check_applicable(graph, algorithm)
            check_weights(graph)
        check_predecessors(graph, store, predecessors, len(sources))
        if b.name == "cuda":    # column sums stay on the GPU until the accumulator is read
            options.setdefault("columns", _device_columns(stats, device))
        parts = b.iter_partials(graph, sources, algorithm, store=store, batch=batch,
                                bin_width=stats.bin_width, device=device, **options)
    done = 0
    for part in parts:
        stats.add(part)
        if predecessors is not None:
            k = slice(done, done + len(part.sources))
            predecessor_rows(graph, sources[k], store[k], predecessors[k], b.name, device)
        done += len(part.sources)
        if progress is not None:
            progress(done)
    return algorithm


def _device_columns(stats, device):
    """The accumulator's running column sums on GPU ``device`` (None: the current one)."""
    from .cuda.columns import DeviceColumns

    return stats.deferred_columns(("cuda", device), lambda: DeviceColumns(stats.n))


def _brandes_partials(graph, sources, backend, store, batch, stats, device, options):
    """The Brandes engine's partials where :func:`brandes_backend` puts it. The GPU engines
    compute only what ``stats`` keeps: Σ δ² for sampled runs (their standard error), the path
    statistics unless the run wants betweenness alone (``stats.paths``)."""
    where, _ = brandes_backend(graph, backend)
    if where == "cuda":
        from .cuda.betweenness import brandes_partials as cuda_brandes

        columns = _device_columns(stats, device) if stats.paths else None
        return cuda_brandes(graph, sources, store=store, batch=batch, device=device,
                            squares=bool(stats.sampled), paths=stats.paths, columns=columns,
                            bin_width=stats.bin_width)
    from .cpu.brandes import brandes_partials

    return brandes_partials(graph, sources, bin_width=stats.bin_width, batch=batch, store=store,
                            threads=options.get("threads"))


def apsp_statistics(graph, sources="all", algorithm="auto", seed=None, bin_width=1.0,
                    elapsed=False, backend="cpu") -> dict:
    """Convenience: choose sources, run them all, return ``PathStatistics.results()``."""
    import time

    src, sampled = choose_sources(graph.n, sources, seed)
    stats = PathStatistics.for_graph(graph, bin_width=bin_width, sampled=sampled,
                                     planned_sources=len(src))
    t0 = time.perf_counter()
    run_sources(graph, src, stats, algorithm, backend=backend)
    t = time.perf_counter() - t0
    return stats.results(elapsed=t if elapsed else None, graph=graph)
