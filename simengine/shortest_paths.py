"""The shortest paths themselves, read back from an output's ``/predecessors``
(``metrics.store_predecessors: true``; layout in docs/output.md): :func:`shortest_path`."""
from __future__ import annotations

import numpy as np

from .errors import UserError


def _vertex_index(result, vertex_id, what):
    """Row number of the vertex the input named ``vertex_id`` (matched as the graph's
    ``index_of`` matches listed sources)."""
    from .network.graph import CSRGraph

    n = int(result.file["predecessors"].shape[1])
    ids = result.vertex_ids if "vertex/id" in result.file else None
    lookup = CSRGraph(n, np.zeros(1, np.int64), np.zeros(0, np.int32), ids=ids)
    try:
        return int(lookup.index_of([vertex_id])[0])
    except KeyError:
        raise UserError(f"{result.path}: {what} {vertex_id!r} is not a vertex id of the "
                        f"graph") from None


def _path_in(result, source, target):
    f = result.file
    if "predecessors" not in f:
        raise UserError(f"{result.path}: no /predecessors (run with metrics.store_distances: true "
                        f"and metrics.store_predecessors: true)")
    pred = f["predecessors"]
    s = _vertex_index(result, source, "source")
    t = _vertex_index(result, target, "target")
    rows = np.flatnonzero(f["sources"][:pred.shape[0]] == s)
    if not len(rows):
        raise UserError(f"{result.path}: source {source!r} is not among the {pred.shape[0]} "
                        f"sources stored in /predecessors")
    row = pred[int(rows[0])]
    path = [t]
    while path[-1] != s:
        p = int(row[path[-1]])
        if p < 0 or len(path) > len(row):
            raise UserError(f"{result.path}: no path from {source!r} to {target!r}")
        path.append(p)
    ids = result.vertex_ids
    return [ids[v].item() if isinstance(ids[v], np.generic) else ids[v] for v in path[::-1]]


def shortest_path(result_or_file, source, target) -> list:
    """The vertex ids of one shortest path from ``source`` to ``target`` (both given as the
    graph's vertex ids, as in ``/vertex/id``), source first: the path the stored predecessors
    describe.  ``result_or_file``: an output path or an open ``simengine.open`` result.

    UserError (one line) when the file has no ``/predecessors``, ``source`` was not a stored
    source, an id is unknown, or ``target`` is unreachable from ``source``."""
    import os

    from .io.reader import Result

    if not isinstance(result_or_file, (Result, str, bytes, os.PathLike)):
        raise UserError(f"shortest_path: expected an output file or a simengine.open result "
                        f"holding /predecessors, got {type(result_or_file).__name__}; "
                        f"path_statistics keeps no paths (networkx.shortest_path(G, s, t) on "
                        f"the graph, or a run with metrics.store_predecessors: true, does)")
    if isinstance(result_or_file, Result):
        return _path_in(result_or_file, source, target)
    with Result(result_or_file) as r:
        return _path_in(r, source, target)
