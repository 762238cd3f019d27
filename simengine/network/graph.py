"""Compressed sparse row (CSR) graph storage shared by every network algorithm and backend."""
from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

import numpy as np


@dataclass
class CSRGraph:
    """A graph in CSR form.

    ``indptr`` (int64, length n+1) and ``indices`` (int32 vertex ids) list the out-arcs of each
    vertex, sorted by target; ``weights`` (float64, one per arc) is ``None`` for unweighted graphs.
    An undirected graph stores each edge as two arcs. Self-loops and duplicate arcs are never stored
    (see :meth:`from_edges` for the rule).  ``ids`` (length n, or ``None`` for 0..n−1) holds the
    input's name of each vertex: the ids of a graph file, a networkx graph's node labels.

    Example
    -------
    >>> g = CSRGraph.from_edges(3, [0, 1], [1, 2])
    >>> g.n, g.num_arcs, list(g.neighbors(1))
    (3, 4, [0, 2])
    """

    n: int
    indptr: np.ndarray
    indices: np.ndarray
    weights: np.ndarray | None = None
    directed: bool = False
    _transpose: "CSRGraph | None" = field(default=None, repr=False, compare=False)
    #: the input's name of vertex i (file ids, labels, networkx nodes); None = vertex i is "i"
    ids: "np.ndarray | None" = field(default=None, repr=False, compare=False)

    # ------------------------------------------------------------------ construction
    @classmethod
    def from_edges(cls, n, src, dst, weights=None, directed=False):
        """Build from edge arrays.

        Rule for messy input: self-loops are dropped (they never shorten a path); duplicate arcs
        (after symmetrisation for undirected graphs) are merged keeping the smallest weight.
        """
        src = np.asarray(src, dtype=np.int64).ravel()
        dst = np.asarray(dst, dtype=np.int64).ravel()
        if src.shape != dst.shape:
            raise ValueError("src and dst differ in length")
        if len(src) and (min(src.min(), dst.min()) < 0 or max(src.max(), dst.max()) >= n):
            raise ValueError("vertex id out of range")
        w = None if weights is None else np.asarray(weights, dtype=np.float64).ravel()
        keep = src != dst
        src, dst = src[keep], dst[keep]
        if w is not None:
            w = w[keep]
        if not directed:
            src, dst = np.concatenate([src, dst]), np.concatenate([dst, src])
            if w is not None:
                w = np.concatenate([w, w])
        # sort by (src, dst, w) and keep the first of each (src, dst): the smallest weight
        if w is None:
            order = np.lexsort((dst, src))
        else:
            order = np.lexsort((w, dst, src))
        src, dst = src[order], dst[order]
        if w is not None:
            w = w[order]
        if len(src):
            first = np.ones(len(src), dtype=bool)
            first[1:] = (src[1:] != src[:-1]) | (dst[1:] != dst[:-1])
            src, dst = src[first], dst[first]
            if w is not None:
                w = w[first]
        indptr = np.zeros(n + 1, dtype=np.int64)
        np.cumsum(np.bincount(src, minlength=n), out=indptr[1:])
        return cls(int(n), indptr, dst.astype(np.int32), w, bool(directed))

    # ------------------------------------------------------------------ properties
    @property
    def num_arcs(self) -> int:
        return int(self.indptr[-1])

    @property
    def num_edges(self) -> int:
        """Edges as a user counts them: arcs for directed graphs, arcs/2 for undirected."""
        return self.num_arcs if self.directed else self.num_arcs // 2

    @property
    def weighted(self) -> bool:
        return self.weights is not None

    def degree(self) -> np.ndarray:
        return np.diff(self.indptr)

    def neighbors(self, v):
        return self.indices[self.indptr[v]:self.indptr[v + 1]]

    def arcs(self):
        """(src, dst) arrays of all arcs."""
        src = np.repeat(np.arange(self.n, dtype=np.int64), np.diff(self.indptr))
        return src, self.indices.astype(np.int64)

    def transpose(self) -> "CSRGraph":
        """The reverse graph (in-arcs as CSR), cached. Undirected graphs are their own transpose."""
        if not self.directed:
            return self
        if self._transpose is None:
            s, d = self.arcs()
            self._transpose = CSRGraph.from_edges(self.n, d, s, self.weights, directed=True)
        return self._transpose

    def __getstate__(self):
        """Pickle without the engines' per-graph caches (``_simengine_*``: a Floyd–Warshall matrix,
        device copies), which belong to one process and one device."""
        return {k: v for k, v in self.__dict__.items() if not k.startswith("_simengine_")}

    def content_hash(self) -> str:
        """SHA-256 over n, directedness, the CSR arrays and the vertex ids (when the input named its
        vertices): identifies the graph a result is for."""
        h = hashlib.sha256()
        h.update(np.array([self.n, int(self.directed)], dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(self.indptr, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(self.indices, dtype=np.int32).tobytes())
        if self.weights is not None:
            h.update(np.ascontiguousarray(self.weights, dtype=np.float64).tobytes())
        if self.ids is not None:
            ids = self.output_ids()
            if ids.dtype.kind == "i":
                h.update(b"ids:int" + ids.tobytes())
            else:
                h.update(b"ids:str" + "\n".join(ids.tolist()).encode("utf-8", "surrogatepass"))
        return h.hexdigest()

    # ------------------------------------------------------------------ vertex ids
    def vertex_ids(self) -> np.ndarray:
        """The input's id of every vertex (0..n−1 when the input did not name its vertices)."""
        return np.arange(self.n, dtype=np.int64) if self.ids is None else self.ids

    def output_ids(self) -> np.ndarray:
        """The ids as they are stored in an output file: int64 when every id is an integer,
        otherwise strings (``str(label)``) in an object array."""
        return ids_for_output(self.vertex_ids())

    def index_of(self, ids) -> np.ndarray:
        """Vertex indices (0..n−1) of the given input ids; ``KeyError`` names the first unknown one.

        Integer ids and labels are matched as the input wrote them; an integer also matches the
        label with the same digits (a scenario's ``5`` finds the edge-list label ``"5"``)."""
        ids = list(ids)
        if self.ids is None:
            out = []
            for x in ids:
                if isinstance(x, (bool, np.bool_)) or not isinstance(x, (int, np.integer)) \
                        or not 0 <= int(x) < self.n:
                    raise KeyError(x)
                out.append(int(x))
            return np.asarray(out, dtype=np.int64)
        table = {}
        for i, v in enumerate(self.ids.tolist()):
            table.setdefault(v, i)
            table.setdefault(str(v), i)
        out = []
        for x in ids:
            key = x.item() if isinstance(x, np.generic) else x
            if isinstance(key, bool):
                raise KeyError(x)
            i = table.get(key)
            if i is None and not isinstance(key, str):
                i = table.get(str(key))
            if i is None:
                raise KeyError(x)
            out.append(i)
        return np.asarray(out, dtype=np.int64)

    # ------------------------------------------------------------------ interop
    @classmethod
    def from_networkx(cls, G, weight="weight"):
        """From a networkx graph; nodes are numbered in ``list(G.nodes)`` order and the node labels
        are kept as ``ids`` (``None`` when they already are 0..n−1 in that order)."""
        nodes = list(G.nodes)
        index = {v: i for i, v in enumerate(nodes)}
        src, dst, w = [], [], []
        weighted = weight is not None and any(weight in d for _, _, d in G.edges(data=True))
        for u, v, d in G.edges(data=True):
            src.append(index[u])
            dst.append(index[v])
            if weighted:
                w.append(d.get(weight, 1.0))
        g = cls.from_edges(len(nodes), src, dst, w if weighted else None, G.is_directed())
        if any(not (isinstance(v, (int, np.integer)) and not isinstance(v, bool) and v == i)
               for i, v in enumerate(nodes)):
            labels = np.empty(len(nodes), dtype=object)
            labels[:] = [v.item() if isinstance(v, np.generic) else v for v in nodes]
            g.ids = labels
        return g

    def to_networkx(self, labels: bool = False):
        """A networkx graph with nodes 0..n−1, or the ``ids`` as nodes when ``labels`` is true."""
        import networkx as nx

        G = nx.DiGraph() if self.directed else nx.Graph()
        if labels and self.ids is not None:
            names = self.ids.tolist()
            G.add_nodes_from(names)
            s, d = self.arcs()
            s = [names[i] for i in s.tolist()]
            d = [names[i] for i in d.tolist()]
            if self.weights is None:
                G.add_edges_from(zip(s, d))
            else:
                G.add_weighted_edges_from(zip(s, d, self.weights.tolist()))
            return G
        G.add_nodes_from(range(self.n))
        s, d = self.arcs()
        if self.weights is None:
            G.add_edges_from(zip(s.tolist(), d.tolist()))
        else:
            G.add_weighted_edges_from(zip(s.tolist(), d.tolist(), self.weights.tolist()))
        return G

    @classmethod
    def from_scipy(cls, A, directed=True, weighted=True):
        """From a scipy.sparse matrix (A[i, j] is the arc i → j)."""
        A = A.tocoo()
        return cls.from_edges(A.shape[0], A.row, A.col, A.data if weighted else None, directed)

    def to_scipy(self):
        import scipy.sparse as sp

        data = self.weights if self.weights is not None else np.ones(self.num_arcs)
        return sp.csr_matrix((data, self.indices, self.indptr), shape=(self.n, self.n))


def ids_for_output(ids) -> np.ndarray:
    """Vertex ids as stored in an output file: int64 when every id is an integer that fits,
    otherwise ``str(id)`` for each (an object array of Python strings, HDF5 UTF-8 strings)."""
    ids = np.asarray(ids) if not isinstance(ids, np.ndarray) else ids
    if ids.dtype.kind in "iu":
        return ids.astype(np.int64)
    vals = ids.tolist()
    if all(isinstance(v, (int, np.integer)) and not isinstance(v, bool)
           and -2 ** 63 <= v < 2 ** 63 for v in vals):
        return np.asarray(vals, dtype=np.int64)
    out = np.empty(len(vals), dtype=object)
    out[:] = [str(v).replace("\x00", "\\x00") for v in vals]
    return out
