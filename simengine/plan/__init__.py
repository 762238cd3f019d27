"""The run's plan: what runs, decided once, read by everyone.

:func:`for_scenario` (a validated scenario) or :func:`build` (a problem description) returns a
frozen :class:`Plan`: the backend, the integrator and GPU form (field) or the engine row and
algorithm (network), the kernel, the batch, every decision with its reason and the alternatives
passed over, and the memory, disk and time estimates. ``simengine validate`` and the start-up
log of ``simengine run`` print its :attr:`Plan.line` (``plan: ...``); the resource checks
(:mod:`simengine.resources`) read its items; the output stores it (the ``/plan`` group); the
benchmarks name it.

The rules are declared beside the kernels and read here: the field integrator rows
(:data:`simengine.plan.field.INTEGRATORS`), the GPU form table (``field/plans.py``), the network
registry's table (``network/backends.py: choose`` over ``network/{cpu,cuda}/engine.py``).
"""
from __future__ import annotations

from ..errors import UserError
from .problem import FieldProblem, GraphShape, NetworkProblem
from .value import Decision, Item, Plan

__all__ = ["Decision", "FieldProblem", "GraphShape", "Item", "NetworkProblem", "Plan", "build",
           "field_problem", "for_scenario", "network_problem"]


def build(problem) -> Plan:
    """The :class:`Plan` of a :class:`FieldProblem` or :class:`NetworkProblem` (UserError, one
    line without the scenario's path, for what cannot run)."""
    if isinstance(problem, FieldProblem):
        from .field import build_field

        return build_field(problem)
    from .network import build_network

    return build_network(problem)


def field_problem(spec, ranks: int = 1) -> FieldProblem:
    """The problem description of a validated field scenario (``sc.spec``)."""
    from ..field.backends import resolve
    from ..field.model_rules import describe_spec, needs_of_spec

    s = spec.solver
    backend = resolve(s.backend)
    shape = tuple(int(x) for x in spec.grid.shape)
    block = s.block
    if isinstance(block, list):
        block = tuple(int(b) for b in block)
    return FieldProblem(
        ndim=len(shape), shape=shape, precision=s.precision, boundary=spec.boundary.type,
        integrator=s.integrator, backend=backend, kernel=s.kernel, fused=s.fused,
        ranks=max(1, int(ranks)), devices=1 if backend == "cuda" else 0,
        symbol=str(getattr(s, "symbol", getattr(spec.time, "symbol", "fd")) or "fd"),
        adaptive=bool(getattr(spec.time, "adaptive", False)), requested_backend=s.backend,
        block=block, layout=s.layout, tile=tuple(s.tile) if s.tile else None,
        steps=int(spec.time.steps or 0), snapshot_every=int(spec.output.snapshot_every or 0),
        end=spec.time.end, snapshot_dt=getattr(spec.output, "snapshot_dt", None),
        model_needs=needs_of_spec(spec.model), model=describe_spec(spec.model))


def network_problem(sc, ranks: int = 1, graph=None) -> NetworkProblem:
    """The problem description of a validated network scenario: the graph's shape from
    ``graph`` when it is built (or parsed), else predicted from the generator's parameters or
    the file's header."""
    from ..network.backends import resolve_backend
    from .graph_shape import file_shape, generator_shape, num_sources

    spec = sc.spec
    g = spec.graph
    if graph is not None:
        gs = GraphShape.of(graph, "the parsed file" if g.file is not None else "the graph")
    elif g.generator is not None:
        try:
            gs = generator_shape(dict(g.generator), bool(g.directed), g.weights)
        except (ValueError, TypeError, KeyError, OverflowError):
            # parameters the generator itself will reject with a proper message
            gs = GraphShape(0, 0, False, True, True, bool(g.directed), 0, "invalid parameters")
    else:
        gs = file_shape(sc, g)
    m = spec.metrics
    return NetworkProblem(
        graph=gs, backend=resolve_backend(spec.solver.backend), algorithm=m.algorithm,
        num_sources=num_sources(spec, gs.n), statistics=tuple(m.statistics),
        store_distances=bool(m.store_distances), store_predecessors=bool(m.store_predecessors),
        batch=spec.solver.batch, checkpoint_every=int(spec.output.checkpoint_every),
        ranks=max(1, int(ranks)), requested_backend=spec.solver.backend,
        graph_key="graph.generator" if g.generator is not None else "graph.file.path",
        file_path=str(g.file.path) if g.file is not None else "", built=graph)


def for_scenario(sc, ranks: int = 1, graph=None) -> Plan:
    """The :class:`Plan` of a validated scenario (one rank's share of memory when ``ranks`` >
    1). A refusal is the one line ``run`` gives: ``<scenario>: solver: ...`` (field) or
    ``<scenario>: ...`` (network)."""
    try:
        if sc.kind == "field":
            return build(field_problem(sc.spec, ranks))
        return build(network_problem(sc, ranks, graph))
    except UserError as exc:
        where = "solver: " if sc.kind == "field" and not str(exc).startswith("time.") else ""
        raise UserError(f"{sc.path}: {where}{exc}") from None
    except ValueError as exc:
        where = "solver" if sc.kind == "field" else "metrics"
        raise UserError(f"{sc.path}: {where}: {exc}") from None
