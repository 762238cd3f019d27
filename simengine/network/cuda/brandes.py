"""Brandes' betweenness on the GPU (unweighted graphs): a batch of B sources at a time, one thread
per (vertex, source), level-synchronous forward and backward sweeps on the device, each level
run in the direction that scans fewer arcs (Beamer et al.'s direction-optimizing BFS).

Layout: entry v·B + b holds vertex v for source b (vertex-major), so the threads of a warp are
32 sources of one vertex: they read the same adjacency list and, for each arc (v, w), the 32
adjacent entries of w — coalesced, and every thread of the warp runs the same number of
iterations.

Before each forward level L one grid-stride pass (:func:`_count`) sums the out- and in-arcs of
the entries at L and the in-arcs of the unreached entries (the host reads three ints; when the
last is 0, L is the deepest level and the forward sweep ends there):

* forward, top-down (:func:`_sweep`): every (v, b) with d_b(v) = L scans its out-arcs; an
  unreached w gets d_b(w) = L + 1 (every writer writes the same value), and every w at level
  L + 1 receives σ_b(w) += σ_b(v) (``atomic.add`` in float64);
* forward, bottom-up (:func:`_pull_forward`, when the unreached entries have fewer in-arcs than
  the frontier out-arcs): every unreached (w, b) sums σ_b over its in-neighbours at L — no
  atomics. σ of level L is final before level L + 1 reads it;
* backward, level L = deepest … 1, pull (:func:`_sweep`): every (v, b) at level L computes
  δ_b(v) = σ_b(v) · Σ_{w ∈ out(v), d_b(w) = L + 1} t_b(w) — no atomics — and writes
  t_b(v) = (1 + δ_b(v)) / σ_b(v) over σ_b(v) (one division per entry, none per arc);
* backward, push (:func:`_push_backward` + :func:`_finish`, when level L + 1 has fewer in-arcs
  than level L out-arcs): every (w, b) at L + 1 adds t_b(w) to each in-neighbour at L
  (``atomic.add``; the order of these float additions is not fixed, so such levels may differ
  in the last bits from run to run), then the level-L entries turn their sums into δ and t;
* one thread per vertex adds δ_b(v) and δ_b(v)² over the batch's sources in order; the levels
  are transposed into a (B, n) block, from which the path statistics are reduced
  (:func:`.reduce.reduce_rows`) and distances stored.

Graphs of many levels (more than ``DEEP_LEVELS`` from the vertex of largest degree: rings,
lattices) run a thread block per source instead (:mod:`.brandes_deep`), since every level here
reads the whole (B·n) block. Weighted graphs run the CPU engine (``backends.brandes_backend``
says so in the log).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int64

from . import device_graph, on_device, simulator
from .bfs import UNREACHED

THREADS = 16 if simulator() else 256
#: graphs with more BFS levels than this (from the vertex of largest degree) run a thread block
#: per source (:mod:`.brandes_deep`): each level of the batched sweeps reads all B·n entries
DEEP_LEVELS = 4 if simulator() else 100
#: blocks of the grid-stride level count
COUNT_BLOCKS = 4 if simulator() else 2048
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
def _sweep(indptr, indices, n, nsrc, level, dist, sigma, delta, backward):
    """One level of the forward (σ) or the backward (δ) sweep; see the module's docstring."""
    i = cuda.grid(1)
    if i >= nsrc * n or dist[i] != level:
        return
    v = i // nsrc
    b = i - v * nsrc
    nd = level + 1
    sv = sigma[i]
    acc = 0.0
    for e in range(indptr[v], indptr[v + 1]):
        j = indices[e] * nsrc + b
        dj = dist[j]
        if backward:
            if dj == nd:
                acc += sigma[j]                  # t(w) = (1 + δ(w)) / σ(w), written at level nd
        else:
            if dj == UNREACHED:
                dist[j] = nd                     # every writer writes the same value
                dj = nd
            if dj == nd:
                cuda.atomic.add(sigma, j, sv)
    if backward:
        x = sv * acc
        delta[i] = x
        sigma[i] = (1.0 + x) / sv


@cuda.jit
def _pull_forward(t_indptr, t_indices, n, nsrc, level, dist, sigma):
    """A bottom-up level of the forward sweep: every unreached (w, b) sums σ_b over its
    in-neighbours at ``level``; a non-zero sum puts w at level + 1 (no atomics: a thread writes
    only its own entry and reads level-``level`` entries, which no thread changes)."""
    i = cuda.grid(1)
    if i >= nsrc * n or dist[i] != UNREACHED:
        return
    w = i // nsrc
    b = i - w * nsrc
    acc = 0.0
    for e in range(t_indptr[w], t_indptr[w + 1]):
        j = t_indices[e] * nsrc + b
        if dist[j] == level:
            acc += sigma[j]
    if acc > 0.0:
        dist[i] = level + 1
        sigma[i] = acc


@cuda.jit
def _push_backward(t_indptr, t_indices, n, nsrc, level, dist, sigma, delta):
    """A push level of the backward sweep: every (w, b) at level + 1 adds t_b(w) (held in σ) to
    the running sum (held in δ) of each in-neighbour at ``level``; :func:`_finish` then turns the
    sums of level ``level`` into δ and t."""
    i = cuda.grid(1)
    if i >= nsrc * n or dist[i] != level + 1:
        return
    w = i // nsrc
    b = i - w * nsrc
    t = sigma[i]
    for e in range(t_indptr[w], t_indptr[w + 1]):
        j = t_indices[e] * nsrc + b
        if dist[j] == level:
            cuda.atomic.add(delta, j, t)


@cuda.jit
def _finish(n, nsrc, level, dist, sigma, delta):
    i = cuda.grid(1)
    if i >= nsrc * n or dist[i] != level:
        return
    sv = sigma[i]
    x = sv * delta[i]
    delta[i] = x
    sigma[i] = (1.0 + x) / sv


@cuda.jit
def _count(indptr, t_indptr, n, nsrc, level, dist, counts):
    """counts[0] += the out-arcs of the entries at ``level``, counts[1] += their in-arcs,
    counts[2] += the in-arcs of the unreached entries (grid-stride; one atomic per block)."""
    sh = cuda.shared.array(3, int64)
    tid = cuda.threadIdx.x
    if tid < 3:
        sh[tid] = 0
    cuda.syncthreads()
    fo = 0
    fi = 0
    ui = 0
    i = cuda.grid(1)
    while i < nsrc * n:
        d = dist[i]
        if d == level or d == UNREACHED:
            v = i // nsrc
            din = t_indptr[v + 1] - t_indptr[v]
            if d == level:
                fo += indptr[v + 1] - indptr[v]
                fi += din
            else:
                ui += din
        i += cuda.gridsize(1)
    if fo or fi:
        cuda.atomic.add(sh, 0, fo)
        cuda.atomic.add(sh, 1, fi)
    if ui:
        cuda.atomic.add(sh, 2, ui)
    cuda.syncthreads()
    if tid < 3:
        cuda.atomic.add(counts, tid, sh[tid])


@cuda.jit
def _dependencies(dist, delta, srcs, n, nsrc, btw, btw_sq, rows, squares):
    """Per vertex v: Σ_b δ_b(v) and (with ``squares``) Σ_b δ_b(v)² over the batch's sources
    other than v, in order; and row b of ``rows`` (B × n) gets the levels of source b."""
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
                if squares:
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
        self.btw = cuda.device_array(n, np.float64)
        self.btw_sq = cuda.device_array(n, np.float64)
        self.counts = cuda.device_array(3, np.int64)     # :func:`_arcs`
        self.srcs = cuda.device_array(B, np.int64)


def _arcs(dg, B, buf: BrandesBuffers, level: int) -> np.ndarray:
    """(out-arcs, in-arcs) of the batch's entries at ``level`` and the in-arcs of its unreached
    entries (one pass over the levels)."""
    buf.counts.copy_to_device(_ZEROS)
    grid = min((B * dg.n + THREADS - 1) // THREADS, COUNT_BLOCKS)
    _count[grid, THREADS](dg.indptr, dg.t_indptr, dg.n, B, level, buf.dist, buf.counts)
    return buf.counts.copy_to_host()


_ZEROS = np.zeros(3, np.int64)


def bottom_up(frontier_out: int, unreached_in: int) -> bool:
    """Expand a forward level bottom-up (the unreached entries pull over their in-arcs) when
    those in-arcs are fewer than the frontier's out-arcs."""
    return unreached_in < frontier_out


def push_back(level_out: int, next_in: int) -> bool:
    """Run a backward level by pushes from level + 1 (over its in-arcs) when those are fewer
    than the out-arcs that pulling at this level scans."""
    return next_in < level_out


def _forward(dg, srcs, B, buf: BrandesBuffers, cap=None, phase=None):
    """The forward sweep of the B sources ``srcs`` (device int64), or its first ``cap`` levels.
    Returns (deepest level, out-arcs per level, in-arcs per level). ``phase``: see
    :func:`brandes_batch`."""
    n = dg.n
    mark = phase or _no_phase
    grid = (B * n + THREADS - 1) // THREADS
    _init[grid, THREADS](buf.dist, buf.sigma, buf.delta, srcs, n, B)
    mark("init")
    level = 0
    outs, ins = [], []
    while cap is None or level < cap:
        fo, fi, ui = (int(x) for x in _arcs(dg, B, buf, level))
        mark("count")
        if level > 0 and fi == 0:        # every vertex reached after the sources has an in-arc
            break
        outs.append(fo)
        ins.append(fi)
        if ui == 0:                      # no unreached entry has an in-arc: level is the last
            break
        if level > 0 and bottom_up(fo, ui):
            _pull_forward[grid, THREADS](dg.t_indptr, dg.t_indices, n, B, level, buf.dist,
                                         buf.sigma)
            mark(f"forward {level} bottom-up")
        else:
            _sweep[grid, THREADS](dg.indptr, dg.indices, n, B, level, buf.dist, buf.sigma,
                                  buf.delta, False)
            mark(f"forward {level} top-down")
        level += 1
    return len(outs) - 1, outs, ins


def _no_phase(name):
    pass


def brandes_batch(dg, sources, buf: BrandesBuffers, squares: bool = True, phase=None) -> int:
    """Forward and backward sweeps for ``sources`` (≤ buf.B); the dependencies summed over them
    land in ``buf.btw`` and, with ``squares``, their squares in ``buf.btw_sq`` (else zeros).
    Returns the deepest level. ``phase(name)``, if given, is called after each step's launch
    (``init``, ``count``, ``forward L top-down|bottom-up``, ``backward L pull|push``,
    ``dependencies``): a profiler synchronizes there and reads its clock."""
    n = dg.n
    B = len(sources)
    mark = phase or _no_phase
    srcs = buf.srcs[:B]
    srcs.copy_to_device(np.ascontiguousarray(sources, dtype=np.int64))
    grid = (B * n + THREADS - 1) // THREADS
    deepest, outs, ins = _forward(dg, srcs, B, buf, phase=phase)
    for L in range(deepest, 0, -1):          # from the deepest level: its t = 1/σ
        nxt = ins[L + 1] if L < deepest else 0
        if push_back(outs[L], nxt):
            if nxt:
                _push_backward[grid, THREADS](dg.t_indptr, dg.t_indices, n, B, L, buf.dist,
                                              buf.sigma, buf.delta)
            _finish[grid, THREADS](n, B, L, buf.dist, buf.sigma, buf.delta)
            mark(f"backward {L} push")
        else:
            _sweep[grid, THREADS](dg.indptr, dg.indices, n, B, L, buf.dist, buf.sigma,
                                  buf.delta, True)
            mark(f"backward {L} pull")
    _dependencies[(n + THREADS - 1) // THREADS, THREADS](buf.dist, buf.delta, srcs, n, B,
                                                         buf.btw, buf.btw_sq, buf.rows,
                                                         bool(squares))
    mark("dependencies")
    return deepest


def engine_for(graph, dg) -> str:
    """``levels`` (the batched sweeps) or ``blocks`` (a thread block per source,
    :mod:`.brandes_deep`) for ``graph``: ``blocks`` when a BFS from the vertex of largest degree
    has more than DEEP_LEVELS levels (cached per graph and device)."""
    from . import graph_cache

    cache = graph_cache(graph, dg.device)
    if "brandes_engine" not in cache:
        probe = int(np.argmax(dg.degree_host)) if dg.n else 0
        buf = BrandesBuffers(dg.n, 1)
        depth = _forward(dg, cuda.to_device(np.array([probe], np.int64)), 1, buf,
                         cap=DEEP_LEVELS + 2)[0] if dg.n else 0
        cache["brandes_engine"] = "blocks" if depth > DEEP_LEVELS else "levels"
    return cache["brandes_engine"]


def engine_note(graph) -> str:
    """One line for the start-up log: which GPU Brandes engine runs on ``graph`` and why (the
    probe of :func:`engine_for`, run here once and cached for the run)."""
    if graph.n == 0:
        return "no vertices"
    if engine_for(graph, device_graph(graph)) == "blocks":
        return (f"GPU engine: a thread block per source (a BFS from the vertex of largest degree "
                f"has more than {DEEP_LEVELS} levels)")
    return (f"GPU engine: batched BFS levels (a BFS from the vertex of largest degree has at most "
            f"{DEEP_LEVELS} levels)")


def default_batch(n: int, num_sources: int, per_entry: int = BYTES_PER_ENTRY) -> int:
    """Sources per batch: as many as BATCH_BYTES — at most half the device's free memory — of
    buffers hold (``per_entry`` bytes per source and vertex), a multiple of 32 when more than
    32, at most the run's sources."""
    budget = BATCH_BYTES
    if not simulator():
        budget = min(budget, int(cuda.current_context().get_memory_info()[0]) // 2)
    B = int(max(1, min(num_sources, budget // (per_entry * max(1, n)))))
    return B - B % 32 if B > 32 else B


def brandes_partials(graph, sources, store=None, batch=None, device=None, engine=None,
                     squares=True):
    """One ChunkPartial per batch of sources (path statistics + ``btw``/``btw_sq``), in source
    order, on GPU ``device``. ``engine``: ``levels``, ``blocks`` or None (:func:`engine_for`).
    ``squares=False`` (exact runs: no standard error) skips the Σ δ² sums (``btw_sq`` = 0)."""
    if graph.weighted:
        raise ValueError("the GPU Brandes engine is for unweighted graphs")
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    return on_device(_partials(graph, sources, store, batch, engine, squares), device)


def _partials(graph, sources, store, batch, engine, squares):
    from .brandes_deep import BYTES_PER_ENTRY as DEEP_BYTES, DeepBuffers, deep_batch
    from .reduce import copy_to_store, reduce_rows

    n = graph.n
    if len(sources) == 0:
        return
    dg = device_graph(graph)
    deep = (engine or engine_for(graph, dg)) == "blocks"
    B = int(batch) if batch else default_batch(n, len(sources),
                                               DEEP_BYTES if deep else BYTES_PER_ENTRY)
    B = max(1, min(B, len(sources)))
    buf = DeepBuffers(n, B) if deep else BrandesBuffers(n, B)
    rows = np.arange(B, dtype=np.int64)
    for lo in range(0, len(sources), B):
        s = sources[lo:lo + B]
        if deep:
            deep_batch(dg, cuda.to_device(s), buf, squares)
        else:
            brandes_batch(dg, s, buf, squares)
        if store is not None:
            copy_to_store(buf.rows, rows[:len(s)], store, lo, float(UNREACHED))
        part = reduce_rows(buf.rows, rows[:len(s)], s, n, float(UNREACHED), False, 1.0)
        part.btw = buf.btw.copy_to_host()
        part.btw_sq = buf.btw_sq.copy_to_host() if squares else np.zeros(n)
        yield part
