"""Betweenness centrality of a graph from Python: the engines, the estimator and the scales of
:mod:`simengine.network.betweenness` behind one call (a run's ``betweenness`` statistic does the
same through the network job)."""
from __future__ import annotations

from . import betweenness as definitions


def betweenness(graph, sources="all", *, weight: bool = True, normalized: bool = False,
                seed=None, backend: str = "cpu", device=None, log=None) -> dict:
    """Betweenness centrality of every vertex of ``graph`` (a CSRGraph).

    ``sources``: ``"all"`` (exact), ``{"sample": K, "seed": s}`` (estimate with
    ``betweenness_stderr``) or a list of vertex indices.  ``weight=False`` ignores the graph's
    weights (hops).  ``log`` hears where the engine runs (one line; without it, a warning when
    it is not ``backend``: weighted graphs on ``cuda`` run the CPU engine).  Returns the
    :meth:`PathStatistics.results` dict: ``betweenness`` (float64, n), the path statistics of the
    same traversals, ``scope``.
    """
    from .apsp import run_sources
    from .backends import AlgorithmSubstitution, brandes_backend, resolve_backend
    from .sources import choose_sources
    from .statistics import PathStatistics

    if not weight and graph.weighted:
        import dataclasses

        graph = dataclasses.replace(graph, weights=None, _transpose=None)
    where, note = brandes_backend(graph, backend)
    if log is not None:
        log(note)
    elif where != resolve_backend(backend):
        import warnings

        warnings.warn(note, AlgorithmSubstitution, stacklevel=2)
    src, sampled = choose_sources(graph.n, sources, seed)
    stats = PathStatistics.for_graph(graph, sampled=sampled, planned_sources=len(src),
                                     betweenness=definitions.mode(True, normalized))
    run_sources(graph, src, stats, backend=backend, device=device, log=log)
    return stats.results(graph=graph)
