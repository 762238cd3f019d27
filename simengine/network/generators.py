"""Seeded, reproducible graph generators returning :class:`CSRGraph` (see docs/network.md).

Every generator takes ``seed`` (anything ``numpy.random.default_rng`` accepts) and gives the same
graph for the same arguments on every platform.  :func:`generate` dispatches a scenario dict such
as ``{"type": "barabasi_albert", "n": 10000, "m": 5, "seed": 1}``.
"""
from __future__ import annotations

import numpy as np
from numba import njit

from .graph import CSRGraph

#: default α-model parameters (Watts 1999 leaves them free; the seeds do not state them)
ALPHA_RING = 1.0        # ring substrate: strongly clustered, long paths (Leist type 1)
P_RING = 1e-9
ALPHA_FREE = 4.0        # no substrate: more random, short paths (Leist type 2)
P_FREE = 1e-4


def _rng(seed):
    return np.random.default_rng(seed)


def _seed32(rng):
    return int(rng.integers(0, 2**31 - 1))


# ---------------------------------------------------------------------------- Watts α-model
@njit(cache=True, inline="always")
def _add_edge(adj, deg, src, dst, ne, i, j):
    """Edge i–j into the adjacency table and edge list ``ne``; returns ne + 1."""
    adj[i, deg[i]] = j
    deg[i] += 1
    adj[j, deg[j]] = i
    deg[j] += 1
    src[ne] = i
    dst[ne] = j
    return ne + 1


@njit(cache=True)
def _alpha_model(n, k, alpha, p, ring, seed):
    np.random.seed(seed)
    target = (n * k) // 2
    cap = max(2 * k, 8)
    adj = np.empty((n, cap), np.int32)
    deg = np.zeros(n, np.int64)
    src = np.empty(target + n, np.int32)
    dst = np.empty(target + n, np.int32)
    ne = 0
    if ring and n >= 3:
        for i in range(n):
            ne = _add_edge(adj, deg, src, dst, ne, i, (i + 1) % n)
    nbmark = np.full(n, -1, np.int64)
    cmark = np.full(n, -1, np.int64)
    cnt = np.zeros(n, np.int64)
    cand = np.empty(n, np.int64)
    rvals = np.empty(n, np.float64)
    step = 0
    stall = 0
    while ne < target and stall < 100 * n:
        step += 1
        i = np.random.randint(0, n)
        di = deg[i]
        if di >= n - 1:
            stall += 1
            continue
        nbmark[i] = step
        for a in range(di):
            nbmark[adj[i, a]] = step
        nc = 0
        for a in range(di):
            u = adj[i, a]
            for b in range(deg[u]):
                j = adj[u, b]
                if nbmark[j] == step:
                    continue
                if cmark[j] != step:
                    cmark[j] = step
                    cnt[j] = 0
                    cand[nc] = j
                    nc += 1
                cnt[j] += 1
        total = 0.0
        for c in range(nc):
            m = cnt[cand[c]]
            if m >= k:
                r = 1.0
            else:
                r = (m / k) ** alpha * (1.0 - p) + p
            rvals[c] = r
            total += r
        nzero = n - 1 - di - nc
        tz = p * nzero
        total += tz
        if total <= 0.0:
            stall += 1
            continue
        x = np.random.random() * total
        if x < tz:
            while True:
                j = np.random.randint(0, n)
                if nbmark[j] != step and cmark[j] != step:
                    break
        else:
            x -= tz
            j = cand[nc - 1]
            for c in range(nc):
                x -= rvals[c]
                if x < 0.0:
                    j = cand[c]
                    break
        # add edge i-j (grow the adjacency table when needed)
        if deg[i] >= cap or deg[j] >= cap:
            cap2 = cap * 2
            adj2 = np.empty((n, cap2), np.int32)
            for v in range(n):
                for a in range(deg[v]):
                    adj2[v, a] = adj[v, a]
            adj = adj2
            cap = cap2
        ne = _add_edge(adj, deg, src, dst, ne, i, j)
        stall = 0
    return src[:ne], dst[:ne]


def watts_alpha(n: int, k: int = 10, alpha: float | None = None, p: float | None = None,
                ring: bool = True, seed=None, connect: str = "repair") -> CSRGraph:
    """Watts' α-model (Small Worlds, 1999) with mean degree ``k`` (n·k/2 edges in total).

    Repeatedly a vertex i is drawn uniformly and joined to a non-neighbour j with probability
    R_ij / Σ_l R_il, where R_ij = 1 if m_ij ≥ k, (m_ij/k)^α (1−p) + p if 0 < m_ij < k, p if
    m_ij = 0 (m_ij = common neighbours).  ``ring=True`` starts from a ring substrate (n edges,
    always connected); defaults α=ALPHA_RING, p=P_RING (ring) or α=ALPHA_FREE, p=P_FREE (no
    substrate).  Without substrate the result can be disconnected: ``connect="repair"`` joins every
    smaller component to the largest with one edge between uniformly chosen vertices (adds
    #components−1 edges), ``"reject"`` regenerates with the next derived seed (up to 50 tries, then
    ValueError), ``"none"`` keeps the graph as generated.
    """
    if n < 2 or k < 1 or k >= n:
        raise ValueError("watts_alpha needs n >= 2 and 1 <= k < n")
    if ring and k < 2:
        raise ValueError("watts_alpha with ring substrate needs k >= 2")
    if connect not in ("repair", "reject", "none"):
        raise ValueError("connect must be repair, reject or none")
    alpha = (ALPHA_RING if ring else ALPHA_FREE) if alpha is None else float(alpha)
    p = (P_RING if ring else P_FREE) if p is None else float(p)
    if not 0.0 <= p <= 1.0 or alpha < 0:
        raise ValueError("watts_alpha needs 0 <= p <= 1 and alpha >= 0")
    rng = _rng(seed)
    for _attempt in range(50):
        s, d = _alpha_model(int(n), int(k), alpha, p, bool(ring), _seed32(rng))
        g = CSRGraph.from_edges(n, s, d)
        if ring or connect == "none":
            return g
        from .components import connected_components

        ncomp, labels = connected_components(g)
        if ncomp == 1:
            return g
        if connect == "repair":
            sizes = np.bincount(labels)
            big = int(np.argmax(sizes))
            in_big = np.flatnonzero(labels == big)
            es, ed = [s], [d]
            for c in range(ncomp):
                if c == big:
                    continue
                members = np.flatnonzero(labels == c)
                es.append(np.array([rng.choice(members)]))
                ed.append(np.array([rng.choice(in_big)]))
            return CSRGraph.from_edges(n, np.concatenate(es), np.concatenate(ed))
    raise ValueError("watts_alpha: no connected graph in 50 tries; use connect=repair")


# ---------------------------------------------------------------------------- Barabási–Albert
@njit(cache=True)
def _ba(n, m, seed):
    np.random.seed(seed)
    ne = m + (n - m - 1) * m
    src = np.empty(ne, np.int32)
    dst = np.empty(ne, np.int32)
    rep = np.empty(2 * ne, np.int32)
    nr = 0
    e = 0
    for j in range(1, m + 1):          # seed graph: star on m+1 vertices (as networkx)
        src[e] = 0
        dst[e] = j
        e += 1
        rep[nr] = 0
        rep[nr + 1] = j
        nr += 2
    mark = np.full(n, -1, np.int64)
    tg = np.empty(m, np.int32)
    for v in range(m + 1, n):
        c = 0
        while c < m:
            t = rep[np.random.randint(0, nr)]
            if mark[t] != v:
                mark[t] = v
                tg[c] = t
                c += 1
        for a in range(m):
            src[e] = v
            dst[e] = tg[a]
            e += 1
            rep[nr] = v
            rep[nr + 1] = tg[a]
            nr += 2
    return src, dst


def barabasi_albert(n: int, m: int, seed=None) -> CSRGraph:
    """Barabási–Albert preferential attachment: a star on m+1 vertices, then each new vertex
    joins m distinct existing vertices chosen with probability ∝ degree.  Mean degree ≈ 2m
    (k = 100 ⇒ m = 50); always connected; n·m − m(m+1)... exactly m + (n−m−1)·m edges."""
    if m < 1 or n < m + 1:
        raise ValueError("barabasi_albert needs m >= 1 and n >= m + 1")
    s, d = _ba(int(n), int(m), _seed32(_rng(seed)))
    return CSRGraph.from_edges(n, s, d)


# ---------------------------------------------------------------------------- Erdős–Rényi
def _gnm_graph(n, count, directed, rng) -> CSRGraph:
    """``count`` distinct uniformly random vertex pairs (u ≠ v; unordered unless directed) as a
    graph.  Draws u then v (``rng.integers(0, n, size=need + need//8 + 16)``), drops self-pairs
    and repeats and keeps the first ``count`` distinct pairs in draw order, drawing again while
    too few are distinct (numba kernels: :func:`csr_kernels.gnm_csr`)."""
    from .csr_kernels import gnm_csr

    total = n * (n - 1) if directed else n * (n - 1) // 2
    if count > total:
        raise ValueError(f"cannot place {count} edges among {total} possible")
    idt = np.int32 if n < 2**31 else np.int64

    def draw(size):
        u = rng.integers(0, n, size=size).astype(idt)
        return u, rng.integers(0, n, size=size).astype(idt)

    if count == 0:
        return CSRGraph(int(n), np.zeros(n + 1, np.int64), np.zeros(0, np.int32), None,
                        bool(directed))
    indptr, indices = gnm_csr(int(n), int(count), bool(directed), draw)
    return CSRGraph(int(n), indptr, indices, None, bool(directed))


def erdos_renyi_gnm(n: int, m: int, seed=None, directed: bool = False) -> CSRGraph:
    """G(n, m): exactly m distinct edges (arcs if directed) chosen uniformly.  Numba throughout
    (n = 10⁷, m = 3·10⁷ in a few seconds on 2 cores)."""
    if n < 1 or m < 0:
        raise ValueError("gnm needs n >= 1 and m >= 0")
    return _gnm_graph(int(n), int(m), directed, _rng(seed))


def erdos_renyi_gnp(n: int, p: float, seed=None, directed: bool = False) -> CSRGraph:
    """G(n, p): every pair independently with probability p (drawn as M ~ Binomial(pairs, p),
    then G(n, M), which is the same distribution)."""
    if n < 1 or not 0.0 <= p <= 1.0:
        raise ValueError("gnp needs n >= 1 and 0 <= p <= 1")
    rng = _rng(seed)
    total = n * (n - 1) if directed else n * (n - 1) // 2
    M = int(rng.binomial(total, p))
    return _gnm_graph(int(n), M, directed, rng)


# ---------------------------------------------------------------------------- lattices
def ring_lattice(n: int, k: int) -> CSRGraph:
    """Ring where each vertex is joined to its k/2 nearest neighbours on each side (k even)."""
    if k % 2 or k < 2 or k >= n:
        raise ValueError("ring_lattice needs even k with 2 <= k < n")
    i = np.repeat(np.arange(n), k // 2)
    j = (i + np.tile(np.arange(1, k // 2 + 1), n)) % n
    return CSRGraph.from_edges(n, i, j)


def watts_strogatz(n: int, k: int, p: float, seed=None) -> CSRGraph:
    """Watts–Strogatz: ring lattice (k even), then each edge (i, i+j) is rewired with probability
    p to (i, w), w uniform among vertices that are neither i nor already its neighbours."""
    if not 0.0 <= p <= 1.0:
        raise ValueError("watts_strogatz needs 0 <= p <= 1")
    g = ring_lattice(n, k)
    rng = _rng(seed)
    adj = [set(map(int, g.neighbors(v))) for v in range(n)]
    for j in range(1, k // 2 + 1):
        for i in range(n):
            if rng.random() < p:
                u, v = i, (i + j) % n
                if v not in adj[u] or len(adj[u]) >= n - 1:
                    continue
                w = int(rng.integers(0, n))
                while w == u or w in adj[u]:
                    w = int(rng.integers(0, n))
                adj[u].discard(v)
                adj[v].discard(u)
                adj[u].add(w)
                adj[w].add(u)
    s = np.fromiter((u for u in range(n) for v in adj[u] if u < v), np.int64)
    d = np.fromiter((v for u in range(n) for v in adj[u] if u < v), np.int64)
    return CSRGraph.from_edges(n, s, d)


def grid(shape, periodic: bool = False) -> CSRGraph:
    """2D/3D (any-D) grid graph; ``periodic=True`` gives the torus.  Vertex id = C-order index."""
    shape = tuple(int(x) for x in shape)
    if not shape or min(shape) < 1:
        raise ValueError("grid needs a non-empty shape of positive sizes")
    n = int(np.prod(shape))
    idx = np.arange(n).reshape(shape)
    ss, dd = [], []
    for ax, L in enumerate(shape):
        if L < 2:
            continue
        nb = np.roll(idx, -1, axis=ax)
        if periodic:
            src, dst = idx, nb
        else:
            sl = [slice(None)] * len(shape)
            sl[ax] = slice(0, L - 1)
            src, dst = idx[tuple(sl)], nb[tuple(sl)]
        ss.append(src.ravel())
        dd.append(dst.ravel())
    if not ss:
        return CSRGraph.from_edges(n, [], [])
    return CSRGraph.from_edges(n, np.concatenate(ss), np.concatenate(dd))


def torus(shape) -> CSRGraph:
    return grid(shape, periodic=True)


# ---------------------------------------------------------------------------- R-MAT
def rmat(scale: int, edge_factor: int = 16, a: float = 0.57, b: float = 0.19, c: float = 0.19,
         seed=None, directed: bool = False, permute: bool = True) -> CSRGraph:
    """R-MAT / Graph500 Kronecker generator: n = 2^scale, edge_factor·n generated edges (before
    dropping self-loops and duplicates), quadrant probabilities a, b, c, d = 1−a−b−c (Graph500:
    0.57, 0.19, 0.19, 0.05); vertex labels scrambled (``permute``) as Graph500 permutes them, by a
    seeded bijection computed per label (multiply-add and xor-shift steps mod 2^scale) instead of
    a permutation table.

    Each edge descends ``scale`` levels of the adjacency matrix, one 32-bit uniform per level
    choosing the quadrant, from a counter-based stream (splitmix64 of seed key + edge index), so
    edges are generated in parallel (independent of the thread count) into an int32 edge list,
    then counting-sorted into rows, which are sorted and de-duplicated in place.  The stream key
    and the relabelling constants come from ``numpy.random.default_rng(seed)``."""
    from .rmat_kernels import rmat_csr

    if scale < 1 or scale > 30 or min(a, b, c) < 0 or a + b + c > 1:
        raise ValueError("rmat needs 1 <= scale <= 30 and a, b, c >= 0 with a+b+c <= 1")
    if edge_factor < 1:
        raise ValueError("rmat needs edge_factor >= 1")
    rng = _rng(seed)
    n = 1 << scale
    key = int(rng.integers(0, 2**63 - 1))
    mul = [int(x) | 1 for x in rng.integers(0, 2**62, size=4)] if permute else None
    if mul is not None:
        mul[1] -= 1                     # the additive constant need not be odd
    indptr, indices = rmat_csr(int(scale), int(edge_factor), float(a), float(b), float(c), key,
                               mul, bool(directed))
    return CSRGraph(n, indptr, indices, None, bool(directed))


# ---------------------------------------------------------------------------- weights
def random_weights(graph: CSRGraph, low: int = 1, high: int = 10, seed=None) -> CSRGraph:
    """Copy of ``graph`` with integer weights uniform in [low, high] (inclusive), float64.
    Undirected graphs: both arcs of an edge get the same weight."""
    if high < low:
        raise ValueError("random_weights needs low <= high")
    from .csr_kernels import symmetric_arc_weights

    rng = _rng(seed)
    if graph.directed:
        w = rng.integers(low, high + 1, size=graph.num_arcs).astype(np.float64)
    else:
        # one draw per edge, in CSR order of its arc (u, v) with u < v; both arcs get it
        wf = rng.integers(low, high + 1, size=graph.num_arcs // 2)
        w = symmetric_arc_weights(graph.indptr, graph.indices, wf)
    return CSRGraph(graph.n, graph.indptr, graph.indices, w, graph.directed, ids=graph.ids)


def random_weighted(n: int, avg_degree: float = 6.0, low: int = 1, high: int = 10, seed=None,
                    directed: bool = False) -> CSRGraph:
    """Harish–Narayanan-style benchmark graph: G(n, m) with mean degree ``avg_degree``
    (m = round(n·avg_degree/2) edges, or n·avg_degree arcs if directed), integer weights."""
    rng = _rng(seed)
    m = int(round(n * avg_degree / (1 if directed else 2)))
    g = erdos_renyi_gnm(n, m, seed=_seed32(rng), directed=directed)
    return random_weights(g, low, high, seed=_seed32(rng))


# ---------------------------------------------------------------------------- dispatcher
_SPECS = {
    "watts_alpha": (watts_alpha, {"n"}, {"k", "alpha", "p", "ring", "seed", "connect"}),
    "barabasi_albert": (barabasi_albert, {"n", "m"}, {"seed"}),
    "erdos_renyi": (erdos_renyi_gnp, {"n", "p"}, {"seed", "directed"}),
    "gnp": (erdos_renyi_gnp, {"n", "p"}, {"seed", "directed"}),
    "gnm": (erdos_renyi_gnm, {"n", "m"}, {"seed", "directed"}),
    "watts_strogatz": (watts_strogatz, {"n", "k", "p"}, {"seed"}),
    "ring_lattice": (ring_lattice, {"n", "k"}, set()),
    "grid": (grid, {"shape"}, {"periodic"}),
    "torus": (torus, {"shape"}, set()),
    "rmat": (rmat, {"scale"}, {"edge_factor", "a", "b", "c", "seed", "directed", "permute"}),
    "random_weighted": (random_weighted, {"n"}, {"avg_degree", "low", "high", "seed",
                                                 "directed"}),
}


def check_spec(spec: dict):
    """Validate a generator spec without building the graph; returns (function, kwargs, weights).

    Raises ValueError naming the unknown type or the missing/unknown parameters."""
    if not isinstance(spec, dict) or "type" not in spec:
        raise ValueError("generator spec must be a mapping with a 'type'")
    spec = dict(spec)
    kind = spec.pop("type")
    weights = spec.pop("weights", None)
    if kind == "watts_alpha_ring":
        kind, spec = "watts_alpha", {**spec, "ring": True}
    elif kind in ("watts_alpha_free", "watts_alpha_nosubstrate"):
        kind, spec = "watts_alpha", {**spec, "ring": False}
    if kind not in _SPECS:
        raise ValueError(f"unknown generator type {kind!r}; expected one of "
                         f"{', '.join(sorted(_SPECS))}, watts_alpha_ring, watts_alpha_free")
    fn, required, optional = _SPECS[kind]
    missing = required - set(spec)
    unknown = set(spec) - required - optional
    if missing:
        raise ValueError(f"generator {kind!r}: missing parameter(s) {sorted(missing)}")
    if unknown:
        raise ValueError(f"generator {kind!r}: unknown parameter(s) {sorted(unknown)}; allowed "
                         f"{sorted(required | optional)}")
    return fn, spec, weights


def makes_directed(kind: str) -> bool:
    """Whether generator type ``kind`` can make directed graphs (accepts ``directed``)."""
    return kind in _SPECS and "directed" in _SPECS[kind][2]


def generate(spec: dict) -> CSRGraph:
    """Build a graph from ``{type: ..., <parameters>}``; optional ``weights: {type: uniform_int,
    low, high, seed}`` adds integer weights.  Unknown types/parameters raise ValueError.

    Example
    -------
    >>> g = generate({"type": "barabasi_albert", "n": 100, "m": 3, "seed": 1})
    >>> g.n, g.directed
    (100, False)
    """
    fn, spec, weights = check_spec(spec)
    g = fn(**spec)
    if weights is not None:
        if not isinstance(weights, dict) or weights.get("type") != "uniform_int":
            raise ValueError("weights: expected {type: uniform_int, low, high, seed}")
        extra = set(weights) - {"type", "low", "high", "seed"}
        if extra:
            raise ValueError(f"weights: unknown parameter(s) {sorted(extra)}")
        g = random_weights(g, int(weights.get("low", 1)), int(weights.get("high", 10)),
                           weights.get("seed"))
    return g
