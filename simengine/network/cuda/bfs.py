"""Level-synchronous frontier BFS on the GPU, one thread per (source, vertex).

Fixes to the seed kernel (Harish & Narayanan, Alg. 2):

* the frontier is double-buffered (``F`` read and cleared, ``Fn`` written), so a vertex found at
  level L+1 is never expanded in the launch that found it;
* a vertex is marked when it is *discovered* (``dist == UNREACHED`` → ``L+1``), so every concurrent
  writer writes the same value (benign race), and same-level neighbours never overwrite each other;
* no frontier copy to the host: each level sets a device flag (three rotating slots, the launch of
  level L clears the slot of level L+1), and the host reads one int every ``levels_per_sync``
  levels (extra levels after the end are no-ops);
* optional degree-sorted thread → vertex map (``sort_by_degree``) to cut warp divergence;
* many sources at once: the grid covers B sources × n vertices, every source with its own
  distance row, reset per batch (the seed's APSP forgot the per-source reset).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from . import device_graph, simulator
from .common import fill, init_sources

#: int32 distance of a vertex not reached (yet)
UNREACHED = np.int32(np.iinfo(np.int32).max)
THREADS = 16 if simulator() else 256


@cuda.jit
def _bfs_level(indptr, indices, order, use_order, n, nsrc, level, F, Fn, dist, flags):
    tid = cuda.grid(1)
    if tid == 0:
        flags[(level + 1) % 3] = 0
    if tid < nsrc * n:
        s = tid // n
        i = tid - s * n
        u = order[i] if use_order else i
        if F[s, u]:
            F[s, u] = 0
            nd = level + 1
            found = False
            for e in range(indptr[u], indptr[u + 1]):
                v = indices[e]
                if dist[s, v] == UNREACHED:
                    dist[s, v] = nd
                    Fn[s, v] = 1
                    found = True
            if found:
                flags[level % 3] = 1


class BFSBuffers:
    """Device buffers for batches of up to ``B`` sources on an ``n``-vertex graph."""

    def __init__(self, n: int, B: int):
        self.n, self.B = n, B
        self.dist = cuda.device_array((B, n), np.int32)
        self.F = cuda.to_device(np.zeros((B, n), np.uint8))
        self.Fn = cuda.to_device(np.zeros((B, n), np.uint8))
        self.flags = cuda.to_device(np.zeros(3, np.int32))


def bfs_batch(dg, sources, buf: BFSBuffers, sort_by_degree: bool = False,
              levels_per_sync: int = 4) -> int:
    """BFS from every source of ``sources`` (≤ buf.B) into ``buf.dist[:len(sources)]``.

    Returns the number of levels run.  Rows beyond ``len(sources)`` are left untouched.
    """
    n = dg.n
    B = len(sources)
    srcs = cuda.to_device(np.ascontiguousarray(sources, dtype=np.int64))
    total = buf.B * n
    fill[(total + THREADS - 1) // THREADS, THREADS](buf.dist.reshape(total), UNREACHED)
    buf.flags.copy_to_device(np.zeros(3, np.int32))
    init_sources[(B + THREADS - 1) // THREADS, THREADS](buf.dist, buf.F, srcs)
    grid = (B * n + THREADS - 1) // THREADS
    order = dg.order if sort_by_degree else dg.indices  # placeholder array when unused
    k = _bfs_level[grid, THREADS]
    level = 0
    F, Fn = buf.F, buf.Fn
    while True:
        for _ in range(levels_per_sync):
            k(dg.indptr, dg.indices, order, sort_by_degree, n, B, level, F, Fn, buf.dist,
              buf.flags)
            F, Fn = Fn, F
            level += 1
        if buf.flags[(level - 1) % 3] == 0:
            break
        if level > n + levels_per_sync:       # cannot happen; guards against a hang
            raise RuntimeError("BFS did not terminate")
    buf.F, buf.Fn = F, Fn
    return level


def bfs(graph, source: int, sort_by_degree: bool = False) -> np.ndarray:
    """Hop distances from ``source`` (int64, -1 = unreachable), computed on the GPU."""
    dg = device_graph(graph)
    buf = BFSBuffers(dg.n, 1)
    bfs_batch(dg, np.array([source]), buf, sort_by_degree)
    d = buf.dist.copy_to_host()[0].astype(np.int64)
    d[d == UNREACHED] = -1
    return d


def bfs_many(graph, sources, sort_by_degree: bool = False, batch: int = 64) -> np.ndarray:
    """(len(sources), n) int64 hop distances (-1 = unreachable), batches of ``batch`` sources."""
    dg = device_graph(graph)
    sources = np.asarray(sources, dtype=np.int64)
    out = np.empty((len(sources), dg.n), np.int64)
    buf = BFSBuffers(dg.n, max(1, min(batch, len(sources))))
    for lo in range(0, len(sources), buf.B):
        s = sources[lo:lo + buf.B]
        bfs_batch(dg, s, buf, sort_by_degree)
        d = buf.dist.copy_to_host()[: len(s)].astype(np.int64)
        d[d == UNREACHED] = -1
        out[lo:lo + len(s)] = d
    return out
