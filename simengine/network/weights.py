"""Checks on arc weights that every shortest-path engine (CPU or CUDA) relies on."""
from __future__ import annotations

import numpy as np

from ..errors import UserError

#: Dial's algorithm (a bucket per distance modulo C+1) applies when every weight is an integer in
#: [0, DIAL_MAX_WEIGHT]
DIAL_MAX_WEIGHT = 1 << 12

#: the largest |weight| accepted (graph files and graphs): integers up to 2^53 are exact in
#: float64, and a path of up to 2^31 such arcs stays far inside float64's range
WEIGHT_MAX = float(1 << 53)


def check_weights(graph) -> None:
    """UserError when a weighted ``graph`` has a non-finite or negative weight (the shortest-path
    engines need weights >= 0)."""
    w = graph.weights
    if w is None or len(w) == 0:
        return
    if not np.all(np.isfinite(w)):
        raise UserError("graph has non-finite edge weights")
    if np.abs(w).max() > WEIGHT_MAX:
        raise UserError(f"graph has an edge weight of {np.abs(w).max():.3g}, beyond the largest "
                        f"accepted, 2^53 = {WEIGHT_MAX:.0f}")
    if w.min() < 0:
        raise UserError(f"graph has negative edge weights (min {w.min():g}); "
                        "shortest paths here need weights >= 0")


def dial_applicable(graph) -> bool:
    """True if every weight is a non-negative integer <= DIAL_MAX_WEIGHT (or the graph is
    unweighted).  A graph's shape (:class:`simengine.plan.problem.GraphShape`) answers with its
    ``dial``."""
    dial = getattr(graph, "dial", None)
    if isinstance(dial, bool):
        return dial
    w = graph.weights
    if w is None or len(w) == 0:
        return True
    return bool(w.min() >= 0 and w.max() <= DIAL_MAX_WEIGHT and np.all(w == np.floor(w)))
