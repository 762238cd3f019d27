"""A graph's shape predicted from a scenario, before the graph exists: from a generator's
parameters or a file's header (or its size and first lines). The run's plan reads the built
graph's shape instead (:meth:`~.problem.GraphShape.of`); for the generators whose sizes the
parameters fix, the two agree."""
from __future__ import annotations

import math
import os

from .problem import GraphShape


def _threads() -> int:
    import numba

    return int(numba.get_num_threads())


def _max_weight(gen: dict, weights_setting):
    """(low, high) of the integer weights a generator or ``graph.weights`` draws, or None."""
    w = weights_setting if weights_setting not in (None, "none", "file") else gen.get("weights")
    if w is None and gen.get("type") == "random_weighted":
        return int(gen.get("low", 1)), int(gen.get("high", 10))
    if w is None:
        return None
    get = (lambda k, d: w.get(k, d)) if isinstance(w, dict) else (  # noqa: E731
        lambda k, d: getattr(w, k, d))
    return int(get("low", 1)), int(get("high", 10))


def generator_shape(gen: dict, directed: bool, weights_setting) -> GraphShape:
    from ..network.weights_setting import generator_makes_weights

    kind = gen.get("type")
    P = _threads()
    num = lambda k, d=None: gen.get(k, d)  # noqa: E731
    edges = None
    n = int(num("n", 0) or 0)
    fast = False
    gen_edges = None
    if kind in ("gnm",):
        edges, fast = int(num("m")), True
    elif kind in ("gnp", "erdos_renyi"):
        pairs = n * (n - 1) if directed else n * (n - 1) // 2
        edges, fast = int(round(float(num("p")) * pairs)), True
    elif kind == "random_weighted":
        edges = int(round(n * float(num("avg_degree", 6.0)) / (1 if directed else 2)))
        fast = True
    elif kind == "barabasi_albert":
        m = int(num("m"))
        edges = m + max(0, n - m - 1) * m
    elif kind in ("watts_alpha", "watts_alpha_ring", "watts_alpha_free",
                  "watts_alpha_nosubstrate"):
        edges = n * int(num("k", 10)) // 2
    elif kind in ("watts_strogatz", "ring_lattice"):
        edges = n * int(num("k")) // 2
    elif kind in ("grid", "torus"):
        shape = [int(x) for x in num("shape")]
        n = math.prod(shape)
        edges = len(shape) * n
    elif kind == "rmat":
        scale = int(num("scale"))
        n = 1 << scale
        gen_edges = int(num("edge_factor", 16)) * n
        edges = gen_edges                      # an upper bound (duplicates are merged)
    else:
        edges = 0
    arcs = edges if directed else 2 * edges
    if fast:        # int32 draws (9/8 of the edges, two arrays) + an int64 draw + chunk counters
        build = 16 * (edges + edges // 8) + 4 * P * n
    elif kind == "rmat":        # a byte per arc, kept counts per row, two key arrays per worker
        build = arcs + 8 * n + 32 * P * (arcs // 4096 + 1)
    else:           # edge arrays through CSRGraph.from_edges (int64 copies and a lexsort)
        build = 48 * arcs
    weighted = generator_makes_weights(gen)
    if weights_setting == "none":
        weighted = False
    elif weights_setting not in (None, "file"):
        weighted = True
    if weighted:
        build += 8 * edges                     # the integer weight draws
    from ..network.weights import DIAL_MAX_WEIGHT

    rng = _max_weight(gen, weights_setting) if weighted else None
    dial = not weighted or (rng is not None and 0 <= rng[0] and rng[1] <= DIAL_MAX_WEIGHT)
    return GraphShape(n, arcs, weighted, dial, True, directed, build,
                      f"generator {kind!r} parameters",
                      (float(rng[0]), float(rng[1])) if rng is not None else None)


def _file_header(path, fmt):
    """(n, entries, symmetric, weighted) from a DIMACS/Matrix Market/METIS header, or
    None."""
    import gzip
    import zlib

    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            symmetric, weighted = False, True
            for k, line in enumerate(f):
                if k > 10000:
                    return None
                t = line.split()
                if fmt == "mtx":
                    if line.startswith("%%"):
                        symmetric = "symmetric" in line.lower()
                        weighted = "pattern" not in line.lower()
                        continue
                    if not t or t[0].startswith("%"):
                        continue
                    return int(t[0]), int(t[2]), symmetric, weighted
                if fmt == "dimacs":
                    if t and t[0] == "p" and len(t) >= 4:
                        return int(t[2]), int(t[3]), False, True
                    continue
                if fmt == "metis":
                    if not t or t[0].startswith("%"):
                        continue      # fmt's last digit: edge weights
                    return int(t[0]), int(t[1]), True, len(t) > 2 and t[2][-1:] == "1"
    except (OSError, ValueError, IndexError, EOFError, zlib.error):
        return None   # a damaged or truncated gzip: the reader reports it with its line
    return None


def _sample_weights(lines, fmt) -> list:
    """The weights the first data ``lines`` (bytes, comments dropped) hold: the third column
    (DIMACS: the fourth of its ``a`` lines; METIS: every second value after the header; Matrix
    Market and METIS: the header line skipped)."""
    out = []
    if fmt in ("mtx", "metis"):
        lines = lines[1:]
    for ln in lines[:2000]:
        t = ln.split()
        if fmt == "dimacs":
            vals = t[3:4] if t[:1] == [b"a"] else []
        elif fmt == "metis":
            vals = t[1::2]
        else:
            vals = t[2:3]
        for v in vals:
            try:
                out.append(float(v))
            except ValueError:
                pass
    return out


def _sample_lines(path, fmt="edgelist", limit=1 << 20):
    """(data lines per byte of the file, largest vertex id seen, the weights of the first data
    lines, :func:`_sample_weights`) from its first MiB."""
    import zlib

    if str(path).endswith(".gz"):
        with open(path, "rb") as f:
            raw = f.read(limit)
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            text = d.decompress(raw, 8 * limit)
        except zlib.error:
            return 0.0, 0, []
        used = len(raw) - len(d.unconsumed_tail) - len(d.unused_data)
        ratio = len(text) / max(1, used)
    else:
        with open(path, "rb") as f:
            text = f.read(limit)
        ratio = 1.0
    lines = [ln for ln in text.split(b"\n")[:-1] if ln.strip() and ln.lstrip()[:1] not in
             (b"#", b"%")]
    if not text:
        return 0.0, 0, []
    ids = 0
    for ln in lines[:2000]:
        t = ln.split()
        try:
            ids = max(ids, int(t[0]), int(t[1]))
        except (ValueError, IndexError):
            pass
    return len(lines) / max(1, len(text)) * ratio, ids, _sample_weights(lines, fmt)


def _sample_graphml(path, limit=1 << 20):
    """(<node and <edge elements per byte of the file (its first MiB; per compressed byte for
    gzip), whether a key named weight is declared there)."""
    import gzip
    import zlib

    try:
        if str(path).endswith(".gz"):
            with open(path, "rb") as raw, gzip.GzipFile(fileobj=raw) as f:
                text = f.read(limit)
                used = max(1, raw.tell())
        else:
            with open(path, "rb") as f:
                text = f.read(limit)
                used = max(1, len(text))
    except (OSError, EOFError, zlib.error):
        return 0.0, False
    weight = b'attr.name="weight"' in text or b"attr.name='weight'" in text
    return (text.count(b"<node") + text.count(b"<edge")) / used, weight


def file_shape(sc, g) -> GraphShape:
    from ..network.readers import guess_format

    path = sc.resolve(g.file.path)
    fmt = g.file.format or guess_format(path)
    size = os.path.getsize(path)
    head = _file_header(path, fmt) if fmt in ("mtx", "dimacs", "metis") else None
    third = []
    if head is not None:
        n, entries, sym, has_weights = head
        lines = entries
        how = f"the header of {g.file.path}"
        if has_weights:                         # the weights of the first lines
            third = _sample_lines(path, fmt)[2]
    elif fmt == "graphml":           # elements, not lines (a GraphML file may be one line)
        per_byte, has_weights = _sample_graphml(path)
        elements = int(per_byte * size) + 1     # bounds both nodes and edges
        lines, n = elements, elements
        sym = False
        how = f"the size of {g.file.path} and its first elements"
    else:
        per_byte, maxid, third = _sample_lines(path, fmt)
        has_weights = bool(third)
        lines = int(per_byte * size)
        # sparse ids are renumbered 0..n-1 by the reader: at most 2 vertices per line (i37)
        n = max(min(maxid + 1, 2 * max(lines, 1)), lines // 8, 1)
        sym = False
        how = f"the size of {g.file.path} and its first lines"
    if g.directed is None:         # what the file describes (docs/network.md, Readers)
        directed = fmt == "dimacs" or (fmt == "mtx" and head is not None and not sym)
    else:
        directed = bool(g.directed)
    arcs = lines if directed and not sym else 2 * lines
    # the readers keep Python lists of ints/floats (≈ 100 bytes per line), then CSRGraph.from_edges
    build = 100 * lines + 48 * arcs
    if fmt in ("gml", "pajek"):       # networkx's whole Python graph of the file
        from ..network.readers.via_networkx import nx_memory

        build = max(build, nx_memory(path, size))
    from ..network.weights import DIAL_MAX_WEIGHT

    w = g.weights
    if w in (None, "file"):          # the file's weight column, when it has one (its first lines)
        weighted = has_weights
        exact = not weighted or all(x == int(x) for x in third)
        dial = exact and (not weighted or all(0 <= x <= DIAL_MAX_WEIGHT for x in third))
    elif w == "none":
        weighted, dial, exact = False, True, True
    else:                            # integer weights drawn by graph.weights
        weighted, exact = True, True
        dial = 0 <= int(w.low) and int(w.high) <= DIAL_MAX_WEIGHT
    return GraphShape(n, arcs, weighted, dial, exact, directed, build, how)


def num_sources(spec, n: int) -> int:
    s = spec.metrics.sources
    if isinstance(s, list):
        return len(s)
    if s == "all":
        return n
    return min(int(s.sample), n)
