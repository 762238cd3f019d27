"""What every graph reader shares: the file itself (plain or gzip, refused when it is no regular
file), its lines with their numbers, numbers parsed with one-line errors, the guards that refuse
header counts no file or memory can hold, the hints when a line looks like another format, and
the :class:`GraphRead` result."""
from __future__ import annotations

import gzip
import io
import math
import os
import stat
import zlib
from dataclasses import dataclass, field

import numpy as np

from ...errors import UserError
from ..graph import CSRGraph
from ..reader_text import _bytes, _count, _excerpt
from ..weights import WEIGHT_MAX

FORMAT_NAMES = {"edgelist": "edge list", "dimacs": "DIMACS", "mtx": "Matrix Market",
                "metis": "METIS", "konect": "KONECT", "graphml": "GraphML", "gml": "GML",
                "pajek": "Pajek"}
#: CSR vertex ids are int32
MAX_VERTICES = 2 ** 31 - 2
#: memory per vertex of a graph and its path statistics (CSR row pointer, accumulators, results)
BYTES_PER_VERTEX = 128
#: memory per edge entry while a graph is built (parsed arrays, symmetrised copies, sort, CSR)
BYTES_PER_ENTRY = 64
#: gzip never expands data more than about 1032 : 1
GZIP_MAX_RATIO = 1100
#: words of an edge list's column header ("source,target,weight"), compared in lower case

def available_memory() -> int | None:
    """Bytes of memory this process may still allocate (the resource check's figure:
    :func:`simengine.machine.host_available`)."""
    from ...machine import host_available

    return host_available()[0]


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


def _finish(res, n, u, v, w, directed, both_ways, ids):
    """``res.graph``, the CSR graph of the arcs ``u → v`` (weights ``w`` or None) with the
    file's vertex ``ids``; ``both_ways``: each arc also reversed (an undirected file read as
    directed). Returns ``res``."""
    if both_ways:
        u, v = np.concatenate([u, v]), np.concatenate([v, u])
        if w is not None:
            w = np.concatenate([w, w])
    g = CSRGraph.from_edges(n, u, v, w, directed)
    g.ids = ids
    res.graph = g
    return res


def _arrays(us, vs, ws, use_w):
    u = np.frombuffer(us, dtype=np.int64) if len(us) else np.zeros(0, np.int64)
    v = np.frombuffer(vs, dtype=np.int64) if len(vs) else np.zeros(0, np.int64)
    w = (np.frombuffer(ws, dtype=np.float64) if len(ws) else np.zeros(0)) if use_w else None
    return u, v, w

