"""GraphML (``graphml``) read in one streaming pass of the C XML parser (expat, standard library):
what networkx's ``read_graphml`` builds for the structure a path computation uses — nodes,
edges, direction, the edges' ``weight`` — at about 10× its speed and a small fraction of its
memory (no element tree, no Python graph: node ids in a dict, edges in two int64 arrays).

The rules are networkx's (tests/test_graph_readers_fuzz.py compares the two on generated
files): direction from the ``<graph edgedefault=…>`` (undirected when absent), an edge's
``directed`` attribute must agree with it; nodes are the ``<node id=…>`` ids and the endpoints
of edges (an endpoint never declared is a node, as networkx adds it); the weight is the
``<data>`` of the key whose ``attr.name`` is ``weight``, converted by the key's ``attr.type``
(a key's ``<default>`` is not applied to edges, as networkx does not). Refused, one line naming
the file and line: malformed XML, a ``<data>`` of an undeclared key, a weight that is not a
number, hyperedges, a ``<graph>`` nested in a node or a second top-level ``<graph>`` (networkx
keeps only the first), an edge without source or target.
"""
from __future__ import annotations

import gzip
import xml.parsers.expat
import zlib
from array import array

from ...errors import UserError
from ..reader_text import _excerpt, _looks_like_graph_data

#: expat reads the file in blocks of this many bytes
BLOCK = 1 << 20
NAN = float("nan")


class GraphMLData:
    """What :func:`parse_graphml` found: ``directed``, ``names`` (node ids in first-seen order),
    ``u``/``v`` (int64 arrays of positions in ``names``), ``w`` (float64 array, NaN where an
    edge has no weight), ``weighted`` (edges with a weight)."""

    def __init__(self):
        self.directed = False
        self.names = []
        self.u, self.v, self.w = array("q"), array("q"), array("d")
        self.weighted = 0


def _local(name: str) -> str:
    """A tag without its namespace prefix (``g:node`` → ``node``)."""
    return name.rsplit(":", 1)[-1] if ":" in name else name


class _Parser:
    def __init__(self, path):
        self.path = path
        self.out = GraphMLData()
        self.index = {}
        self.keys = {}                   # key id -> (attr.name, attr.type)
        self.depth_graph = 0             # <graph> elements open
        self.graphs = 0
        self.in_node = 0
        self.edge = None                 # (u, v) of the open edge
        self.data_key = None             # the weight key of an open <data>, collecting text
        self.text = []
        self.edge_w = None
        p = xml.parsers.expat.ParserCreate()
        p.buffer_text = True
        p.StartElementHandler = self.start
        p.EndElementHandler = self.end
        p.CharacterDataHandler = self.chars
        self.p = p

    def error(self, what):
        return UserError(f"{self.path}:{self.p.CurrentLineNumber}: {what}")

    def node(self, name):
        i = self.index.get(name)
        if i is None:
            i = self.index[name] = len(self.out.names)
            self.out.names.append(name)
        return i

    def start(self, tag, attrs):
        if ":" in tag:
            tag = _local(tag)
        if tag == "edge":
            if not self.depth_graph:
                return
            d = attrs.get("directed")
            if d is not None:
                if d == "true" and not self.out.directed:
                    raise self.error("directed=true edge found in an undirected graph")
                if d == "false" and self.out.directed:
                    raise self.error("directed=false edge found in a directed graph")
            s, t = attrs.get("source"), attrs.get("target")
            if s is None or t is None:
                raise self.error("an <edge> without source or target")
            index = self.index
            i = index.get(s)
            if i is None:
                i = self.node(s)
            j = index.get(t)
            if j is None:
                j = self.node(t)
            self.edge = (i, j)
            self.edge_w = None
        elif tag == "node":
            if not self.depth_graph:
                return
            name = attrs.get("id")
            if name is None:
                raise self.error("a <node> without an id")
            self.in_node += 1
            if name not in self.index:
                self.node(name)
        elif tag == "data":
            key = attrs.get("key")
            if key not in self.keys:
                raise self.error(f"<data> of an undeclared key {_excerpt(key)}")
            if self.edge is not None and self.keys[key][0] == "weight":
                self.data_key = key
                self.text = []
        elif tag == "key":
            self.keys[attrs.get("id")] = (attrs.get("attr.name"), attrs.get("attr.type", "string"))
        elif tag == "graph":
            _looks_like_graph_data()          # from here on, the file's text may be quoted
            if self.in_node or self.depth_graph:
                raise self.error("a <graph> nested in a node or graph (nested graphs are not "
                                 "supported)")
            self.graphs += 1
            if self.graphs > 1:
                raise self.error("a second <graph> (one graph per GraphML file is read)")
            self.depth_graph += 1
            self.out.directed = attrs.get("edgedefault") == "directed"
        elif tag == "hyperedge":
            raise self.error("a <hyperedge> (hypergraphs are not supported)")

    def chars(self, data):
        if self.data_key is not None:
            self.text.append(data)

    def end(self, tag):
        if ":" in tag:
            tag = _local(tag)
        if tag == "edge":
            if self.edge is None:
                return
            out = self.out
            out.u.append(self.edge[0])
            out.v.append(self.edge[1])
            if self.edge_w is None:
                out.w.append(NAN)
            else:
                out.w.append(self.edge_w)
                out.weighted += 1
            self.edge = None
        elif tag == "data" and self.data_key is not None:
            kind = self.keys[self.data_key][1]
            text = "".join(self.text)
            self.data_key = None
            try:
                w = float(int(text)) if kind in ("int", "long") else float(text)
            except (ValueError, OverflowError):
                raise self.error(f"edge weight {_excerpt(text.strip())} is not a number "
                                 f"(attr.type {_excerpt(kind)})") from None
            self.edge_w = w
        elif tag == "node" and self.in_node:
            self.in_node -= 1
        elif tag == "graph":
            self.depth_graph -= 1

    def run(self):
        gz = self.path.lower().endswith(".gz")
        try:
            f = gzip.open(self.path, "rb") if gz else open(self.path, "rb")
        except OSError as exc:
            raise UserError(f"{self.path}: cannot read ({exc.strerror or exc})") from None
        try:
            with f:
                while True:
                    block = f.read(BLOCK)
                    self.p.Parse(block, not block)
                    if not block:
                        break
        except UserError:
            raise
        except (LookupError, ValueError) as exc:     # an unknown or unsupported encoding
            raise UserError(f"{self.path}:{self.p.CurrentLineNumber}: cannot read as GraphML "
                            f"({type(exc).__name__}: {_excerpt(exc)})") from None
        except xml.parsers.expat.ExpatError as exc:
            raise UserError(f"{self.path}:{exc.lineno}: not well-formed GraphML (XML: "
                            f"{xml.parsers.expat.ErrorString(exc.code)})") from None
        except (EOFError, gzip.BadGzipFile, zlib.error) as exc:
            raise UserError(f"{self.path}: damaged or truncated gzip data "
                            f"({_excerpt(exc)})") from None
        except OSError as exc:
            raise UserError(f"{self.path}: cannot read ({exc.strerror or _excerpt(exc)})") \
                from None
        if not self.graphs:
            raise UserError(f"{self.path}: no <graph> element: not a GraphML file")
        return self.out


def parse_graphml(path) -> GraphMLData:
    """Parse a GraphML file (gzip by the .gz suffix) into a :class:`GraphMLData`."""
    return _Parser(str(path)).run()
