"""SNAP-style edge lists (``edgelist``): ``u v`` or ``u v w`` lines, integer ids or labels, an
optional column header, ``#``/``%`` comments (a SNAP ``# Directed graph`` line states the
direction)."""
from __future__ import annotations

from array import array

import numpy as np

from ...errors import UserError
from ..direction import stated_direction
from ..reader_text import _excerpt, _looks_like_graph_data
from .common import (GraphRead, _arrays, _finish, _hint, _other_format, _stop, _weight,
                     _wrong_header)

HEADER_WORDS = {"source", "target", "src", "dst", "dest", "destination", "from", "to", "u", "v",
                "node", "node1", "node2", "node_1", "node_2", "nodea", "nodeb", "id", "id1", "id2",
                "id_1", "id_2", "fromnodeid", "tonodeid", "from_node", "to_node", "from_id",
                "to_id", "head", "tail", "start", "end", "vertex1", "vertex2", "user", "friend",
                "w", "weight", "weights", "cost", "length", "distance", "value", "capacity"}



# ----------------------------------------------------------------------------- edge lists
def _read_edgelist(src, directed, weights, max_lines) -> GraphRead:
    res = GraphRead(src.path, "edgelist", file_directed=False)
    us, vs, ws = array("q"), array("q"), array("d")
    mode = None                 # "int" or "label", set by the first edge line
    labels: dict = {}           # label -> code, in order of appearance
    pending = None              # (ln, tokens, line): a first line of labels, maybe a column header
    first_labels = None         # (ln, line, u, v) of a first edge of labels
    ncols = None
    three = 0                   # lines with a weight column
    first = True
    top = 2 ** 63

    def label(tok, ln):
        code = labels.get(tok)
        if code is None:
            if not tok.isprintable():
                raise src.error(f"expected a vertex id or a printable label, got {_excerpt(tok)}",
                                ln)
            code = labels[tok] = len(labels)
        return code

    def add(t, ln, line):
        nonlocal ncols, three
        k = len(t)
        if k not in (2, 3):
            raise src.error(f"expected 'u v' or 'u v w', got {_excerpt(line)}"
                            f"{_hint(line, 'edgelist')}", ln)
        if ncols is None:
            ncols = k
        elif k != ncols and weights is None:
            raise src.error(f"expected {ncols} columns like the first edge line, got "
                            f"{_excerpt(line)}", ln)
        if mode == "int":
            try:
                a, b = int(t[0]), int(t[1])
            except ValueError:
                bad = t[0] if not t[0].lstrip("+-").isdigit() else t[1]
                raise src.error(f"expected an integer vertex id like the first edge line, got "
                                f"{_excerpt(bad)}", ln) from None
            if not (0 <= a < top and 0 <= b < top):
                bad = t[0] if not 0 <= a < top else t[1]
                raise src.error(f"expected an integer vertex id in 0..2^63-1, got "
                                f"{_excerpt(bad)}", ln)
        else:
            a, b = label(t[0], ln), label(t[1], ln)
        if k == 3:
            three += 1
            if weights is not False:
                w = _weight(t[2], src, ln=ln)
                if w < 0 and res.negative_weight is None:
                    res.negative_weight = (ln, w)
                ws.append(w)
        elif weights:
            raise src.error("expected a weight column ('u v w') (weights required)", ln)
        us.append(a)
        vs.append(b)
        _looks_like_graph_data()

    def ints(t):
        try:
            int(t[0]), int(t[1])
            return True
        except (ValueError, IndexError):
            return False

    for line in src:
        if _stop(src, max_lines):
            res.complete = False
            break
        if first and line.lstrip()[:2] == "%%":
            if _other_format(line) == "mtx":
                raise _wrong_header(src, line, "edgelist")
        t = (line.replace(",", " ") if "," in line else line).split()
        if not t or t[0][0] in "#%":
            if first and res.states_direction is None:   # a SNAP "# Directed graph" line
                res.states_direction = stated_direction(line)
                res.file_directed = bool(res.states_direction)
            continue
        if first:
            first = False
            fmt = _other_format(line)
            if fmt == "dimacs" and t[0] == "p":
                raise _wrong_header(src, line, "edgelist")
            if ints(t):
                mode = "int"
            else:
                pending = (src.ln, t, line)
                continue
        elif pending is not None:
            ln0, t0, line0 = pending
            pending = None
            header = all(x.lower() in HEADER_WORDS for x in t0)
            if ints(t) and len(t) in (2, 3):
                mode = "int"
                header = True
            else:
                mode = "label"
            if header:
                _looks_like_graph_data()   # the next line is an edge line of the file
                res.notes.append(f"{src.path}:{ln0}: skipped a column header line "
                                 f"{_excerpt(line0)}")
            else:
                add(t0, ln0, line0)
                first_labels = (ln0, line0, t0[0], t0[1])
        add(t, src.ln, line)
    if pending is not None:                      # a one-line file of labels
        mode = "label"
        add(pending[1], pending[0], pending[2])
    res.lines = src.ln
    res.entries = len(us)
    res.has_weights = three > 0
    if not res.complete:
        return res
    if not len(us):
        raise UserError(f"{src.path}: no edge lines found (expected lines 'u v' or 'u v w')")
    use_w = weights is not False and three == len(us)
    u, v, w = _arrays(us, vs, ws, use_w)
    if mode == "int":
        ids = np.unique(np.concatenate([u, v]))
        if ids[0] != 0 or ids[-1] != len(ids) - 1:
            u = np.searchsorted(ids, u)
            v = np.searchsorted(ids, v)
        else:
            ids = None
        n = len(ids) if ids is not None else int(max(u.max(), v.max())) + 1
    else:
        if first_labels is not None:
            ln0, line0, a0, b0 = first_labels
            once = np.bincount(np.concatenate([u, v]), minlength=len(labels))
            if once[labels[a0]] == 1 and once[labels[b0]] == 1:
                res.notes.append(f"{src.path}:{ln0}: read {_excerpt(line0)} as an edge between "
                                 "two vertices that appear nowhere else; if it is a column "
                                 "header, start it with '#'")
        names = list(labels)
        order = sorted(range(len(names)), key=names.__getitem__)
        rank = np.empty(len(names), dtype=np.int64)
        rank[order] = np.arange(len(names))
        u, v = rank[u], rank[v]
        ids = np.empty(len(names), dtype=object)
        ids[:] = [names[i] for i in order]
        n = len(names)
    build_directed = res.file_directed if directed is None else bool(directed)
    # stated undirected, run directed: arcs both ways, as logged
    return _finish(res, n, u, v, w, build_directed,
                   build_directed and res.states_direction is False, ids)
