"""Backend registry of the network engine: which backend runs, which algorithm it runs, on which
device.

* :func:`resolve_backend` turns ``auto`` into ``cpu`` or ``cuda`` (once per run).
* :func:`plan` turns a requested algorithm (any name of :mod:`simengine.network.algorithms`,
  ``auto`` included) into the concrete algorithm a backend runs on a graph, with the reason.  When
  the backend lacks the requested algorithm but has one that computes the same distances
  (``dijkstra`` on the GPU → ``frontier``; ``nearfar`` on the CPU → ``dial``), the plan says so
  (``Plan.substituted``, ``Plan.note``) — nothing is replaced silently.
* :func:`get_backend` gives the :class:`Backend`, which answers ``can_run(graph, algorithm)`` and
  yields the per-batch partials on an explicit device.

Each backend's ``auto`` rule is a function of the graph and of the run's total number of sources
(``cpu.engine.auto_algorithm``, ``cuda.engine.auto_algorithm``).
"""
from __future__ import annotations

import warnings
from dataclasses import dataclass

from ..errors import UserError
from .algorithms import ALGORITHMS, canonical, check_applicable
from .weights import check_weights

#: backend names accepted by :func:`resolve_backend`
BACKEND_NAMES = ("auto", "cpu", "cuda")


class AlgorithmSubstitution(UserWarning):
    """Warned by :func:`simengine.network.apsp.run_sources` when it runs another algorithm than the
    one asked for and no ``log`` callable was given."""


@dataclass(frozen=True)
class Plan:
    """What a run executes.

    backend : ``cpu`` | ``cuda``
    algorithm : the concrete algorithm (one the backend runs)
    requested : the canonical name that was asked for (``auto`` or an algorithm)
    reason : why ``algorithm``: the ``auto`` rule's reason, the substitution's reason, or
        ``"as requested"``
    substituted : True when ``algorithm`` replaces a requested algorithm the backend lacks
    """

    backend: str
    algorithm: str
    requested: str
    reason: str
    substituted: bool = False

    @property
    def note(self) -> str:
        """One line for the log, e.g. ``"cuda runs frontier instead of dijkstra: ..."``."""
        if self.substituted:
            return f"{self.backend} runs {self.algorithm} instead of {self.requested}: {self.reason}"
        if self.requested == "auto":
            return f"{self.backend}: auto -> {self.algorithm} ({self.reason})"
        return f"{self.backend}: {self.algorithm}"


class Backend:
    """One backend: its name, the algorithms it runs, its ``auto`` rule and its partials."""

    name = ""

    def __init__(self, engine_module: str):
        self._engine_module = engine_module

    @property
    def engine(self):
        import importlib

        return importlib.import_module(self._engine_module)

    @property
    def runs(self) -> tuple[str, ...]:
        """The concrete algorithms this backend runs."""
        return self.engine.RUNS

    def available(self) -> bool:
        raise NotImplementedError

    def device_count(self) -> int:
        """How many devices :meth:`iter_partials` can be given (0: ``device`` must be None)."""
        return 0

    def why_not(self, graph, algorithm: str) -> str | None:
        """None when this backend runs ``algorithm`` (a canonical name or ``auto``) on ``graph``
        as asked; otherwise the reason it does not (it may still substitute, see :func:`plan`)."""
        a = canonical(algorithm)
        if a == "auto":
            return None
        if a not in self.runs:
            return f"the {self.name} engine has no {a}"
        try:
            check_applicable(graph, a)
        except UserError as exc:
            return str(exc)
        return None

    def can_run(self, graph, algorithm: str) -> bool:
        """True when this backend runs ``algorithm`` on ``graph`` without substituting it."""
        return self.why_not(graph, algorithm) is None

    def plan(self, graph, algorithm: str = "auto", num_sources: int | None = None) -> Plan:
        """The concrete algorithm for ``algorithm`` on ``graph`` (UserError if there is none).

        ``num_sources``: how many sources the whole run has (default n); ``auto`` may depend on
        it, so resolve once per run, not per batch.  Also checks the weights (finite, >= 0)."""
        a = canonical(algorithm)
        eng = self.engine
        if a == "auto":
            alg, reason = eng.auto_algorithm(graph, num_sources)
            p = Plan(self.name, alg, a, reason)
        elif a in eng.RUNS:
            p = Plan(self.name, a, a, "as requested")
        else:
            sub = eng.substitute(graph, a)
            if sub is None:
                raise UserError(f"backend {self.name!r} cannot run algorithm {a!r}; it runs "
                                f"{', '.join(eng.RUNS)}")
            p = Plan(self.name, sub[0], a, sub[1], substituted=True)
        check_applicable(graph, p.algorithm)
        check_weights(graph)
        return p

    def iter_partials(self, graph, sources, algorithm: str, *, store=None, batch=None,
                      bin_width: float = 1.0, device: int | None = None, **options):
        """Generator of ChunkPartials for ``sources`` (in order) by the concrete ``algorithm``."""
        raise NotImplementedError


class CPUBackend(Backend):
    """numba on the host's cores; options: ``threads``."""

    name = "cpu"

    def __init__(self):
        super().__init__("simengine.network.cpu.engine")

    def available(self) -> bool:
        return True

    def iter_partials(self, graph, sources, algorithm, *, store=None, batch=None, bin_width=1.0,
                      device=None, **options):
        if device is not None:
            raise ValueError(f"the cpu backend has no devices (device={device!r}); pass None")
        return self.engine.iter_partials(graph, sources, algorithm, store=store, batch=batch,
                                         bin_width=bin_width, **options)


class CUDABackend(Backend):
    """numba-cuda on one GPU per call (``device`` ordinal, None = the current one); options:
    ``sort_by_degree``, ``delta``, ``persistent``."""

    name = "cuda"

    def __init__(self):
        super().__init__("simengine.network.cuda.engine")

    def available(self) -> bool:
        from numba import cuda

        return bool(cuda.is_available())

    def device_count(self) -> int:
        from .cuda import device_count

        return device_count()

    def iter_partials(self, graph, sources, algorithm, *, store=None, batch=None, bin_width=1.0,
                      device=None, **options):
        if not self.available():
            raise UserError("backend 'cuda' requested but no CUDA GPU is available "
                            "(numba.cuda.is_available() is False)")
        return self.engine.iter_partials(graph, sources, algorithm, store=store, batch=batch,
                                         bin_width=bin_width, device=device, **options)


_BACKENDS = {"cpu": CPUBackend(), "cuda": CUDABackend()}


def resolve_backend(backend: str = "auto") -> str:
    """``cpu`` or ``cuda`` for ``backend``.  ``auto`` → ``cuda`` when numba sees a real GPU (not the
    simulator), else ``cpu``.  ``cuda`` without a usable CUDA → UserError."""
    b = str(backend).lower()
    if b not in BACKEND_NAMES:
        raise UserError(f"unknown backend {backend!r}; expected one of {', '.join(BACKEND_NAMES)}")
    if b == "auto":
        from numba import config

        from ..field.backends import cuda_usable  # no driver node: no numba.cuda import

        return "cuda" if (not config.ENABLE_CUDASIM and cuda_usable()) else "cpu"
    if not _BACKENDS[b].available():
        raise UserError(f"backend {b!r} requested but no CUDA GPU is available "
                        "(numba.cuda.is_available() is False)")
    return b


def get_backend(backend: str) -> Backend:
    """The :class:`Backend` for ``backend`` (``auto`` is resolved first)."""
    return _BACKENDS[resolve_backend(backend)]


def plan(graph, algorithm: str = "auto", backend: str = "auto",
         num_sources: int | None = None) -> Plan:
    """Resolve backend and algorithm once for a run of ``num_sources`` sources (default n) on
    ``graph``: see :meth:`Backend.plan`."""
    return get_backend(backend).plan(graph, algorithm, num_sources)


def can_run(graph, algorithm: str, backend: str) -> bool:
    """True when ``backend`` (``cpu`` or ``cuda``) is available here and runs ``algorithm`` on
    ``graph`` as asked (without substituting it)."""
    b = _BACKENDS.get(str(backend).lower())
    if b is None:
        raise UserError(f"unknown backend {backend!r}; expected cpu or cuda")
    return b.available() and b.can_run(graph, algorithm)


def betweenness_plan(graph, backend: str) -> tuple[str, str]:
    """Where Brandes' betweenness runs for ``backend`` (``cpu`` | ``cuda``) on ``graph``, and the
    log line saying so: the CUDA engines run unweighted graphs and positive weights
    (:func:`.cuda.brandes_weighted.can_run`); other weighted graphs run the CPU engine (Dijkstra
    order) — said, never silently."""
    b = resolve_backend(backend)
    if b == "cuda" and graph.weighted:
        from .cuda.brandes_weighted import can_run

        ok, why = can_run(graph)
        if not ok:
            return "cpu", (f"betweenness: {why}; this weighted graph runs the CPU engine "
                           f"(Dijkstra order)")
        return "cuda", ("betweenness: Brandes (distance buckets, all sources of a batch at once) "
                        "on cuda; the path statistics come from the same traversals")
    how = "Dijkstra order" if graph.weighted else "BFS levels"
    return b, (f"betweenness: Brandes ({how}) on {b}; the path statistics come from the same "
               f"traversals")


def report_substitution(p: Plan, log=None) -> None:
    """Send ``p.note`` to ``log`` (a callable taking one string) when ``p`` substitutes an
    algorithm; without ``log``, warn (:class:`AlgorithmSubstitution`)."""
    if not p.substituted:
        return
    if log is not None:
        log(p.note)
    else:
        warnings.warn(p.note, AlgorithmSubstitution, stacklevel=3)


__all__ = ["ALGORITHMS", "AlgorithmSubstitution", "Backend", "Plan", "betweenness_plan", "can_run",
           "get_backend",
           "plan", "report_substitution", "resolve_backend"]
