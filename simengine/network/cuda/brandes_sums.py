"""What a batch of the GPU Brandes engines adds up, and the driver that turns batches into
:class:`~simengine.network.statistics.ChunkPartial` s.

One pass over the batch's entries after the backward sweep (:func:`vertex_sums`, the batched
layout v·B + b): a warp per vertex v, its lanes over the sources, sums δ_b(v) (and δ_b(v)², only
for sampled runs: their standard error needs it) and — only when the run wants the path
statistics — the column sums of v (Σ d_b(v), the reach, Σ 1/d_b(v) over the sources that reach
v, v not a source), folded by a fixed-shape tree in shared memory (deterministic). The row
statistics and the histogram need no pass: they come from the per-source level counts that the
forward sweep's level counts also collect (:func:`rows_from_counts`, the arithmetic of
:func:`simengine.network.cpu.dobfs.row_from_levels`). A run that wants betweenness alone gets δ
and nothing else.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float64, int64

from . import device_graph, simulator
from ..statistics import ChunkPartial

#: lanes per vertex (a warp) and vertices per block of :func:`_vertex_sums`
LANES = 4 if simulator() else 32
VERTICES = 4 if simulator() else 8


@cuda.jit
def _vertex_sums(dist, delta, n, nsrc, unreached, squares, paths, btw, btw_sq, col_sum,
                 col_reach, col_harm):
    lane = cuda.threadIdx.x
    w = cuda.threadIdx.y
    v = cuda.blockIdx.x * VERTICES + w
    s_acc = cuda.shared.array((VERTICES, LANES), float64)
    s_sq = cuda.shared.array((VERTICES, LANES), float64)
    s_cs = cuda.shared.array((VERTICES, LANES), float64)
    s_ch = cuda.shared.array((VERTICES, LANES), float64)
    s_cr = cuda.shared.array((VERTICES, LANES), int64)
    acc = 0.0
    sq = 0.0
    cs = 0.0
    ch = 0.0
    cr = 0
    if v < n:
        base = v * nsrc
        b = lane
        while b < nsrc:
            x = delta[base + b]              # 0 at the source and where unreached
            acc += x
            if squares:
                sq += x * x
            if paths:
                d = dist[base + b]
                if d > 0 and d != unreached:
                    y = float64(d)
                    cs += y
                    cr += 1
                    ch += 1.0 / y
            b += LANES
    s_acc[w, lane] = acc
    s_sq[w, lane] = sq
    s_cs[w, lane] = cs
    s_ch[w, lane] = ch
    s_cr[w, lane] = cr
    cuda.syncthreads()
    step = LANES // 2
    while step > 0:
        if lane < step:
            s_acc[w, lane] += s_acc[w, lane + step]
            s_sq[w, lane] += s_sq[w, lane + step]
            s_cs[w, lane] += s_cs[w, lane + step]
            s_ch[w, lane] += s_ch[w, lane + step]
            s_cr[w, lane] += s_cr[w, lane + step]
        cuda.syncthreads()
        step //= 2
    if lane == 0 and v < n:
        btw[v] = s_acc[w, 0]
        btw_sq[v] = s_sq[w, 0]
        if paths:
            col_sum[v] = s_cs[w, 0]
            col_reach[v] = s_cr[w, 0]
            col_harm[v] = s_ch[w, 0]


def vertex_sums(buf, n: int, B: int, squares: bool, paths: bool) -> None:
    """δ summed over the batch (and δ², and with ``paths`` the column sums) into ``buf``."""
    if n == 0:
        return
    grid = (n + VERTICES - 1) // VERTICES
    _vertex_sums[grid, (LANES, VERTICES)](buf.dist, buf.delta, n, B, buf.unreached,
                                          bool(squares), bool(paths), buf.btw, buf.btw_sq,
                                          buf.col_sum, buf.col_reach, buf.col_harm)


def rows_from_counts(counts: np.ndarray):
    """(row_sum, row_reach, row_max, row_harm, hist) of B sources from their level counts
    ``counts`` (levels × B, row 0 = the sources themselves): the arithmetic of
    :func:`simengine.network.cpu.dobfs.row_from_levels` (harmonic sums in level order)."""
    c = np.asarray(counts, np.int64)[1:]
    L, B = c.shape
    lv = np.arange(1, L + 1, dtype=np.float64)
    reach = c.sum(axis=0)
    row_sum = (c * lv[:, None]).sum(axis=0)          # integers: exact in any order
    row_max = ((c > 0) * lv[:, None]).max(axis=0) if L else np.zeros(B)
    harm = np.zeros(B)
    for k in range(L):
        harm += c[k] / lv[k]
    hist = np.zeros(L + 1, np.int64)
    hist[1:] = c.sum(axis=1)
    return row_sum.astype(np.float64), reach.astype(np.int64), row_max.astype(np.float64), \
        harm, hist


def empty_rows(sources, n: int) -> ChunkPartial:
    """A partial with no path statistics (betweenness alone: the accumulator ignores them)."""
    B = len(sources)
    z = np.zeros(B)
    return ChunkPartial(np.array(sources, np.int64), z, np.zeros(B, np.int64), z.copy(),
                        z.copy(), None, None, None, np.zeros(1, np.int64))


def store_levels(buf, B: int, n: int, store, lo: int) -> None:
    """Distance rows of the batch (layout v·B + b on the device) into ``store[lo:lo + B]``."""
    from ..statistics import unreachable_sentinel

    D = buf.dist.copy_to_host()[:B * n].reshape(n, B).T
    bad = D == buf.unreached
    store[lo:lo + B] = np.where(bad, 0, D).astype(store.dtype)
    if bad.any():
        store[lo:lo + B][bad] = unreachable_sentinel(store.dtype)


def _columns(buf, columns):
    """The batch's column sums: folded into ``columns`` on the device (None columns in the
    partial), or copied to the host."""
    if columns is not None:
        columns.add(buf.col_sum, buf.col_reach, buf.col_harm)
        return None, None, None
    return buf.col_sum.copy_to_host(), buf.col_reach.copy_to_host(), buf.col_harm.copy_to_host()
