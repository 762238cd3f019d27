"""Predecessors of a closed float32 Floyd–Warshall matrix, derived in one pass afterwards.

With real weights the min-plus kernels keep predecessors at a high price (mode `chunk-search` of
:mod:`.minplus_nvrtc`: 2.4× the time without at n = 8192).  On graphs with few arcs it is cheaper
to close the matrix without them and then, for every pair, pick the last arc of a shortest path:

    P[i, j] = the in-neighbour k of j minimising D[i, k] + w(k, j), among those with
              D[i, k] < D[i, j]  (ties → the smallest k); −1 where i = j or j is unreachable.

That is one sparse-times-dense min-plus product, n·m candidate sums (m arcs).  The kernel reads
the transposed matrix (row k of Dᵀ = column k of D) so that a warp's 32 lanes — 32 consecutive
sources i — read one coalesced segment per arc, while the arc (k, w) is the same for the whole
warp (one broadcast read); each lane keeps :data:`TI` sources.

The strict guard D[i, k] < D[i, j] makes the predecessor chain of every pair strictly decrease in
distance, so it cannot close a cycle, whatever the rounding.  With positive weights in exact
arithmetic the last arc of every shortest path passes it; in float32 a weight far below the
distances' spacing (D[i, k] + w rounds to D[i, k]) can leave a reachable pair without a candidate:
:func:`derive` then returns the number of such pairs and the caller keeps the kernels' own
predecessors instead (zero-weight arcs never get here: ``floyd_warshall`` rescales integer
weights and refuses real ones).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda, float32

from . import device_graph, simulator

#: ``predecessors=True`` derives them (instead of keeping them in the float32 product kernels,
#: mode `chunk-search`) when the graph has at most this many arcs per n².  0 until the derived path has run on
#: a GPU: it builds for sm_90 (docs/measurements/compile-check-2026-11-26.md) and passes the
#: simulator with the GPU's shapes, but neither its results on a device nor its time are
#: measured, so the measured `chunk-search` mode stays the default and ``predecessors="derive"`` asks for it.
#: The estimate to check (docs/network-gpu.md, docs/measurements/code-comments-2026-11-28.md):
#: up to 1/32 arcs per n², where the gather kernel's reads through L2 still cost less than what
#: `chunk-search` adds.
MAX_DENSITY = 0.0
#: above this many arcs per n² the tiled kernel runs (else the gather kernel)
TILED_MIN_DENSITY = 1 / 32
#: gather kernel: sources per lane, and warps (each one target j) per block
TI = 1 if simulator() else 4
WARPS = 2 if simulator() else 8
#: tiled kernel: sources per lane (a block's 32·TTI sources), targets per warp, warps per block,
#: and rows of Dᵀ per shared chunk
TTI = 1 if simulator() else 2
TJW = 2 if simulator() else 8
TWARPS = 2 if simulator() else 8
KC = 8 if simulator() else 64
_TILE = 8 if simulator() else 32
# (shapes of shared and local arrays must be constants, not expressions)
_TILE1 = _TILE + 1
_TIW = 32 * TTI
_TTJ = TTI * TJW


def wanted(n: int, arcs: int) -> bool:
    """True when deriving is the faster way to float32 predecessors for ``arcs`` arcs on ``n``
    vertices (:data:`MAX_DENSITY`)."""
    return n > 0 and arcs <= MAX_DENSITY * float(n) * float(n)


def tiled(n: int, arcs: int) -> bool:
    """True when the tiled kernel runs (more than :data:`TILED_MIN_DENSITY` · n² arcs)."""
    return arcs > TILED_MIN_DENSITY * float(n) * float(n)


def kernel_text(n: int, arcs: int) -> str:
    return "tiled" if tiled(n, arcs) else "gather"


@cuda.jit
def _transpose(D, DT, npad):
    tile = cuda.shared.array((_TILE, _TILE1), float32)
    tx = cuda.threadIdx.x
    ty = cuda.threadIdx.y
    bx = cuda.blockIdx.x * _TILE
    by = cuda.blockIdx.y * _TILE
    for r in range(ty, _TILE, cuda.blockDim.y):
        tile[r, tx] = D[by + r, bx + tx]
    cuda.syncthreads()
    for r in range(ty, _TILE, cuda.blockDim.y):
        DT[bx + r, by + tx] = tile[tx, r]


@cuda.jit(device=True)
def _store(P, i, j, dij, k, bad):
    """P[i, j] = k (−1 on the diagonal and where j is unreachable); counts a reachable pair left
    without a candidate (k = −1) in ``bad``."""
    if i == j or dij == math.inf:
        P[i, j] = -1
    else:
        P[i, j] = k
        if k < 0:
            cuda.atomic.add(bad, 0, 1)


@cuda.jit
def _derive(DT, P, ptr, src, w, n, bad):
    lane = cuda.threadIdx.x
    j = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
    if j >= n:
        return
    i0 = cuda.blockIdx.x * 32 * TI + lane
    dj = cuda.local.array(TI, float32)
    best = cuda.local.array(TI, float32)
    arg = cuda.local.array(TI, np.int32)
    for t in range(TI):
        i = i0 + 32 * t
        dj[t] = DT[j, i] if i < n else float32(0.0)
        best[t] = float32(math.inf)
        arg[t] = -1
    for e in range(ptr[j], ptr[j + 1]):
        k = src[e]
        wk = w[e]
        for t in range(TI):
            i = i0 + 32 * t
            if i < n:
                dk = DT[k, i]
                s = dk + wk
                if dk < dj[t] and (s < best[t] or (s == best[t] and k < arg[t])):
                    best[t] = s
                    arg[t] = k
    for t in range(TI):
        i = i0 + 32 * t
        if i < n:
            _store(P, i, j, dj[t], arg[t], bad)


@cuda.jit
def _derive_tiled(DT, P, ptr, src, w, n, bad):
    """Block: 32·TTI sources × TWARPS·TJW targets; the rows of Dᵀ (all k) stream through shared
    memory KC at a time, each warp walks its targets' in-arcs (sources ascending) in step."""
    tile = cuda.shared.array((KC, _TIW), float32)
    lane = cuda.threadIdx.x
    tid = cuda.threadIdx.y * 32 + lane
    ib = cuda.blockIdx.x * 32 * TTI
    jb = (cuda.blockIdx.y * TWARPS + cuda.threadIdx.y) * TJW
    cur = cuda.local.array(TJW, np.int64)
    end = cuda.local.array(TJW, np.int64)
    dj = cuda.local.array(_TTJ, float32)
    best = cuda.local.array(_TTJ, float32)
    arg = cuda.local.array(_TTJ, np.int32)
    for q in range(TJW):
        j = jb + q
        cur[q] = ptr[j] if j < n else 0
        end[q] = ptr[j + 1] if j < n else 0
        for t in range(TTI):
            x = q * TTI + t
            i = ib + lane + 32 * t
            dj[x] = DT[j, i] if j < n and i < n else float32(0.0)
            best[x] = float32(math.inf)
            arg[x] = -1
    for k0 in range(0, n, KC):
        cuda.syncthreads()
        for x in range(tid, KC * 32 * TTI, 32 * TWARPS):
            r = x // (32 * TTI)
            c = x - r * 32 * TTI
            ok = ib + c < n and k0 + r < n
            tile[r, c] = DT[k0 + r, ib + c] if ok else float32(math.inf)
        cuda.syncthreads()
        for q in range(TJW):
            e = cur[q]
            while e < end[q] and src[e] < k0 + KC:
                k = src[e]
                wk = w[e]
                for t in range(TTI):
                    x = q * TTI + t
                    dk = tile[k - k0, lane + 32 * t]
                    s = dk + wk
                    if dk < dj[x] and (s < best[x] or (s == best[x] and k < arg[x])):
                        best[x] = s
                        arg[x] = k
                e += 1
            cur[q] = e
    for q in range(TJW):
        j = jb + q
        for t in range(TTI):
            i = ib + lane + 32 * t
            if j < n and i < n:
                _store(P, i, j, dj[q * TTI + t], arg[q * TTI + t], bad)


def _in_weights(graph):
    """float32 weights of the arcs into each vertex on the device, in the order of the device
    graph's in-arc CSR (``t_indptr``/``t_indices``: :meth:`CSRGraph.transpose`, sources
    ascending; ones for an unweighted graph), cached per graph and device."""
    from . import graph_cache

    cache = graph_cache(graph)
    hit = cache.get("fw_in_weights")
    if hit is None or hit[0] is not graph.weights:
        w = graph.transpose().weights
        w = np.ones(graph.num_arcs, np.float32) if w is None else w.astype(np.float32)
        hit = cache["fw_in_weights"] = (graph.weights, cuda.to_device(w))
    return hit[1]


def derive(graph, D, P) -> int:
    """Fill the first n × n of device matrix ``P`` (int32) from the closed float32 device matrix
    ``D`` (npad × npad) and the arcs of ``graph``; returns the number of reachable pairs left
    without a predecessor (0 = ``P`` is complete; see the module docstring)."""
    if D.dtype != np.dtype(np.float32):
        raise ValueError("derived predecessors need a float32 distance matrix")
    n = graph.n
    npad = D.shape[0]
    if n == 0:
        return 0
    dg = device_graph(graph)
    ptr, src, w = dg.t_indptr, dg.t_indices, _in_weights(graph)
    DT = cuda.device_array_like(D)
    g = npad // _TILE
    _transpose[(g, g), (_TILE, 8 if _TILE == 32 else _TILE)](D, DT, npad)
    bad = cuda.to_device(np.zeros(1, np.int64))
    if tiled(n, graph.num_arcs):
        grid = (-(-n // (32 * TTI)), -(-n // (TWARPS * TJW)))
        _derive_tiled[grid, (32, TWARPS)](DT, P, ptr, src, w, n, bad)
    else:
        grid = (-(-n // (32 * TI)), -(-n // WARPS))
        _derive[grid, (32, WARPS)](DT, P, ptr, src, w, n, bad)
    del DT
    return int(bad.copy_to_host()[0])
