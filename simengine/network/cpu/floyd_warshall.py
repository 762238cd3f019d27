"""Blocked Floyd–Warshall APSP for small dense graphs (holds the n × n matrix by design).

Three phases per diagonal block k (Venkataraman et al.): the diagonal block, then its block row and
column (parallel), then every other block (parallel, independent). Each round is one compiled
call, so a run's stop request is seen between rounds (:mod:`simengine.network.interrupt`).  The k loop is outside the
i/j loops in every block and the diagonal is 0 with weights >= 0, so row k and column k do not
change during step k and the in-place update is safe; a row whose ``D[i, k]`` is ``inf`` is
skipped, so ``inf`` is never added to.

The closure is computed once per graph and kept on the graph object (:func:`closure`), so a run
that hands out its sources in many batches pays for Floyd–Warshall once.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..interrupt import between_rounds
from ..statistics import reduce_block, unreachable_sentinel

BLOCK = 64


@njit(cache=True, inline="always")
def _upd(D, i0, i1, j0, j1, k0, k1):
    for k in range(k0, k1):
        for i in range(i0, i1):
            dik = D[i, k]
            if dik == np.inf:
                continue
            for j in range(j0, j1):
                c = dik + D[k, j]
                if c < D[i, j]:
                    D[i, j] = c


@njit(cache=True, parallel=True)
def _fw_round(D, bs, kb):
    """Round ``kb`` of the blocked closure: k in block kb."""
    n = D.shape[0]
    nbk = (n + bs - 1) // bs
    k0 = kb * bs
    k1 = min(n, k0 + bs)
    _upd(D, k0, k1, k0, k1, k0, k1)
    for t in prange(2 * nbk):
        jb = t // 2
        if jb == kb:
            continue
        j0 = jb * bs
        j1 = min(n, j0 + bs)
        if t % 2 == 0:
            _upd(D, k0, k1, j0, j1, k0, k1)   # block row
        else:
            _upd(D, j0, j1, k0, k1, k0, k1)   # block column
    for t in prange(nbk * nbk):
        ib = t // nbk
        jb = t % nbk
        if ib == kb or jb == kb:
            continue
        i0 = ib * bs
        j0 = jb * bs
        _upd(D, i0, min(n, i0 + bs), j0, min(n, j0 + bs), k0, k1)


def dense_matrix(graph) -> np.ndarray:
    """n × n float64 arc-weight matrix: 0 on the diagonal, inf where there is no arc."""
    n = graph.n
    D = np.full((n, n), np.inf)
    src, dst = graph.arcs()
    D[src, dst] = graph.weights if graph.weights is not None else 1.0
    np.fill_diagonal(D, 0.0)
    return D


def _fw_blocked(D, bs):
    """The rounds of the blocked closure, one compiled call each, with a stop check between
    them (:func:`simengine.network.interrupt.between_rounds`)."""
    n = D.shape[0]
    nbk = (n + bs - 1) // bs
    for kb in range(nbk):
        _fw_round(D, bs, kb)
        between_rounds("Floyd–Warshall", kb + 1, nbk)


def floyd_warshall(graph, block: int = BLOCK) -> np.ndarray:
    """All-pairs distance matrix (float64, inf = unreachable)."""
    D = dense_matrix(graph)
    _fw_blocked(D, int(block))
    return D


_CACHE = "_simengine_fw_closure"


def closure(graph) -> np.ndarray:
    """The all-pairs distance matrix of ``graph``, computed on first use and cached on the graph
    (recomputed if its ``indptr``, ``indices`` or ``weights`` array is replaced)."""
    key = (graph.indptr, graph.indices, graph.weights)
    hit = graph.__dict__.get(_CACHE)
    if hit is not None and all(a is b for a, b in zip(hit[0], key)):
        return hit[1]
    D = floyd_warshall(graph)
    D.setflags(write=False)
    graph.__dict__[_CACHE] = (key, D)
    return D


def fw_partials(graph, sources, bin_width: float = 1.0, batch: int = 256, store=None):
    """APSP by Floyd–Warshall, reduced per batch of sources (rows of the cached closure)."""
    sources = np.asarray(sources, dtype=np.int64)
    D = closure(graph)
    for lo in range(0, len(sources), batch):
        s = sources[lo:lo + batch]
        block = D[s]
        if store is not None:
            if store.dtype.kind == "f":
                store[lo:lo + len(s)] = block
            else:
                store[lo:lo + len(s)] = np.where(np.isfinite(block), block,
                                                 unreachable_sentinel(store.dtype))
        yield reduce_block(block, s, graph.weighted, bin_width)
