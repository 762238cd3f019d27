"""Betweenness centrality (Brandes): definitions and the estimator from sampled sources (the
Python entry point is :func:`simengine.network.centrality.betweenness`).

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
