"""Brandes' betweenness on the GPU (unweighted graphs): a batch of B sources at a time, one thread
per (vertex, source), level-synchronous forward and backward sweeps on the device.

Layout: entry v·B + b holds vertex v for source b (vertex-major), so the threads of a warp are
32 sources of one vertex: they read the same adjacency list and, for each arc (v, w), the 32
adjacent entries of w — coalesced, and every thread of the warp runs the same number of
iterations.

* forward, level L: every (v, b) with d_b(v) = L scans its out-arcs; an unreached w gets
  d_b(w) = L + 1 (every writer writes the same value), and every w at level L + 1 receives
  σ_b(w) += σ_b(v) (``atomic.add`` in float64). σ of level L is final before the launch of level
  L + 1 reads it. The deepest level found is kept on the device (``atomic.max``), so the host
  reads one int per ``LEVELS_PER_SYNC`` launches;
* backward, level L = deepest − 1 … 1: every (v, b) at level L pulls
  δ_b(v) = σ_b(v) · Σ_{w ∈ out(v), d_b(w) = L + 1} (1 + δ_b(w)) / σ_b(w) — no atomics;
* one thread per vertex adds δ_b(v) and δ_b(v)² over the batch's sources in order
  (deterministic); the levels are transposed into a (B, n) block, from which the path statistics
  are reduced (:func:`.reduce.reduce_rows`) and distances stored.

Weighted graphs run the CPU engine (``backends.betweenness_plan`` says so in the log).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from . import device_graph, on_device, simulator
from .bfs import UNREACHED
from .common import fill

THREADS = 16 if simulator() else 256
#: forward launches between two reads of the device's deepest-level counter
LEVELS_PER_SYNC = 4
#: bytes of device buffers per batch (levels int32 twice, σ and δ float64, per source and vertex)
BATCH_BYTES = (1 << 32) if not simulator() else (1 << 16)
BYTES_PER_ENTRY = 24


@cuda.jit
def _init(dist, sigma, delta, srcs, n, nsrc):
    i = cuda.grid(1)
    if i < nsrc * n:
        v = i // nsrc
        s = srcs[i - v * nsrc]
        dist[i] = 0 if v == s else UNREACHED
        sigma[i] = 1.0 if v == s else 0.0
        delta[i] = 0.0


@cuda.jit
def _sweep(indptr, indices, n, nsrc, level, dist, sigma, delta, deepest, backward):
    """One level of the forward (σ) or the backward (δ) sweep; see the module's docstring."""
    i = cuda.grid(1)
    if i >= nsrc * n or dist[i] != level:
        return
    v = i // nsrc
    b = i - v * nsrc
    nd = level + 1
    sv = sigma[i]
    acc = 0.0
    found = False
    for e in range(indptr[v], indptr[v + 1]):
        j = indices[e] * nsrc + b
        if backward:
            if dist[j] == nd:
                acc += (1.0 + delta[j]) / sigma[j]
        else:
            if dist[j] == UNREACHED:
                dist[j] = nd
                found = True
            if dist[j] == nd:
                cuda.atomic.add(sigma, j, sv)
    if backward:
        delta[i] = sv * acc
    elif found:
        cuda.atomic.max(deepest, 0, nd)


@cuda.jit
def _dependencies(dist, delta, srcs, n, nsrc, btw, btw_sq, rows):
    """Per vertex v: Σ_b δ_b(v) and Σ_b δ_b(v)² over the batch's sources other than v, in order;
    and row b of ``rows`` (B × n) gets the levels of source b."""
    v = cuda.grid(1)
    if v < n:
        acc = 0.0
        sq = 0.0
        for b in range(nsrc):
            i = v * nsrc + b
            d = dist[i]
            rows[b, v] = d
            if v != srcs[b] and d != UNREACHED:
                x = delta[i]
                acc += x
                sq += x * x
        btw[v] = acc
        btw_sq[v] = sq


class BrandesBuffers:
    """Device buffers for batches of up to ``B`` sources on an ``n``-vertex graph."""

    def __init__(self, n: int, B: int):
        self.n, self.B = n, B
        self.dist = cuda.device_array(B * n, np.int32)
        self.sigma = cuda.device_array(B * n, np.float64)
        self.delta = cuda.device_array(B * n, np.float64)
        self.rows = cuda.device_array((B, n), np.int32)
        self.deepest = cuda.device_array(1, np.int32)
        self.btw = cuda.device_array(n, np.float64)
        self.btw_sq = cuda.device_array(n, np.float64)


def brandes_batch(dg, sources, buf: BrandesBuffers) -> int:
    """Forward and backward sweeps for ``sources`` (≤ buf.B); the dependencies summed over them
    land in ``buf.btw``/``buf.btw_sq``. Returns the deepest level."""
    n = dg.n
    B = len(sources)
    srcs = cuda.to_device(np.ascontiguousarray(sources, dtype=np.int64))
    grid = (B * n + THREADS - 1) // THREADS
    _init[grid, THREADS](buf.dist, buf.sigma, buf.delta, srcs, n, B)
    fill[1, 1](buf.deepest, 0)
    sweep = _sweep[grid, THREADS]
    level = 0
    while True:
        for _ in range(LEVELS_PER_SYNC):
            sweep(dg.indptr, dg.indices, n, B, level, buf.dist, buf.sigma, buf.delta,
                  buf.deepest, False)
            level += 1
        deepest = int(buf.deepest.copy_to_host()[0])
        if deepest < level:
            break
    for L in range(deepest - 1, 0, -1):
        sweep(dg.indptr, dg.indices, n, B, L, buf.dist, buf.sigma, buf.delta, buf.deepest, True)
    _dependencies[(n + THREADS - 1) // THREADS, THREADS](buf.dist, buf.delta, srcs, n, B,
                                                         buf.btw, buf.btw_sq, buf.rows)
    return deepest


def default_batch(n: int, num_sources: int) -> int:
    """Sources per batch: as many as BATCH_BYTES — at most half the device's free memory — of
    buffers hold (BYTES_PER_ENTRY per source and vertex), a multiple of 32 when more than 32, at
    most the run's sources."""
    budget = BATCH_BYTES
    if not simulator():
        budget = min(budget, int(cuda.current_context().get_memory_info()[0]) // 2)
    B = int(max(1, min(num_sources, budget // (BYTES_PER_ENTRY * max(1, n)))))
    return B - B % 32 if B > 32 else B


def brandes_partials(graph, sources, store=None, batch=None, device=None):
    """One ChunkPartial per batch of sources (path statistics + ``btw``/``btw_sq``), in source
    order, on GPU ``device``."""
    if graph.weighted:
        raise ValueError("the GPU Brandes engine is for unweighted graphs")
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    return on_device(_partials(graph, sources, store, batch), device)


def _partials(graph, sources, store, batch):
    from .reduce import copy_to_store, reduce_rows

    n = graph.n
    if len(sources) == 0:
        return
    dg = device_graph(graph)
    B = int(batch) if batch else default_batch(n, len(sources))
    B = max(1, min(B, len(sources)))
    buf = BrandesBuffers(n, B)
    rows = np.arange(B, dtype=np.int64)
    for lo in range(0, len(sources), B):
        s = sources[lo:lo + B]
        brandes_batch(dg, s, buf)
        if store is not None:
            copy_to_store(buf.rows, rows[:len(s)], store, lo, float(UNREACHED))
        part = reduce_rows(buf.rows, rows[:len(s)], s, n, float(UNREACHED), False, 1.0)
        part.btw = buf.btw.copy_to_host()
        part.btw_sq = buf.btw_sq.copy_to_host()
        yield part
