"""Brandes' betweenness on the GPU for graphs with integer weights ≥ 1: distances, path counts
and dependencies of a batch of B sources, exact, in the layout of the unweighted engine
(:mod:`.brandes`: entry v·B + b, a warp = 32 sources of one vertex).

With integer weights ≥ 1 every distance is an integer and every shortest-path predecessor of a
vertex at distance D is at a distance < D, so the batch advances by *distance values* as the
unweighted engine advances by levels (a bucket order — Dial's algorithm run for all B sources at
once, one step per distance value that occurs in the batch):

* forward step D (:func:`_settle`): every entry (v, b) with d_b(v) = D is final. It sums
  σ_b(v) = Σ σ_b(u) over its in-arcs (u, v) with d_b(u) + w(u, v) = D (no atomics: those u are
  final, at distances < D), then relaxes its out-arcs, d_b(w) ← min(d_b(w), D + w(v, w))
  (``atomic.min`` on int32); the same launch finds the next distance value, the smallest
  tentative distance above D (a block minimum, one ``atomic.min`` per block), which the host
  reads (one int per step);
* backward step D, from the largest down (:func:`_back`): every entry at D pulls
  δ_b(v) = σ_b(v) · Σ t_b(w) over its out-arcs with d_b(v) + w(v, w) = d_b(w) and writes
  t_b(v) = (1 + δ_b(v)) / σ_b(v) over σ_b(v), as the unweighted engine does.

This is the shortest-path DAG of networkx and of the CPU engine (``d(v) + w == d(w)``), exact for
integer weights (sums below 2³¹). The dependencies are summed over the batch by
:func:`.brandes_sums.vertex_sums`; the path statistics, only when the run wants them, by
:func:`.reduce.reduce_rows` over the distance rows (one transposing pass). Other weights run the
CPU engine (:func:`can_run` says why): zero-weight arcs tie distances (no order on the DAG; the
CPU engine and networkx are not exact there either), real weights have as many distance values
as vertices.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int32

from . import device_graph, graph_cache
from .brandes import THREADS, BrandesBuffers, _init, default_batch

#: int32 distances: "unreached", never added to
INF = int(np.iinfo(np.int32).max)


def can_run(graph) -> tuple[bool, str]:
    """Whether the GPU engine runs weighted betweenness on ``graph``, and if not, why."""
    w = graph.weights
    if w is None or len(w) == 0:
        return True, ""
    if not bool(np.all(w == np.rint(w))):
        return False, "the GPU engine needs integer weights (these are real)"
    if float(w.min()) < 1:
        return False, "the GPU engine needs weights >= 1 (zero-weight arcs tie distances)"
    if float(w.max()) * max(graph.n - 1, 1) >= INF - float(w.max()):
        return False, "the GPU engine needs distances below 2^31 (the weights are too large)"
    return True, ""


@cuda.jit
def _settle(indptr, indices, wts, t_indptr, t_indices, t_wts, n, nsrc, D, dist, sigma, nxt):
    """Forward step D (see the module's docstring); nxt[0] ← min(nxt[0], the smallest tentative
    distance above D)."""
    sh = cuda.shared.array(1, int32)
    if cuda.threadIdx.x == 0:
        sh[0] = INF
    cuda.syncthreads()
    i = cuda.grid(1)
    low = INF
    if i < nsrc * n:
        d = dist[i]
        if d == D:
            v = i // nsrc
            b = i - v * nsrc
            if D > 0:
                acc = 0.0
                for e in range(t_indptr[v], t_indptr[v + 1]):
                    j = t_indices[e] * nsrc + b
                    du = dist[j]
                    if du < D and du + t_wts[e] == D:  # final: distances < D never change
                        acc += sigma[j]
                sigma[i] = acc
            for e in range(indptr[v], indptr[v + 1]):
                j = indices[e] * nsrc + b
                nd = D + wts[e]
                if nd < dist[j]:
                    cuda.atomic.min(dist, j, nd)
                    if nd < low:
                        low = nd
        elif d > D and d < low:                       # d != INF: a tentative distance
            low = d
    if low < INF:
        cuda.atomic.min(sh, 0, low)
    cuda.syncthreads()
    if cuda.threadIdx.x == 0 and sh[0] < INF:
        cuda.atomic.min(nxt, 0, sh[0])


@cuda.jit
def _back(indptr, indices, wts, n, nsrc, D, dist, sigma, delta):
    """Backward step D: δ and t of the entries at distance D (see the module's docstring)."""
    i = cuda.grid(1)
    if i >= nsrc * n or dist[i] != D:
        return
    v = i // nsrc
    b = i - v * nsrc
    acc = 0.0
    for e in range(indptr[v], indptr[v + 1]):
        j = indices[e] * nsrc + b
        if dist[j] == D + wts[e]:
            acc += sigma[j]                              # t(w), final: d(w) > D
    sv = sigma[i]
    x = sv * acc
    delta[i] = x
    sigma[i] = (1.0 + x) / sv


@cuda.jit
def _rows(dist, rows, n, nsrc):
    """rows[b, v] = dist[v·nsrc + b] (the distance rows of the path statistics)."""
    i = cuda.grid(1)
    if i < nsrc * n:
        v = i // nsrc
        rows[i - v * nsrc, v] = dist[i]


class WeightedGraph:
    """int32 arc weights of a graph on the device, out-arcs and in-arcs."""

    def __init__(self, graph):
        w = np.ascontiguousarray(graph.weights, dtype=np.int32)
        self.wts = cuda.to_device(w)
        if graph.directed:
            self.t_wts = cuda.to_device(np.ascontiguousarray(graph.transpose().weights,
                                                             dtype=np.int32))
        else:
            self.t_wts = self.wts


def _weighted_graph(graph) -> WeightedGraph:
    cache = graph_cache(graph)
    wg = cache.get("brandes_weights")
    if wg is None:
        wg = cache["brandes_weights"] = WeightedGraph(graph)
    return wg


_INF_HOST = np.array([INF], np.int32)


def weighted_batch(dg, wg, sources, buf: BrandesBuffers, squares: bool = True,
                   paths: bool = False) -> list:
    """Both sweeps for ``sources`` (≤ buf.B, int32 levels buffer); dependencies in
    ``buf.btw``/``buf.btw_sq`` as :func:`.brandes.brandes_batch`. Returns the distance values
    of the batch in increasing order."""
    from .brandes_sums import vertex_sums

    n = dg.n
    B = len(sources)
    srcs = buf.srcs[:B]
    srcs.copy_to_device(np.ascontiguousarray(sources, dtype=np.int64))
    grid = (B * n + THREADS - 1) // THREADS
    _init[grid, THREADS](buf.dist, buf.sigma, buf.delta, srcs, n, B, INF)
    nxt = cuda.device_array(1, np.int32)
    steps = []
    D = 0
    while D < INF:
        steps.append(D)
        nxt.copy_to_device(_INF_HOST)
        _settle[grid, THREADS](dg.indptr, dg.indices, wg.wts, dg.t_indptr, dg.t_indices,
                               wg.t_wts, n, B, D, buf.dist, buf.sigma, nxt)
        D = int(nxt.copy_to_host()[0])
    for D in reversed(steps[1:]):
        _back[grid, THREADS](dg.indptr, dg.indices, wg.wts, n, B, D, buf.dist, buf.sigma,
                             buf.delta)
    vertex_sums(buf, n, B, squares, False)
    return steps


def weighted_partials(graph, sources, store, batch, squares, paths, columns, bin_width=1.0):
    """One ChunkPartial per batch (runs with the device current): ``btw``/``btw_sq``, and with
    ``paths`` the path statistics (weighted bins of ``bin_width``)."""
    from .brandes_sums import empty_rows, store_levels
    from .reduce import reduce_rows

    ok, why = can_run(graph)
    if not ok:
        raise ValueError(why)
    n = graph.n
    if len(sources) == 0:
        return
    dg = device_graph(graph)
    wg = _weighted_graph(graph)
    per = 20 + (4 if paths else 0)
    B = int(batch) if batch else default_batch(n, len(sources), per)
    B = max(1, min(B, len(sources)))
    buf = BrandesBuffers(n, B, np.int32)
    rows = cuda.device_array((B, n), np.int32) if paths else None
    for lo in range(0, len(sources), B):
        s = sources[lo:lo + B]
        k = len(s)
        weighted_batch(dg, wg, s, buf, squares, paths)
        if store is not None:
            store_levels(buf, k, n, store, lo)
        if paths:
            _rows[(k * n + THREADS - 1) // THREADS, THREADS](buf.dist, rows, n, k)
            part = reduce_rows(rows, np.arange(k, dtype=np.int64), s, n, float(INF), True,
                               float(bin_width), columns=columns)
        else:
            part = empty_rows(s, n)
        part.btw = buf.btw.copy_to_host()
        part.btw_sq = buf.btw_sq.copy_to_host() if squares else np.zeros(n)
        yield part
