"""Edge betweenness (``statistics: [edge_betweenness]``): definitions, scales, and where it runs.

For an arc e, B(e) = Σ_s Σ_t σ_st(e)/σ_st over ordered pairs (s, t), s ≠ t: Brandes' backward
pass gives the per-source sums (:mod:`.cpu.edge_brandes`, and on the GPU for unweighted graphs
:func:`.cuda.brandes.edge_dependencies`). Reported as networkx
``edge_betweenness_centrality(G, normalized=..., weight=...)``:

* directed graphs: B(e) per arc;
* undirected graphs: an edge {u, v} is the two arcs u → v and v → u; its value
  (B(u→v) + B(v→u)) / 2 is stored on both arcs;
* ``normalized`` (``metrics.betweenness_normalized``): divided by n(n − 1) instead (both kinds);
* sampled sources (K of n, uniform): × n/K (networkx ``k=``; every vertex can be a source of a
  path through e); listed sources: the sum over them, no inflation.

The pass runs after the shortest-path sources, over the same sources, on rank 0 (the run's
``elapsed`` includes it); results are stored per arc in ``/edge`` (docs/output.md).
"""
from __future__ import annotations

import numpy as np

#: the entry of ``metrics.statistics``
NAME = "edge_betweenness"


def choose(graph, backend: str) -> tuple[str, str]:
    """(where it runs, the reason): the GPU kernel is for unweighted graphs. ``graph``: a built
    graph or its shape — the run's plan asks this once (its ``edge_betweenness`` row)."""
    from .backends import resolve_backend

    b = resolve_backend(backend)
    if b == "cuda" and graph.weighted:
        return "cpu", ("edge_betweenness: the GPU kernel is unweighted only (BFS levels); this "
                       "weighted graph runs the CPU engine (Dijkstra order)")
    how = "Dijkstra order" if graph.weighted else "BFS levels"
    return b, f"edge_betweenness: Brandes' backward pass per arc ({how}) on {b}"


def scale(n: int, directed: bool, normalized: bool, sampled: int | None = None) -> float:
    """Factor from the per-source sums to the reported value; ``sampled`` = K sources of n."""
    if normalized:
        c = 1.0 / (n * (n - 1)) if n > 1 else 1.0
    else:
        c = 1.0 if directed else 0.5
    if sampled:
        c *= n / sampled
    return c


def reverse_arc(graph) -> np.ndarray:
    """For every arc e = (u, v) of an undirected graph, the index of the arc (v, u)."""
    n = graph.n
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(graph.indptr))
    dst = graph.indices.astype(np.int64)
    key = src * n + dst
    order = np.argsort(key)
    back = np.searchsorted(key[order], dst * n + src)
    return order[back]


def edge_betweenness(graph, sources, *, sampled: bool = False, normalized: bool = False,
                     backend: str = "cpu", device=None, log=None) -> dict:
    """``edge_betweenness`` (float64, one per arc in CSR order), ``edge_source`` and
    ``edge_target`` (the arcs' endpoints, vertex indices) over ``sources``."""
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    where, note = choose(graph, backend)
    if log is not None:
        log(note)
    if where == "cuda":
        from .cuda.brandes import edge_dependencies

        raw = edge_dependencies(graph, sources, device=device)
    else:
        from .cpu.edge_brandes import edge_dependencies

        raw = edge_dependencies(graph, sources)
    if not graph.directed:
        raw = raw + raw[reverse_arc(graph)]
    n = graph.n
    k = len(sources) if sampled and len(sources) < n else None
    src = np.repeat(np.arange(n, dtype=np.int64), np.diff(graph.indptr))
    return {NAME: raw * scale(n, graph.directed, normalized, k), "edge_source": src,
            "edge_target": graph.indices.astype(np.int64)}
