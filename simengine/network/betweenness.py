"""Betweenness centrality (Brandes): definitions, the estimator from sampled sources, and a
Python entry point.

The engines (:mod:`simengine.network.cpu.brandes`, :mod:`simengine.network.cuda.brandes`) add,
per batch of sources, the dependencies δ_s(v) = Σ_t σ_st(v)/σ_st of every source s on every
vertex v (and their squares, for the standard errors) to the ``btw`` / ``btw_sq`` fields of a
:class:`~simengine.network.statistics.ChunkPartial`; :class:`PathStatistics` accumulates them with
the path statistics (same done set, merge, checkpoint).  This module turns the sums into results.

Let B(v) = Σ_{s ≠ v} δ_s(v), the sum over ordered pairs (s, t), s ≠ v ≠ t, of the fraction of
shortest s–t paths through v.  Then (networkx ``betweenness_centrality(G, normalized=...,
weight=...)``, endpoints excluded):

* ``betweenness[v]`` = B(v) / 2 for undirected graphs (every unordered pair was counted twice),
  B(v) for directed graphs;
* with ``normalized`` = B(v) / ((n − 1)(n − 2)) for both (n > 2; n ≤ 2: B(v) = 0).

Sampled sources (K of n, uniform without replacement): m_v = K − [v sampled] sources other than
v were drawn uniformly from the n − 1 vertices other than v, so B̂(v) = (n − 1)/m_v · Σ_{s in
sample} δ_s(v) is unbiased (networkx ``k=`` uses the same scales); its standard error is
(n − 1)·√((1 − m_v/(n − 1))·s²_v/m_v), s²_v the sample variance of δ_s(v) over those m_v sources
(with the same factor ½ or 1/((n−1)(n−2))).  Listed sources: Σ over the listed sources, no
inflation (networkx ``betweenness_centrality_subset(G, sources, targets=G)``).
"""
from __future__ import annotations

import numpy as np

#: ``PathStatistics.betweenness`` modes (stored in checkpoints)
OFF, RAW, NORMALIZED = 0, 1, 2


def mode(wanted: bool, normalized: bool = False) -> int:
    """The accumulator mode for a run that does (not) compute betweenness."""
    return (NORMALIZED if normalized else RAW) if wanted else OFF


def scale(n: int, directed: bool, normalized: bool) -> float:
    """Factor from B(v) (ordered pairs) to the reported value (networkx's rescaling)."""
    if n <= 2:
        return 1.0
    if normalized:
        return 1.0 / ((n - 1) * (n - 2))
    return 1.0 if directed else 0.5


def results(stats, idx: np.ndarray) -> dict:
    """``betweenness`` (and ``betweenness_stderr`` for sampled runs) from the accumulator
    ``stats`` (a :class:`~simengine.network.statistics.PathStatistics` with betweenness on);
    ``idx`` = the done sources."""
    n, K = stats.n, len(idx)
    total = stats.btw + stats.btw_lo
    c = scale(n, stats.directed, stats.betweenness == NORMALIZED)
    out = {"betweenness_normalized": stats.betweenness == NORMALIZED}
    if not (stats.sampled and K < n):
        out["betweenness"] = total * c
        return out
    m = np.full(n, float(K))
    m[idx] -= 1.0                                   # sampled sources other than v
    sq = stats.btw_sq + stats.btw_sq_lo
    with np.errstate(divide="ignore", invalid="ignore"):
        est = np.where(m > 0, total * (n - 1) / np.maximum(m, 1.0), 0.0)
        var = np.where(m > 1, np.maximum(sq - total * total / np.maximum(m, 1.0), 0.0)
                       / np.maximum(m - 1.0, 1.0), np.nan)
        fpc = np.maximum(1.0 - m / (n - 1), 0.0)
        se = (n - 1) * np.sqrt(fpc * var / np.maximum(m, 1.0))
    out["betweenness"] = est * c
    out["betweenness_stderr"] = se * c
    return out


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
    from .backends import AlgorithmSubstitution, betweenness_plan, resolve_backend
    from .sources import choose_sources
    from .statistics import PathStatistics

    if not weight and graph.weighted:
        import dataclasses

        graph = dataclasses.replace(graph, weights=None, _transpose=None)
    where, note = betweenness_plan(graph, backend)
    if log is not None:
        log(note)
    elif where != resolve_backend(backend):
        import warnings

        warnings.warn(note, AlgorithmSubstitution, stacklevel=2)
    src, sampled = choose_sources(graph.n, sources, seed)
    stats = PathStatistics.for_graph(graph, sampled=sampled, planned_sources=len(src),
                                     betweenness=mode(True, normalized))
    run_sources(graph, src, stats, backend=backend, device=device, log=log)
    return stats.results(graph=graph)
