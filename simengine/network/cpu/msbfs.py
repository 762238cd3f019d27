"""Multi-source BFS (MS-BFS): up to 64·W sources per sweep, one bit per source in W uint64 words.

One batch of B ≤ 64·W sources keeps, per vertex, W words of ``seen`` (sources that reached it),
``visit`` (sources whose BFS has it in the current frontier) and ``nxt`` (new bits).  A level is
either *push* (top-down: OR the frontier's words into their out-neighbours; used while the
frontier's arcs are few) or *pull* (bottom-up: every not-yet-fully-seen vertex ORs its
in-neighbours' words).  Both are race-free because one batch is processed by one thread; batches
run in parallel (numba ``prange``), each with its own buffers.

The path statistics are fused into the traversal: per level, the newly reached bits of every vertex
go into per-vertex column sums (popcount) and into bit-sliced vertical counters from which the
per-source counts of that level are read, so no distance block is ever materialised (unless a
``store`` array asks for the distances).
"""
from __future__ import annotations

import numba
import numpy as np
from numba import njit, prange

from ..statistics import ChunkPartial

_M1 = np.uint64(0x5555555555555555)
_M2 = np.uint64(0x3333333333333333)
_M4 = np.uint64(0x0F0F0F0F0F0F0F0F)
_H01 = np.uint64(0x0101010101010101)
_ONE = np.uint64(1)
_ZERO = np.uint64(0)
_ALL = np.uint64(0xFFFFFFFFFFFFFFFF)

#: sources per uint64 word
WORD_BITS = 64
#: default number of words per batch (W=8 → 512 sources per sweep)
DEFAULT_WORDS = 8
#: push while Σ deg(frontier) · PUSH_FACTOR < number of arcs, else pull
PUSH_FACTOR = 6


@njit(cache=True, inline="always")
def _popcount(x):
    x = x - ((x >> _ONE) & _M1)
    x = (x & _M2) + ((x >> np.uint64(2)) & _M2)
    x = (x + (x >> np.uint64(4))) & _M4
    return np.int64((x * _H01) >> np.uint64(56))


@njit(cache=True, inline="always")
def _commit(u, W, nxt, seen, slices):
    """Keep only the new bits of vertex u (nxt &= ~seen), mark them seen, add them to the per-level
    bit-sliced counters and return how many sources reached u at this level."""
    pc = 0
    for w in range(W):
        nb = nxt[u, w] & ~seen[u, w]
        nxt[u, w] = nb
        if nb != _ZERO:
            seen[u, w] |= nb
            pc += _popcount(nb)
            carry = nb
            j = 0
            while carry != _ZERO:
                tmp = slices[w, j] & carry
                slices[w, j] ^= carry
                carry = tmp
                j += 1
    return pc


@njit(cache=True)
def _msbfs_one(indptr, indices, rindptr, rindices, srcs, W, seen, visit, nxt, front, newfront,
               flag, slices, row_sum, row_reach, row_max, row_harm, col_sum, col_reach, col_harm,
               hist, store, store_row0, do_store, sentinel, push_factor):
    """One batch of len(srcs) ≤ 64·W sources.  Row outputs are indexed by position in srcs."""
    n = len(indptr) - 1
    B = len(srcs)
    m_arcs = indptr[n]
    nslices = slices.shape[1]
    full = np.zeros(W, dtype=np.uint64)
    for i in range(B):
        full[i >> 6] |= _ONE << np.uint64(i & 63)
    for i in range(B):
        row_sum[i] = 0.0
        row_reach[i] = 0
        row_max[i] = 0.0
        row_harm[i] = 0.0
    if do_store:
        for i in range(B):
            for t in range(n):
                store[store_row0 + i, t] = sentinel
    nf = 0
    for i in range(B):
        s = srcs[i]
        bit = _ONE << np.uint64(i & 63)
        w = i >> 6
        if flag[s] == 0:
            flag[s] = 1
            front[nf] = s
            nf += 1
        seen[s, w] |= bit
        visit[s, w] |= bit
        if do_store:
            store[store_row0 + i, s] = 0
    for k in range(nf):
        flag[front[k]] = 0
    level = 0
    while nf > 0:
        level += 1
        fe = 0
        for k in range(nf):
            v = front[k]
            fe += indptr[v + 1] - indptr[v]
        nnew = 0
        for w in range(W):
            for j in range(nslices):
                slices[w, j] = _ZERO
        if fe * push_factor < m_arcs:
            # ---- push: OR frontier words into out-neighbours, remember the touched ones
            nt = 0
            for k in range(nf):
                v = front[k]
                for e in range(indptr[v], indptr[v + 1]):
                    u = indices[e]
                    if flag[u] == 0:
                        flag[u] = 1
                        newfront[nt] = u
                        nt += 1
                    for w in range(W):
                        nxt[u, w] |= visit[v, w]
            for k in range(nt):
                u = newfront[k]
                flag[u] = 0
                pc = _commit(u, W, nxt, seen, slices)
                if pc > 0:
                    newfront[nnew] = u   # nnew ≤ k: safe in place
                    nnew += 1
                    col_reach[u] += pc
                    col_sum[u] += level * pc
                    col_harm[u] += pc / level
        else:
            # ---- pull: every vertex not yet reached by all sources ORs its in-neighbours
            for v in range(n):
                allseen = True
                for w in range(W):
                    if seen[v, w] != full[w]:
                        allseen = False
                        break
                if allseen:
                    continue
                for e in range(rindptr[v], rindptr[v + 1]):
                    u = rindices[e]
                    for w in range(W):
                        nxt[v, w] |= visit[u, w]
                pc = _commit(v, W, nxt, seen, slices)
                if pc > 0:
                    newfront[nnew] = v
                    nnew += 1
                    col_reach[v] += pc
                    col_sum[v] += level * pc
                    col_harm[v] += pc / level
        # ---- swap: old frontier leaves, new frontier's bits become visit
        for k in range(nf):
            v = front[k]
            for w in range(W):
                visit[v, w] = _ZERO
        for k in range(nnew):
            v = newfront[k]
            for w in range(W):
                visit[v, w] = nxt[v, w]
                if do_store:
                    x = nxt[v, w]
                    while x != _ZERO:
                        low = x & (~x + _ONE)
                        b = 0
                        y = low
                        while y > _ONE:
                            y >>= _ONE
                            b += 1
                        store[store_row0 + w * 64 + b, v] = level
                        x ^= low
                nxt[v, w] = _ZERO
            front[k] = v
        # ---- per-source counts of this level from the vertical counters
        total = 0
        for i in range(B):
            w = i >> 6
            b = np.uint64(i & 63)
            c = 0
            for j in range(nslices):
                c += np.int64((slices[w, j] >> b) & _ONE) << j
            if c > 0:
                row_sum[i] += level * c
                row_reach[i] += c
                row_max[i] = level
                row_harm[i] += c / level
                total += c
        if total > 0:
            hist[level] += total
        nf = nnew
    return level


@njit(cache=True, parallel=True)
def _msbfs_group(indptr, indices, rindptr, rindices, sources, starts, W, seen, visit, nxt, front,
                 newfront, flag, slices, row_sum, row_reach, row_max, row_harm, col_sum,
                 col_reach, col_harm, hist, store, do_store, sentinel, push_factor):
    """Batches b = 0..nb-1 (sources[starts[b]:starts[b+1]]) in parallel; slot b owns buffers b."""
    nb = len(starts) - 1
    for b in prange(nb):
        lo = starts[b]
        hi = starts[b + 1]
        seen[b, :, :] = _ZERO
        visit[b, :, :] = _ZERO
        _msbfs_one(indptr, indices, rindptr, rindices, sources[lo:hi], W, seen[b], visit[b],
                   nxt[b], front[b], newfront[b], flag[b], slices[b], row_sum[lo:hi],
                   row_reach[lo:hi], row_max[lo:hi], row_harm[lo:hi], col_sum[b], col_reach[b],
                   col_harm[b], hist[b], store, lo, do_store, sentinel, push_factor)


def msbfs_partials(graph, sources, words: int | None = None, store=None, threads: int | None = None,
                   push_factor: int = PUSH_FACTOR):
    """Yield one :class:`ChunkPartial` per batch of ≤ 64·words sources, in source order.

    ``store`` (optional, shape (len(sources), n), integer or float dtype) receives the hop
    distances, unreachable = :func:`~simengine.network.statistics.unreachable_sentinel`.
    """
    from ..statistics import unreachable_sentinel

    sources = np.ascontiguousarray(sources, dtype=np.int64)
    n = graph.n
    S = len(sources)
    P = threads or numba.get_num_threads()
    if words is None:
        # enough batches to keep every thread busy, at most DEFAULT_WORDS words each
        words = int(min(DEFAULT_WORDS, max(1, -(-S // (64 * P)))))
    W = int(words)
    bsz = 64 * W
    g_t = graph.transpose()
    nslices = max(1, int(n).bit_length() + 1)
    do_store = store is not None
    st = store if do_store else np.zeros((1, 1), np.uint8)
    sentinel = unreachable_sentinel(st.dtype)
    if do_store and st.shape != (S, n):
        raise ValueError(f"store must have shape {(S, n)}")
    # group = P batches processed in parallel
    seen = np.zeros((P, n, W), np.uint64)
    visit = np.zeros((P, n, W), np.uint64)
    nxt = np.zeros((P, n, W), np.uint64)
    front = np.zeros((P, n), np.int32)
    newfront = np.zeros((P, n), np.int32)
    flag = np.zeros((P, n), np.uint8)
    slices = np.zeros((P, W, nslices), np.uint64)
    for g0 in range(0, S, bsz * P):
        g1 = min(S, g0 + bsz * P)
        gs = sources[g0:g1]
        starts = np.arange(0, len(gs) + bsz, bsz, dtype=np.int64)
        starts[-1] = len(gs)
        starts = np.unique(starts)
        nb = len(starts) - 1
        row_sum = np.zeros(len(gs))
        row_reach = np.zeros(len(gs), np.int64)
        row_max = np.zeros(len(gs))
        row_harm = np.zeros(len(gs))
        col_sum = np.zeros((nb, n))
        col_reach = np.zeros((nb, n), np.int64)
        col_harm = np.zeros((nb, n))
        hist = np.zeros((nb, n + 1), np.int64)
        sub_store = st[g0:g1] if do_store else st
        _msbfs_group(graph.indptr, graph.indices, g_t.indptr, g_t.indices, gs, starts, W,
                     seen, visit, nxt, front, newfront, flag, slices, row_sum, row_reach,
                     row_max, row_harm, col_sum, col_reach, col_harm, hist, sub_store, do_store,
                     sentinel, int(push_factor))
        for b in range(nb):
            lo, hi = starts[b], starts[b + 1]
            h = hist[b]
            nz = np.flatnonzero(h)
            h = h[: (nz[-1] + 1 if len(nz) else 1)].copy()
            yield ChunkPartial(gs[lo:hi].copy(), row_sum[lo:hi], row_reach[lo:hi],
                               row_max[lo:hi], row_harm[lo:hi], col_sum[b], col_reach[b],
                               col_harm[b], h)
