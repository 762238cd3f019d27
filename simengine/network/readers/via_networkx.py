"""GraphML (``graphml``, our streaming parser: :mod:`.graphml`), GML (``gml``) and Pajek
(``pajek``) through networkx's readers — the optional extra ``formats`` (``pip install
'simengine[formats]'``: networkx).

The same rules as the other readers: the file's direction (GraphML ``edgedefault``, GML
``directed 1``, Pajek ``*Arcs`` against ``*Edges``) unless ``directed`` overrides it (with the
note of :func:`..direction.override_note`; an undirected file read as directed has arcs both
ways); weights from the edges' ``weight`` attribute when every edge has one (``weights=True``
requires them, ``False`` ignores them; some edges without is an error); duplicate edges and
self-loops as :meth:`CSRGraph.from_edges`. Vertex ids: the file's node names (GraphML ``id``, GML
``label`` — or ``id`` when no node has a label, as networkx's ``label='id'`` —, Pajek names);
when every name is an integer within int64 they are integer ids, sorted; otherwise strings,
sorted — as an edge list's. Every problem is one line naming the file; the parser's message is
quoted only once the file looks like the format (its first bytes), as elsewhere.

networkx holds the whole file as a Python graph: about :data:`NX_BYTES_PER_BYTE` bytes of memory
per byte of GML or Pajek (measured, docs/measurements/graph-readers-2026-12-02.md); a file whose
estimate exceeds the available memory is refused before networkx reads it (``check_memory``), and
the plan counts the same figure (simengine/plan/graph_shape.py).
"""
from __future__ import annotations

import numpy as np

from ...errors import UserError
from ..graph import CSRGraph
from ..reader_text import _bytes, _excerpt, _looks_like_graph_data
from .common import GZIP_MAX_RATIO, MAX_VERTICES, GraphRead, _check_path, available_memory
from .graphml import parse_graphml

#: networkx's graph of a GML or Pajek file: bytes of memory per byte of the file (measured)
NX_BYTES_PER_BYTE = 40
INT64_MAX = 2 ** 63 - 1

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


def nx_memory(path, size) -> int:
    """networkx's memory for a GML or Pajek file of ``size`` bytes (gzip: its bound)."""
    gz = str(path).lower().endswith(".gz")
    return NX_BYTES_PER_BYTE * size * (GZIP_MAX_RATIO if gz else 1)


def _guard_memory(path, name):
    size = _check_path(path).st_size
    need = nx_memory(path, size)
    avail = available_memory()
    if avail is not None and need > avail:
        raise UserError(f"{path}: networkx needs about {_bytes(need)} to read this {name} file "
                        f"({NX_BYTES_PER_BYTE} bytes per byte), more than the {_bytes(avail)} of "
                        f"memory here; pass check_memory=False to read it anyway")


def _gml_nodes(G, path):
    """networkx's GML graph read with ``label=None`` (nodes by id) renamed by label, or kept by
    id when no node has a label (networkx's ``label='id'``)."""
    labels = [d.get("label") for _, d in G.nodes(data=True)]
    have = sum(x is not None for x in labels)
    if have == 0:
        return G
    if have < len(labels):
        i = next(i for i, x in enumerate(labels) if x is None)
        node = list(G.nodes)[i]
        raise UserError(f"{path}: {have} of {len(labels)} nodes have a label and node id "
                        f"{_excerpt(node)} has none (label all nodes or none)")
    if len(set(map(str, labels))) != len(labels):
        raise UserError(f"{path}: two nodes have the same label")
    import networkx as nx

    return nx.relabel_nodes(G, dict(zip(G.nodes, labels)), copy=True)


def _load(path, fmt, check_memory=True):
    try:
        import networkx as nx
    except ImportError:
        raise UserError(f"{path}: reading {NX_FORMATS[fmt][2]} needs networkx (pip install "
                        f"'simengine[formats]')") from None
    reader, marks, name = NX_FORMATS[fmt]
    if check_memory:
        _guard_memory(path, name)
    if _looks_like(path, marks):
        _looks_like_graph_data()
    try:
        if fmt == "gml":
            return _gml_nodes(nx.read_gml(path, label=None), path)
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
            i = int(x)
        elif isinstance(x, str) and x.strip().lstrip("+-").isdigit() and len(x) < 40:
            i = int(x)
        else:
            return None
        return i if -INT64_MAX - 1 <= i <= INT64_MAX else None      # beyond int64: a name

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


def _from_networkx(path, fmt, check_memory):
    """(file directed, node names, u, v positions, weights with NaN where missing, count with a
    weight) of networkx's graph of the file."""
    G = _load(path, fmt, check_memory)
    if isinstance(G, UserError):
        raise G
    nodes = list(G.nodes)
    index = {x: i for i, x in enumerate(nodes)}
    edges = list(G.edges(data=True))
    u = np.fromiter((index[a] for a, _, _ in edges), dtype=np.int64, count=len(edges))
    v = np.fromiter((index[b] for _, b, _ in edges), dtype=np.int64, count=len(edges))
    with_w = [d.get("weight") for _, _, d in edges]
    have = sum(x is not None for x in with_w)
    try:
        w = np.array([np.nan if x is None else float(x) for x in with_w], dtype=np.float64)
    except (TypeError, ValueError):
        raise UserError(f"{path}: an edge 'weight' is not a number") from None
    return bool(G.is_directed()), nodes, u, v, w, have


def read_via_networkx(path, fmt, directed, weights, check_memory=True) -> GraphRead:
    """Read a GraphML (our parser), GML or Pajek (networkx) file into a :class:`GraphRead`."""
    path = str(path)
    _check_path(path)
    name = NX_FORMATS[fmt][2]
    if fmt == "graphml":
        d = parse_graphml(path)
        file_directed, nodes, have = d.directed, d.names, d.weighted
        u, v, w_all = (np.frombuffer(x, dtype=t) if len(x) else np.zeros(0, t)
                       for x, t in ((d.u, np.int64), (d.v, np.int64), (d.w, np.float64)))
    else:
        file_directed, nodes, u, v, w_all, have = _from_networkx(path, fmt, check_memory)
    res = GraphRead(path, fmt, file_directed=file_directed)
    res.states_direction = res.file_directed
    if len(nodes) > MAX_VERTICES:
        raise UserError(f"{path}: {len(nodes)} vertices; at most {MAX_VERTICES} are supported")
    if not nodes:
        raise UserError(f"{path}: no vertices in this {name} file")
    try:
        ids, pos = _ids(nodes)
    except ValueError as exc:
        raise UserError(f"{path}: {exc}") from None
    m = len(u)
    res.entries = res.lines = m
    res.has_weights = bool(m) and have == m
    if weights is not False and 0 < have < m:
        missing = int(np.flatnonzero(np.isnan(w_all))[0])
        raise UserError(f"{path}: {have} of {m} edges have a 'weight' and the edge "
                        f"{_excerpt(nodes[u[missing]])} - {_excerpt(nodes[v[missing]])} has none "
                        f"(give every edge one, or set graph.weights: none)")
    use_w = res.has_weights and weights is not False
    u, v = pos[u], pos[v]
    w = None
    if use_w:
        w = w_all
        bad = ~np.isfinite(w)
        if bad.any():
            raise UserError(f"{path}: expected finite edge weights, got {float(w[bad][0])}")
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
