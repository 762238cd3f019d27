"""Brandes' betweenness on the GPU for weighted graphs (weights > 0): distances, path counts and
dependencies of a batch of B sources, in the layout of the unweighted engine (:mod:`.brandes`:
entry v·B + b, a warp = 32 sources of one vertex).

The batch advances by *distance buckets* [kΔ, (k + 1)Δ) as the unweighted engine advances by
levels: with Δ at most half the smallest weight every shortest-path predecessor of a vertex lies
in an earlier bucket, so at step k the entries of bucket k are final (Dial's algorithm with
buckets of width Δ, run for all B sources at once; empty buckets are skipped). Integer weights
use int32 distances and Δ = 1 (a bucket per distance value); other weights float64 distances
and Δ = (smallest weight) / 2.

* forward step k (:func:`_settle`): every entry (v, b) of bucket k sums
  σ_b(v) = Σ σ_b(u) over its in-arcs (u, v) with d_b(u) + w(u, v) = d_b(v) (no atomics: those u
  are final, in earlier buckets — checked: a predecessor in bucket k sets an error flag), then
  relaxes its out-arcs, d_b(w) ← min(d_b(w), d_b(v) + w(v, w)) (``atomic.min``); the same launch
  finds the next non-empty bucket (a block minimum, one ``atomic.min`` per block), which the host
  reads (one int per step);
* backward step k, from the last bucket down (:func:`_back`): every entry of bucket k pulls
  δ_b(v) = σ_b(v) · Σ t_b(w) over its out-arcs with d_b(v) + w(v, w) = d_b(w) and writes
  t_b(v) = (1 + δ_b(v)) / σ_b(v) over σ_b(v), as the unweighted engine does.

The shortest-path DAG is networkx's and the CPU engine's: the arcs with d(u) + w == d(v),
evaluated in the distances' own arithmetic — exact for integer weights (int32, sums below 2³¹);
for real weights the float64 sum compared for equality (networkx's tolerance rule: none), and
the GPU's distances are the same float64 values as Dijkstra's (the minimum over paths of the
sums accumulated from the source, which both compute). The dependencies are summed over the
batch by :func:`.brandes_sums.vertex_sums`; the path statistics, only when the run wants them,
by :func:`.reduce.reduce_rows` over the distance rows (one transposing pass). :func:`can_run`
sends the rest to the CPU engine: zero-weight arcs (they tie distances, no order on the DAG; the
CPU engine and networkx are not exact there either), weights spanning more than MAX_SPREAD
(too many buckets), integer distances beyond int32.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, int64

from . import device_graph, graph_cache
from .brandes import THREADS, BrandesBuffers, _init, default_batch

#: int32 distances: "unreached", never added to
INF = int(np.iinfo(np.int32).max)
#: no bucket
NO_BUCKET = np.iinfo(np.int64).max
#: real weights whose largest / smallest exceeds this run the CPU engine (buckets of half the
#: smallest weight: a path of h arcs spans up to 2·h·MAX_SPREAD of them)
MAX_SPREAD = 1000.0


def integer_weights(graph) -> bool:
    w = graph.weights
    return w is None or bool(np.all(w == np.rint(w)))


def _weight_range(graph):
    """(smallest, largest, all integers) of ``graph``'s weights — a built graph, or a graph's
    shape (:class:`simengine.plan.problem.GraphShape`: ``weight_range``, integers when
    ``exact``) — None when there are none, "unknown" when a shape does not know them."""
    if not hasattr(graph, "indptr"):                   # a shape: the plan before the graph
        rng = getattr(graph, "weight_range", None)
        if not graph.weighted:
            return None
        if rng is None:
            return "unknown"
        return float(rng[0]), float(rng[1]), bool(graph.exact)
    w = graph.weights
    if w is None or len(w) == 0:
        return None
    return float(w.min()), float(w.max()), integer_weights(graph)


def can_run(graph) -> tuple[bool, str]:
    """Whether the GPU engine runs weighted betweenness on ``graph`` (a built graph or its
    shape), and if not, why."""
    rng = _weight_range(graph)
    if rng is None:
        return True, ""
    if rng == "unknown":
        return False, "the weights are not known before the graph is read"
    lo, hi, integer = rng
    if lo <= 0:
        return False, "the GPU engine needs weights > 0 (zero-weight arcs tie distances)"
    if integer:
        if hi * max(graph.n - 1, 1) >= INF - hi:
            return False, ("the GPU engine needs integer distances below 2^31 (the weights are "
                           "too large)")
        return True, ""
    if hi / lo > MAX_SPREAD:
        return False, (f"the GPU engine needs real weights within a factor {MAX_SPREAD:g} of "
                       f"each other (these span {hi / lo:.3g}: too many distance buckets)")
    return True, ""


@cuda.jit
def _settle(indptr, indices, wts, t_indptr, t_indices, t_wts, n, nsrc, k, inv, unreached, dist,
            sigma, nxt, bad):
    """Forward step k (see the module's docstring); nxt[0] ← min(nxt[0], the next non-empty
    bucket); bad[0] = 1 if a shortest-path predecessor lies in bucket k."""
    sh = cuda.shared.array(1, int64)
    if cuda.threadIdx.x == 0:
        sh[0] = NO_BUCKET
    cuda.syncthreads()
    i = cuda.grid(1)
    low = NO_BUCKET
    if i < nsrc * n:
        d = dist[i]
        if d != unreached:
            kb = int64(math.floor(d * inv))
            if kb == k:
                v = i // nsrc
                b = i - v * nsrc
                if kb > 0:                            # bucket 0: the source alone
                    acc = 0.0
                    for e in range(t_indptr[v], t_indptr[v + 1]):
                        j = t_indices[e] * nsrc + b
                        du = dist[j]
                        if du < d and du + t_wts[e] == d:
                            if int64(math.floor(du * inv)) >= k:
                                bad[0] = 1
                            acc += sigma[j]
                    sigma[i] = acc
                for e in range(indptr[v], indptr[v + 1]):
                    j = indices[e] * nsrc + b
                    nd = d + wts[e]
                    if nd < dist[j]:
                        cuda.atomic.min(dist, j, nd)
                        nb = int64(math.floor(nd * inv))
                        if nb < low:
                            low = nb
            elif kb > k and kb < low:                 # a tentative distance, a later bucket
                low = kb
    if low < NO_BUCKET:
        cuda.atomic.min(sh, 0, low)
    cuda.syncthreads()
    if cuda.threadIdx.x == 0 and sh[0] < NO_BUCKET:
        cuda.atomic.min(nxt, 0, sh[0])


@cuda.jit
def _back(indptr, indices, wts, n, nsrc, k, inv, unreached, dist, sigma, delta):
    """Backward step k: δ and t of the entries of bucket k (see the module's docstring)."""
    i = cuda.grid(1)
    if i >= nsrc * n:
        return
    d = dist[i]
    if d == unreached or int64(math.floor(d * inv)) != k:
        return
    v = i // nsrc
    b = i - v * nsrc
    acc = 0.0
    for e in range(indptr[v], indptr[v + 1]):
        j = indices[e] * nsrc + b
        if dist[j] == d + wts[e]:
            acc += sigma[j]                              # t(w), final: a later bucket
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
    """Arc weights of a graph on the device, out-arcs and in-arcs: int32 for integer weights,
    else float64; ``dtype`` the distances' type, ``inv`` = 1 / the bucket width."""

    def __init__(self, graph):
        integer = integer_weights(graph)
        self.dtype = np.dtype(np.int32 if integer else np.float64)
        w = graph.weights if graph.weights is not None else np.ones(graph.num_arcs)
        self.inv = 1.0 if integer else (2.0 / float(w.min()) if len(w) else 1.0)
        self.wts = cuda.to_device(np.ascontiguousarray(w, dtype=self.dtype))
        if graph.directed:
            self.t_wts = cuda.to_device(np.ascontiguousarray(graph.transpose().weights,
                                                             dtype=self.dtype))
        else:
            self.t_wts = self.wts


def _weighted_graph(graph) -> WeightedGraph:
    cache = graph_cache(graph)
    wg = cache.get("brandes_weights")
    if wg is None:
        wg = cache["brandes_weights"] = WeightedGraph(graph)
    return wg


_NO_BUCKET = np.array([NO_BUCKET], np.int64)


def weighted_batch(dg, wg, sources, buf: BrandesBuffers, squares: bool = True) -> list:
    """Both sweeps for ``sources`` (≤ buf.B, distances of type ``wg.dtype``); dependencies in
    ``buf.btw``/``buf.btw_sq`` as :func:`.brandes.brandes_batch`. Returns the batch's non-empty
    buckets in increasing order."""
    from .brandes_sums import vertex_sums

    n = dg.n
    B = len(sources)
    srcs = buf.srcs[:B]
    srcs.copy_to_device(np.ascontiguousarray(sources, dtype=np.int64))
    grid = (B * n + THREADS - 1) // THREADS
    unreached = buf.unreached
    _init[grid, THREADS](buf.dist, buf.sigma, buf.delta, srcs, n, B, unreached)
    nxt = cuda.device_array(1, np.int64)
    bad = cuda.to_device(np.zeros(1, np.int32))
    steps = []
    k = 0
    while k < NO_BUCKET:
        steps.append(k)
        nxt.copy_to_device(_NO_BUCKET)
        _settle[grid, THREADS](dg.indptr, dg.indices, wg.wts, dg.t_indptr, dg.t_indices,
                               wg.t_wts, n, B, k, wg.inv, unreached, buf.dist, buf.sigma, nxt,
                               bad)
        k = int(nxt.copy_to_host()[0])
    if bad.copy_to_host()[0]:
        raise RuntimeError("weighted Brandes on the GPU: a shortest-path predecessor in the same "
                           "distance bucket (weights below the float spacing of the distances?)")
    for k in reversed(steps[1:]):
        _back[grid, THREADS](dg.indptr, dg.indices, wg.wts, n, B, k, wg.inv, unreached,
                             buf.dist, buf.sigma, buf.delta)
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
    size = wg.dtype.itemsize
    B = int(batch) if batch else default_batch(n, len(sources), 16 + size * (2 if paths else 1))
    B = max(1, min(B, len(sources)))
    buf = BrandesBuffers(n, B, wg.dtype)
    rows = cuda.device_array((B, n), wg.dtype) if paths else None
    for lo in range(0, len(sources), B):
        s = sources[lo:lo + B]
        k = len(s)
        weighted_batch(dg, wg, s, buf, squares)
        if store is not None:
            store_levels(buf, k, n, store, lo)
        if paths:
            _rows[(k * n + THREADS - 1) // THREADS, THREADS](buf.dist, rows, n, k)
            part = reduce_rows(rows, np.arange(k, dtype=np.int64), s, n, float(buf.unreached),
                               True, float(bin_width), columns=columns)
        else:
            part = empty_rows(s, n)
        part.btw = buf.btw.copy_to_host()
        part.btw_sq = buf.btw_sq.copy_to_host() if squares else np.zeros(n)
        yield part
