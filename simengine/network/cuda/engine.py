"""CUDA engine: its ``auto`` rule, what it runs in place of the CPU-only algorithms, and the
per-batch partials of each GPU algorithm — the twin of :mod:`simengine.network.cpu.engine`, called
by the registry (:mod:`simengine.network.backends`).

Algorithms:

* ``msbfs`` (``auto`` for unweighted graphs) — bitset multi-source BFS, 32·W sources per sweep,
  statistics reduced on the device (:mod:`.msbfs`);
* ``bfs`` — level-synchronous BFS, a batch of sources per launch, reduced on the device (:mod:`.bfs`,
  :mod:`.reduce`);
* ``frontier`` — label-correcting frontier SSSP with ``atomic.min``, many sources per launch;
  ``nearfar`` — its near–far variant (:mod:`.sssp`).  ``dijkstra`` and ``dial`` are replaced by
  ``frontier`` (same distances), and the registry says so;
* ``fw`` — blocked Floyd–Warshall on the dense matrix (:mod:`.floyd_warshall`), computed once per
  graph and device and cached;
* ``bfs_blocks`` — a thread block per source, all its BFS levels in one launch
  (:mod:`.brandes_deep` without σ), for graphs of many levels.

``auto``: few sources or many levels → a per-source engine
(:func:`simengine.network.per_source.should_run`); unweighted → ``msbfs``; weighted → ``fw`` when at least a quarter of the vertices are
sources (Floyd–Warshall computes every row anyway), the n² matrix fits (≤ FW_MAX_BYTES) and either
n ≤ FW_MAX_N, or n ≤ FW_DENSE_MAX_N and the arc density m / (n(n−1)) ≥ FW_MIN_DENSITY; otherwise
``frontier``.  The cutoffs are measured (docs/network-gpu.md; the figures:
docs/measurements/code-comments-2026-11-28.md): over all sources FW beats the frontier SSSP at
every size up to FW_MAX_N, and its O(n³) cost overtakes the frontier's O(n·m·iterations) beyond
that on sparse graphs, later on dense ones.
"""
from __future__ import annotations

import numpy as np

from . import cached_buffers

#: the concrete algorithms this engine runs (names from :mod:`simengine.network.algorithms`)
RUNS = ("msbfs", "bfs", "dobfs", "frontier", "nearfar", "fw", "bfs_blocks")

#: auto → Floyd–Warshall for every weighted graph up to this size (all-sources runs)
FW_MAX_N = 16384
#: … and for dense weighted graphs (density ≥ FW_MIN_DENSITY) up to this size
FW_DENSE_MAX_N = 32768
FW_MIN_DENSITY = 0.02
#: largest distance matrix auto will allocate (bytes)
FW_MAX_BYTES = 16 << 30


def without_fw(graph) -> str:
    """What runs where ``fw`` may not (predecessors of real weights): the frontier SSSP."""
    return "frontier"


def auto_algorithm(graph, num_sources: int | None = None) -> tuple[str, str]:
    """What ``auto`` runs on ``graph`` on the GPU, and why.

    ``num_sources`` (default n) is how many sources the whole run has (not one batch's share):
    Floyd–Warshall is chosen only when it is at least n/4.  With few sources
    (:func:`simengine.network.per_source.choose_per_source`) the GPU works on one source at a
    time: ``dobfs`` (unweighted) or ``nearfar`` (weighted); on unweighted graphs of many BFS
    levels a thread block per source (``bfs_blocks``).
    """
    from ..per_source import should_run

    n = graph.n
    k = n if num_sources is None else int(num_sources)
    per = should_run(graph, k, "cuda")
    if per is not None:
        return per
    if not graph.weighted:
        return "msbfs", "unweighted graph"
    dens = graph.num_arcs / (n * (n - 1)) if n > 1 else 1.0
    if 4 * k >= n and 8 * n * n <= FW_MAX_BYTES and (
            n <= FW_MAX_N or (n <= FW_DENSE_MAX_N and dens >= FW_MIN_DENSITY)):
        return "fw", (f"weighted, {k} of {n} vertices are sources and the n x n matrix fits "
                      f"(n <= {FW_MAX_N}, or n <= {FW_DENSE_MAX_N} with density >= "
                      f"{FW_MIN_DENSITY})")
    return "frontier", "weighted, too large or too few sources for Floyd-Warshall"


def substitute(graph, algorithm: str) -> tuple[str, str] | None:
    """The GPU algorithm that replaces ``algorithm`` (one this engine does not run), with the
    reason, or None when there is no replacement."""
    if algorithm in ("dijkstra", "dial"):
        return "frontier", (f"the GPU has no priority-queue {algorithm}; it runs the frontier "
                            f"label-correcting SSSP, which gives the same distances")
    return None


def memory(graph, alg: str, k: int) -> tuple[int, str, int, str]:
    """The engine's device memory for ``alg`` (or ``brandes``) over ``k`` sources of ``graph``
    (a CSRGraph or its shape), in the batches the engine runs (:func:`_default_batch`; the
    job's ``solver.batch`` is how many sources it hands the engine at once, not the engine's
    batch): (graph bytes, what, buffer bytes, what) — the plan's memory items."""
    n, a = graph.n, graph.num_arcs
    csr = 8 * (n + 1) + 4 * a + 4 * n + (8 * a if graph.weighted or alg in
                                       ("frontier", "nearfar", "fw") else 0)
    if graph.directed:
        csr += 8 * (n + 1) + 4 * a
    if alg == "msbfs":
        W = max(1, _default_batch(alg, n) // 32)
        dev, what = 12 * W * n + 32 * n, f"MS-BFS bitsets ({W} words per vertex)"
    elif alg in ("bfs", "frontier", "nearfar"):
        B = max(1, min(_default_batch(alg, n), k))
        dev, what = B * n * (6 if alg == "bfs" else 10), f"{alg} buffers for {B} sources"
    elif alg == "dobfs":
        B = max(1, min(DOBFS_BATCH, k))
        dev = 4 * B * n + 10 * n
        what = f"direction-optimising BFS buffers ({B} distance rows)"
    elif alg == "bfs_blocks":       # brandes_deep.py: 12 bytes per source and vertex
        B = max(1, min(k, (4 << 30) // (12 * max(1, n))))
        dev, what = 12 * B * n + 8 * n, f"block-per-source BFS buffers for {B} sources"
    elif alg == "brandes":
        from .brandes import BATCH_BYTES, bytes_per_entry

        # the widest levels (int32); weighted: distance buckets, two distance arrays
        per = 32 if graph.weighted else bytes_per_entry(np.int32)
        dev = min(BATCH_BYTES, max(1, k) * per * n)
        what = "Brandes buffers (σ, δ, levels per source and vertex)"
    else:
        dev, what = 8 * n * n, "Floyd–Warshall distance matrix"
    # + the reductions and the running column sums kept on the device (columns.py)
    return (csr, "graph on the GPU (CSR, degrees, weights, transpose)", dev + 72 * n,
            what + " + reductions")


#: sources per dobfs batch (distance rows kept on the device)
DOBFS_BATCH = 8


def _default_batch(alg: str, n: int) -> int:
    if alg == "msbfs":
        from .msbfs import DEFAULT_WORDS
        return 32 * DEFAULT_WORDS
    if alg == "fw":
        return 1024
    from . import simulator
    cap = 8 if simulator() else 256
    limit = (1 << 26) if alg == "bfs" else (1 << 25)       # elements of the distance block
    return int(max(1, min(cap, limit // max(1, n))))


def iter_partials(graph, sources, algorithm: str, store=None, batch=None, bin_width=1.0,
                  device=None, sort_by_degree=False, delta=None, persistent=True, columns=None):
    """Generator of ChunkPartials computed on GPU ``device`` (None: the current one), one per batch,
    in source order.

    ``algorithm`` is one of :data:`RUNS` (already checked against the graph by the registry).
    ``batch``: sources per batch (msbfs: 32·W, W = batch // 32).  Options: ``sort_by_degree``
    (bfs), ``delta`` (nearfar), ``persistent`` (msbfs: one cooperative launch per batch; dobfs:
    one per source).  Every step runs with the device's context current; the caller's code
    between two partials does not.  ``columns`` (a :class:`.columns.DeviceColumns`): the column
    sums of every batch are folded into it on the device and the partials carry None columns.
    """
    if algorithm not in RUNS:
        raise ValueError(f"the CUDA engine does not run {algorithm!r}")
    from . import on_device

    gen = _partials(graph, np.ascontiguousarray(sources, dtype=np.int64), algorithm, store, batch,
                    bin_width, sort_by_degree, delta, persistent, columns)
    return on_device(gen, device)


def _partials(graph, sources, alg, store, batch, bin_width, sort_by_degree, delta, persistent,
              columns):
    from . import device_graph
    from .reduce import reduce_rows, copy_to_store
    from ..statistics import unreachable_sentinel

    n = graph.n
    weighted = graph.weighted
    bw = float(bin_width) if weighted else 1.0
    B = int(batch) if batch else _default_batch(alg, n)
    if alg == "msbfs":
        from .msbfs import msbfs_partials
        yield from msbfs_partials(graph, sources, words=max(1, B // 32), store=store,
                                  persistent=persistent, columns=columns)
        return
    if alg == "dobfs":
        from .dobfs import dobfs_partials
        yield from dobfs_partials(graph, sources, batch=int(batch) if batch else DOBFS_BATCH,
                                  store=store,
                                  persistent=persistent, columns=columns)
        return
    dg = device_graph(graph)           # on_device made ``device`` current: caches are keyed by it
    if alg == "bfs_blocks":
        from .brandes_deep import deep_partials
        yield from deep_partials(graph, dg, sources, store, batch, False, True, columns,
                                 betweenness=False, cache=True)
        return
    if alg == "fw":
        from .floyd_warshall import fw_matrix
        D, inf = fw_matrix(graph)
        H = D.copy_to_host() if store is not None else None     # one download for all rows
        for lo in range(0, len(sources), B):
            s = sources[lo:lo + B]
            if H is not None:
                blk = H[s, :n]
                bad = ~(blk < inf)
                store[lo:lo + len(s)] = np.where(bad, 0, blk).astype(store.dtype)
                store[lo:lo + len(s)][bad] = unreachable_sentinel(store.dtype)
            yield reduce_rows(D, s, s, n, inf, weighted, bw, columns=columns)
        return
    B = max(1, min(B, len(sources)))
    rows = np.arange(B, dtype=np.int64)
    if alg == "bfs":
        from .bfs import BFSBuffers, bfs_batch, UNREACHED
        buf = cached_buffers(graph, ("bfs", B), lambda: BFSBuffers(n, B))
        for lo in range(0, len(sources), B):
            s = sources[lo:lo + B]
            bfs_batch(dg, s, buf, sort_by_degree)
            if store is not None:
                copy_to_store(buf.dist, rows[:len(s)], store, lo, float(UNREACHED))
            yield reduce_rows(buf.dist, rows[:len(s)], s, n, float(UNREACHED), False, 1.0,
                              columns=columns)
        return
    from .sssp import SSSPBuffers, sssp_batch
    buf = cached_buffers(graph, ("sssp", B), lambda: SSSPBuffers(n, B))
    for lo in range(0, len(sources), B):
        s = sources[lo:lo + B]
        sssp_batch(dg, s, buf, alg, delta)
        if store is not None:
            copy_to_store(buf.dist, rows[:len(s)], store, lo, np.inf)
        yield reduce_rows(buf.dist, rows[:len(s)], s, n, np.inf, weighted, bw, columns=columns)


def prepare(graph, algorithm: str, num_sources: int, widths=()) -> None:
    """Before the timed run: upload ``graph`` to the current device (its transpose and weights
    where the algorithm reads them) and allocate the buffers of ``algorithm``'s first batch
    (msbfs: of every sweep width in ``widths``, in words), so that the run's time and the ranks'
    balance count traversals, not set-up (the run allocates the same buffers otherwise)."""
    from . import device_graph

    dg = device_graph(graph)
    if algorithm == "msbfs":
        from .msbfs import DEFAULT_WORDS, MSBFSBuffers

        if num_sources >= 32 * DEFAULT_WORDS:    # full-width sweeps will run (fewer shrink W)
            for W in (DEFAULT_WORDS, *widths):
                cached_buffers(graph, ("msbfs", W), lambda: MSBFSBuffers(dg.n, W))
    elif algorithm == "dobfs":
        from .dobfs import ColumnBuffers, DOBFSBuffers, _prepared

        _prepared(graph)
        B = max(1, min(DOBFS_BATCH, int(num_sources)))   # dobfs_partials' default batch
        cached_buffers(graph, ("dobfs", B), lambda: DOBFSBuffers(dg.n, B))
        cached_buffers(graph, "dobfs_columns", lambda: ColumnBuffers(dg.n))
    elif algorithm == "bfs_blocks":
        from .brandes import default_batch
        from .brandes_deep import DeepBuffers, bytes_per_entry

        B = max(1, min(default_batch(dg.n, int(num_sources), bytes_per_entry(False)),
                       int(num_sources)))
        cached_buffers(graph, ("blocks", B, False), lambda: DeepBuffers(dg.n, B, False))
    elif algorithm in ("frontier", "nearfar", "bfs"):
        if algorithm != "bfs":
            dg.weights
        if algorithm == "nearfar":
            from .sssp import default_delta

            default_delta(dg)
        B = max(1, min(_default_batch(algorithm, dg.n), int(num_sources)))
        if algorithm == "bfs":
            from .bfs import BFSBuffers as make
        else:
            from .sssp import SSSPBuffers as make
        cached_buffers(graph, ("bfs" if algorithm == "bfs" else "sssp", B), lambda: make(dg.n, B))
