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
    (see :meth:`from_edges` for the rule).

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
        """SHA-256 over n, directedness and the CSR arrays: identifies the graph a result is for."""
        h = hashlib.sha256()
        h.update(np.array([self.n, int(self.directed)], dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(self.indptr, dtype=np.int64).tobytes())
        h.update(np.ascontiguousarray(self.indices, dtype=np.int32).tobytes())
        if self.weights is not None:
            h.update(np.ascontiguousarray(self.weights, dtype=np.float64).tobytes())
        return h.hexdigest()

    # ------------------------------------------------------------------ interop
    @classmethod
    def from_networkx(cls, G, weight="weight"):
        """From a networkx graph; nodes are numbered in ``list(G.nodes)`` order."""
        nodes = list(G.nodes)
        index = {v: i for i, v in enumerate(nodes)}
        src, dst, w = [], [], []
        weighted = weight is not None and any(weight in d for _, _, d in G.edges(data=True))
        for u, v, d in G.edges(data=True):
            src.append(index[u])
            dst.append(index[v])
            if weighted:
                w.append(d.get(weight, 1.0))
        return cls.from_edges(len(nodes), src, dst, w if weighted else None, G.is_directed())

    def to_networkx(self):
        import networkx as nx

        G = nx.DiGraph() if self.directed else nx.Graph()
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
