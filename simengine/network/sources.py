"""Which vertices a scenario's ``metrics.sources`` list names.

A source list names vertices by the input's ids: an edge list's ids or labels as written, the
1-based numbers of DIMACS, Matrix Market and METIS files, a networkx graph's node labels, and
0..n−1 for generated graphs.  An integer also finds the label with the same digits.
"""
from __future__ import annotations

import numpy as np

from ..errors import UserError


def describe_ids(graph) -> str:
    """A short phrase for the error messages: how this graph names its vertices."""
    if graph.ids is None:
        return f"its vertices are 0..{graph.n - 1}"
    ids = graph.ids
    if ids.dtype.kind in "iu":
        if len(ids) and np.array_equal(ids, np.arange(ids[0], ids[0] + len(ids))):
            return f"its vertices are {ids[0]}..{ids[-1]}"
        return f"its {len(ids)} vertex ids run from {ids.min()} to {ids.max()}"
    first = ", ".join(repr(str(v))[:24] for v in ids[:3].tolist())
    return f"its {len(ids)} vertices are labels such as {first}"


def listed_source_indices(graph, ids, where: str) -> list:
    """Vertex indices (0..n−1) of the listed source ids; ``where`` starts the error message."""
    try:
        return graph.index_of(ids).tolist()
    except KeyError as exc:
        bad = exc.args[0] if exc.args else "?"
        shown = repr(bad) if len(repr(bad)) <= 40 else repr(bad)[:40] + "…"
        raise UserError(f"{where}: vertex {shown} is not in the graph ({describe_ids(graph)})") \
            from None
