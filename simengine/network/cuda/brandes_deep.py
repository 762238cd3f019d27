"""Brandes' betweenness on the GPU for graphs of many BFS levels (rings, lattices, long chains):
one thread block per source, each with its own queue, looping over the levels inside the kernel.

The batched engine of :mod:`.brandes` sweeps every (vertex, source) entry of its batch once per
level; on a ring of n = 30 000 (about 3 000 levels per sweep) that is thousands of sweeps over a
block of B·n entries almost all idle. Here block b runs source ``srcs[b]`` alone, in rows b of
(B, n) arrays, level by level with ``syncthreads`` between levels (no launch, no host round
trip per level):

* forward: the threads take the level-L vertices of the block's queue; an arc (v, w) to an
  unreached w claims it with ``atomic.cas`` (d(w) = L + 1; the winner appends w to the queue with a
  shared-memory counter), and every arc to a level-(L + 1) vertex adds σ(v) to σ(w)
  (``atomic.add``). The start of every level in the queue is kept (``lstart``);
* backward, L = deepest … 1: every level-L vertex pulls
  δ(v) = σ(v) · Σ_{w ∈ out(v), d(w) = L + 1} t(w), where t(w) = (1 + δ(w)) / σ(w) was written
  over σ(w) when level L + 1 finished (one division per vertex, none per arc).

Each block touches only its own rows, so a batch needs no atomics across blocks; the
dependencies are summed over the batch's sources in order, one thread per vertex (deterministic).
The distances are already rows (B × n) for :func:`.reduce.reduce_rows`.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int32

from . import simulator
from .bfs import UNREACHED

#: threads per block (= per source); the frontiers of deep graphs are narrow
THREADS = 8 if simulator() else 64
#: threads per block of the column sums
SUM_THREADS = 16 if simulator() else 256
#: bytes of device buffers per source and vertex: levels, queue, level starts (int32), σ, δ
BYTES_PER_ENTRY = 28


@cuda.jit
def _sources(indptr, indices, n, srcs, dist, sigma, delta, queue, lstart, deepest):
    """Block b: forward and backward sweeps of source srcs[b] in rows b of the flat (B·n)
    arrays (``lstart`` is (B·(n + 1)))."""
    b = cuda.blockIdx.x
    tid = cuda.threadIdx.x
    nt = cuda.blockDim.x
    tail = cuda.shared.array(1, int32)
    base = b * n
    lbase = b * (n + 1)
    s = srcs[b]
    v = tid
    while v < n:
        dist[base + v] = UNREACHED
        sigma[base + v] = 0.0
        delta[base + v] = 0.0
        v += nt
    cuda.syncthreads()
    if tid == 0:
        dist[base + s] = 0
        sigma[base + s] = 1.0
        queue[base] = s
        tail[0] = 1
        lstart[lbase] = 0
    cuda.syncthreads()
    lo = 0
    hi = 1
    L = 0
    while lo < hi:
        nd = L + 1
        k = lo + tid
        while k < hi:
            v = queue[base + k]
            sv = sigma[base + v]
            for e in range(indptr[v], indptr[v + 1]):
                w = indices[e]
                j = base + w
                dj = dist[j]
                if dj == UNREACHED:
                    dj = cuda.atomic.cas(dist, j, UNREACHED, nd)
                    if dj == UNREACHED:
                        queue[base + cuda.atomic.add(tail, 0, 1)] = w
                        dj = nd
                if dj == nd:
                    cuda.atomic.add(sigma, j, sv)
            k += nt
        cuda.syncthreads()
        lo = hi
        hi = tail[0]
        L = nd
        if tid == 0:
            lstart[lbase + L] = lo
        cuda.syncthreads()
    top = L - 1                                          # the deepest level
    if tid == 0 and top > 0:
        cuda.atomic.max(deepest, 0, top)
    for lev in range(top, 0, -1):
        nd = lev + 1
        k = lstart[lbase + lev] + tid
        end = lstart[lbase + nd]
        while k < end:
            v = queue[base + k]
            acc = 0.0
            for e in range(indptr[v], indptr[v + 1]):
                j = base + indices[e]
                if dist[j] == nd:
                    acc += sigma[j]                      # t(w), see the module docstring
            sv = sigma[base + v]
            x = sv * acc
            delta[base + v] = x
            sigma[base + v] = (1.0 + x) / sv
            k += nt
        cuda.syncthreads()


@cuda.jit
def _column_sums(delta, n, nsrc, btw, btw_sq, squares):
    """btw[v] = Σ_b δ_b(v), btw_sq[v] = Σ_b δ_b(v)² (0 without ``squares``), in source order
    (δ is 0 at the source and at unreached vertices)."""
    v = cuda.grid(1)
    if v < n:
        acc = 0.0
        sq = 0.0
        for b in range(nsrc):
            x = delta[b * n + v]
            acc += x
            if squares:
                sq += x * x
        btw[v] = acc
        btw_sq[v] = sq


class DeepBuffers:
    """Device buffers for batches of up to ``B`` sources, one row of ``n`` each."""

    def __init__(self, n: int, B: int):
        self.n, self.B = n, B
        self.dist = cuda.device_array((B, n), np.int32)
        self.sigma = cuda.device_array(B * n, np.float64)
        self.delta = cuda.device_array(B * n, np.float64)
        self.queue = cuda.device_array(B * n, np.int32)
        self.lstart = cuda.device_array(B * (n + 1), np.int32)
        self.deepest = cuda.to_device(np.zeros(1, np.int32))
        self.btw = cuda.device_array(n, np.float64)
        self.btw_sq = cuda.device_array(n, np.float64)
        self.rows = self.dist                            # (B, n): the distance rows


def deep_batch(dg, srcs, buf: DeepBuffers, squares: bool = True) -> None:
    """Both sweeps for the sources ``srcs`` (a device int64 array, ≤ buf.B); their dependencies
    summed land in ``buf.btw``/``buf.btw_sq``, their levels in rows 0..len(srcs)-1 of
    ``buf.dist``."""
    n, B = dg.n, len(srcs)
    flat = buf.dist.reshape(buf.B * n)
    _sources[B, THREADS](dg.indptr, dg.indices, n, srcs, flat, buf.sigma, buf.delta,
                         buf.queue, buf.lstart, buf.deepest)
    _column_sums[(n + SUM_THREADS - 1) // SUM_THREADS, SUM_THREADS](buf.delta, n, B, buf.btw,
                                                                    buf.btw_sq, bool(squares))
