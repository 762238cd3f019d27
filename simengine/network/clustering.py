"""Clustering coefficients and transitivity from per-vertex triangle counts (definitions:
docs/network.md, "Structure statistics").

* undirected: ``clustering[u]`` = t(u) / (d(d−1)), t = twice the triangles through u, d = degree
  (= ``nx.clustering(G)``); ``transitivity`` = Σ t / Σ d(d−1) (= ``nx.transitivity``);
* directed (Fagiolo 2007, what ``nx.clustering`` computes on a ``DiGraph``): ``clustering[u]`` =
  T(u) / (2 (d_tot(d_tot−1) − 2 d_rec)), d_tot = in- + out-degree, d_rec = reciprocated
  out-arcs; ``transitivity`` = what ``nx.transitivity`` computes on a ``DiGraph``: the same sums
  as the undirected case over out-neighbours;
* ``average_clustering`` = the mean of ``clustering`` over every vertex (zeros included, as
  ``nx.average_clustering``).

Weights are ignored (networkx's ``weight=None``).  The counts come from the backend's kernel
(:mod:`simengine.network.cpu.clustering`, :mod:`simengine.network.cuda.clustering`).
"""
from __future__ import annotations

import numpy as np


def reciprocated_arcs(graph) -> np.ndarray:
    """Per vertex u, the number of out-arcs u → v whose reverse v → u exists (int64)."""
    n = graph.n
    src, dst = graph.arcs()
    if not len(src):
        return np.zeros(n, np.int64)
    keys = src * n + dst                    # CSR order: already sorted
    rev = dst * n + src
    pos = np.searchsorted(keys, rev)
    pos[pos == len(keys)] = 0
    hit = keys[pos] == rev
    return np.bincount(src[hit], minlength=n).astype(np.int64)


def triangle_counts(graph, backend: str = "cpu", device=None):
    """The backend's per-vertex counts ``(out, directed)`` (see :mod:`simengine.network.triangles`)."""
    if backend == "cuda":
        from .cuda.clustering import triangle_counts as counts
    else:
        from .cpu.clustering import triangle_counts as counts
    return counts(graph, device=device)


def _ratio(num, den):
    num = np.asarray(num, dtype=np.float64)
    den = np.asarray(den, dtype=np.float64)
    out = np.zeros(len(num))
    ok = num != 0
    out[ok] = num[ok] / den[ok]
    return out


def clustering_results(graph, backend: str = "cpu", device=None) -> dict:
    """``{"clustering": float64[n], "average_clustering": float, "transitivity": float}``."""
    out, directed = triangle_counts(graph, backend, device)
    dout = graph.degree().astype(np.int64)
    if graph.directed:
        dtot = dout + graph.transpose().degree().astype(np.int64)
        den = 2 * (dtot * (dtot - 1) - 2 * reciprocated_arcs(graph))
        c = _ratio(directed, den)
    else:
        c = _ratio(out, dout * (dout - 1))
    tri = int(out.sum())
    triads = int((dout * (dout - 1)).sum())
    return {"clustering": c,
            "average_clustering": float(c.mean()) if graph.n else 0.0,
            "transitivity": tri / triads if tri else 0.0}
