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
* then one pass over the batch (:mod:`.brandes_sums`): a warp per vertex sums δ_b(v) (and
  δ_b(v)² for sampled runs) over the batch's sources and, when the run wants the path
  statistics, the column sums of that vertex (distance, reach, harmonic); the row statistics
  and the histogram come from per-source level counts that the level counts above also
  collect. A run that wants betweenness alone skips all of it but δ.

Levels are stored in the narrowest type that holds them (:func:`level_type`: int8 when the probe
BFS from the vertex of largest degree has at most 62 levels — no undirected component reachable
from it is deeper than twice that — else int16); a batch whose levels pass the type's range
(another component, a directed graph) is rerun with the next wider type.

Graphs of many levels (more than ``DEEP_LEVELS`` from the vertex of largest degree: rings,
lattices) run a thread block per source instead (:mod:`.brandes_deep`), since every level here
reads the whole (B·n) block. Weighted graphs run :mod:`.brandes_weighted` (the same layout, by
distance buckets) or, where it cannot (zero weights, :func:`.brandes_weighted.can_run`), the CPU
engine (``backends.brandes_backend`` says so in the plan and the log).
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int32, int64

from . import device_graph, on_device, simulator
from .bfs import UNREACHED

THREADS = 16 if simulator() else 256
#: graphs with more BFS levels than this (from the vertex of largest degree) run a thread block
#: per source (:mod:`.brandes_deep`): each level of the batched sweeps reads all B·n entries
DEEP_LEVELS = 4 if simulator() else 100
#: threads of the grid-stride level count
COUNT_THREADS = 64 if simulator() else 2048 * 256
#: bytes of device buffers per batch (levels, σ and δ float64, per source and vertex)
BATCH_BYTES = (1 << 32) if not simulator() else (1 << 16)
#: level types, narrowest first; "unreached" is the type's largest value
LEVEL_TYPES = (np.dtype(np.int8), np.dtype(np.int16), np.dtype(np.int32))


def unreached_of(dtype):
    """The "not reached" value of a level (distance) array: the integer type's largest value,
    ``inf`` for float distances (:mod:`.brandes_weighted`)."""
    if np.dtype(dtype).kind == "f":
        return float("inf")
    return int(np.iinfo(dtype).max)


def bytes_per_entry(dtype) -> int:
    """Device bytes per (source, vertex): the level, σ and δ."""
    return np.dtype(dtype).itemsize + 16


class LevelOverflow(Exception):
    """A batch's levels passed the range of its level type (rerun with a wider one)."""


@cuda.jit
def _init(dist, sigma, delta, srcs, n, nsrc, unreached):
    i = cuda.grid(1)
    if i < nsrc * n:
        v = i // nsrc
        s = srcs[i - v * nsrc]
        dist[i] = 0 if v == s else unreached
        sigma[i] = 1.0 if v == s else 0.0
        delta[i] = 0.0


@cuda.jit
def _sweep(indptr, indices, n, nsrc, level, dist, sigma, delta, backward, unreached):
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
            if dj == unreached:
                dist[j] = nd                     # every writer writes the same value
                dj = nd
            if dj == nd:
                cuda.atomic.add(sigma, j, sv)
    if backward:
        x = sv * acc
        delta[i] = x
        sigma[i] = (1.0 + x) / sv


@cuda.jit
def _pull_forward(t_indptr, t_indices, n, nsrc, level, dist, sigma, unreached):
    """A bottom-up level of the forward sweep: every unreached (w, b) sums σ_b over its
    in-neighbours at ``level``; a non-zero sum puts w at level + 1 (no atomics: a thread writes
    only its own entry and reads level-``level`` entries, which no thread changes)."""
    i = cuda.grid(1)
    if i >= nsrc * n or dist[i] != unreached:
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
def _count(indptr, t_indptr, n, nsrc, chunks, level, unreached, dist, counts, lvl, per_source):
    """counts[0] += the out-arcs of the entries at ``level``, counts[1] += their in-arcs,
    counts[2] += the in-arcs of the unreached entries (one atomic per block); with
    ``per_source``, lvl[level, b] += the entries of source b at ``level``. Thread t takes source
    b = t mod nsrc and every ``chunks``-th vertex from t div nsrc (a warp reads consecutive
    entries)."""
    sh = cuda.shared.array(3, int64)
    tid = cuda.threadIdx.x
    if tid < 3:
        sh[tid] = 0
    cuda.syncthreads()
    fo = 0
    fi = 0
    ui = 0
    here = 0
    t = cuda.grid(1)
    if t < nsrc * chunks:
        c = t // nsrc
        b = t - c * nsrc
        v = c
        while v < n:
            d = dist[v * nsrc + b]
            if d == level or d == unreached:
                din = t_indptr[v + 1] - t_indptr[v]
                if d == level:
                    fo += indptr[v + 1] - indptr[v]
                    fi += din
                    here += 1
                else:
                    ui += din
            v += chunks
        if per_source and here:
            cuda.atomic.add(lvl, (level, b), here)
    if fo or fi:
        cuda.atomic.add(sh, 0, fo)
        cuda.atomic.add(sh, 1, fi)
    if ui:
        cuda.atomic.add(sh, 2, ui)
    cuda.syncthreads()
    if tid < 3:
        cuda.atomic.add(counts, tid, sh[tid])


@cuda.jit
def _zero2(a):
    i = cuda.grid(1)
    if i < a.size:
        a[i // a.shape[1], i % a.shape[1]] = 0


class BrandesBuffers:
    """Device buffers for batches of up to ``B`` sources on an ``n``-vertex graph, levels of
    type ``dtype`` (int8/int16/int32)."""

    def __init__(self, n: int, B: int, dtype=np.int32):
        self.n, self.B = n, B
        self.dtype = np.dtype(dtype)
        self.unreached = unreached_of(self.dtype)
        self.dist = cuda.device_array(B * n, self.dtype)
        self.sigma = cuda.device_array(B * n, np.float64)
        self.delta = cuda.device_array(B * n, np.float64)
        self.btw = cuda.device_array(n, np.float64)
        self.btw_sq = cuda.device_array(n, np.float64)
        self.col_sum = cuda.device_array(n, np.float64)
        self.col_reach = cuda.device_array(n, np.int64)
        self.col_harm = cuda.device_array(n, np.float64)
        self.counts = cuda.device_array(3, np.int64)     # :func:`_arcs`
        self.srcs = cuda.device_array(B, np.int64)
        self.lvl = cuda.device_array((int(min(self.unreached, 2 * DEEP_LEVELS + 2)), B), np.int64)

    def grow_levels(self):
        """Twice the rows of the per-source level counts (a batch deeper than expected)."""
        old = self.lvl
        rows = min(self.unreached, 2 * old.shape[0])
        self.lvl = cuda.device_array((rows, self.B), np.int64)
        _zero2[(self.lvl.size + THREADS - 1) // THREADS, THREADS](self.lvl)
        self.lvl[:old.shape[0]].copy_to_device(old)


def _arcs(dg, B, buf: BrandesBuffers, level: int, per_source: bool) -> np.ndarray:
    """(out-arcs, in-arcs) of the batch's entries at ``level`` and the in-arcs of its unreached
    entries (one pass over the levels; with ``per_source`` also the level's count per source)."""
    buf.counts.copy_to_device(_ZEROS)
    chunks = max(1, min(dg.n, COUNT_THREADS // B))
    grid = (B * chunks + THREADS - 1) // THREADS
    _count[grid, THREADS](dg.indptr, dg.t_indptr, dg.n, B, chunks, level, buf.unreached,
                          buf.dist, buf.counts, buf.lvl, per_source)
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


def _forward(dg, srcs, B, buf: BrandesBuffers, cap=None, phase=None, per_source=False):
    """The forward sweep of the B sources ``srcs`` (device int64), or its first ``cap`` levels.
    Returns (deepest level, out-arcs per level, in-arcs per level); with ``per_source``,
    ``buf.lvl[L, b]`` = the vertices at level L from source b. ``phase``: see
    :func:`brandes_batch`. :class:`LevelOverflow` when a level would pass the level type."""
    n = dg.n
    mark = phase or _no_phase
    grid = (B * n + THREADS - 1) // THREADS
    _init[grid, THREADS](buf.dist, buf.sigma, buf.delta, srcs, n, B, buf.unreached)
    if per_source:
        _zero2[(buf.lvl.size + THREADS - 1) // THREADS, THREADS](buf.lvl)
    mark("init")
    level = 0
    outs, ins = [], []
    while cap is None or level < cap:
        if per_source and level >= buf.lvl.shape[0]:
            buf.grow_levels()
        fo, fi, ui = (int(x) for x in _arcs(dg, B, buf, level, per_source))
        mark("count")
        if level > 0 and fi == 0:        # every vertex reached after the sources has an in-arc
            break
        outs.append(fo)
        ins.append(fi)
        if ui == 0:                      # no unreached entry has an in-arc: level is the last
            break
        if level + 1 >= buf.unreached:
            raise LevelOverflow(level + 1)
        if level > 0 and bottom_up(fo, ui):
            _pull_forward[grid, THREADS](dg.t_indptr, dg.t_indices, n, B, level, buf.dist,
                                         buf.sigma, buf.unreached)
            mark(f"forward {level} bottom-up")
        else:
            _sweep[grid, THREADS](dg.indptr, dg.indices, n, B, level, buf.dist, buf.sigma,
                                  buf.delta, False, buf.unreached)
            mark(f"forward {level} top-down")
        level += 1
    return len(outs) - 1, outs, ins


def _no_phase(name):
    pass


def brandes_batch(dg, sources, buf: BrandesBuffers, squares: bool = True, phase=None,
                  paths: bool = False) -> int:
    """Forward and backward sweeps for ``sources`` (≤ buf.B); the dependencies summed over them
    land in ``buf.btw`` and, with ``squares``, their squares in ``buf.btw_sq`` (else zeros); with
    ``paths`` the column sums in ``buf.col_*`` and the level counts per source in ``buf.lvl``.
    Returns the deepest level. ``phase(name)``, if given, is called after each step's launch
    (``init``, ``count``, ``forward L top-down|bottom-up``, ``backward L pull|push``,
    ``dependencies``): a profiler synchronizes there and reads its clock."""
    from .brandes_sums import vertex_sums

    n = dg.n
    B = len(sources)
    mark = phase or _no_phase
    srcs = buf.srcs[:B]
    srcs.copy_to_device(np.ascontiguousarray(sources, dtype=np.int64))
    grid = (B * n + THREADS - 1) // THREADS
    deepest, outs, ins = _forward(dg, srcs, B, buf, phase=phase, per_source=paths)
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
                                  buf.delta, True, buf.unreached)
            mark(f"backward {L} pull")
    vertex_sums(buf, n, B, squares, paths)
    mark("dependencies")
    return deepest


def probe_depth(graph, dg) -> int:
    """Levels of a BFS from the vertex of largest degree, counted up to DEEP_LEVELS + 2 (cached
    per graph and device)."""
    from . import graph_cache

    cache = graph_cache(graph, dg.device)
    if "brandes_probe" not in cache:
        probe = int(np.argmax(dg.degree_host)) if dg.n else 0
        buf = BrandesBuffers(dg.n, 1)
        cache["brandes_probe"] = _forward(
            dg, cuda.to_device(np.array([probe], np.int64)), 1, buf,
            cap=DEEP_LEVELS + 2)[0] if dg.n else 0
    return cache["brandes_probe"]


def engine_for(graph, dg) -> str:
    """``levels`` (the batched sweeps) or ``blocks`` (a thread block per source,
    :mod:`.brandes_deep`) for ``graph``: ``blocks`` when a BFS from the vertex of largest degree
    has more than DEEP_LEVELS levels (:func:`probe_depth`)."""
    return "blocks" if probe_depth(graph, dg) > DEEP_LEVELS else "levels"


def level_type(graph, dg) -> np.dtype:
    """The narrowest level type expected to hold the batched engine's levels: int8 when the
    probe has at most 62 levels (every vertex of its component, undirected, within 124 of every
    other), else int16; :class:`LevelOverflow` widens a batch that passes it."""
    return LEVEL_TYPES[0] if probe_depth(graph, dg) <= 62 else LEVEL_TYPES[1]


def engine_note(graph) -> str:
    """One line for the start-up log: which GPU Brandes engine runs on ``graph`` and why (the
    probe of :func:`engine_for`, run here once and cached for the run)."""
    if graph.n == 0:
        return "no vertices"
    if graph.weighted:
        return "GPU engine: batches of sources advanced by distance buckets"
    if engine_for(graph, device_graph(graph)) == "blocks":
        return (f"GPU engine: a thread block per source (a BFS from the vertex of largest degree "
                f"has more than {DEEP_LEVELS} levels)")
    return (f"GPU engine: batched BFS levels (a BFS from the vertex of largest degree has at most "
            f"{DEEP_LEVELS} levels)")


def default_batch(n: int, num_sources: int, per_entry: int = bytes_per_entry(np.int8)) -> int:
    """Sources per batch: as many as BATCH_BYTES — at most half the device's free memory — of
    buffers hold (``per_entry`` bytes per source and vertex), a multiple of 32 when more than
    32, at most the run's sources."""
    budget = BATCH_BYTES
    if not simulator():
        budget = min(budget, int(cuda.current_context().get_memory_info()[0]) // 2)
    B = int(max(1, min(num_sources, budget // (per_entry * max(1, n)))))
    return B - B % 32 if B > 32 else B


# ----------------------------------------------------------------------------- edge betweenness
#: threads per block of the edge kernel (one block per source, as brandes_deep)
EDGE_THREADS = 8 if simulator() else 128
#: bytes of device buffers per source and vertex of the edge kernel: levels, queue, level
#: starts (int32), σ/t (float64)
EDGE_BYTES_PER_ENTRY = 20


@cuda.jit
def _edge_sources(indptr, indices, n, srcs, dist, sigma, queue, lstart, ebtw):
    """Block b: source srcs[b], rows b of the flat (B·n) buffers. Forward: levels and σ as
    :func:`.brandes_deep._sources`; backward, L = deepest … 0: every level-L vertex v credits each
    arc e = (v, w) with d(w) = L + 1 with c = σ(v)·t(w) (``atomic.add`` into ``ebtw[e]``, shared
    by the blocks), then writes t(v) = (1 + Σ c)/σ(v) over σ(v)."""
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
    for lev in range(top, -1, -1):
        nd = lev + 1
        k = lstart[lbase + lev] + tid
        end = lstart[lbase + nd]
        while k < end:
            v = queue[base + k]
            sv = sigma[base + v]
            acc = 0.0
            for e in range(indptr[v], indptr[v + 1]):
                j = base + indices[e]
                if dist[j] == nd:
                    c = sv * sigma[j]                    # σ(v)·t(w)
                    cuda.atomic.add(ebtw, e, c)
                    acc += c
            sigma[base + v] = (1.0 + acc) / sv
            k += nt
        cuda.syncthreads()


def edge_dependencies(graph, sources, batch=None, device=None) -> np.ndarray:
    """Σ over ``sources`` of the arc dependencies c_s(e) (:mod:`..cpu.edge_brandes`) on GPU
    ``device``, unweighted graphs: a thread block per source, B sources per launch. The arcs'
    sums are float64 atomics shared by the blocks (their order is not fixed: the last bits may
    differ between runs)."""
    from . import device_context

    if graph.weighted:
        raise ValueError("the GPU edge-betweenness kernel is for unweighted graphs")
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    n = graph.n
    with device_context(device):
        dg = device_graph(graph, device)
        ebtw = cuda.to_device(np.zeros(int(graph.indptr[-1]), np.float64))
        if len(sources):
            B = int(batch) if batch else default_batch(n, len(sources), EDGE_BYTES_PER_ENTRY)
            B = max(1, min(B, len(sources)))
            dist = cuda.device_array(B * n, np.int32)
            sigma = cuda.device_array(B * n, np.float64)
            queue = cuda.device_array(B * n, np.int32)
            lstart = cuda.device_array(B * (n + 1), np.int32)
            for lo in range(0, len(sources), B):
                s = cuda.to_device(sources[lo:lo + B])
                _edge_sources[len(s), EDGE_THREADS](dg.indptr, dg.indices, n, s, dist, sigma,
                                                    queue, lstart, ebtw)
        return ebtw.copy_to_host()
