"""When a run has few sources, traverse from each source on its own instead of in batches.

The batch engines are built for many sources: the bitset MS-BFS (``msbfs``) sweeps the whole graph
once per 64·W sources (CPU) or 32·W (GPU), whatever number of those bits is in use, and one batch
runs on one CPU thread; Floyd–Warshall computes all n rows.  With a handful of sources on a big
graph that is wasted work, so ``auto`` switches to a per-source traversal that puts all the
hardware on one source at a time:

* unweighted graphs: direction-optimising BFS (``network.cpu.dobfs`` on the CPU,
  ``network.cuda.dobfs`` on the GPU);
* weighted graphs: Dial / Dijkstra on the CPU with one source per thread (never Floyd–Warshall);
  the near–far SSSP on the GPU (never Floyd–Warshall).

Thresholds (``num_sources ≤``): CPU_MAX_SOURCES = 6 — measured on 2 cores, G(n, m) with n = 10⁶
and mean degree 6: one MS-BFS batch of K ≤ 64 sources cost about as much as 5–8 direction-
optimising BFS (2.4 s for K = 1 up to 5.4 s for K = 64, against 0.47 s per source); the crossover
grows with the core count, since an MS-BFS batch uses one core.  GPU_MAX_SOURCES = 32 — below one
32-bit word per vertex the GPU MS-BFS sweep costs the same as for 32 sources, while a
direction-optimising BFS touches each arc about once per source.

Graphs of many BFS levels (rings, lattices, long chains) on the GPU: the batch engines advance
every source of a batch one level per step, over the whole batch (MS-BFS: a grid barrier and a
sweep of n·W words per level; 1 601 levels on the α-model ring of n = 30 000 took 2.62 s on an
H200), while a thread block per source (``bfs_blocks``, :mod:`.cuda.brandes_deep` without σ)
loops over its own levels inside one launch and touches only its frontier.  ``auto`` runs it
when a probe BFS from the vertex of largest degree — the one the GPU betweenness engine already
runs, cached per graph and device (:func:`.cuda.brandes.probe_depth`) — has more than
``DEEP_LEVELS`` (100) levels.  :func:`should_run` is the one rule, with its reason for the plan.
"""
from __future__ import annotations

#: at most this many sources → per-source traversal on the CPU
CPU_MAX_SOURCES = 6
#: at most this many sources → per-source traversal on the GPU
GPU_MAX_SOURCES = 32


def choose_per_source(graph, num_sources: int, backend: str = "cpu") -> str | None:
    """The per-source algorithm ``auto`` should run for ``num_sources`` sources on ``backend``, or
    None when the batch engines are the better choice.

    CPU: ``dobfs`` (unweighted) or ``dial``/``dijkstra`` (weighted, as ``auto`` would choose them
    apart from Floyd–Warshall).  GPU: ``dobfs`` (unweighted) or ``nearfar`` (weighted).
    """
    k = int(num_sources)
    limit = GPU_MAX_SOURCES if backend == "cuda" else CPU_MAX_SOURCES
    if k > limit or k >= graph.n:
        return None
    if backend == "cuda":
        return "nearfar" if graph.weighted else "dobfs"
    if not graph.weighted:
        return "dobfs"
    from .weights import dial_applicable

    return "dial" if dial_applicable(graph) else "dijkstra"


def should_run(graph, num_sources: int, backend: str = "cpu") -> tuple[str, str] | None:
    """``(algorithm, reason)`` when ``auto`` should run a per-source engine for ``num_sources``
    sources of ``graph`` on ``backend`` (few sources: :func:`choose_per_source`; on the GPU, an
    unweighted graph of many BFS levels: ``bfs_blocks``, from a probe BFS on the current device,
    skipped where there is no GPU), else None (the batch engines)."""
    k = int(num_sources)
    per = choose_per_source(graph, k, backend)
    if per is not None:
        limit = GPU_MAX_SOURCES if backend == "cuda" else CPU_MAX_SOURCES
        where = "the GPU" if backend == "cuda" else "all cores"
        return per, f"{k} sources (<= {limit}): one source at a time on {where}"
    if backend == "cuda" and not graph.weighted and graph.n > 1 and hasattr(graph, "indptr"):
        # (a graph's shape, the plan before the graph exists, has no levels to probe: the
        # run's plan, made from the built graph, decides; validate builds it on a GPU)
        from .cuda import device_count, device_graph
        from .cuda.brandes import DEEP_LEVELS, probe_depth

        if device_count() == 0:          # no GPU here (a plan made for another machine)
            return None

        depth = probe_depth(graph, device_graph(graph))
        if depth > DEEP_LEVELS:
            return "bfs_blocks", (f"a BFS from the vertex of largest degree has more than "
                                  f"{DEEP_LEVELS} levels: a thread block per source, all its "
                                  f"levels in one launch")
    return None
