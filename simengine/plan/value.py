"""The run's plan as a value: what runs, why, and what it costs.

A :class:`Plan` is built once from a problem description (:mod:`.problem`) by
:func:`simengine.plan.build`; ``simengine validate``, ``simengine run`` (its start-up log and the
memory and disk checks of :mod:`simengine.resources`), the output's ``/plan`` group and the
benchmarks read it. Nothing after it decides again.
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Decision:
    """One choice of the plan: ``what`` (``backend``, ``integrator``, ``form``, ``algorithm``,
    ...), the ``chosen`` value, the ``reason``, and each alternative with why it was not taken."""

    what: str
    chosen: str
    reason: str
    rejected: tuple = ()        #: ((alternative, why not), ...)

    def as_dict(self) -> dict:
        return {"what": self.what, "chosen": self.chosen, "reason": self.reason,
                "rejected": [list(r) for r in self.rejected]}


@dataclass(frozen=True)
class Item:
    """One large allocation of a run."""

    key: str            #: scenario key that decides the size (e.g. ``grid.shape``)
    what: str           #: what is allocated
    host: int = 0       #: bytes on the host
    device: int = 0     #: bytes on the GPU


@dataclass(frozen=True)
class Plan:
    """What a run executes, decided once.

    kind : ``field`` | ``network``
    problem : the :class:`~.problem.FieldProblem` or :class:`~.problem.NetworkProblem` it was
        built from
    backend : the resolved backend (``cpu`` | ``cuda``)
    runs : field: the integrator and form (``rk2 stages/smarch``, ``rk2 cpu``); network: the
        engine row (``msbfs``, ``fw``, ``brandes`` ...)
    kernel : field: the memory strategy (``solver.kernel``); network: the algorithm the engine
        row computes the distances with (``brandes``: the traversal order)
    batch : network: sources per batch of the job (None for field runs)
    decisions : every choice with its reason and the alternatives
    items, disk, disk_what : memory (one rank's share) and disk estimates
    work, work_unit, seconds : the work and a rough time (network runs)
    """

    kind: str
    problem: object = field(repr=False)
    backend: str
    runs: str
    kernel: str
    batch: int | None
    decisions: tuple
    items: tuple = ()
    ranks: int = 1
    disk: int = 0
    disk_what: str = ""
    work: float = 0.0
    work_unit: str = ""
    seconds: float | None = None
    summary: str = ""           #: the plan line after ``plan: <kind> ``
    #: network, a graph file: (key, n declared, vertices the arcs can use, how) for the
    #: declared-count refusal (:mod:`simengine.network.declared`)
    declared: tuple | None = None
    #: the table's own answer (network: :class:`simengine.network.backends.Choice`)
    choice: object = field(default=None, repr=False, compare=False)

    # ---- the line everybody prints
    @property
    def line(self) -> str:
        """``plan: ...``: identical in ``simengine validate`` and the start-up log of ``simengine
        run`` for the same scenario and machine."""
        return f"plan: {self.kind} {self.summary}"

    def decision(self, what: str) -> Decision | None:
        return next((d for d in self.decisions if d.what == what), None)

    # ---- memory
    @property
    def host(self) -> int:
        return sum(i.host for i in self.items)

    @property
    def device(self) -> int:
        return sum(i.device for i in self.items)

    def largest(self, attr: str) -> Item:
        return max(self.items, key=lambda i: getattr(i, attr))

    # ---- output metadata
    def attributes(self) -> dict:
        """The ``/plan`` group's attributes of the output (plain strings and numbers)."""
        return {"line": self.line, "kind": self.kind, "backend": self.backend, "runs": self.runs,
                "kernel": self.kernel, "batch": -1 if self.batch is None else int(self.batch),
                "ranks": int(self.ranks),
                "decisions": json.dumps([d.as_dict() for d in self.decisions]),
                "host_bytes": int(self.host), "device_bytes": int(self.device),
                "disk_bytes": int(self.disk)}
