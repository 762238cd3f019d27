"""KONECT's ``out.*`` files (``konect``; http://konect.cc, Kunegis 2013).

The first line says what the file describes: ``% FORMAT WEIGHTS`` with FORMAT ``sym``
(undirected), ``asym`` (directed) or ``bip`` (bipartite: undirected edges between a left set
1..n1 and a right set 1..n2, two id spaces) and WEIGHTS one of KONECT's edge kinds. An optional
second comment line ``% edges n1 n2`` gives the counts. Data lines are ``u v [w [t]]`` with
1-based ids; a fourth column (a time stamp) is ignored.

Weights: the kinds that are lengths-like values (``posweighted``, ``weighted``,
``multiposweighted``, ``multiweighted``) give the third column as weights, as an edge list's;
``unweighted``, ``positive`` (multiple edges: the column counts them), ``signed``,
``multisigned`` and ``dynamic`` carry no length, so their third column is ignored with a note
(``graph.weights: file`` is then an error saying why). Vertex ids are the file's: 1..n for
``sym``/``asym`` (``graph.ids``), ``L1..Ln1`` and ``R1..Rn2`` for the two sides of ``bip``.
"""
from __future__ import annotations

import re
from array import array

import numpy as np

from ...errors import UserError
from ..reader_text import _excerpt, _looks_like_graph_data
from .common import (MAX_VERTICES, GraphRead, _arrays, _finish, _guard_vertices, _int, _stop,
                     _weight)

_HEADER = re.compile(r"\s*%\s*(sym|asym|bip)\b\s*(\S*)", re.IGNORECASE)
#: KONECT edge kinds whose third column is a weight usable as a length
LENGTH_KINDS = {"posweighted", "weighted", "multiposweighted", "multiweighted"}
#: the other kinds (the third column, if any, is no length)
OTHER_KINDS = {"unweighted", "positive", "signed", "multisigned", "dynamic"}
_WHY = {"unweighted": "unweighted", "positive": "its third column counts multiple edges",
        "signed": "its third column is an edge sign", "multisigned": "its third column is an "
        "edge sign", "dynamic": "its third column marks edge additions and removals"}


def konect_header(line) -> tuple[str, str] | None:
    """('sym'|'asym'|'bip', weight kind or '') of a KONECT first line, else None."""
    m = _HEADER.match(line)
    return None if m is None else (m.group(1).lower(), m.group(2).lower())


def _read_konect(src, directed, weights, max_lines) -> GraphRead:
    res = GraphRead(src.path, "konect")
    lines = iter(src)
    first = next(lines, None)
    head = konect_header(first) if first is not None else None
    if head is None:
        raise src.error("expected KONECT's first line '% sym|asym|bip WEIGHTS' (e.g. '% asym "
                        f"unweighted'), got {_excerpt(first or '')}", 1)
    _looks_like_graph_data()
    shape, kind = head
    if kind and kind not in LENGTH_KINDS | OTHER_KINDS:
        raise src.error(f"unknown KONECT weight kind {_excerpt(kind)}; expected one of "
                        f"{', '.join(sorted(LENGTH_KINDS | OTHER_KINDS))}", 1)
    res.file_directed = shape == "asym"
    res.states_direction = res.file_directed
    lengths = kind in LENGTH_KINDS
    if weights is True and not lengths:
        raise src.error(f"graph.weights: file, but this KONECT file's header says "
                        f"{_excerpt(kind or 'no weights')} "
                        f"({_WHY.get(kind, 'unweighted')}): no lengths", 1)
    use_w = lengths and weights is not False
    us, vs, ws = array("q"), array("q"), array("d")
    n1 = n2 = None
    extra = 0
    for line in lines:
        if _stop(src, max_lines):
            res.complete = False
            break
        t = line.split()
        if not t:
            continue
        if t[0].startswith("%"):
            nums = t[1:] if t[0] == "%" else [t[0][1:]] + t[1:]
            if src.ln == 2 and len(nums) >= 3 and all(x.isdigit() for x in nums[:3]):
                # a count of more than 30 digits is refused as one (no 5000-digit int parse)
                n1, n2 = (int(x) if len(x) <= 30 else 10 ** 30 for x in nums[1:3])
                _guard_vertices(src, n1 + n2 if shape == "bip" else max(n1, n2))
            continue
        if len(t) < 2:
            raise src.error(f"expected 'u v' or 'u v w' (1-based ids), got {_excerpt(line)}")
        a = _int(t[0], src, "a vertex id (1-based)", lo=1, hi=MAX_VERTICES)   # 32-bit ids
        b = _int(t[1], src, "a vertex id (1-based)", lo=1, hi=MAX_VERTICES)
        if n1 is not None and (a > n1 or b > (n2 if shape == "bip" else n1)):
            raise src.error(f"vertex id {a if a > n1 else b} beyond the header's "
                            f"{n1 if a > n1 else n2} vertices")
        if len(t) >= 3:
            extra += 1
            if use_w:
                w = _weight(t[2], src)
                if w < 0 and res.negative_weight is None:
                    res.negative_weight = (src.ln, w)
                ws.append(w)
        elif use_w:
            raise src.error(f"expected a weight column ('u v w'): the header says {kind!r}")
        us.append(a - 1)
        vs.append(b - 1)
    res.lines = src.ln
    res.entries = len(us)
    res.has_weights = use_w and extra == len(us) and len(us) > 0
    if extra and not lengths and weights is not False:
        res.notes.append(f"{src.path}: the third column is ignored: the KONECT header says "
                         f"{kind or 'no weight kind'} ({_WHY.get(kind, 'no lengths')})")
    if not res.complete:
        return res
    if not len(us):
        raise UserError(f"{src.path}: no edge lines found (expected lines 'u v' or 'u v w')")
    u, v, w = _arrays(us, vs, ws, res.has_weights)
    left = int(u.max()) + 1 if n1 is None else n1
    if shape == "bip":
        right = int(v.max()) + 1 if n2 is None else n2
        v = v + left
        n = left + right
        ids = np.array([f"L{i}" for i in range(1, left + 1)]
                       + [f"R{j}" for j in range(1, right + 1)], dtype=object)
    else:
        n = max(left, int(max(u.max(), v.max())) + 1)
        ids = np.arange(1, n + 1, dtype=np.int64)
    build_directed = res.file_directed if directed is None else bool(directed)
    # undirected file, directed run: arcs both ways
    return _finish(res, n, u, v, w, build_directed, build_directed and not res.file_directed,
                   ids)
