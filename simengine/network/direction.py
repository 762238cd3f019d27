"""What a graph file says about its direction, and the note when a scenario overrides it.

DIMACS arcs and general Matrix Market matrices describe directed graphs; symmetric Matrix Market
and METIS undirected ones; an edge list is undirected unless a SNAP comment line before its
first edge says ``# Directed graph`` (or ``# Undirected graph``), as SNAP's downloads do; a
KONECT file's first line says ``% asym`` (directed), ``% sym`` or ``% bip`` (undirected).
"""
from __future__ import annotations

import re

#: SNAP's first comment lines, e.g. "# Directed graph (each unordered pair of nodes is saved
#: once): Wiki-Vote.txt" or "# Undirected graph: ../../data/output/as20graph.txt"
_SNAP = re.compile(r"\s*#\s*(directed|undirected)\s+graph\b", re.IGNORECASE)


def stated_direction(comment: str) -> bool | None:
    """True/False when ``comment`` is a SNAP direction line, else None."""
    m = _SNAP.match(comment)
    return None if m is None else m.group(1).lower() == "directed"


def override_note(path, fmt: str, name: str, entries: int, file_directed: bool) -> str:
    """The one line logged when a scenario's ``graph.directed`` contradicts the file."""
    stated = (" (its header says so)" if fmt in ("edgelist", "konect") else
              " (the file says so)" if fmt in ("graphml", "gml", "pajek") else "")
    if file_directed:
        what = {"dimacs": "arcs", "edgelist": "edge lines", "konect": "arc lines",
                "graphml": "arcs", "gml": "arcs", "pajek": "arcs"}.get(
            fmt, "entries of the general (directed) matrix")
        return (f"{path}: treating the {entries} directed {what} of this {name} file{stated} as "
                "undirected edges (directed: false)")
    return (f"{path}: treating the undirected graph this {name} file describes{stated} as "
            "directed, with arcs both ways (directed: true)")
