"""A graph file's declared vertex count against the vertices its arcs can use.

DIMACS, Matrix Market and METIS headers declare ``n``; every declared vertex is a vertex of the
graph, isolated or not, and every traversal initialises all of them per source. A header that
declares far more vertices than the arcs touch (``p sp 10000000 3`` with ``sources: all``) costs
days of work on empty vertices, so it is refused (one line with the work estimate) unless the
user asks for it explicitly: ``--force`` or ``resources.check: false``.

The rule (docs/network.md, "Declared vertex counts"): refused when the declared ``n`` is at least
:data:`MIN_VERTICES` and more than :data:`RATIO` times the vertices the arcs can touch — from the
header (at most 2 × the arc lines) before a run reads the file, from the parsed graph (vertices
with an arc) in ``simengine validate``; the header's bound is never below the parsed count, so
what ``validate`` refuses, ``run`` refuses.
"""
from __future__ import annotations

import numpy as np

from ..errors import UserError

#: declared vertex counts below this are never refused
MIN_VERTICES = 1 << 16
#: refused when the declared count exceeds RATIO × the vertices the arcs can touch
RATIO = 16


def touched_vertices(graph) -> int:
    """Vertices of a built graph that have at least one arc (in or out)."""
    used = np.diff(graph.indptr) > 0
    if len(graph.indices):
        used |= np.bincount(graph.indices, minlength=graph.n)[:graph.n] > 0
    return int(np.count_nonzero(used))


def refusal(where, key, n, touched, how, work) -> UserError | None:
    """The one-line refusal for a declared count ``n`` with at most ``touched`` used vertices,
    or None. ``work``: the plan's traversal-work line."""
    if n < MIN_VERTICES or n <= RATIO * touched:
        return None
    return UserError(f"{where}: {key}: {how} declares n = {n:,} vertices but its arcs use at most "
                     f"{touched:,}; {n - touched:,} isolated vertices are visited from every "
                     f"source ({work}); fix the header, or pass --force (or resources.check: "
                     f"false) to run it as declared")
