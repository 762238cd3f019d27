"""Checks on arc weights that every shortest-path engine (CPU or CUDA) relies on."""
from __future__ import annotations

import numpy as np

from ..errors import UserError

#: Dial's algorithm (a bucket per distance modulo C+1) applies when every weight is an integer in
#: [0, DIAL_MAX_WEIGHT]
DIAL_MAX_WEIGHT = 1 << 12


def check_weights(graph) -> None:
    """UserError when a weighted ``graph`` has a non-finite or negative weight (the shortest-path
    engines need weights >= 0)."""
    w = graph.weights
    if w is None or len(w) == 0:
        return
    if not np.all(np.isfinite(w)):
        raise UserError("graph has non-finite edge weights")
    if w.min() < 0:
        raise UserError(f"graph has negative edge weights (min {w.min():g}); "
                        "shortest paths here need weights >= 0")


def dial_applicable(graph) -> bool:
    """True if every weight is a non-negative integer <= DIAL_MAX_WEIGHT (or the graph is
    unweighted)."""
    w = graph.weights
    if w is None or len(w) == 0:
        return True
    return bool(w.min() >= 0 and w.max() <= DIAL_MAX_WEIGHT and np.all(w == np.floor(w)))
