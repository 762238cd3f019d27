"""``simengine validate``: every check ``simengine run`` makes before its first step, then the
estimates — after the errors are ruled out, from the real sizes of a graph file (parsed as the
run parses it) and the algorithm ``auto`` will pick for it. It prints the run's plan line
(``plan: ...``, :mod:`simengine.plan`), the one ``simengine run`` logs at start-up, and refuses
what the plan refuses with the run's line."""
from __future__ import annotations

import sys


def _note(msg):
    print(f"note: {msg}", file=sys.stderr)


#: validate builds a generated graph whose CSR and building take at most this many bytes, so
#: that its plan is the run's (made from the built graph); a larger one is planned from the
#: generator's parameters (exact for the generators whose sizes the parameters fix)
BUILD_BYTES = 256 << 20


def network_plan(sc, graph, force=False):
    """The run's plan of a network scenario, made as the run makes it
    (:func:`simengine.control.runner.plan_network`): the predicted shape's memory check, then
    the plan of the built graph — ``graph`` (a parsed file), or the generated graph where it
    is small enough to build here (:data:`BUILD_BYTES`); else the predicted plan."""
    from .plan import network_problem
    from .plan.network import graph_plan
    from .resources import check, check_before_graph

    predicted = check_before_graph(sc, force=force)
    if graph is None and sc.spec.graph.generator is not None:
        if graph_plan(network_problem(sc)).host <= BUILD_BYTES or _probe_needed(predicted):
            from .control.network_job import build_graph

            graph = build_graph(sc)
    return check(sc, force=force, graph=graph)


def _probe_needed(plan) -> bool:
    """Whether a plan from the predicted shape may differ from the run's however large the
    graph: ``auto`` on the GPU runs ``bfs_blocks`` on unweighted graphs of many BFS levels, a
    probe BFS of the built graph (:func:`simengine.network.per_source.should_run`)."""
    if plan is None or plan.backend != "cuda":
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
        if spec.metrics.implied_note():
            _note(spec.metrics.implied_note())
        s = spec.metrics.sources
        if n is not None and sample_note(s, n):
            _note(sample_note(s, n))
        shown = len(s) if isinstance(s, list) else s if isinstance(s, str) else \
            f"sample of {s.sample} (seed {s.seed})"
        lines.append(f"{name}: OK — network '{sc.name}', graph from {src}, sources {shown}, "
                     f"algorithm {spec.metrics.algorithm}, backend {spec.solver.backend}")
    # the run's plan (the line simengine run logs) and its refusals; the memory refusal too
    if sc.kind == "network":
        plan = network_plan(sc, graph, force=args.force)
    else:
        plan = check(sc, force=args.force)
    print("\n".join(lines[:-1] + [plan.line, f"{name}: estimates (simengine.resources)",
                                  *describe(plan), lines[-1]]))          # the OK line last
    return 0
