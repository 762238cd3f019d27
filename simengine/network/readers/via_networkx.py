"""GraphML (``graphml``), GML (``gml``) and Pajek (``pajek``) through networkx's readers — the
optional extra ``formats`` (``pip install 'simengine[formats]'``: networkx).

The same rules as the other readers: the file's direction (GraphML ``edgedefault``, GML
``directed 1``, Pajek ``*Arcs`` against ``*Edges``) unless ``directed`` overrides it (with the
note of :func:`..direction.override_note`; an undirected file read as directed has arcs both
ways); weights from the edges' ``weight`` attribute when every edge has one (``weights=True``
requires them, ``False`` ignores them; some edges without is an error); duplicate edges and
self-loops as :meth:`CSRGraph.from_edges`. Vertex ids: the file's node names (GraphML ``id``, GML
``label``, Pajek names); when every name is an integer they are integer ids, sorted; otherwise
strings, sorted — as an edge list's. Every problem is one line naming the file; the parser's
message is quoted only once the file looks like the format (its first bytes), as elsewhere.
"""
from __future__ import annotations

import numpy as np

from ...errors import UserError
from ..graph import CSRGraph
from ..reader_text import _excerpt, _looks_like_graph_data
from .common import MAX_VERTICES, GraphRead, _check_path

#: format -> (networkx reader name, what its first bytes look like, its name in messages)
NX_FORMATS = {"graphml": ("read_graphml", (b"<?xml", b"<graphml"), "GraphML"),
              "gml": ("read_gml", (b"graph", b"creator", b"version", b"#"), "GML"),
              "pajek": ("read_pajek", (b"*vertices", b"*network", b"%"), "Pajek")}


def _looks_like(path, marks) -> bool:
    import gzip

    try:
        opener = gzip.open if str(path).lower().endswith(".gz") else open
        with opener(path, "rb") as f:
            head = f.read(256).lstrip().lower()
    except Exception:  # noqa: BLE001 - damaged gzip (EOFError, zlib.error), unreadable: the
        return False   # parser says what is wrong
    return any(head.startswith(m) for m in marks)


def _load(path, fmt):
    try:
        import networkx as nx
    except ImportError:
        raise UserError(f"{path}: reading {NX_FORMATS[fmt][2]} needs networkx (pip install "
                        f"'simengine[formats]')") from None
    reader, marks, name = NX_FORMATS[fmt]
    if _looks_like(path, marks):
        _looks_like_graph_data()
    try:
        if fmt == "gml":
            return nx.read_gml(path, label="label")
        return getattr(nx, reader)(path)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - any parser failure is the file's problem
        where = ""
        pos = getattr(exc, "position", None)            # xml.etree ParseError: (line, column)
        if pos:
            where = f":{pos[0]}"
        return UserError(f"{path}{where}: cannot read as {name}: {type(exc).__name__} "
                         f"({_excerpt(exc)})")


def _ids(nodes):
    """(sorted ids array, position of each node in that order): integers when every name is."""
    def as_int(x):
        if isinstance(x, (int, np.integer)) and not isinstance(x, bool):
            return int(x)
        if isinstance(x, str) and x.strip().lstrip("+-").isdigit():
            return int(x)
        return None

    ints = [as_int(x) for x in nodes]
    if nodes and all(i is not None for i in ints) and len(set(ints)) == len(ints):
        keys = np.array(ints, dtype=np.int64)
        order = np.argsort(keys, kind="stable")
        ids = keys[order]
    else:
        names = [str(x) for x in nodes]
        if len(set(names)) != len(names):
            raise ValueError("two nodes have the same name")
        order = np.array(sorted(range(len(names)), key=names.__getitem__), dtype=np.int64)
        ids = np.empty(len(names), dtype=object)
        ids[:] = [names[i] for i in order]
    pos = np.empty(len(nodes), dtype=np.int64)
    pos[order] = np.arange(len(nodes))
    return ids, pos


def read_via_networkx(path, fmt, directed, weights) -> GraphRead:
    """Read a GraphML, GML or Pajek file into a :class:`GraphRead`."""
    path = str(path)
    _check_path(path)
    name = NX_FORMATS[fmt][2]
    G = _load(path, fmt)
    if isinstance(G, UserError):
        raise G
    res = GraphRead(path, fmt, file_directed=bool(G.is_directed()))
    res.states_direction = res.file_directed
    nodes = list(G.nodes)
    if len(nodes) > MAX_VERTICES:
        raise UserError(f"{path}: {len(nodes)} vertices; at most {MAX_VERTICES} are supported")
    if not nodes:
        raise UserError(f"{path}: no vertices in this {name} file")
    try:
        ids, pos = _ids(nodes)
    except ValueError as exc:
        raise UserError(f"{path}: {exc}") from None
    index = {v: int(pos[i]) for i, v in enumerate(nodes)}
    edges = list(G.edges(data=True))
    res.entries = res.lines = len(edges)
    with_w = [d.get("weight") for _, _, d in edges]
    have = sum(w is not None for w in with_w)
    res.has_weights = bool(edges) and have == len(edges)
    if weights is not False and 0 < have < len(edges):
        missing = next(i for i, w in enumerate(with_w) if w is None)
        u, v, _ = edges[missing]
        raise UserError(f"{path}: {have} of {len(edges)} edges have a 'weight' and the edge "
                        f"{_excerpt(u)} - {_excerpt(v)} has none (give every edge one, or set "
                        f"graph.weights: none)")
    use_w = res.has_weights and weights is not False
    u = np.array([index[a] for a, _, _ in edges], dtype=np.int64)
    v = np.array([index[b] for _, b, _ in edges], dtype=np.int64)
    w = None
    if use_w:
        try:
            w = np.array([float(x) for x in with_w], dtype=np.float64)
        except (TypeError, ValueError):
            raise UserError(f"{path}: an edge 'weight' is not a number") from None
        bad = ~np.isfinite(w)
        if bad.any():
            raise UserError(f"{path}: expected finite edge weights, got {w[bad][0]!r}")
        neg = np.flatnonzero(w < 0)
        if len(neg):
            res.negative_weight = (None, float(w[neg[0]]))   # no line number to name
    build = res.file_directed if directed is None else bool(directed)
    if build and not res.file_directed:               # undirected file, directed run
        u, v = np.concatenate([u, v]), np.concatenate([v, u])
        if w is not None:
            w = np.concatenate([w, w])
    g = CSRGraph.from_edges(len(nodes), u, v, w, build)
    plain = ids.dtype.kind == "i" and np.array_equal(ids, np.arange(len(nodes)))
    g.ids = None if plain else ids               # as an edge list: None when exactly 0..n-1
    res.graph = g
    return res
