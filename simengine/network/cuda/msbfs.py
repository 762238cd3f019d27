"""Multi-source BFS on the GPU with bitset frontiers and the path statistics fused in.

One batch holds B = 32·W sources: bit j of word w of a vertex stands for source ``32·w + j``.
Per vertex there are W uint32 words of ``visited``, ``frontier`` and ``nxt`` (vertex-major).  A
level has two phases — by default both inside one cooperative launch per batch with grid-wide
barriers (``persistent``), otherwise two launches per level:

* **expand** (one thread per (vertex, word)) — *push* (a non-zero frontier word is ORed into the
  out-neighbours' ``nxt`` words with ``atomic.or_``) while the frontier's arcs are few, else *pull*
  (every word not yet full ORs its in-neighbours' frontier words — the transpose for directed
  graphs — stopping once all unvisited sources are covered, and writes only its own ``nxt``: no
  atomics).  The choice is made on the
  device from the previous level's frontier size and degree sum (``Σ deg(frontier) · PUSH_FACTOR <
  arcs`` → push), so the host never looks at the frontier;
* **commit** (one thread per vertex) — ``new = nxt & ~visited``; ``visited |= new``;
  ``frontier = new``; and the
  statistics of level L: per-vertex column counts (popcount, exact integers; harmonic sums added
  level by level by the vertex's own thread, so deterministic), per-source counts of the level
  (warp votes: for bit j, ``popc(ballot(new >> j & 1))`` over the 32 vertices of a warp, summed in
  shared memory, one global atomic per source and block; the simulator, which has no warp votes,
  uses shared atomics per set bit), and the next level's frontier size and degree sum.

The per-source counts of level L are folded into the row statistics by the expand launch of level
L+1 (row sums as exact integers, harmonic sums level by level: deterministic).  Three rotating
slots for every per-level counter: the launch that produces slot L%3 never clears it, the launch
of level L clears slot (L+1)%3.  The host reads the frontier size once every ``levels_per_sync``
levels; levels after the end are no-ops.  Distances reach the host only when ``store`` asks.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, int32, int64, uint32

from . import device_graph, simulator
from .common import fill
from ..statistics import ChunkPartial
from .reduce import trim_hist

THREADS = 32 if simulator() else 256
#: default words per batch (B = 32·W sources per sweep)
DEFAULT_WORDS = 1 if simulator() else 32
#: push while Σ deg(frontier) · PUSH_FACTOR < number of arcs, else pull
PUSH_FACTOR = 6
_FULL = 0xFFFFFFFF
UNREACHED = np.int32(np.iinfo(np.int32).max)

_kernels: dict = {}


@cuda.jit
def _init_bits(visited, frontier, srcs, W):
    j = cuda.grid(1)
    if j < srcs.size:
        idx = srcs[j] * W + j // 32
        bit = uint32(int64(1) << (j % 32))
        cuda.atomic.or_(visited, idx, bit)
        cuda.atomic.or_(frontier, idx, bit)


@cuda.jit(device=True, inline=True)
def _expand_word(i, W, pull, indptr, indices, t_indptr, t_indices, full, visited, frontier, nxt):
    """Expand word w = i % W of vertex v = i // W (the W threads of a vertex read contiguous
    words: coalesced).  Pull: OR the in-neighbours' frontier words, stop early once every
    not-yet-visited source is covered.  Push: OR the word into the out-neighbours' ``nxt``."""
    v = i // W
    w = i - v * W
    vis = int64(visited[i])
    if pull:
        fw = int64(full[w])
        if vis == fw:
            return
        acc = int64(0)
        for e in range(t_indptr[v], t_indptr[v + 1]):
            acc |= int64(frontier[t_indices[e] * W + w])
            if (acc | vis) == fw:
                break
        x = acc & ~vis
        if x != 0:
            nxt[i] = uint32(x)
    else:
        f = int64(frontier[i])
        if f == 0:
            return
        for e in range(indptr[v], indptr[v + 1]):
            j = indices[e] * W + w
            m = f & ~int64(visited[j])
            if m != 0:
                cuda.atomic.or_(nxt, j, uint32(m))


def _make_kernels(W: int, use_ballot: bool):
    B = 32 * W

    @cuda.jit
    def expand(indptr, indices, t_indptr, t_indices, n, num_arcs, level, full, visited,
               frontier, nxt, ctr, lvl, nsrc, row_reach, row_sum, row_max, row_harm, hist):
        tid = cuda.grid(1)
        p = (level + 2) % 3
        z = (level + 1) % 3
        if tid == 0:
            ctr[z, 0] = 0
            ctr[z, 1] = 0
        if tid < nsrc:
            lvl[z, tid] = 0
            cnt = lvl[p, tid]
            if cnt > 0:
                lp = level - 1
                row_reach[tid] += cnt
                row_sum[tid] += lp * cnt
                row_max[tid] = lp
                row_harm[tid] += cnt / lp
                cuda.atomic.add(hist, lp, cnt)
        if ctr[p, 0] == 0 or tid >= n * W:
            return
        _expand_word(tid, W, ctr[p, 1] * PUSH_FACTOR >= num_arcs, indptr, indices, t_indptr,
                     t_indices, full, visited, frontier, nxt)

    @cuda.jit
    def commit(n, level, degree, visited, frontier, nxt, ctr, lvl, col_reach, col_sum,
               col_harm, do_store, store):
        tid = cuda.threadIdx.x
        v = cuda.grid(1)
        c = level % 3
        lsh = cuda.shared.array(B, int32)
        csh = cuda.shared.array(2, int64)
        i = tid
        while i < B:
            lsh[i] = 0
            i += cuda.blockDim.x
        if tid == 0:
            csh[0] = 0
            csh[1] = 0
        cuda.syncthreads()
        valid = v < n
        lane = tid % 32
        cv = 0
        xs = cuda.local.array(W, uint32)
        if valid:
            for w in range(W):
                xs[w] = nxt[v * W + w]
        for w in range(W):
            nw = int64(0)
            if valid:
                idx = v * W + w
                x = int64(xs[w])
                if x != 0:
                    nxt[idx] = 0
                    nw = x & ~int64(visited[idx])
                    if nw != 0:
                        visited[idx] = uint32(int64(visited[idx]) | nw)
                frontier[idx] = uint32(nw)
                cv += cuda.popc(nw)
            if use_ballot:
                if cuda.ballot_sync(_FULL, nw != 0) != 0:
                    mycnt = 0
                    for b in range(32):
                        bal = cuda.ballot_sync(_FULL, ((nw >> b) & 1) != 0)
                        if lane == b:
                            mycnt = cuda.popc(bal)
                    if mycnt != 0:
                        cuda.atomic.add(lsh, w * 32 + lane, mycnt)
            else:
                if nw != 0:
                    for b in range(32):
                        if (nw >> b) & 1:
                            cuda.atomic.add(lsh, w * 32 + b, 1)
            if do_store and nw != 0:
                for b in range(32):
                    if (nw >> b) & 1:
                        store[w * 32 + b, v] = level
        if cv > 0:
            col_reach[v] += cv
            col_sum[v] += level * cv
            col_harm[v] += cv / level
            cuda.atomic.add(csh, 0, 1)
            cuda.atomic.add(csh, 1, degree[v])
        cuda.syncthreads()
        i = tid
        while i < B:
            if lsh[i] != 0:
                cuda.atomic.add(lvl, (c, i), lsh[i])
            i += cuda.blockDim.x
        if tid == 0:
            if csh[0] != 0:
                cuda.atomic.add(ctr, (c, 0), csh[0])
                cuda.atomic.add(ctr, (c, 1), csh[1])

    return expand, commit


def _make_persistent(W: int, use_ballot: bool):
    """The whole BFS of one batch in one cooperative launch: grid-stride loops, two grid-wide
    barriers per level (after expand, after commit) instead of two launches per level."""
    B = 32 * W

    @cuda.jit
    def msbfs_all(indptr, indices, t_indptr, t_indices, degree, n, num_arcs, full, visited,
                  frontier, nxt, ctr, lvl, nsrc, row_reach, row_sum, row_max, row_harm,
                  col_reach, col_sum, col_harm, hist, do_store, store, max_level):
        grid = cuda.cg.this_grid()
        gtid = cuda.grid(1)
        gsize = cuda.gridsize(1)
        tid = cuda.threadIdx.x
        bdim = cuda.blockDim.x
        lane = tid % 32
        lsh = cuda.shared.array(B, int32)
        csh = cuda.shared.array(2, int64)
        xs = cuda.local.array(W, uint32)
        level = 1
        while level <= max_level:
            # ---------------------------------------------------------------- expand
            p = (level + 2) % 3
            c = level % 3
            z = (level + 1) % 3
            if gtid == 0:
                ctr[z, 0] = 0
                ctr[z, 1] = 0
            for s in range(gtid, nsrc, gsize):
                lvl[z, s] = 0
                cnt = lvl[p, s]
                if cnt > 0:
                    lp = level - 1
                    row_reach[s] += cnt
                    row_sum[s] += lp * cnt
                    row_max[s] = lp
                    row_harm[s] += cnt / lp
                    cuda.atomic.add(hist, lp, cnt)
            pull = ctr[p, 1] * PUSH_FACTOR >= num_arcs
            for i in range(gtid, n * W, gsize):
                _expand_word(i, W, pull, indptr, indices, t_indptr, t_indices, full, visited,
                             frontier, nxt)
            grid.sync()
            # ---------------------------------------------------------------- commit
            i = tid
            while i < B:
                lsh[i] = 0
                i += bdim
            if tid == 0:
                csh[0] = 0
                csh[1] = 0
            cuda.syncthreads()
            start = cuda.blockIdx.x * bdim
            while start < n:
                v = start + tid
                valid = v < n
                cv = 0
                if valid:                 # independent loads first (pipelined), then the work
                    for w in range(W):
                        xs[w] = nxt[v * W + w]
                for w in range(W):
                    nw = int64(0)
                    if valid:
                        idx = v * W + w
                        x = int64(xs[w])
                        if x != 0:
                            nxt[idx] = 0
                            nw = x & ~int64(visited[idx])
                            if nw != 0:
                                visited[idx] = uint32(int64(visited[idx]) | nw)
                        frontier[idx] = uint32(nw)
                        cv += cuda.popc(nw)
                    if use_ballot:
                        if cuda.ballot_sync(_FULL, nw != 0) != 0:
                            mycnt = 0
                            for b in range(32):
                                bal = cuda.ballot_sync(_FULL, ((nw >> b) & 1) != 0)
                                if lane == b:
                                    mycnt = cuda.popc(bal)
                            if mycnt != 0:
                                cuda.atomic.add(lsh, w * 32 + lane, mycnt)
                    else:
                        if nw != 0:
                            for b in range(32):
                                if (nw >> b) & 1:
                                    cuda.atomic.add(lsh, w * 32 + b, 1)
                    if do_store and nw != 0:
                        for b in range(32):
                            if (nw >> b) & 1:
                                store[w * 32 + b, v] = level
                if cv > 0:
                    col_reach[v] += cv
                    col_sum[v] += level * cv
                    col_harm[v] += cv / level
                    cuda.atomic.add(csh, 0, 1)
                    cuda.atomic.add(csh, 1, degree[v])
                start += gsize
            cuda.syncthreads()
            i = tid
            while i < B:
                if lsh[i] != 0:
                    cuda.atomic.add(lvl, (c, i), lsh[i])
                i += bdim
            if tid == 0:
                if csh[0] != 0:
                    cuda.atomic.add(ctr, (c, 0), csh[0])
                    cuda.atomic.add(ctr, (c, 1), csh[1])
            grid.sync()
            if ctr[c, 0] == 0:
                break
            level += 1

    return msbfs_all


_persistent: dict = {}
_coop_blocks: dict = {}


def persistent_kernel(W: int):
    key = (W, not simulator())
    if key not in _persistent:
        _persistent[key] = _make_persistent(W, not simulator())
    return _persistent[key]


def _grid_blocks(k, W):
    """Blocks for the cooperative launch: all must be resident at once."""
    if simulator():
        return 1            # the simulator supports cooperative grids of one block only
    if W in _coop_blocks:
        return _coop_blocks[W]
    nsm = cuda.get_current_device().MULTIPROCESSOR_COUNT
    blocks = None
    for kern in list(k.overloads.values()):
        try:
            blocks = int(kern.max_cooperative_grid_blocks(THREADS))
        except Exception:       # pragma: no cover
            blocks = None
    if blocks is None:
        return nsm            # first launch: one block per SM always fits
    _coop_blocks[W] = max(1, blocks)
    return _coop_blocks[W]


#: graphs with at least this many vertices run few sources with narrower bitsets (fewer words)
SHRINK_MIN_VERTICES = 1 << 20


def _compiled(W: int) -> bool:
    return (W, not simulator()) in _kernels and (W, not simulator()) in _persistent


def kernels(W: int):
    key = (W, not simulator())
    if key not in _kernels:
        _kernels[key] = _make_kernels(W, not simulator())
    return _kernels[key]


class MSBFSBuffers:
    """Device state for batches of up to 32·W sources on an ``n``-vertex graph."""

    def __init__(self, n: int, W: int):
        self.n, self.W, self.B = n, W, 32 * W
        nw = max(1, n * W)
        self.visited = cuda.device_array(nw, np.uint32)
        self.frontier = cuda.device_array(nw, np.uint32)
        self.nxt = cuda.to_device(np.zeros(nw, np.uint32))
        self.ctr = cuda.device_array((3, 2), np.int64)
        self.lvl = cuda.device_array((3, self.B), np.int64)
        self.row_reach = cuda.device_array(self.B, np.int64)
        self.row_sum = cuda.device_array(self.B, np.int64)
        self.row_max = cuda.device_array(self.B, np.int64)
        self.row_harm = cuda.device_array(self.B, np.float64)
        self.col_reach = cuda.device_array(n, np.int64)
        self.col_sum = cuda.device_array(n, np.int64)
        self.col_harm = cuda.device_array(n, np.float64)
        self.hist = cuda.device_array(n + 2, np.int64)
        self.store = None
        self.zeroed = False      # columns and histogram zero (kept so after every batch)


def msbfs_batch(dg, sources, buf: MSBFSBuffers, levels_per_sync: int = 8,
                store: bool = False, persistent: bool = True, columns=None) -> ChunkPartial:
    """MS-BFS from ``sources`` (≤ 32·W, distinct) with the statistics reduced on the device.

    With ``store`` the hop distances are left in ``buf.store`` (int32 (B, n), unreached =
    :data:`UNREACHED`).  ``persistent`` (default): one cooperative launch per batch with grid-wide
    barriers between the phases; otherwise two launches per level.  ``columns`` (a
    :class:`.columns.DeviceColumns`): the batch's column sums are folded into it on the device
    and the partial's columns are None (no n-long copies between host and device)."""
    n, W = dg.n, buf.W
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    S = len(sources)
    if S > buf.B:
        raise ValueError("too many sources for the buffers")
    expand, commit = kernels(W)
    grid_n = max(1, (n * W + THREADS - 1) // THREADS)
    fill[grid_n, THREADS](buf.visited, 0)
    fill[grid_n, THREADS](buf.frontier, 0)
    srcs = cuda.to_device(sources)
    _init_bits[max(1, (S + THREADS - 1) // THREADS), THREADS](buf.visited, buf.frontier, srcs, W)
    uniq = np.unique(sources)
    ctr = np.zeros((3, 2), np.int64)
    ctr[0, 0] = len(uniq)
    ctr[0, 1] = int(dg.degree_host[uniq].sum()) if len(uniq) else 0
    buf.ctr.copy_to_device(ctr)
    buf.lvl.copy_to_device(np.zeros((3, buf.B), np.int64))
    zB = np.zeros(buf.B, np.int64)
    for a in (buf.row_reach, buf.row_sum, buf.row_max):
        a.copy_to_device(zB)
    buf.row_harm.copy_to_device(np.zeros(buf.B))
    if not buf.zeroed:           # the columns and the histogram are cleared on the device
        _clear(buf, n + 2)       # after each batch (_download), so only once here
        buf.zeroed = True
    if store:
        st = np.full((buf.B, n), UNREACHED, np.int32)
        st[np.arange(S), sources] = 0
        buf.store = cuda.to_device(st)
        st_arg = buf.store
    else:
        st_arg = cuda.device_array((1, 1), np.int32)
    full = np.zeros(W, np.uint32)
    for j in range(S):
        full[j // 32] |= np.uint32(1) << np.uint32(j % 32)
    d_full = cuda.to_device(full)
    if persistent:
        kp = persistent_kernel(W)
        kp[_grid_blocks(kp, W), THREADS](
            dg.indptr, dg.indices, dg.t_indptr, dg.t_indices, dg.degree, n, dg.num_arcs, d_full,
            buf.visited, buf.frontier, buf.nxt, buf.ctr, buf.lvl, S, buf.row_reach, buf.row_sum,
            buf.row_max, buf.row_harm, buf.col_reach, buf.col_sum, buf.col_harm, buf.hist,
            store, st_arg, n + 1)
        return _download(buf, sources, S, n, columns)
    grid_v = max(1, (max(n * W, S) + THREADS - 1) // THREADS)
    kx = expand[grid_v, THREADS]
    kc = commit[max(1, (n + THREADS - 1) // THREADS), THREADS]
    level = 1
    while True:
        for _ in range(levels_per_sync):
            kx(dg.indptr, dg.indices, dg.t_indptr, dg.t_indices, n, dg.num_arcs, level, d_full,
               buf.visited, buf.frontier, buf.nxt, buf.ctr, buf.lvl, S, buf.row_reach,
               buf.row_sum, buf.row_max, buf.row_harm, buf.hist)
            kc(n, level, dg.degree, buf.visited, buf.frontier, buf.nxt, buf.ctr, buf.lvl,
               buf.col_reach, buf.col_sum, buf.col_harm, store, st_arg)
            level += 1
        if buf.ctr[(level - 1) % 3, 0] == 0:
            break
        if level > n + 2 * levels_per_sync:
            raise RuntimeError("MS-BFS did not terminate")
    # one more expand flushes the last level's per-source counts (a no-op if already flushed)
    kx(dg.indptr, dg.indices, dg.t_indptr, dg.t_indices, n, dg.num_arcs, level, d_full,
       buf.visited, buf.frontier, buf.nxt, buf.ctr, buf.lvl, S, buf.row_reach, buf.row_sum,
       buf.row_max, buf.row_harm, buf.hist)
    return _download(buf, sources, S, n, columns)


def _clear(buf, hist_len):
    """Zero the column arrays and the first ``hist_len`` histogram bins on the device."""
    n = buf.n
    g = max(1, (max(n, hist_len) + THREADS - 1) // THREADS)
    for a in (buf.col_reach, buf.col_sum, buf.col_harm):
        fill[g, THREADS](a, 0)
    fill[g, THREADS](buf.hist[:hist_len], 0)


def _download(buf, sources, S, n, columns=None):
    """The batch's partial; the device's columns and histogram are zeroed for the next batch.
    Only the used part of the histogram (bins up to the deepest level) crosses to the host."""
    row_max = buf.row_max.copy_to_host()[:S]
    top = int(row_max.max()) + 2 if S else 2
    hist = trim_hist(buf.hist[:top].copy_to_host())
    if columns is not None and n:
        columns.add(buf.col_sum, buf.col_reach, buf.col_harm)
        cols = (None, None, None)
    else:
        cols = (buf.col_sum.copy_to_host().astype(np.float64), buf.col_reach.copy_to_host(),
                buf.col_harm.copy_to_host())
    part = ChunkPartial(sources.copy(), buf.row_sum.copy_to_host()[:S].astype(np.float64),
                        buf.row_reach.copy_to_host()[:S], row_max.astype(np.float64),
                        buf.row_harm.copy_to_host()[:S], *cols, hist)
    _clear(buf, top)
    return part


def msbfs_partials(graph, sources, words: int | None = None, store=None,
                   levels_per_sync: int = 8, persistent: bool = True, columns=None):
    """Yield one :class:`ChunkPartial` per batch of ≤ 32·words sources, in source order
    (``columns``: see :func:`msbfs_batch`).

    ``store`` (optional (len(sources), n) array) receives the hop distances (unreachable = the
    dtype's :func:`~simengine.network.statistics.unreachable_sentinel`)."""
    from .reduce import copy_to_store

    dg = device_graph(graph)
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    W = DEFAULT_WORDS if words is None else int(words)
    W = 1 << (max(1, W).bit_length() - 1)   # a power of two: few compiled variants
    need = max(1, -(-len(sources) // 32))
    # shrink in powers of two (few compiled variants) when that saves real work: on a big graph,
    # or when the narrower kernels are compiled already (a new variant costs seconds of JIT,
    # more than the sweeps of a small graph it would save — e.g. the last, partial claim of a
    # distributed run)
    while W > 1 and W // 2 >= need and (dg.n >= SHRINK_MIN_VERTICES or _compiled(W // 2)):
        W //= 2
    # the buffers (3·n·W words) are kept with the graph on this device: a distributed run calls
    # this once per claim, and allocating and zeroing them each time cost more than a batch
    from . import graph_cache

    cache = graph_cache(graph)
    buf = cache.get(("msbfs", W))
    if buf is None:
        buf = cache[("msbfs", W)] = MSBFSBuffers(dg.n, W)
    for lo in range(0, len(sources), buf.B):
        s = sources[lo:lo + buf.B]
        part = msbfs_batch(dg, s, buf, levels_per_sync, store is not None, persistent, columns)
        if store is not None:
            copy_to_store(buf.store, np.arange(len(s)), store, lo, float(UNREACHED))
        yield part
