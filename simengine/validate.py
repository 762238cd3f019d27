"""``simengine validate``: every check ``simengine run`` makes before its first step, then the
estimates — after the errors are ruled out, from the real sizes of a graph file (parsed as the
run parses it) and the algorithm ``auto`` will pick for it. It prints the run's plan line
(``plan: ...``, :mod:`simengine.plan`), the one ``simengine run`` logs at start-up, and refuses
what the plan refuses with the run's line."""
from __future__ import annotations

import sys


def _note(msg):
    print(f"note: {msg}", file=sys.stderr)


def _probe_needed(plan, graph) -> bool:
    """Whether the plan made from a predicted graph shape may differ from the run's, made from
    the built graph: ``auto`` on the GPU runs ``bfs_blocks`` on unweighted graphs of many BFS
    levels, a probe BFS of the graph (:func:`simengine.network.per_source.should_run`)."""
    if plan.kind != "network" or graph is not None or plan.backend != "cuda":
        return False
    p = plan.problem
    return p.algorithm == "auto" and not p.graph.weighted and plan.runs == "msbfs"


def command(args) -> int:
    from .config import load_scenario
    from .resources import check, describe

    name = args.scenario
    sc = load_scenario(name, args.overrides)
    lines, graph = [], None
    if "sweep" in sc.data:
        from .sweep import load_sweep

        sw = load_sweep(name, args.overrides)
        lines.append(f"{name}: sweep OK — {len(sw.tasks)} tasks over {', '.join(sw.keys)}"
                     f"{' (zipped)' if sw.zip else ''}; the body:")
    spec = sc.spec
    if sc.kind == "field":
        from .config.checks import field_problem, initial_range
        from .config.loader import Located
        from .field.clock import integrator_words, time_words
        from .field.stability import max_stable_dt

        model, grid, boundary = field_problem(spec)
        lo, hi = initial_range(sc, Located(sc.data, {}, sc.path))
        dt_max = max_stable_dt(model, grid, boundary, phi_range=(lo, hi))
        lines.append(f"{name}: OK — field '{sc.name}', grid {list(grid.shape)}, "
                     f"{spec.boundary.type} boundaries, {time_words(spec, dt_max)}, "
                     f"{integrator_words(spec)}, {spec.solver.precision}, backend "
                     f"{spec.solver.backend}")
    else:
        from .config.checks import generated_vertices, parse_graph_file
        from .network.sources import sample_note

        g = spec.graph
        src = "generator " + str(g.generator.get("type")) if g.generator else f"file {g.file.path}"
        n = generated_vertices(getattr(sc, "generator", None))
        if g.file is not None:
            summary, graph = parse_graph_file(sc, log=_note)
            lines.append(f"{name}: graph {summary}")
            n = graph.n if graph is not None else None
        s = spec.metrics.sources
        if n is not None and sample_note(s, n):
            _note(sample_note(s, n))
        shown = len(s) if isinstance(s, list) else s if isinstance(s, str) else \
            f"sample of {s.sample} (seed {s.seed})"
        lines.append(f"{name}: OK — network '{sc.name}', graph from {src}, sources {shown}, "
                     f"algorithm {spec.metrics.algorithm}, backend {spec.solver.backend}")
    # the run's plan (the line simengine run logs) and its refusals; the memory refusal too
    plan = check(sc, force=args.force, graph=graph)
    if _probe_needed(plan, graph):       # the GPU's probe BFS reads the graph itself
        from .control.network_job import build_graph

        plan = check(sc, force=args.force, graph=build_graph(sc, log=_note))
    print("\n".join(lines[:-1] + [plan.line, f"{name}: estimates (simengine.resources)",
                                  *describe(plan), lines[-1]]))          # the OK line last
    return 0
