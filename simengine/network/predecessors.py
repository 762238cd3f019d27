"""Shortest-path predecessors (``metrics.store_predecessors``, ``/predecessors``): the rule and the
backend dispatch.

**Rule.** From a source's distance row d (as stored: hops or float64 weight sums), an arc v → u is
*tight* when d[v] + w(v, u) == d[u] (exactly, in the arithmetic the engines use).  A breadth-first
search over tight arcs from the source gives every reachable vertex u a level h(u) (the fewest arcs
of a shortest path); ``pred[u]`` is the **smallest-index tight in-neighbour of level h(u) − 1**.
So pred[u] lies on a shortest path, following pred from any vertex reaches the source in h(u)
steps (no cycles, even through zero-weight arcs), and the result depends on the distances alone:
every algorithm and backend gives the same predecessors for the same distances.  ``pred[source]``
and ``pred[unreachable]`` are −1 (scipy writes −9999).

The CPU kernel is :mod:`simengine.network.cpu.predecessors`, the GPU one
:mod:`simengine.network.cuda.predecessors`.  With integer weights (or none) Floyd–Warshall's
distances are exact, so ``fw`` keeps running and its rows give the predecessors by the same rule
(the min-plus kernels' own predecessor matrix picks among equal paths differently, so the rule is
applied to the rows, not copied from it).  With real weights Floyd–Warshall sums in an order that
is not a path's, so the registry's Floyd–Warshall row refuses a run that asks for predecessors
(:func:`simengine.network.backends.fw_refusal`) and the engine's ``without_fw`` runs (logged).
"""
from __future__ import annotations

import numpy as np

from .statistics import unreachable_sentinel


def exact_rows(graph) -> bool:
    """True when every distance is an exact float64 path sum in any order of addition: no weights
    or integer weights (below 2^53 by :func:`~.weights.check_weights`)."""
    w = graph.weights
    return w is None or len(w) == 0 or bool(np.all(w == np.floor(w)))


def predecessor_rows(graph, sources, dist, out, backend: str = "cpu", device=None) -> None:
    """Fill ``out`` (len(sources) × n, int32) with the predecessors of the distance rows ``dist``
    (the store of :func:`simengine.network.apsp.run_sources`; unreachable = its dtype's sentinel)
    on ``backend``."""
    if backend == "cuda":
        from .cuda.predecessors import predecessor_rows as rows
    else:
        from .cpu.predecessors import predecessor_rows as rows
    dist = np.asarray(dist)
    missing = rows(graph, sources, dist, float(unreachable_sentinel(dist.dtype)), out,
                   device=device)
    if missing:
        raise RuntimeError(f"predecessors: {missing} reachable vertices have no chain of tight "
                           f"arcs back to their source (the distances are not shortest paths)")


def check_predecessors(graph, store, predecessors, num_sources: int) -> None:
    """ValueError unless ``predecessors`` is None or a (num_sources, n) int32 array beside a
    distance ``store``."""
    if predecessors is None:
        return
    if store is None:
        raise ValueError("predecessors need the distances: pass store= as well")
    if predecessors.shape != (num_sources, graph.n) or predecessors.dtype != np.int32:
        raise ValueError(f"predecessors must be an int32 array of shape {(num_sources, graph.n)}")
