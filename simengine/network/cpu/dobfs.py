"""Direction-optimising single-source BFS (Beamer, Asanović & Patterson, SC 2012) on the CPU.

A level is expanded either *top-down* (push: every frontier vertex marks its unvisited
out-neighbours; a queue, serial — it runs only while the frontier is small) or *bottom-up* (pull:
every unvisited vertex looks for a parent among its in-neighbours in the frontier bitmap and stops
at the first; vertices in parallel with ``prange``, each writing only its own entries, so there
are no races).  Switching rule (Beamer's heuristic):

* top-down → bottom-up when the frontier's out-arcs m_f exceed m_u / ALPHA, m_u = in-arcs of the
  unvisited vertices (what a bottom-up step may have to check), and the frontier has at least
  n / BETA vertices (otherwise the rule below would switch straight back; near the end of a
  traversal m_u is small and a pull level would scan all n vertices for a handful of hits);
* bottom-up → top-down when the frontier has shrunk (n_f < previous n_f) below n / BETA vertices.

Per-source statistics come from the level counts (row quantities, the distance histogram) and a
parallel pass over the distance row (column sums), so :func:`dobfs_partials` produces the same
``ChunkPartial`` as the other engines.  Used by ``auto`` when a run has few sources
(:mod:`simengine.network.per_source`).
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from ..statistics import ChunkPartial, unreachable_sentinel

ALPHA = 14
BETA = 24


@njit(cache=True)
def _top_down(indptr, indices, rindptr, queue, nq, nxt, dist, level):
    """One push level from queue[:nq] into nxt.  Returns (new vertices, their out-arcs, their
    in-arcs)."""
    nn = 0
    mf = 0
    mu = 0
    for k in range(nq):
        u = queue[k]
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            if dist[v] < 0:
                dist[v] = level
                nxt[nn] = v
                nn += 1
                mf += indptr[v + 1] - indptr[v]
                mu += rindptr[v + 1] - rindptr[v]
    return nn, mf, mu


@njit(cache=True, parallel=True)
def _bottom_up(indptr, rindptr, rindices, front, nxt, dist, level):
    """One pull level: nxt[v] = 1 for every unvisited v with an in-neighbour in ``front``.
    Returns (new vertices, their out-arcs, their in-arcs)."""
    n = len(dist)
    nn = 0
    mf = 0
    mu = 0
    for v in prange(n):
        hit = 0
        if dist[v] < 0:
            for e in range(rindptr[v], rindptr[v + 1]):
                if front[rindices[e]]:
                    hit = 1
                    break
        nxt[v] = hit
        if hit:
            dist[v] = level
            nn += 1
            mf += indptr[v + 1] - indptr[v]
            mu += rindptr[v + 1] - rindptr[v]
    return nn, mf, mu


@njit(cache=True, parallel=True)
def _queue_to_bitmap(queue, nq, bitmap):
    for v in prange(len(bitmap)):
        bitmap[v] = 0
    for k in prange(nq):
        bitmap[queue[k]] = 1


@njit(cache=True)
def _bitmap_to_queue(bitmap, queue):
    nq = 0
    for v in range(len(bitmap)):
        if bitmap[v]:
            queue[nq] = v
            nq += 1
    return nq


@njit(cache=True, parallel=True)
def _reset(dist):
    for v in prange(len(dist)):
        dist[v] = -1


@njit(cache=True)
def _dobfs_into(indptr, indices, rindptr, rindices, s, dist, queue, nxt_q, front, nxt_b,
                level_count, alpha, beta):
    """BFS from s into dist (all -1 on entry).  level_count[l] = vertices at distance l.
    Returns (number of levels, bottom-up levels)."""
    n = len(indptr) - 1
    m_arcs = rindptr[n]
    dist[s] = 0
    level_count[0] = 1
    queue[0] = s
    nq = 1
    mf = indptr[s + 1] - indptr[s]
    mu = m_arcs - (rindptr[s + 1] - rindptr[s])
    level = 0
    pulls = 0
    bottom_up = False
    prev_nf = 1
    nf = 1
    while nf > 0:
        level += 1
        if not bottom_up and mf > mu // alpha and nf >= n // beta:
            _queue_to_bitmap(queue, nq, front)
            bottom_up = True
        elif bottom_up and nf < prev_nf and nf < n // beta:
            nq = _bitmap_to_queue(front, queue)
            bottom_up = False
        prev_nf = nf
        if bottom_up:
            nf, mf, dm = _bottom_up(indptr, rindptr, rindices, front, nxt_b, dist, level)
            front, nxt_b = nxt_b, front
            pulls += 1
        else:
            nf, mf, dm = _top_down(indptr, indices, rindptr, queue, nq, nxt_q, dist, level)
            queue, nxt_q = nxt_q, queue
            nq = nf
        mu -= dm
        level_count[level] = nf
    return level - 1, pulls


class DOBFS:
    """Reusable buffers for direction-optimising BFS on one graph (n int32 distances, two
    queues, two bitmaps)."""

    def __init__(self, graph, alpha: int = ALPHA, beta: int = BETA):
        self.graph = graph
        g = graph
        t = graph.transpose()
        self.indptr, self.indices = g.indptr, g.indices
        self.rindptr, self.rindices = t.indptr, t.indices
        n = g.n
        self.dist = np.empty(n, np.int32)
        self.queue = np.empty(n, np.int32)
        self.nxt_q = np.empty(n, np.int32)
        self.front = np.zeros(n, np.uint8)
        self.nxt_b = np.zeros(n, np.uint8)
        self.level_count = np.zeros(n + 1, np.int64)
        self.alpha, self.beta = int(alpha), int(beta)
        self.levels = 0
        self.pull_levels = 0

    def run(self, source: int) -> np.ndarray:
        """Distances (int32, -1 = unreachable) from ``source`` in ``self.dist`` (returned)."""
        n = self.graph.n
        if not 0 <= source < n:
            raise ValueError("source out of range")
        _reset(self.dist)
        self.level_count[:self.levels + 2] = 0
        self.levels, self.pull_levels = _dobfs_into(
            self.indptr, self.indices, self.rindptr, self.rindices, int(source), self.dist,
            self.queue, self.nxt_q, self.front, self.nxt_b, self.level_count, self.alpha,
            self.beta)
        return self.dist


def dobfs(graph, source: int) -> np.ndarray:
    """Hop distances (int32) from ``source`` along out-arcs; -1 marks unreachable vertices."""
    return DOBFS(graph).run(source).copy()


# ---------------------------------------------------------------------------- statistics
@njit(cache=True, parallel=True)
def _fold_columns(dist, s, col_sum, col_reach, col_harm):
    for t in prange(len(dist)):
        d = dist[t]
        if d > 0 and t != s:
            col_sum[t] += d
            col_reach[t] += 1
            col_harm[t] += 1.0 / d


@njit(cache=True, parallel=True)
def _store_hops(dist, row, sentinel):
    for t in prange(len(dist)):
        d = dist[t]
        row[t] = sentinel if d < 0 else d


def row_from_levels(level_count, levels):
    """(row_sum, row_reach, row_max, row_harm, hist) of one source from its level counts
    (level 0 = the source itself)."""
    c = level_count[1:levels + 1].astype(np.int64)
    lv = np.arange(1, levels + 1, dtype=np.float64)
    reach = int(c.sum())
    hist = np.zeros(levels + 1, np.int64)
    hist[1:] = c
    harm = 0.0
    for k in range(levels):              # level order: the same order on every engine
        harm += c[k] / lv[k]
    return float((c * lv).sum()), reach, float(levels if reach else 0), harm, hist


def dobfs_partials(graph, sources, batch: int = 8, store=None):
    """Per-source direction-optimising BFS: one ChunkPartial per batch of ``batch`` sources, in
    source order (the parallelism is inside each traversal)."""
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    n, S = graph.n, len(sources)
    if store is not None and store.shape != (S, n):
        raise ValueError(f"store must have shape {(S, n)}")
    sentinel = unreachable_sentinel(store.dtype) if store is not None else 0
    bfs = DOBFS(graph)
    batch = max(1, int(batch))
    for lo in range(0, S, batch):
        src = sources[lo:lo + batch]
        B = len(src)
        row_sum, row_reach = np.zeros(B), np.zeros(B, np.int64)
        row_max, row_harm = np.zeros(B), np.zeros(B)
        col_sum, col_reach, col_harm = np.zeros(n), np.zeros(n, np.int64), np.zeros(n)
        hist = np.zeros(1, np.int64)
        for i, s in enumerate(src):
            dist = bfs.run(int(s))
            rs, rr, rm, rh, h = row_from_levels(bfs.level_count, bfs.levels)
            row_sum[i], row_reach[i], row_max[i], row_harm[i] = rs, rr, rm, rh
            if len(h) > len(hist):
                hist = np.concatenate([hist, np.zeros(len(h) - len(hist), np.int64)])
            hist[:len(h)] += h
            _fold_columns(dist, int(s), col_sum, col_reach, col_harm)
            if store is not None:
                _store_hops(dist, store[lo + i], sentinel)
        yield ChunkPartial(src.copy(), row_sum, row_reach, row_max, row_harm, col_sum,
                           col_reach, col_harm, hist)
