"""The first blocked Floyd–Warshall kernel (float64, 32-wide tiles, 4 outputs per thread), which the
engine no longer runs: kept beside the benchmarks as the in-run reference that
``bench_network_gpu.py --fw-sizes`` times next to :mod:`simengine.network.cuda.floyd_warshall`
(the register-tiled min-plus kernels of :mod:`simengine.network.cuda.minplus`).

The n × n float64 matrix is padded to a multiple of the tile T and processed in rounds k = 0 ..
n/T − 1, three launches per round (Venkataraman et al.; the blocked form of Buluç et al.'s
semiring formulation):

1. the diagonal tile (k, k): T steps of in-place FW in shared memory (one barrier per step);
2. the tiles of row k and column k: each updated with the closed diagonal tile, in shared memory;
3. all other tiles: ``D[i,j] = min(D[i,j], min_kk D[i,kk] + D[kk,j])`` — a min-plus product of
   two shared-memory tiles, no barrier inside the kk loop (``rows_per_thread`` outputs per thread).

In-place updates are safe because the diagonal is 0 and weights are non-negative (row kk and
column kk of a tile do not change in step kk).  "No path" is ``inf`` in float64 (inf + x = inf,
no overflow).  Padded vertices are isolated.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float64

from simengine.network.cuda import device_graph, simulator

#: tile edge
TILE = 4 if simulator() else 32
#: output rows per thread in phase 3 (block = TILE × TILE/ROWS threads)
ROWS = 1 if simulator() else 4
INIT_THREADS = 16 if simulator() else 256

_kernels: dict = {}


@cuda.jit
def _init_matrix(D, npad):
    i = cuda.grid(1)
    if i < npad * npad:
        r = i // npad
        c = i - r * npad
        D[r, c] = 0.0 if r == c else math.inf


@cuda.jit
def _set_arcs(D, indptr, indices, weights, n):
    u = cuda.grid(1)
    if u < n:
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            w = weights[e]
            if w < D[u, v]:
                D[u, v] = w


def _make(T: int, R: int):
    TR = T // R

    @cuda.jit
    def phase1(D, k):
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        s = cuda.shared.array((T, T), float64)
        o = k * T
        s[ty, tx] = D[o + ty, o + tx]
        cuda.syncthreads()
        for kk in range(T):
            cand = s[ty, kk] + s[kk, tx]
            if cand < s[ty, tx]:
                s[ty, tx] = cand
            cuda.syncthreads()
        D[o + ty, o + tx] = s[ty, tx]

    @cuda.jit
    def phase2(D, k):
        b = cuda.blockIdx.x
        if b == k:
            return
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        dg = cuda.shared.array((T, T), float64)
        s = cuda.shared.array((T, T), float64)
        o = k * T
        if cuda.blockIdx.y == 0:     # row tile (k, b)
            r0 = o
            c0 = b * T
        else:                        # column tile (b, k)
            r0 = b * T
            c0 = o
        dg[ty, tx] = D[o + ty, o + tx]
        s[ty, tx] = D[r0 + ty, c0 + tx]
        cuda.syncthreads()
        if cuda.blockIdx.y == 0:
            for kk in range(T):
                cand = dg[ty, kk] + s[kk, tx]
                if cand < s[ty, tx]:
                    s[ty, tx] = cand
                cuda.syncthreads()
        else:
            for kk in range(T):
                cand = s[ty, kk] + dg[kk, tx]
                if cand < s[ty, tx]:
                    s[ty, tx] = cand
                cuda.syncthreads()
        D[r0 + ty, c0 + tx] = s[ty, tx]

    @cuda.jit
    def phase3(D, k):
        bi = cuda.blockIdx.y
        bj = cuda.blockIdx.x
        if bi == k or bj == k:
            return
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        a = cuda.shared.array((T, T), float64)
        bt = cuda.shared.array((T, T), float64)
        o = k * T
        r0 = bi * T
        c0 = bj * T
        for r in range(R):
            y = ty + r * TR
            a[y, tx] = D[r0 + y, o + tx]
            bt[y, tx] = D[o + y, c0 + tx]
        cuda.syncthreads()
        acc = cuda.local.array(R, float64)
        for r in range(R):
            acc[r] = D[r0 + ty + r * TR, c0 + tx]
        for kk in range(T):
            bv = bt[kk, tx]
            for r in range(R):
                cand = a[ty + r * TR, kk] + bv
                if cand < acc[r]:
                    acc[r] = cand
        for r in range(R):
            D[r0 + ty + r * TR, c0 + tx] = acc[r]

    return phase1, phase2, phase3


def kernels(T: int = TILE, R: int = ROWS):
    if (T, R) not in _kernels:
        _kernels[(T, R)] = _make(T, R)
    return _kernels[(T, R)]


def classic_device(graph, tile: int = TILE, rows: int = ROWS):
    """The first kernel (kept as the benchmark's reference): closed distance matrix on the
    device, shape (npad, npad) with npad = ceil(n/T)·T; the
    first n rows/columns are the graph's (float64, inf = unreachable)."""
    T, R = int(tile), int(rows)
    if T % R:
        raise ValueError("tile must be a multiple of rows")
    dg = device_graph(graph)
    n = dg.n
    nt = max(1, -(-n // T))
    npad = nt * T
    D = cuda.device_array((npad, npad), np.float64)
    _init_matrix[(npad * npad + INIT_THREADS - 1) // INIT_THREADS, INIT_THREADS](D, npad)
    if n:
        _set_arcs[(n + INIT_THREADS - 1) // INIT_THREADS, INIT_THREADS](
            D, dg.indptr, dg.indices, dg.weights, n)
    p1, p2, p3 = kernels(T, R)
    k1 = p1[1, (T, T)]
    k2 = p2[(nt, 2), (T, T)]
    k3 = p3[(nt, nt), (T, T // R)]
    for k in range(nt):
        k1(D, k)
        if nt > 1:
            k2(D, k)
            k3(D, k)
    return D


