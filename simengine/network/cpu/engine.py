"""CPU engine: its ``auto`` rule, what it runs in place of the GPU-only algorithms, and the
per-batch partials of each CPU algorithm.

The registry (:mod:`simengine.network.backends`) calls these functions (``auto_algorithm``,
``substitute``, ``without_fw``, ``iter_partials``); ``auto_algorithm`` reads a built graph or a
graph's shape (:class:`simengine.plan.problem.GraphShape`); the same functions exist
for the GPU in :mod:`simengine.network.cuda.engine`.
"""
from __future__ import annotations

import numpy as np

from ..weights import dial_applicable

#: the concrete algorithms this engine runs (names from :mod:`simengine.network.algorithms`)
RUNS = ("msbfs", "bfs", "dobfs", "dijkstra", "dial", "fw")

#: ``auto`` uses Floyd–Warshall for weighted graphs with n ≤ FW_MAX_N and density ≥ FW_MIN_DENSITY
FW_MAX_N = 1500
FW_MIN_DENSITY = 0.1


def weighted_choice(graph) -> str:
    """``dial`` when every weight is an integer in [0, 4096], else ``dijkstra``."""
    return "dial" if dial_applicable(graph) else "dijkstra"


def without_fw(graph) -> str:
    """What runs where ``fw`` may not (predecessors of real weights): Dial or Dijkstra."""
    return weighted_choice(graph)


def auto_algorithm(graph, num_sources: int | None = None) -> tuple[str, str]:
    """What ``auto`` runs on ``graph`` on the CPU, and why.

    Unweighted → ``msbfs``; weighted with n ≤ FW_MAX_N and arc density m / (n(n-1)) ≥
    FW_MIN_DENSITY → ``fw``; otherwise ``dial`` when every weight is an integer in [0, 4096], else
    ``dijkstra``.  ``num_sources`` (default n) is how many sources the whole run has: with few
    (:func:`simengine.network.per_source.choose_per_source`) every core works on one source at a
    time — ``dobfs`` (unweighted) or ``dial``/``dijkstra`` with the sources spread over the
    threads (weighted; never ``fw``, which computes all n rows).
    """
    from ..per_source import CPU_MAX_SOURCES, choose_per_source

    if num_sources is not None:
        per = choose_per_source(graph, num_sources, "cpu")
        if per is not None:
            return per, (f"{num_sources} sources (<= {CPU_MAX_SOURCES}): one source at a time "
                         f"on every core")
    if not graph.weighted:
        return "msbfs", "unweighted graph"
    n = graph.n
    dens = graph.num_arcs / (n * (n - 1)) if n > 1 else 1.0
    if n <= FW_MAX_N and dens >= FW_MIN_DENSITY:
        return "fw", f"weighted, n = {n} <= {FW_MAX_N} and arc density >= {FW_MIN_DENSITY}"
    alg = weighted_choice(graph)
    why = "integer weights in [0, 4096]" if alg == "dial" else "weights not all integers in [0, 4096]"
    return alg, f"weighted, sparse or large; {why}"


def substitute(graph, algorithm: str) -> tuple[str, str] | None:
    """The CPU algorithm that replaces ``algorithm`` (one this engine does not run), with the
    reason, or None when there is no replacement."""
    if algorithm == "bfs_blocks":
        return "msbfs", ("bfs_blocks runs on the GPU only; the CPU runs msbfs, which gives the "
                         "same distances")
    if algorithm in ("frontier", "nearfar"):
        alg = weighted_choice(graph)
        return alg, (f"{algorithm} SSSP runs on the GPU only; the CPU runs {alg}, which gives the "
                     f"same distances")
    return None


def sssp_batch(num_sources, threads=None) -> int:
    """Sources per Dijkstra/Dial batch: 32, or fewer so that a few sources still occupy every
    thread (one batch runs on one thread)."""
    import numba

    P = int(threads or numba.get_num_threads())
    return int(max(1, min(32, -(-int(num_sources) // P))))


#: sources per batch of the engines that take a batch (the engine's own unit)
BFS_BATCH, DOBFS_BATCH, FW_BATCH = 64, 8, 256


def memory(graph, alg: str, k: int, threads: int) -> tuple[int, str]:
    """The engine's host memory for ``alg`` (or ``brandes``) over ``k`` sources of ``graph`` (a
    CSRGraph or its shape) on ``threads`` workers, in the batches the engine runs (the job's
    ``solver.batch`` is how many sources it hands the engine at once, not the engine's batch):
    (bytes, what) — the plan's memory item."""
    from .msbfs import DEFAULT_WORDS

    n, a = graph.n, graph.num_arcs
    P = max(1, int(threads))
    if alg == "msbfs":
        W = DEFAULT_WORDS
        workers = max(1, min(P, -(-k // (64 * W))))
        per = 24 * W * n + 24 * n + 8 * n
        what = f"MS-BFS bitsets and column sums ({workers} workers × {W} words per vertex)"
    elif alg == "bfs":
        workers = max(1, min(P, -(-k // BFS_BATCH)))
        per = 12 * n + 32 * n
        what = f"BFS buffers and column sums ({workers} workers)"
    elif alg == "dobfs":
        workers = 1
        per = 4 * n + 8 * n + 2 * n + 8 * n + 24 * n
        what = "direction-optimising BFS buffers and column sums"
    elif alg in ("dial", "dijkstra", "brandes"):
        workers = max(1, min(P, k))
        per = 8 * n + 12 * (a + 1) + 8 * n + 32 * n + (24 * n if alg == "brandes" else 0)
        what = f"{alg} queues and column sums ({workers} workers)"
    else:
        workers = 1
        per = 8 * n * n
        what = "Floyd–Warshall distance matrix"
    return workers * per, what


def iter_partials(graph, sources, algorithm: str, store=None, batch=None, bin_width=1.0,
                  threads=None):
    """Generator of ChunkPartials, one per batch of sources, in source order.

    ``algorithm`` is one of :data:`RUNS` (already checked against the graph by the registry);
    ``batch`` sources per batch (msbfs: rounded down to a multiple of 64; default per
    algorithm); ``threads`` numba threads (default all).
    """
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    if algorithm == "dobfs":
        from .dobfs import dobfs_partials

        return dobfs_partials(graph, sources, batch=batch or DOBFS_BATCH, store=store)
    if algorithm == "msbfs":
        from .msbfs import msbfs_partials

        words = None if batch is None else max(1, int(batch) // 64)
        return msbfs_partials(graph, sources, words=words, store=store, threads=threads)
    if algorithm == "bfs":
        from .bfs import bfs_partials

        return bfs_partials(graph, sources, batch=batch or BFS_BATCH, store=store,
                            threads=threads)
    if algorithm == "dial":
        from .sssp import dial_partials

        return dial_partials(graph, sources, bin_width=bin_width,
                             batch=batch or sssp_batch(len(sources), threads), store=store,
                             threads=threads)
    if algorithm == "dijkstra":
        from .sssp import dijkstra_partials

        return dijkstra_partials(graph, sources, bin_width=bin_width,
                                 batch=batch or sssp_batch(len(sources), threads), store=store,
                                 threads=threads)
    if algorithm == "fw":
        from .floyd_warshall import fw_partials

        return fw_partials(graph, sources, bin_width=bin_width, batch=batch or FW_BATCH,
                           store=store)
    raise ValueError(f"the CPU engine does not run {algorithm!r}")
