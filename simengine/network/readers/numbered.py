"""Formats with numbered vertices 1..n and a header of counts: DIMACS shortest-path ``.gr``
(``dimacs``), Matrix Market coordinate (``mtx``), METIS (``metis``)."""
from __future__ import annotations

from array import array

import numpy as np

from ...errors import UserError
from ..graph import CSRGraph
from ..reader_text import _count, _excerpt, _looks_like_graph_data
from .common import (GraphRead, _arrays, _finish, _guard_entries, _guard_vertices, _hint,
                     _int, _other_format, _stop, _weight, _wrong_header)


# ----------------------------------------------------------------------------- DIMACS
def _read_dimacs(src, directed, weights, max_lines) -> GraphRead:
    res = GraphRead(src.path, "dimacs", file_directed=True, has_weights=True)
    us, vs, ws = array("q"), array("q"), array("d")
    n = m = pline = None
    count = 0
    first = True
    for line in src:
        if _stop(src, max_lines):
            res.complete = False
            break
        t = line.split()
        if not t:
            continue
        k = t[0]
        if k == "c":
            continue
        if first:
            first = False
            if _other_format(line) == "mtx":
                raise _wrong_header(src, line, "dimacs")
        if k == "a":
            if n is None:
                raise src.error("expected the problem line 'p sp <n> <m>' before the first arc")
            if len(t) != 4:
                raise src.error(f"expected 'a <u> <v> <w>', got {_excerpt(line)}")
            a = _int(t[1], src, "a 1-based vertex id u", 1, n)
            b = _int(t[2], src, "a 1-based vertex id v", 1, n)
            w = _weight(t[3], src)
            if w < 0 and res.negative_weight is None:
                res.negative_weight = (src.ln, w)
            count += 1
            if count > m:
                raise src.error(f"more 'a' lines than the m = {m} arcs of the problem line "
                                f"(line {pline})")
            us.append(a - 1)
            vs.append(b - 1)
            ws.append(w)
        elif k == "p":
            if n is not None:
                raise src.error(f"a second problem line (the first is line {pline})")
            if len(t) != 4 or t[1] != "sp":
                raise src.error(f"expected the shortest-path problem line 'p sp <n> <m>', got "
                                f"{_excerpt(line)}")
            n = _int(t[2], src, "the vertex count n", 1)
            m = _int(t[3], src, "the arc count m", 0)
            pline = src.ln
            _looks_like_graph_data()
            _guard_vertices(src, n)
            _guard_entries(src, m, "arcs", len("a 1 1 0\n"))
        else:
            raise src.error(f"expected a 'c', 'p' or 'a' line, got {_excerpt(line)}"
                            f"{_hint(line, 'dimacs')}")
    res.lines = src.ln
    res.entries = count
    if not res.complete:
        return res
    if n is None:
        raise UserError(f"{src.path}: expected a problem line 'p sp <n> <m>' (the file has none)")
    if count != m:
        raise src.error(f"the problem line promises m = {m} arcs but the file has {count} 'a' "
                        "lines (truncated file?)", pline)
    u, v, w = _arrays(us, vs, ws, weights is not False)
    g = CSRGraph.from_edges(n, u, v, w, True if directed is None else bool(directed))
    g.ids = np.arange(1, n + 1, dtype=np.int64)
    res.graph = g
    return res


# ----------------------------------------------------------------------------- Matrix Market
def _read_mtx(src, directed, weights, max_lines) -> GraphRead:
    res = GraphRead(src.path, "mtx")
    lines = iter(src)
    header = next(lines, None)
    if header is None:
        raise UserError(f"{src.path}: the file is empty (expected a Matrix Market header)")
    h = header.lower().split()
    if not h or h[0] != "%%matrixmarket":
        fmt = _other_format(header)
        if fmt in ("dimacs", "edgelist", "metis") and fmt != "mtx":
            hint = _hint(header, "mtx")
        else:
            hint = ""
        raise src.error(f"expected the header '%%MatrixMarket matrix coordinate <field> "
                        f"<symmetry>', got {_excerpt(header)}{hint}", 1)
    if len(h) != 5 or h[1] != "matrix":
        raise src.error(f"expected '%%MatrixMarket matrix coordinate <field> <symmetry>', got "
                        f"{_excerpt(header)}", 1)
    if h[2] != "coordinate":
        raise src.error(f"expected the sparse 'coordinate' format, got {_excerpt(h[2])} (a dense "
                        "'array' matrix is not read as a graph)", 1)
    fld, sym = h[3], h[4]
    if fld not in ("pattern", "real", "integer"):
        raise src.error(f"expected field pattern, real or integer, got {_excerpt(fld)}", 1)
    if sym not in ("general", "symmetric"):
        raise src.error(f"expected symmetry general or symmetric, got {_excerpt(sym)}", 1)
    res.file_directed = sym == "general"
    _looks_like_graph_data()
    res.has_weights = fld != "pattern"
    need = 2 if fld == "pattern" else 3
    us, vs, ws = array("q"), array("q"), array("d")
    size = None
    sline = None
    count = 0
    for line in lines:
        if _stop(src, max_lines):
            res.complete = False
            break
        t = line.split()
        if not t or t[0].startswith("%"):
            continue
        if size is None:
            if len(t) != 3:
                raise src.error(f"expected the size line '<rows> <cols> <entries>', got "
                                f"{_excerpt(line)}")
            rows = _int(t[0], src, "the row count", 1)
            cols = _int(t[1], src, "the column count", 1)
            nnz = _int(t[2], src, "the entry count", 0)
            if rows != cols:
                raise src.error(f"expected a square matrix (rows = columns), got {_count(rows)} x "
                                f"{_count(cols)}")
            _guard_vertices(src, rows)
            _guard_entries(src, nnz, "entries", 2 * need)
            size, sline = rows, src.ln
            continue
        if len(t) != need:
            raise src.error(f"expected {need} values per entry ('i j{' v' if need == 3 else ''}'),"
                            f" got {_excerpt(line)}")
        i = _int(t[0], src, "a 1-based row index", 1, size)
        j = _int(t[1], src, "a 1-based column index", 1, size)
        count += 1
        if count > nnz:
            raise src.error(f"more entries than the {nnz} of the size line (line {sline})")
        us.append(i - 1)
        vs.append(j - 1)
        if need == 3:
            w = _weight(t[2], src, "a numeric value")
            if w < 0 and res.negative_weight is None:
                res.negative_weight = (src.ln, w)
            ws.append(w)
    res.lines = src.ln
    res.entries = count
    if not res.complete:
        return res
    if size is None:
        raise UserError(f"{src.path}: expected a size line '<rows> <cols> <entries>' (the file "
                        "has none)")
    if count != nnz:
        raise src.error(f"the size line promises {nnz} entries but the file has {count} "
                        "(truncated file?)", sline)
    u, v, w = _arrays(us, vs, ws, res.has_weights and weights is not False)
    want = res.file_directed if directed is None else bool(directed)
    # a symmetric matrix holds both (i, j) and (j, i)
    return _finish(res, size, u, v, w, want, sym == "symmetric" and want,
                   np.arange(1, size + 1, dtype=np.int64))


# ----------------------------------------------------------------------------- METIS
def _read_metis(src, directed, weights, max_lines) -> GraphRead:
    res = GraphRead(src.path, "metis", file_directed=False)
    lines = iter(src)
    hdr = None
    for line in lines:
        s = line.strip()
        if not s:
            continue
        fmt = _other_format(s)
        if fmt == "mtx":
            raise _wrong_header(src, line, "metis")
        if s[0] == "%":
            continue
        t = s.split()
        if fmt == "dimacs" or t[0] in ("c", "p") or s[0] == "#":
            hint = _hint(line, "metis") or (" (this looks like a DIMACS .gr file: set "
                                            "graph.file.format: dimacs)" if t[0] in ("c", "p") else "")
            raise src.error(f"expected the METIS header 'n m [fmt [ncon]]', got "
                            f"{_excerpt(line)}{hint}")
        hdr = t
        break
    if hdr is None:
        raise UserError(f"{src.path}: expected a METIS header 'n m [fmt [ncon]]' (the file has "
                        "no data)")
    hln = src.ln
    if len(hdr) not in (2, 3, 4):
        raise src.error(f"expected the METIS header 'n m [fmt [ncon]]', got {_excerpt(s)}")
    n = _int(hdr[0], src, "the vertex count n", 1)
    m = _int(hdr[1], src, "the edge count m", 0)
    _looks_like_graph_data()
    fmt = hdr[2] if len(hdr) > 2 else "0"
    if len(fmt) > 3 or not set(fmt) <= {"0", "1"}:
        raise src.error(f"expected fmt of up to three 0/1 digits, got {_excerpt(fmt)}")
    fmt = fmt.zfill(3)
    has_vs, has_vw, has_ew = fmt[0] == "1", fmt[1] == "1", fmt[2] == "1"
    ncon = _int(hdr[3], src, "ncon (vertex weights per vertex)", 1, 1000) if len(hdr) > 3 \
        else 1
    _guard_entries(src, n, "vertex lines", 1)
    _guard_vertices(src, n)
    _guard_entries(src, 2 * m, f"adjacency entries (2m for m = {_count(m)} edges)", 2)
    res.has_weights = has_ew
    skip = int(has_vs) + (ncon if has_vw else 0)
    step = 2 if has_ew else 1
    want_w = has_ew and weights is not False
    us, vs, ws = array("q"), array("q"), array("d")
    v = 0
    count = 0
    for line in lines:
        if _stop(src, max_lines):
            res.complete = False
            break
        if line.lstrip()[:1] == "%":
            continue
        if v >= n:
            if line.strip():
                raise src.error(f"expected only the {n} vertex lines the header (line {hln}) "
                                f"promises, got another: {_excerpt(line)}")
            continue
        tok = line.split()
        if skip:
            if len(tok) < skip:
                raise src.error(f"expected {skip} vertex size/weight value(s) first (fmt "
                                f"{fmt}), got {_excerpt(line)}")
            tok = tok[skip:]
        if len(tok) % step:
            raise src.error(f"expected 'neighbour weight' pairs (fmt {fmt}), got "
                            f"{_excerpt(line)}")
        for a in range(0, len(tok), step):
            u = _int(tok[a], src, "a 1-based neighbour id", 1, n)
            us.append(v)
            vs.append(u - 1)
            if has_ew:
                w = _weight(tok[a + 1], src, "an edge weight")
                if w < 0 and res.negative_weight is None:
                    res.negative_weight = (src.ln, w)
                if want_w:
                    ws.append(w)
        count += len(tok) // step
        if count > 2 * m:
            raise src.error(f"more adjacency entries than the 2m = {2 * m} the header (line "
                            f"{hln}) promises")
        v += 1
    res.lines = src.ln
    res.entries = count
    if not res.complete:
        return res
    if v < n:
        raise src.error(f"the header promises n = {n} vertex lines but the file has {v} "
                        "(truncated file?)", hln)
    if count != 2 * m:
        raise src.error(f"the header promises m = {m} edges ({2 * m} adjacency entries, each "
                        f"edge listed from both ends) but the file lists {count} "
                        "(truncated file?)", hln)
    u, vv, w = _arrays(us, vs, ws, want_w)
    g = CSRGraph.from_edges(n, u, vv, w, False if directed is None else bool(directed))
    g.ids = np.arange(1, n + 1, dtype=np.int64)
    res.graph = g
    return res
