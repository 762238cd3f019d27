"""The network rows of the plan: the registry's choice (algorithm, substitution, the
predecessors and betweenness rows) from a graph's shape, the job's batch, memory, disk and time.

The table itself lives beside the engines: :func:`simengine.network.backends.choose` walks each
backend's ``auto`` rule (``network/{cpu,cuda}/engine.py``), its substitutions, the
Floyd–Warshall row's refusal of predecessors of real weights and the Brandes row; this module
turns the answer into the run's :class:`~.value.Plan`.
"""
from __future__ import annotations

from ..machine import fmt_seconds
from .value import Decision, Item, Plan

#: rough traversal throughput, in vertex and arc visits × sources per second (msbfs, dobfs, bfs,
#: SSSP, brandes) or min-plus operations per second (fw); the figures behind them are in
#: docs/network.md, docs/network-gpu.md and docs/measurements/ (betweenness). Times scale with
#: cores and graph.
THROUGHPUT = {
    ("cpu", "msbfs"): 6e9, ("cpu", "bfs"): 3e8, ("cpu", "dobfs"): 2e8, ("cpu", "dial"): 3e8,
    ("cpu", "dijkstra"): 1e8, ("cpu", "fw"): 2e9, ("cpu", "brandes"): 3e8,
    ("cuda", "msbfs"): 6e10, ("cuda", "bfs"): 1e10, ("cuda", "dobfs"): 1.2e9,
    ("cuda", "frontier"): 2e9, ("cuda", "nearfar"): 2e9, ("cuda", "fw"): 2e12,
    ("cuda", "brandes"): 1e10, ("cuda", "bfs_blocks"): 1e10,
}

#: sources per batch of the network job when ``solver.batch`` is not given
DEFAULT_BATCH = {"cpu": 2048, "cuda": 8192}


def _threads() -> int:
    import numba

    return int(numba.get_num_threads())


def build_network(problem) -> Plan:
    """The network :class:`~.value.Plan` of ``problem`` (a :class:`~.problem.NetworkProblem`).
    Raises :class:`~simengine.errors.UserError` (one line, no scenario path) for what cannot
    run."""
    from ..network.backends import choose

    gs = problem.graph
    c = choose(gs if problem.built is None else problem.built, problem.algorithm, problem.backend, num_sources=problem.num_sources,
               predecessors=problem.store_predecessors, betweenness=problem.betweenness)
    where, engine = c.engine_backend, c.engine
    batch = int(problem.batch or DEFAULT_BATCH[where])
    batch = max(1, min(batch, int(problem.checkpoint_every)))
    decisions = [Decision("backend", c.backend, "as requested" if
                          problem.requested_backend != "auto" else
                          ("auto: a real GPU is usable" if c.backend == "cuda" else
                           "auto: no real GPU here"))]
    decisions.append(Decision("algorithm", c.algorithm, c.reason,
                              tuple(r for r in c.rejected if r[0] != c.algorithm)))
    if engine == "brandes":
        decisions.append(Decision("engine", f"brandes on {where}", c.engine_note,
                                  ((c.algorithm, "betweenness is asked: Brandes' traversals "
                                                 "give the path statistics too"),)))
    decisions.append(Decision("batch", str(batch), "solver.batch" if problem.batch else
                              f"the {where} default ({DEFAULT_BATCH[where]}), at most "
                              f"output.checkpoint_every"))
    if engine == "brandes":
        why = c.engine_note
    elif c.substituted:
        why = f"instead of {c.replaced or c.requested}: {c.reason}"
    elif c.requested == "auto":
        why = f"auto: {c.reason}"
    else:
        why = c.reason
    extra = (", distances stored" if problem.store_distances else "") + (
        ", predecessors stored" if problem.store_predecessors else "")
    if "edge_betweenness" in problem.statistics:   # one pass after the sources, on rank 0
        from ..network.edge_betweenness import choose as edge_choose

        e_where, e_why = edge_choose(gs, c.backend)
        decisions.append(Decision("edge_betweenness", e_where, e_why))
        extra += f", edge betweenness on {e_where}"
    summary = (f"{where} {engine} ({why}), {problem.num_sources:,} sources, batch {batch}"
               f"{extra}")
    items, disk, disk_what = _memory(problem, engine, where)
    k = problem.sources_per_rank
    n, a = gs.n, gs.num_arcs
    if engine == "fw":
        work, unit = float(n) ** 3, "min-plus operations"
    else:   # a traversal initialises and visits every vertex and scans every arc per source
        work = float(k) * (n + max(a, 1))
        unit = f"vertex and arc visits ({k:,} sources × ({n:,} vertices + {a:,} arcs))"
    seconds = work / THROUGHPUT.get((where, engine), 1e8)
    return Plan("network", problem, where, engine, c.algorithm, batch, tuple(decisions),
                tuple(items), problem.ranks, disk, disk_what, work, unit, seconds,
                summary=summary, declared=_declared(problem), choice=c)


def _declared(problem):
    """(key, n, vertices the arcs can use, how) of a graph file whose size is known (parsed, or
    its header), for the declared-count refusal; None otherwise."""
    gs = problem.graph
    if problem.graph_key != "graph.file.path":
        return None
    if problem.built is not None:
        from ..network.declared import touched_vertices

        return (problem.graph_key, gs.n, touched_vertices(problem.built), problem.file_path)
    if gs.how.startswith("the header"):
        return (problem.graph_key, gs.n, min(gs.n, 2 * max(gs.num_arcs, 1)), gs.how)
    return None


def work_line(plan: Plan) -> str:
    """The work and the rough time, one line (``simengine validate``)."""
    tp = THROUGHPUT.get((plan.backend, plan.runs), 1e8)
    return (f"traversal work {plan.work:.3g} {plan.work_unit} with {plan.runs} on "
            f"{plan.backend}: about {fmt_seconds(plan.seconds)} at an assumed {tp:.2g}/s")


def graph_plan(problem) -> Plan:
    """A plan of the graph's own memory only (its CSR and the building of it), for the check
    before a graph is built whose shape cannot be planned yet (:func:`simengine.resources.
    check_before_graph`); it is never the run's plan."""
    return Plan("network", problem, problem.backend, "", "", None, (),
                tuple(_graph_items(problem)), problem.ranks)


def _graph_items(problem) -> list:
    gs = problem.graph
    n, a = gs.n, gs.num_arcs
    items = []
    csr = 8 * (n + 1) + 4 * a + (8 * a if gs.weighted else 0)
    if gs.directed:
        csr *= 2
    kind = (", weighted" if gs.weighted else "") + (", with its transpose" if gs.directed else "")
    items.append(Item(problem.graph_key, f"graph CSR (n = {n:,}, {a:,} arcs{kind}; from "
                                         f"{gs.how})", host=csr))
    items.append(Item(problem.graph_key, "building the graph (generator or reader working "
                                         "memory)", host=gs.build_bytes))
    return items


def _memory(problem, alg, backend):
    gs = problem.graph
    n = gs.n
    items = _graph_items(problem)
    total_k = problem.num_sources
    k = problem.sources_per_rank
    items.append(Item("metrics.sources", "statistics accumulator", host=65 * n))
    items.extend(_engine_items(gs, alg, k, backend))
    disk, disk_what = 0, ""
    if problem.store_distances:
        isz = 8 if gs.weighted else (1 if n <= 255 else 2 if n <= 65535 else 4)
        rows = min(int(problem.checkpoint_every), k)
        items.append(Item("metrics.store_distances",
                          f"stored distances: {rows:,} rows of {n:,} held until a "
                          f"checkpoint write", host=2 * rows * n * isz))
        disk = total_k * n * isz
        disk_what = f"stored distances, {total_k:,} rows of {n:,}"
        if problem.store_predecessors:
            items.append(Item("metrics.store_predecessors",
                              f"stored predecessors: {rows:,} int32 rows of {n:,} held "
                              f"until a checkpoint write", host=2 * rows * n * 4 + 8 * n,
                              device=(min(k, 256) * n * (8 + isz)
                                      if backend == "cuda" else 0)))
            disk += total_k * n * 4
            disk_what += " and as many int32 predecessor rows"
    return items, disk, disk_what


def _engine_items(gs, alg, k, backend) -> list:
    """The engine's memory, by the engine's own rule (``network/{cpu,cuda}/engine.py:
    memory``)."""
    key = "metrics.algorithm"
    if backend == "cuda":
        from ..network.cuda.engine import memory

        csr, csr_what, dev, what = memory(gs, alg, k)
        return [Item("graph", csr_what, device=csr), Item(key, what, device=dev)]
    from ..network.cpu.engine import memory

    host, what = memory(gs, alg, k, _threads())
    return [Item(key, what, host=host)]
