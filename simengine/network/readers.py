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
"""
from __future__ import annotations

import gzip
import io
import math
import os
import stat
import zlib
from array import array
from dataclasses import dataclass, field

import numpy as np

from ..errors import UserError
from .direction import override_note, stated_direction
from .graph import CSRGraph
from .reader_text import _bytes, _count, _excerpt, _looks_like_graph_data, _quoting
from .weights import WEIGHT_MAX

FORMATS = ("edgelist", "dimacs", "mtx", "metis")
#: format of each suffix (also with ``.gz`` after it); any other suffix reads as an edge list
SUFFIX_FORMATS = {".gr": "dimacs", ".mtx": "mtx", ".graph": "metis", ".metis": "metis",
                  ".txt": "edgelist", ".edges": "edgelist", ".tsv": "edgelist",
                  ".csv": "edgelist"}
FORMAT_NAMES = {"edgelist": "edge list", "dimacs": "DIMACS", "mtx": "Matrix Market",
                "metis": "METIS"}
#: CSR vertex ids are int32
MAX_VERTICES = 2 ** 31 - 2
#: memory per vertex of a graph and its path statistics (CSR row pointer, accumulators, results)
BYTES_PER_VERTEX = 128
#: memory per edge entry while a graph is built (parsed arrays, symmetrised copies, sort, CSR)
BYTES_PER_ENTRY = 64
#: gzip never expands data more than about 1032 : 1
GZIP_MAX_RATIO = 1100
#: words of an edge list's column header ("source,target,weight"), compared in lower case
HEADER_WORDS = {"source", "target", "src", "dst", "dest", "destination", "from", "to", "u", "v",
                "node", "node1", "node2", "node_1", "node_2", "nodea", "nodeb", "id", "id1", "id2",
                "id_1", "id_2", "fromnodeid", "tonodeid", "from_node", "to_node", "from_id",
                "to_id", "head", "tail", "start", "end", "vertex1", "vertex2", "user", "friend",
                "w", "weight", "weights", "cost", "length", "distance", "value", "capacity"}


def available_memory() -> int | None:
    """Bytes of memory this process may still allocate (the resource check's figure:
    :func:`simengine.machine.host_available`)."""
    from ..machine import host_available

    return host_available()[0]


def guess_format(path) -> str:
    """Format from the file name: .gr dimacs, .mtx mtx, .graph/.metis metis, anything else
    (.txt, .edges, .tsv, .csv, …) edgelist; a trailing .gz is stripped first."""
    p = os.fspath(path).lower()
    if p.endswith(".gz"):
        p = p[:-3]
    return SUFFIX_FORMATS.get(os.path.splitext(p)[1], "edgelist")


# ----------------------------------------------------------------------------- the file itself
def _check_path(path):
    try:
        st = os.stat(path)
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read ({exc.strerror or type(exc).__name__})") from None
    mode = st.st_mode
    if stat.S_ISDIR(mode):
        raise UserError(f"{path}: is a directory, expected a graph file")
    if not stat.S_ISREG(mode):
        kind = ("a FIFO (named pipe)" if stat.S_ISFIFO(mode) else
                "a character device" if stat.S_ISCHR(mode) else
                "a block device" if stat.S_ISBLK(mode) else
                "a socket" if stat.S_ISSOCK(mode) else "not a regular file")
        raise UserError(f"{path}: is {kind}, expected a regular graph file")
    real = os.path.realpath(path)
    top = real.split(os.sep)[1] if real.count(os.sep) >= 2 else ""
    if top in ("proc", "sys", "dev"):
        raise UserError(f"{path}: is a /{top} system file, expected a regular graph file")
    return st


class _Source:
    """Lines of a graph file (gzip by the .gz suffix) with the current line number ``ln``."""

    def __init__(self, path, check_memory=True):
        self.path = os.fspath(path)
        self.check_memory = bool(check_memory)
        st = _check_path(self.path)
        self.size = int(st.st_size)
        self.gz = self.path.lower().endswith(".gz")
        self.ln = 0
        try:
            raw = open(self.path, "rb")
        except OSError as exc:
            raise UserError(f"{self.path}: cannot read ({exc.strerror or type(exc).__name__})") \
                from None
        if self.gz:
            try:
                magic = raw.read(2)
                raw.seek(0)
            except OSError as exc:
                raw.close()
                raise UserError(f"{self.path}: cannot read ({exc.strerror or exc})") from None
            if magic != b"\x1f\x8b":
                raw.close()
                raise UserError(f"{self.path}: not gzip-compressed although the name ends in .gz "
                                "(rename it without .gz, or compress it)")
            raw = gzip.GzipFile(fileobj=raw, mode="rb")
        self._raw = raw
        self.text = io.TextIOWrapper(raw, encoding="utf-8", errors="replace")

    def max_bytes(self) -> int:
        """An upper bound of the decompressed size."""
        return self.size * GZIP_MAX_RATIO if self.gz else self.size

    def __iter__(self):
        try:
            for line in self.text:
                self.ln += 1
                yield line
        except EOFError:
            raise UserError(f"{self.path}:{self.ln + 1}: the gzip data ends early "
                            "(truncated file?)") from None
        except (gzip.BadGzipFile, zlib.error) as exc:
            raise UserError(f"{self.path}:{self.ln + 1}: damaged gzip data "
                            f"({_excerpt(exc)})") from None
        except OSError as exc:
            raise UserError(f"{self.path}:{self.ln + 1}: cannot read "
                            f"({exc.strerror or _excerpt(exc)})") from None

    def close(self):
        try:
            self.text.close()
        except Exception:  # noqa: BLE001 - closing a damaged gzip stream may raise again
            pass

    # ---- messages
    def where(self, ln=None) -> str:
        return f"{self.path}:{self.ln if ln is None else ln}"

    def error(self, what, ln=None) -> UserError:
        return UserError(f"{self.where(ln)}: {what}")


def _int(tok, src, what, lo=None, hi=None) -> int:
    try:
        x = int(tok)
    except ValueError:
        raise src.error(f"expected {what}, got {_excerpt(tok)}") from None
    if (lo is not None and x < lo) or (hi is not None and x > hi):
        rng = f"{lo}..{hi}" if hi is not None else f">= {lo}"
        raise src.error(f"expected {what} in {rng}, got {_excerpt(tok)}")
    return x


def _weight(tok, src, what="a numeric weight", ln=None) -> float:
    try:
        w = float(tok)
    except ValueError:
        raise src.error(f"expected {what}, got {_excerpt(tok)}", ln) from None
    if not math.isfinite(w):
        raise src.error(f"expected a finite weight, got {_excerpt(tok)}", ln)
    if abs(w) > WEIGHT_MAX:
        raise src.error(f"expected a weight of magnitude at most 2^53, got {_excerpt(tok)}", ln)
    return w


#: how a memory refusal of :func:`read_graph` says it can be overridden
_READ_ANYWAY = "pass check_memory=False to read it anyway"


def _guard_vertices(src, n):
    """Refuse a header's vertex count before anything is allocated for it: always beyond 32-bit
    vertex ids, beyond the available memory only when ``src.check_memory`` (scenario runs leave
    that to the resource check, which ``--force`` overrides)."""
    need = n * BYTES_PER_VERTEX
    if n > MAX_VERTICES:
        raise src.error(f"the header promises n = {_count(n)} vertices (about "
                        f"{_bytes(need)} for the graph and its statistics); at most "
                        f"{MAX_VERTICES} vertices are supported (32-bit vertex ids)")
    avail = available_memory() if src.check_memory else None
    if avail is not None and need > avail:
        raise src.error(f"the header promises n = {n} vertices: about {_bytes(need)} for the "
                        f"graph and its statistics, more than the {_bytes(avail)} of memory "
                        f"here; {_READ_ANYWAY}")


def _guard_entries(src, count, what, min_bytes):
    """Refuse a header count that the file cannot hold (always) or memory cannot take (only
    when ``src.check_memory``, as :func:`_guard_vertices`)."""
    limit = src.max_bytes() // min_bytes
    if count > limit:
        raise src.error(f"the header promises {_count(count)} {what}, but a file of "
                        f"{src.size} bytes{' (gzip)' if src.gz else ''} holds at most {limit} "
                        "(truncated file or wrong header?)")
    need = count * BYTES_PER_ENTRY
    avail = available_memory() if src.check_memory else None
    if avail is not None and need > avail:
        raise src.error(f"the header promises {count} {what}: about {_bytes(need)} to build the "
                        f"graph, more than the {_bytes(avail)} of memory here; {_READ_ANYWAY}")


def _other_format(line) -> str | None:
    """The format whose header or typical line ``line`` looks like (None if no guess)."""
    s = line.strip()
    low = s.lower()
    if low.startswith("%%matrixmarket"):
        return "mtx"
    t = s.split()
    if not t:
        return None
    if t[0] == "p" and len(t) >= 2 and t[1].lower() in ("sp", "edge", "max", "cut", "aux"):
        return "dimacs"
    if t[0] == "a" and len(t) == 4:
        return "dimacs"
    if t[0] == "c" and len(t) not in (2, 3):
        return "dimacs"
    if t[0].startswith("#"):
        return "edgelist"
    if all(x.lstrip("-").isdigit() for x in t):
        if len(t) in (2, 3):
            return "edgelist"
        return "metis"
    return None


def _hint(line, reading) -> str:
    fmt = _other_format(line)
    if fmt is None or fmt == reading:
        return ""
    what = {"mtx": "a Matrix Market file", "dimacs": "a DIMACS .gr file",
            "edgelist": "an edge list", "metis": "METIS adjacency lines"}[fmt]
    suffix = {"mtx": ".mtx", "dimacs": ".gr", "edgelist": ".txt", "metis": ".graph"}[fmt]
    return (f" (this looks like {what}: set graph.file.format: {fmt} or name the file "
            f"*{suffix})")


def _wrong_header(src, line, reading):
    fmt = _other_format(line)
    return src.error(f"this line looks like a {FORMAT_NAMES[fmt]} header, not "
                     f"{FORMAT_NAMES[reading]} data ({_excerpt(line)}): set graph.file.format: "
                     f"{fmt} (or format='{fmt}')")


# ----------------------------------------------------------------------------- result
@dataclass
class GraphRead:
    """What a graph file holds.

    ``graph`` is None when ``max_lines`` stopped the parse early (``complete`` False).
    ``file_directed``: what the file describes (DIMACS arcs and general Matrix Market: directed;
    symmetric Matrix Market, METIS and edge lists: undirected).  ``entries``: arc, edge or matrix
    entry lines read (adjacency entries for METIS).  ``negative_weight``: (line, weight) of the
    first negative weight.  ``notes``: what the reader did that a user should hear about.
    """

    path: str
    format: str
    file_directed: bool = False
    graph: CSRGraph | None = None
    has_weights: bool = False
    entries: int = 0
    lines: int = 0
    complete: bool = True
    negative_weight: tuple | None = None
    notes: list = field(default_factory=list)
    states_direction: bool | None = None    # an edge list's SNAP header line, if any


def _stop(src, max_lines) -> bool:
    return max_lines is not None and src.ln > max_lines


def _arrays(us, vs, ws, use_w):
    u = np.frombuffer(us, dtype=np.int64) if len(us) else np.zeros(0, np.int64)
    v = np.frombuffer(vs, dtype=np.int64) if len(vs) else np.zeros(0, np.int64)
    w = (np.frombuffer(ws, dtype=np.float64) if len(ws) else np.zeros(0)) if use_w else None
    return u, v, w


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
    g = CSRGraph.from_edges(n, u, v, w, res.file_directed if directed is None else bool(directed))
    g.ids = ids
    res.graph = g
    return res


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
    if sym == "symmetric" and want:         # the matrix holds both (i, j) and (j, i)
        u, v = np.concatenate([u, v]), np.concatenate([v, u])
        if w is not None:
            w = np.concatenate([w, w])
    g = CSRGraph.from_edges(size, u, v, w, want)
    g.ids = np.arange(1, size + 1, dtype=np.int64)
    res.graph = g
    return res


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


_READERS = {"edgelist": _read_edgelist, "dimacs": _read_dimacs, "mtx": _read_mtx,
            "metis": _read_metis}


def read_graph_file(path, format: str | None = None, directed: bool | None = None,
                    weights: bool | None = None, max_lines: int | None = None,
                    check_memory: bool = True) -> GraphRead:
    """Parse a graph file completely (or its first ``max_lines`` lines) into a :class:`GraphRead`.

    ``format``: edgelist | dimacs | mtx | metis | None (from the suffix, :func:`guess_format`).
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
    src = _Source(path, check_memory)
    quoting = _quoting.set(False)
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
    """Read a graph file.  ``format``: edgelist | dimacs | mtx | metis | None (from the suffix:
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
        raise UserError(f"{path}:{ln}: negative weight {value:g}; shortest paths need weights "
                        ">= 0 (or set graph.weights: none)")
    if log is not None:
        for note in res.notes:
            log(note)
    return res
