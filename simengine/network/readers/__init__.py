"""Graph file readers (plain or gzip-compressed, by the ``.gz`` suffix).

Formats: SNAP-style edge lists (``edgelist``), DIMACS shortest-path ``.gr`` (``dimacs``), Matrix
Market coordinate (``mtx``), METIS (``metis``).  Duplicate edges and self-loops follow
:meth:`CSRGraph.from_edges` (self-loops dropped, the smallest weight of duplicates kept).

Every problem with a file is a :class:`simengine.errors.UserError` ``FILE:LINE: what was
expected``, quoting at most a short excerpt of the line (never the file's contents): malformed
lines, ids out of range, a first line that is another format's header, header counts that
disagree with the lines present (a truncated file is an error, not a smaller graph), headers that
promise more vertices or entries than the file or the machine's memory can hold (refused before
anything is allocated), damaged or truncated gzip, directories, FIFOs, devices and ``/proc`` files.

:func:`read_graph` returns the :class:`CSRGraph`; :func:`read_graph_file` also reports what the
file describes (direction, weights, counts) for the scenario runner's log and ``validate``.

Modules: ``common`` (the file, its lines, guards, :class:`GraphRead`), ``edgelist``, ``numbered``
(DIMACS, Matrix Market, METIS), ``konect``, ``via_networkx`` (GraphML, GML, Pajek through
networkx: the optional extra ``formats``); this module picks the reader and applies a
scenario's settings.
"""
from __future__ import annotations

import os

from ...errors import UserError
from ..direction import override_note
from ..graph import CSRGraph
from ..reader_text import _excerpt, _quoting
from .common import (BYTES_PER_ENTRY, BYTES_PER_VERTEX, FORMAT_NAMES, GZIP_MAX_RATIO,  # noqa: F401
                     MAX_VERTICES, GraphRead, _Source, available_memory)  # noqa: F401
from .edgelist import HEADER_WORDS, _read_edgelist  # noqa: F401
from .konect import _read_konect, konect_header
from .numbered import _read_dimacs, _read_metis, _read_mtx
from .via_networkx import NX_FORMATS, read_via_networkx

FORMATS = ("edgelist", "dimacs", "mtx", "metis", "konect", "graphml", "gml", "pajek")
#: format of each suffix (also with ``.gz`` after it); any other suffix reads as an edge list
SUFFIX_FORMATS = {".gr": "dimacs", ".mtx": "mtx", ".graph": "metis", ".metis": "metis",
                  ".txt": "edgelist", ".edges": "edgelist", ".tsv": "edgelist",
                  ".csv": "edgelist", ".konect": "konect", ".graphml": "graphml",
                  ".gml": "gml", ".net": "pajek", ".paj": "pajek"}


def guess_format(path) -> str:
    """Format from the file name: .gr dimacs, .mtx mtx, .graph/.metis metis, anything else
    (.txt, .edges, .tsv, .csv, …) edgelist; a trailing .gz is stripped first."""
    p = os.fspath(path).lower()
    if p.endswith(".gz"):
        p = p[:-3]
    return SUFFIX_FORMATS.get(os.path.splitext(p)[1], "edgelist")


_READERS = {"edgelist": _read_edgelist, "dimacs": _read_dimacs, "mtx": _read_mtx,
            "metis": _read_metis, "konect": _read_konect}


def _first_line(path, check_memory) -> str:
    src = _Source(path, check_memory)
    try:
        return next(iter(src), "")
    finally:
        src.close()


def read_graph_file(path, format: str | None = None, directed: bool | None = None,
                    weights: bool | None = None, max_lines: int | None = None,
                    check_memory: bool = True) -> GraphRead:
    """Parse a graph file completely (or its first ``max_lines`` lines) into a :class:`GraphRead`.

    ``format``: edgelist | dimacs | mtx | metis | konect | graphml | gml | pajek | None (from
    the suffix, :func:`guess_format`; a KONECT first line makes a guessed edge list konect).
    ``directed``: None = what the file describes; True/False override it (with a note).
    ``weights``: None = use weights if the file has them, False = ignore them, True = require.
    ``check_memory``: refuse header counts whose graph would not fit the available memory
    (counts beyond 32-bit ids or beyond what the file can hold are refused either way).
    """
    fmt = format or guess_format(path)
    if not isinstance(fmt, str) or fmt.lower() not in FORMATS:
        raise UserError(f"unknown graph format {_excerpt(format)}; expected one of "
                        f"{', '.join(FORMATS)}")
    fmt = fmt.lower()
    if format is None and fmt == "edgelist" and konect_header(_first_line(path, check_memory)):
        fmt = "konect"          # KONECT's out.* files: '% sym|asym|bip ...' on line 1
    quoting = _quoting.set(False)
    if fmt in NX_FORMATS:                 # networkx's parsers read the whole file
        try:
            res = read_via_networkx(path, fmt, directed, weights, check_memory)
        finally:
            _quoting.reset(quoting)
        src = res
    else:
        src = _Source(path, check_memory)
        try:
            res = _READERS[fmt](src, directed, weights, max_lines)
        finally:
            _quoting.reset(quoting)
            src.close()
    if weights is True and not res.has_weights:
        raise UserError(f"{src.path}: weights required but the {FORMAT_NAMES[fmt]} file has none")
    if directed is not None and bool(directed) != res.file_directed and \
            (fmt != "edgelist" or res.states_direction is not None):
        res.notes.append(override_note(src.path, fmt, FORMAT_NAMES[fmt], res.entries,
                                       res.file_directed))
    return res


def read_graph(path, format: str | None = None, directed: bool | None = None,
               weights: bool | None = None, check_memory: bool = True) -> CSRGraph:
    """Read a graph file.  ``format``: one of :data:`FORMATS` or None (from the suffix:
    .gr, .mtx, .graph/.metis, else edgelist; .gz stripped first).  ``directed`` None = what the
    file describes (DIMACS and general Matrix Market directed; symmetric Matrix Market, METIS and
    edge lists undirected unless a SNAP header says '# Directed graph').  ``weights``: None = use weights if the file has them, False = ignore
    them, True = require.  ``graph.ids`` holds the file's vertex ids (1..n for DIMACS, Matrix
    Market and METIS; the edge list's ids or labels, or None when they are exactly 0..n−1).
    ``check_memory=False`` reads a file whose header promises more than the available memory."""
    return read_graph_file(path, format, directed, weights, check_memory=check_memory).graph


def read_for_scenario(path, graph_spec, log=None, max_lines=None) -> GraphRead:
    """Read a scenario's ``graph.file`` with its ``directed`` and ``weights`` settings.

    ``graph.weights``: ``file`` requires the file's weights, ``none`` ignores them (with a note
    when the file has some), None uses them when present, a random-weight spec ignores them.
    Notes (a changed direction, a skipped column header, ignored weights) go to ``log``; a
    negative weight that the run would use is an error naming its line.  Memory is not checked
    here: the resource check (simengine/resources.py) decided before, from the same header, and
    ``--force`` overrides it there.
    """
    w = graph_spec.weights
    weights = True if w == "file" else None if w is None else False
    res = read_graph_file(path, graph_spec.file.format, directed=graph_spec.directed,
                          weights=weights, max_lines=max_lines, check_memory=False)
    if w == "none" and res.has_weights:
        res.notes.append(f"{path}: the file has weights; graph.weights: none ignores them "
                         "(graph.weights: file uses them)")
    if weights is not False and res.has_weights and res.negative_weight is not None:
        ln, value = res.negative_weight
        where = f"{path}:{ln}" if ln is not None else f"{path}"
        raise UserError(f"{where}: negative weight {value:g}; shortest paths need weights "
                        ">= 0 (or set graph.weights: none)")
    if log is not None:
        for note in res.notes:
            log(note)
    return res
