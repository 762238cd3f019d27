"""Label-correcting SSSP on the GPU with ``cuda.atomic.min`` relaxation, many sources at once.

One thread per (source, vertex).  A frontier vertex u relaxes every out-arc (u, v) with
``old = atomic.min(dist[s, v], dist[s, u] + w)``; if the new value is smaller, v joins the next
frontier.  The atomic minimum is what the seed's two-kernel version (Harish & Narayanan, Alg. 4–5)
lacked: there, concurrent compare-then-write updates of ``U[v]`` lose the smallest candidate
(Martín et al.'s counterexample, see the tests).  Reading ``dist[s, u]`` while other threads lower
it is harmless (label-correcting: a lower value only helps, and a lowered u is in the next frontier).

Variants (same kernel):

* ``frontier`` — every frontier vertex relaxes each iteration (Bellman–Ford over the frontier);
* ``nearfar`` — near–far / delta-stepping-like: only frontier vertices with ``dist < threshold``
  relax; the others are carried to the next frontier.  When an iteration relaxes nothing, the
  threshold moves to (smallest far distance + delta).  Fewer redundant relaxations on graphs with
  long weighted paths.

Weights are float64; integer weights give exact integer distances (sums below 2**53).  Device
flags rotate over three slots (the launch of iteration i clears slot i+1), the host reads one int
every ``iters_per_sync`` iterations.
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from . import device_graph, simulator
from .common import fill, init_sources

THREADS = 16 if simulator() else 256
INF = math.inf


@cuda.jit
def _relax(indptr, indices, weights, n, nsrc, it, delta, F, Fn, dist, active, near, farmin, thr):
    """One iteration.  Slots: p = previous iteration, c = this one, z = next (cleared here)."""
    tid = cuda.grid(1)
    p = (it + 2) % 3
    c = it % 3
    z = (it + 1) % 3
    if near[p] != 0:
        t = thr[p]
    else:
        t = farmin[p] + delta
    if tid == 0:
        thr[c] = t
        active[z] = 0
        near[z] = 0
        farmin[z] = INF
    if tid < nsrc * n:
        s = tid // n
        u = tid - s * n
        if F[s, u]:
            F[s, u] = 0
            du = dist[s, u]
            if du < t:
                near[c] = 1
                for e in range(indptr[u], indptr[u + 1]):
                    v = indices[e]
                    nd = du + weights[e]
                    if nd < dist[s, v]:
                        old = cuda.atomic.min(dist, (s, v), nd)
                        if nd < old:
                            Fn[s, v] = 1
                            active[c] = 1
            else:
                # far: keep it for a later iteration
                Fn[s, u] = 1
                active[c] = 1
                cuda.atomic.min(farmin, c, du)


class SSSPBuffers:
    """Device buffers for batches of up to ``B`` sources on an ``n``-vertex graph."""

    def __init__(self, n: int, B: int):
        self.n, self.B = n, B
        self.dist = cuda.device_array((B, n), np.float64)
        self.F = cuda.to_device(np.zeros((B, n), np.uint8))
        self.Fn = cuda.to_device(np.zeros((B, n), np.uint8))
        self.active = cuda.to_device(np.zeros(3, np.int32))
        self.near = cuda.to_device(np.zeros(3, np.int32))
        self.farmin = cuda.to_device(np.full(3, INF))
        self.thr = cuda.to_device(np.zeros(3))


def default_delta(dg) -> float:
    """Near–far step: the mean arc weight times 4 (a few hops per bucket); computed once per
    device graph (the mean of 6·10⁷ weights took ≈ 30 ms, once per batch before)."""
    d = getattr(dg, "_default_delta", None)
    if d is None:
        w = dg._graph_weights
        d = 4.0 if w is None or len(w) == 0 else 4.0 * float(np.mean(w))
        dg._default_delta = d
    return d


def sssp_batch(dg, sources, buf: SSSPBuffers, method: str = "frontier", delta=None,
               iters_per_sync: int = 4) -> int:
    """Distances from each source of ``sources`` (≤ buf.B) into ``buf.dist[:len(sources)]``.

    ``method`` is ``"frontier"`` or ``"nearfar"``.  Returns the number of iterations run.
    """
    n = dg.n
    B = len(sources)
    if method == "frontier":
        delta = INF
    elif method == "nearfar":
        delta = default_delta(dg) if delta is None else float(delta)
        if not delta > 0:
            raise ValueError("delta must be positive")
    else:
        raise ValueError(f"unknown SSSP method {method!r}")
    srcs = cuda.to_device(np.ascontiguousarray(sources, dtype=np.int64))
    total = buf.B * n
    fill[(total + THREADS - 1) // THREADS, THREADS](buf.dist.reshape(total), INF)
    # previous-iteration slot (2): "near" set so that iteration 0 keeps thr[2]
    buf.active.copy_to_device(np.zeros(3, np.int32))
    buf.near.copy_to_device(np.array([0, 0, 1], np.int32))
    buf.farmin.copy_to_device(np.full(3, INF))
    buf.thr.copy_to_device(np.array([0.0, 0.0, delta]))
    init_sources[(B + THREADS - 1) // THREADS, THREADS](buf.dist, buf.F, srcs)
    grid = (B * n + THREADS - 1) // THREADS
    k = _relax[grid, THREADS]
    w = dg.weights
    it = 0
    F, Fn = buf.F, buf.Fn
    limit = 10 * (n + 1) * max(1, n)      # safety only
    while True:
        for _ in range(iters_per_sync):
            k(dg.indptr, dg.indices, w, n, B, it, delta, F, Fn, buf.dist, buf.active, buf.near,
              buf.farmin, buf.thr)
            F, Fn = Fn, F
            it += 1
        if buf.active[(it - 1) % 3] == 0:
            break
        if it > limit:
            raise RuntimeError("SSSP did not terminate")
    buf.F, buf.Fn = F, Fn
    return it


def sssp(graph, source: int, method: str = "frontier", delta=None) -> np.ndarray:
    """float64 distances from ``source`` (inf = unreachable), computed on the GPU."""
    return sssp_many(graph, [source], method, delta)[0]


def sssp_many(graph, sources, method: str = "frontier", delta=None, batch: int = 64) -> np.ndarray:
    """(len(sources), n) float64 distances, batches of ``batch`` sources."""
    from ..weights import check_weights

    check_weights(graph)
    dg = device_graph(graph)
    sources = np.asarray(sources, dtype=np.int64)
    out = np.empty((len(sources), dg.n))
    buf = SSSPBuffers(dg.n, max(1, min(batch, len(sources))))
    for lo in range(0, len(sources), buf.B):
        s = sources[lo:lo + buf.B]
        sssp_batch(dg, s, buf, method, delta)
        out[lo:lo + len(s)] = buf.dist.copy_to_host()[: len(s)]
    return out
