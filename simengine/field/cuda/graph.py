"""Many time steps per host call: the stage launches of ``K`` steps recorded once as a CUDA Graph.

A small grid is launch-bound: a numba-cuda launch costs ≈ 20 µs of host time while a 200² stage
moves its data in well under a microsecond. A CUDA Graph replays recorded kernel launches with
≈ 1 µs per kernel and one host call for the whole graph, so :class:`StepGraph` records the stage
launches of ``K`` steps (``K`` even: the three buffers rotate with period 2, so after ``K`` steps
every buffer is back in its slot and the same graph can be replayed) and the solver replays it
``n // K`` times. No host synchronisation happens between steps; observables are computed only
when the controller asks for them (at output steps).

Why a graph and not a persistent kernel with a grid-wide barrier: the graph replays exactly the
kernels (and so the bits) of the ordinary path — every strategy, block shape and boundary —
whereas a cooperative kernel would be a fifth implementation of the stencil whose grid size is
capped by residency. Recording uses ``cuda.core``'s public graph builder; the kernels' arguments
are marshalled by :mod:`.launch` as for the fast launch path.

Not used under the simulator, for slabs (their halos are exchanged between stages through the
host) or when recording fails (the solver then launches step by step; :attr:`StepGraph.error`
says why).
"""
from __future__ import annotations

from . import launch as _launch_api

#: steps recorded in one graph (even); replays of fewer steps launch step by step
GRAPH_STEPS = 64
#: smaller graphs for the rest of an advance (an output cadence of 1000 steps leaves 40 after
#: 15 graphs of 64): 40 = 16 + 16 + 4 + 4, and at most one odd step is launched alone
GRAPH_REST_STEPS = (16, 4, 2)


#: an advance of EXACT_MIN … EXACT_MAX steps replays one graph of exactly its (even) length:
#: replays of small graphs block the host — on an H100, 200² fp64 (2026-11-24 night,
#: docs/measurements/field-gpu-2026-11-25.md) enqueueing a 64-step graph took 1.76 µs per step
#: (a 16-step one 2.39) against 2.44 µs per step on the GPU, a 256- or 1024-step graph 0.004–0.016
#: — so the CLI's advances of 1000 steps (15 replays of 64 and four small graphs) kept the
#: host busy for the whole GPU time and the observations could not overlap the steps
EXACT_MIN = 128
EXACT_MAX = 8192
#: graphs of exact lengths kept per solver (the least recently recorded are dropped)
EXACT_CACHE = 4
#: ... and only for grids of at most this many cells: on larger ones a step is long next to the
#: host's enqueue of the standard graphs, while recording an exact graph costs tens of ms of
#: host time per length (H100, 256³ fp32, 2026-11-26: an exact 1000-step graph recorded in the
#: measured window put the CLI at 1.41× the solver loop; docs/measurements/field-3d-cli-2026-11-26.md)
EXACT_MAX_CELLS = 1 << 20


def split_steps(n: int, exact: bool = True):
    """``[(graph steps, replays), ...]`` for ``n`` steps, largest graphs first, and the steps
    left to launch one by one (0 or 1): one graph of n (less one when odd) steps for
    :data:`EXACT_MIN` ≤ n ≤ :data:`EXACT_MAX` when ``exact``, else graphs of
    :data:`GRAPH_STEPS` and the :data:`GRAPH_REST_STEPS` sizes (which are recorded once per
    solver and kept)."""
    n = int(n)
    if exact and EXACT_MIN <= n <= EXACT_MAX:
        return [(n - n % 2, 1)], n % 2
    plan = []
    for k in (GRAPH_STEPS,) + GRAPH_REST_STEPS:
        r, n = divmod(n, k)
        if r:
            plan.append((k, r))
    return plan, n


def cache_graph(graphs: dict, key, graph, steps: int, order: list) -> None:
    """Keep ``graph`` under ``key``; graphs of lengths other than the standard sizes (exact
    lengths, :func:`split_steps`) are kept for the :data:`EXACT_CACHE` most recent keys only
    (``order``: their keys, oldest first)."""
    graphs[key] = graph
    if int(steps) in (GRAPH_STEPS,) + GRAPH_REST_STEPS:
        return
    if key in order:
        order.remove(key)
    order.append(key)
    while len(order) > EXACT_CACHE:
        graphs.pop(order.pop(0), None)


def core_device(device_id: int):
    from cuda.core import Device

    d = Device(int(device_id))
    d.set_current()
    return d


class LengthsSeen:
    """Advance lengths seen lately: an exact-length graph is recorded only for a length asked
    for a second time (recording costs about as much host time as launching the steps one by
    one, so a length used once is cheaper in the standard sizes)."""

    def __init__(self, keep: int = 16):
        self.keep, self.recent = int(keep), []

    def again(self, n: int) -> bool:
        """Whether ``n`` was seen among the last ``keep`` lengths; records it."""
        n = int(n)
        seen = n in self.recent
        if seen:
            self.recent.remove(n)
        self.recent.append(n)
        del self.recent[:-self.keep]
        return seen


def replay_steps(n: int, step_graph, launch_steps, exact: bool = True) -> int:
    """Advance ``n`` steps through recorded graphs of the :func:`split_steps` sizes —
    ``step_graph(k)`` gives the graph of ``k`` steps, or ``None`` when recording failed — and the
    rest through ``launch_steps(m)``. Returns the steps the graphs replayed."""
    plan, rest = split_steps(int(n), exact)
    replayed = 0
    for k, times in plan:
        g = step_graph(k)
        if g is None:  # recording failed: launch these steps one by one
            rest += k * times
            continue
        g.replay(times)
        replayed += k * times
    if rest:
        launch_steps(rest)
    return replayed


def record_steps(target, buffers, scheme, coefs, record_stage, steps):
    """Record the stages of ``steps`` steps of ``scheme`` in the order the integrator launches
    them (:func:`simengine.field.integrator.advance`). The buffers must be back in their slots
    afterwards, so that the recording can be replayed."""
    bufs = list(buffers)
    for _ in range(int(steps)):
        for i, st in enumerate(scheme.stages):
            record_stage(target, bufs[st.src], bufs[st.base], bufs[st.out], coefs[i])
        bufs = [bufs[j] for j in scheme.rotate]
    if [id(b) for b in bufs] != [id(b) for b in buffers]:
        raise ValueError(f"the buffers are not back in their slots after {steps} steps of "
                         f"{scheme.name}")


class StepGraph:
    """``K`` steps of ``scheme`` over ``buffers`` (a fixed buffer assignment) as one CUDA Graph.

    ``record_stage(target, src, base, out, coef)`` records one stage launch into ``target`` (a
    ``cuda.core`` graph builder); the solver provides it from its stage plan.
    """

    def __init__(self, device_id, buffers, scheme, coefs, record_stage, steps=GRAPH_STEPS):
        if steps % 2:
            raise ValueError("a step graph records an even number of steps")
        self.steps = int(steps)
        dev = core_device(device_id)
        builder = dev.create_graph_builder()
        builder.begin_building()
        try:
            record_steps(builder, buffers, scheme, coefs, record_stage, self.steps)
        except BaseException:
            builder.end_building()
            raise
        self.graph = builder.end_building().complete()
        self.stream = _launch_api.default_stream()

    def replay(self, times: int = 1) -> None:
        """Launch the recorded steps ``times`` times on the default stream (asynchronous)."""
        for _ in range(int(times)):
            self.graph.launch(self.stream)
