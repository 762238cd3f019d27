"""On-device reduction of a block of distance rows into a :class:`ChunkPartial`.

``dist`` is a 2-D device array (int32 hop counts with an "unreachable" sentinel, or float64 with
``inf``); ``rows[b]`` is the row of ``dist`` that holds source ``srcs[b]`` (identity for the
batched BFS/SSSP buffers, the source ids themselves for the Floyd–Warshall matrix).

* rows: one block per source, a fixed-shape tree reduction in shared memory (deterministic);
* columns and histogram: one thread per target, looping over the batch's sources in order
  (deterministic), histogram counts in shared memory, then one global atomic add per bin and block.

The rules match :func:`simengine.network.statistics.reduce_block`: only t ≠ s with a finite
distance count; ``1/d`` only for d > 0; the histogram bins by ``rint(d)`` (unweighted) or
``floor(d / bin_width)`` (weighted) and is trimmed after its last non-zero bin.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64, int64

from . import simulator
from ..statistics import ChunkPartial

#: threads per block of the row reduction (power of two)
ROW_THREADS = 4 if simulator() else 256
#: threads per block of the column reduction
COL_THREADS = 8 if simulator() else 256
#: histogram bins kept in shared memory per block (larger histograms use global atomics)
HIST_SHARED = 64 if simulator() else 2048


@cuda.jit
def _row_kernel(dist, rows, srcs, ncols, inf_val, row_sum, row_reach, row_max, row_harm):
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    r = rows[b]
    s = srcs[b]
    ssum = cuda.shared.array(ROW_THREADS, float64)
    sharm = cuda.shared.array(ROW_THREADS, float64)
    smax = cuda.shared.array(ROW_THREADS, float64)
    sreach = cuda.shared.array(ROW_THREADS, int64)
    acc = 0.0
    harm = 0.0
    mx = 0.0
    cnt = 0
    t = tid
    while t < ncols:
        d = dist[r, t]
        if t != s and d < inf_val:
            x = float64(d)
            acc += x
            cnt += 1
            if x > mx:
                mx = x
            if x > 0.0:
                harm += 1.0 / x
        t += ROW_THREADS
    ssum[tid] = acc
    sharm[tid] = harm
    smax[tid] = mx
    sreach[tid] = cnt
    cuda.syncthreads()
    step = ROW_THREADS // 2
    while step > 0:
        if tid < step:
            ssum[tid] += ssum[tid + step]
            sharm[tid] += sharm[tid + step]
            sreach[tid] += sreach[tid + step]
            if smax[tid + step] > smax[tid]:
                smax[tid] = smax[tid + step]
        cuda.syncthreads()
        step //= 2
    if tid == 0:
        row_sum[b] = ssum[0]
        row_harm[b] = sharm[0]
        row_max[b] = smax[0]
        row_reach[b] = sreach[0]


@cuda.jit
def _col_kernel(dist, rows, srcs, nrows, ncols, inf_val, weighted, bin_width, nbins,
                col_sum, col_reach, col_harm, hist):
    t = cuda.grid(1)
    tid = cuda.threadIdx.x
    sh = cuda.shared.array(HIST_SHARED, int64)
    use_sh = nbins <= HIST_SHARED
    if use_sh:
        i = tid
        while i < nbins:
            sh[i] = 0
            i += cuda.blockDim.x
        cuda.syncthreads()
    if t < ncols:
        acc = 0.0
        harm = 0.0
        cnt = 0
        for b in range(nrows):
            d = dist[rows[b], t]
            if t != srcs[b] and d < inf_val:
                x = float64(d)
                acc += x
                cnt += 1
                if x > 0.0:
                    harm += 1.0 / x
                if weighted:
                    k = int64(math.floor(x / bin_width))
                else:
                    k = int64(x + 0.5)
                if k >= nbins:
                    k = nbins - 1
                if use_sh:
                    cuda.atomic.add(sh, k, 1)
                else:
                    cuda.atomic.add(hist, k, 1)
        col_sum[t] = acc
        col_reach[t] = cnt
        col_harm[t] = harm
    if use_sh:
        cuda.syncthreads()
        i = tid
        while i < nbins:
            c = sh[i]
            if c != 0:
                cuda.atomic.add(hist, i, c)
            i += cuda.blockDim.x


def hist_bins(max_d: float, weighted: bool, bin_width: float) -> int:
    """Histogram length needed for a largest finite distance ``max_d``."""
    if weighted:
        return int(math.floor(max_d / bin_width)) + 1
    return int(math.floor(max_d + 0.5)) + 1


def trim_hist(h: np.ndarray) -> np.ndarray:
    nz = np.flatnonzero(h)
    return h[: (nz[-1] + 1 if len(nz) else 1)].astype(np.int64, copy=True)


def reduce_rows(dist, rows, sources, n: int, inf_val: float, weighted: bool,
                bin_width: float = 1.0, stream=0, columns=None) -> ChunkPartial:
    """Reduce rows ``rows`` (host or device int64 array) of the device array ``dist`` (whose
    first ``n`` columns are the targets) for sources ``sources`` into a :class:`ChunkPartial`.
    ``columns`` (a :class:`.columns.DeviceColumns`, default stream only): the column sums are
    folded into it on the device and the partial's columns are None."""
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    B = len(sources)
    if B == 0:
        return ChunkPartial.empty(n)
    d_rows = cuda.to_device(np.ascontiguousarray(rows, dtype=np.int64), stream=stream) \
        if isinstance(rows, np.ndarray) else rows
    d_srcs = cuda.to_device(sources, stream=stream)
    row_sum = cuda.device_array(B, np.float64, stream=stream)
    row_reach = cuda.device_array(B, np.int64, stream=stream)
    row_max = cuda.device_array(B, np.float64, stream=stream)
    row_harm = cuda.device_array(B, np.float64, stream=stream)
    _row_kernel[B, ROW_THREADS, stream](dist, d_rows, d_srcs, n, float(inf_val), row_sum,
                                        row_reach, row_max, row_harm)
    h_max = row_max.copy_to_host(stream=stream)
    stream_sync(stream)
    nbins = hist_bins(float(h_max.max()) if B else 0.0, weighted, bin_width)
    col_sum = cuda.device_array(n, np.float64, stream=stream)
    col_reach = cuda.device_array(n, np.int64, stream=stream)
    col_harm = cuda.device_array(n, np.float64, stream=stream)
    hist = cuda.to_device(np.zeros(nbins, np.int64), stream=stream)
    if n:
        grid = (n + COL_THREADS - 1) // COL_THREADS
        _col_kernel[grid, COL_THREADS, stream](dist, d_rows, d_srcs, B, n, float(inf_val),
                                               bool(weighted), float(bin_width), nbins,
                                               col_sum, col_reach, col_harm, hist)
    if columns is not None and n:
        columns.add(col_sum, col_reach, col_harm)
        cols = (None, None, None)
    else:
        cols = (col_sum.copy_to_host(stream=stream), col_reach.copy_to_host(stream=stream),
                col_harm.copy_to_host(stream=stream))
    out = ChunkPartial(sources.copy(), row_sum.copy_to_host(stream=stream),
                       row_reach.copy_to_host(stream=stream), h_max,
                       row_harm.copy_to_host(stream=stream), *cols, None)
    out.hist = trim_hist(hist.copy_to_host(stream=stream))
    stream_sync(stream)
    return out


def stream_sync(stream):
    if stream == 0 or stream is None:
        cuda.synchronize()
    else:
        stream.synchronize()


def copy_to_store(dist_dev, rows_host, store, lo: int, inf_val: float):
    """Copy rows ``rows_host`` of ``dist_dev`` (first store.shape[1] columns) into
    ``store[lo:lo+len(rows)]``, unreachable → the store dtype's sentinel."""
    from ..statistics import unreachable_sentinel

    n = store.shape[1]
    D = dist_dev.copy_to_host()
    block = D[np.asarray(rows_host, dtype=np.int64), :n]
    unreach = ~(block < inf_val)
    sent = unreachable_sentinel(store.dtype)
    out = np.where(unreach, 0, block)
    store[lo:lo + len(rows_host)] = out.astype(store.dtype)
    if unreach.any():
        store[lo:lo + len(rows_host)][unreach] = sent
