"""Graph file readers (plain or gzip-compressed, by the ``.gz`` suffix).

Formats: SNAP-style edge lists (``edgelist``), DIMACS shortest-path ``.gr`` (``dimacs``), Matrix
Market coordinate (``mtx``), METIS (``metis``).  Duplicate edges and self-loops follow
:meth:`CSRGraph.from_edges` (self-loops dropped, the smallest weight of duplicates kept).  A
malformed line raises :class:`simengine.errors.UserError` with ``FILE:LINE: what was expected``.
"""
from __future__ import annotations

import gzip
import os

import numpy as np

from ..errors import UserError
from .graph import CSRGraph

FORMATS = ("edgelist", "dimacs", "mtx", "metis")


def _open(path):
    path = os.fspath(path)
    if not os.path.exists(path):
        raise UserError(f"{path}: no such file")
    if path.endswith(".gz"):
        return gzip.open(path, "rt", encoding="utf-8", errors="replace")
    return open(path, "r", encoding="utf-8", errors="replace")


def _num(tok, path, ln, what, integer=True):
    try:
        if integer:
            return int(tok)
        return float(tok)
    except ValueError:
        raise UserError(f"{path}:{ln}: expected {what}, got {tok!r}") from None


def guess_format(path) -> str:
    p = os.fspath(path)
    if p.endswith(".gz"):
        p = p[:-3]
    ext = os.path.splitext(p)[1].lower()
    return {".gr": "dimacs", ".mtx": "mtx", ".metis": "metis", ".graph": "metis"}.get(ext,
                                                                                      "edgelist")


def read_edgelist(path, directed=False, weights=None):
    """Whitespace edge list ``u v [w]``; lines starting with ``#`` or ``%`` are comments.

    Ids need not be contiguous: if they are exactly 0..n−1 they are kept, otherwise the distinct
    ids are mapped to 0..n−1 in sorted order.  ``weights``: None = use a third column if every
    edge line has one, True = require it, False = ignore it.
    """
    us, vs, ws = [], [], []
    ncols = None
    with _open(path) as f:
        for ln, line in enumerate(f, 1):
            t = line.split()
            if not t or t[0][0] in "#%":
                continue
            if len(t) not in (2, 3):
                raise UserError(f"{path}:{ln}: expected 'u v' or 'u v w', got {line.strip()!r}")
            if ncols is None:
                ncols = len(t)
            us.append(_num(t[0], path, ln, "an integer vertex id"))
            vs.append(_num(t[1], path, ln, "an integer vertex id"))
            if len(t) == 3:
                ws.append(_num(t[2], path, ln, "a numeric weight", integer=False))
            elif weights:
                raise UserError(f"{path}:{ln}: expected a weight column ('u v w')")
            if len(t) != ncols and weights is None:
                raise UserError(f"{path}:{ln}: expected {ncols} columns like the first edge line")
    u = np.asarray(us, np.int64)
    v = np.asarray(vs, np.int64)
    if len(u) and min(u.min(), v.min()) < 0:
        raise UserError(f"{path}: negative vertex id")
    ids = np.unique(np.concatenate([u, v]))
    if len(ids) and (ids[0] != 0 or ids[-1] != len(ids) - 1):
        u = np.searchsorted(ids, u)
        v = np.searchsorted(ids, v)
    n = len(ids)
    use_w = bool(ws) and weights is not False and len(ws) == len(us)
    return CSRGraph.from_edges(n, u, v, np.asarray(ws) if use_w else None, directed)


def read_dimacs(path, directed=True, weights=None):
    """DIMACS 9th challenge ``.gr``: ``c`` comments, one ``p sp n m``, arcs ``a u v w`` (1-based)."""
    n = None
    us, vs, ws = [], [], []
    with _open(path) as f:
        for ln, line in enumerate(f, 1):
            t = line.split()
            if not t or t[0] == "c":
                continue
            if t[0] == "p":
                if len(t) != 4 or t[1] != "sp" or n is not None:
                    raise UserError(f"{path}:{ln}: expected one 'p sp <n> <m>' line")
                n = _num(t[2], path, ln, "vertex count n")
                _num(t[3], path, ln, "arc count m")
            elif t[0] == "a":
                if n is None:
                    raise UserError(f"{path}:{ln}: expected 'p sp <n> <m>' before arcs")
                if len(t) != 4:
                    raise UserError(f"{path}:{ln}: expected 'a <u> <v> <w>'")
                a = _num(t[1], path, ln, "1-based vertex id u")
                b = _num(t[2], path, ln, "1-based vertex id v")
                if not (1 <= a <= n and 1 <= b <= n):
                    raise UserError(f"{path}:{ln}: expected vertex ids in 1..{n}")
                us.append(a - 1)
                vs.append(b - 1)
                ws.append(_num(t[3], path, ln, "a numeric weight", integer=False))
            else:
                raise UserError(f"{path}:{ln}: expected a 'c', 'p' or 'a' line")
    if n is None:
        raise UserError(f"{path}: expected a 'p sp <n> <m>' line")
    return CSRGraph.from_edges(n, us, vs, None if weights is False else np.asarray(ws, float),
                               directed)


def read_mtx(path, directed=None, weights=None):
    """Matrix Market ``coordinate`` (pattern/real/integer; general/symmetric); entry (i, j) is the
    arc i → j (1-based); vertex i = row i.  ``directed`` defaults to not symmetric."""
    with _open(path) as f:
        header = f.readline()
        h = header.lower().split()
        if len(h) < 5 or h[0] != "%%matrixmarket" or h[1] != "matrix" or h[2] != "coordinate":
            raise UserError(f"{path}:1: expected '%%MatrixMarket matrix coordinate <field> "
                            "<symmetry>'")
        field, sym = h[3], h[4]
        if field not in ("pattern", "real", "integer") or sym not in ("general", "symmetric"):
            raise UserError(f"{path}:1: expected field pattern/real/integer and symmetry "
                            "general/symmetric")
        ln = 1
        size = None
        us, vs, ws = [], [], []
        for line in f:
            ln += 1
            t = line.split()
            if not t or t[0].startswith("%"):
                continue
            if size is None:
                if len(t) != 3:
                    raise UserError(f"{path}:{ln}: expected '<rows> <cols> <entries>'")
                size = [_num(x, path, ln, "an integer size") for x in t]
                if size[0] != size[1]:
                    raise UserError(f"{path}:{ln}: expected a square matrix")
                continue
            need = 2 if field == "pattern" else 3
            if len(t) != need:
                raise UserError(f"{path}:{ln}: expected {need} values per entry")
            i = _num(t[0], path, ln, "a 1-based row index")
            j = _num(t[1], path, ln, "a 1-based column index")
            if not (1 <= i <= size[0] and 1 <= j <= size[1]):
                raise UserError(f"{path}:{ln}: expected indices in 1..{size[0]}")
            us.append(i - 1)
            vs.append(j - 1)
            if need == 3:
                ws.append(_num(t[2], path, ln, "a numeric value", integer=field == "integer"))
    if size is None:
        raise UserError(f"{path}: expected a size line")
    if directed is None:
        directed = sym == "general"
    use_w = field != "pattern" and weights is not False
    return CSRGraph.from_edges(size[0], us, vs, np.asarray(ws, float) if use_w else None,
                               bool(directed))


def read_metis(path, directed=False, weights=None):
    """METIS graph: header ``n m [fmt [ncon]]``, then line i = neighbours of vertex i (1-based),
    with ``fmt`` 1 / 11 / 001: edge weights after each neighbour (vertex weights, fmt x1x,
    are skipped).  Comment lines start with ``%``."""
    with _open(path) as f:
        lines = enumerate(f, 1)
        hdr = None
        for ln, line in lines:
            t = line.split()
            if t and not t[0].startswith("%"):
                hdr = (ln, t)
                break
        if hdr is None:
            raise UserError(f"{path}: expected a header 'n m [fmt]'")
        ln, t = hdr
        if len(t) not in (2, 3, 4):
            raise UserError(f"{path}:{ln}: expected header 'n m [fmt [ncon]]'")
        n = _num(t[0], path, ln, "vertex count n")
        _num(t[1], path, ln, "edge count m")
        fmt = t[2] if len(t) > 2 else "0"
        if not set(fmt) <= {"0", "1"}:
            raise UserError(f"{path}:{ln}: expected fmt of 0/1 digits")
        fmt = fmt.zfill(3)
        has_vw, has_ew = fmt[1] == "1", fmt[2] == "1"
        ncon = _num(t[3], path, ln, "ncon") if len(t) > 3 else (1 if has_vw else 0)
        us, vs, ws = [], [], []
        v = 0
        for ln, line in lines:
            if line.lstrip().startswith("%"):
                continue
            if v >= n:
                if line.strip():
                    raise UserError(f"{path}:{ln}: expected only {n} vertex lines")
                continue
            tok = line.split()[ncon if has_vw else 0:]
            step = 2 if has_ew else 1
            if len(tok) % step:
                raise UserError(f"{path}:{ln}: expected 'neighbour weight' pairs")
            for a in range(0, len(tok), step):
                u = _num(tok[a], path, ln, "a 1-based neighbour id")
                if not 1 <= u <= n:
                    raise UserError(f"{path}:{ln}: expected neighbour ids in 1..{n}")
                us.append(v)
                vs.append(u - 1)
                if has_ew:
                    ws.append(_num(tok[a + 1], path, ln, "an edge weight", integer=False))
            v += 1
        if v < n:
            raise UserError(f"{path}: expected {n} vertex lines, found {v}")
    use_w = has_ew and weights is not False
    return CSRGraph.from_edges(n, us, vs, np.asarray(ws, float) if use_w else None, directed)


def read_graph(path, format: str | None = None, directed: bool | None = None,
               weights: bool | None = None) -> CSRGraph:
    """Read a graph file.  ``format``: edgelist | dimacs | mtx | metis | None (guess from the
    suffix: .gr, .mtx, .metis/.graph, else edgelist; .gz stripped first).  ``directed`` None =
    the format's default (edgelist/metis undirected, dimacs directed, mtx general=directed).
    ``weights``: None = use weights if the file has them, False = ignore them, True = require."""
    fmt = (format or guess_format(path)).lower()
    if fmt not in FORMATS:
        raise UserError(f"unknown graph format {format!r}; expected one of {', '.join(FORMATS)}")
    kw = {} if directed is None else {"directed": bool(directed)}
    g = {"edgelist": read_edgelist, "dimacs": read_dimacs, "mtx": read_mtx,
         "metis": read_metis}[fmt](path, weights=weights, **kw)
    if weights is True and g.weights is None:
        raise UserError(f"{path}: weights required but the file has none")
    return g
