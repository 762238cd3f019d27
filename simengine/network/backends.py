"""Backend registry of the network engine: which backend runs, which algorithm it runs, on which
device.

* :func:`resolve_backend` turns ``auto`` into ``cpu`` or ``cuda`` (once per run).
* :func:`choose` walks the table once for a run: a requested algorithm (any name of
  :mod:`simengine.network.algorithms`, ``auto`` included) becomes the concrete algorithm a backend
  runs on a graph (or a graph's *shape*: :class:`simengine.plan.problem.GraphShape`), with the
  reason.  When the backend lacks the requested algorithm but has one that computes the same
  distances (``dijkstra`` on the GPU → ``frontier``; ``nearfar`` on the CPU → ``dial``), the choice
  says so (``Choice.substituted``, ``Choice.note``) — nothing is replaced silently.  Two more rows
  of the same table: Floyd–Warshall does not run where predecessors of real weights are asked
  (:func:`fw_refusal`; the engine's ``without_fw`` replaces it), and Brandes' engine runs when
  betweenness is asked (:func:`brandes_backend` says where).  The run's plan
  (:mod:`simengine.plan`) holds the :class:`Choice`; nothing amends it afterwards.
* :func:`get_backend` gives the :class:`Backend`, which answers ``can_run(graph, algorithm)`` and
  yields the per-batch partials on an explicit device.

Each backend's ``auto`` rule is a function of the graph's shape and of the run's total number of
sources (``cpu.engine.auto_algorithm``, ``cuda.engine.auto_algorithm``), declared beside its
kernels.
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
class Choice:
    """The table's answer for a run.

    backend : ``cpu`` | ``cuda``
    algorithm : the concrete algorithm (one the backend runs)
    requested : the canonical name that was asked for (``auto`` or an algorithm)
    reason : why ``algorithm``: the ``auto`` rule's reason, the substitution's reason, or
        ``"as requested"``
    substituted : True when ``algorithm`` replaces a requested algorithm the backend lacks
    engine : the row that runs: ``algorithm``, or ``brandes`` when betweenness is asked
    engine_backend : where ``engine`` runs (Brandes on weighted graphs: ``cpu``)
    engine_note : the betweenness row's line ("" otherwise)
    rejected : ((alternative, why not), ...) of the rows passed over
    """

    backend: str
    algorithm: str
    requested: str
    reason: str
    substituted: bool = False
    engine: str = ""
    engine_backend: str = ""
    engine_note: str = ""
    rejected: tuple = ()
    replaced: str = ""          #: the algorithm ``algorithm`` stands in for (default: requested)

    def __post_init__(self):
        if not self.engine:
            object.__setattr__(self, "engine", self.algorithm)
        if not self.engine_backend:
            object.__setattr__(self, "engine_backend", self.backend)

    @property
    def note(self) -> str:
        """One line for the log, e.g. ``"cuda runs frontier instead of dijkstra: ..."``."""
        if self.substituted:
            return (f"{self.backend} runs {self.algorithm} instead of "
                    f"{self.replaced or self.requested}: {self.reason}")
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

    def choose(self, graph, algorithm: str = "auto", num_sources: int | None = None, *,
               predecessors: bool = False, betweenness: bool = False) -> Choice:
        """The table's rows for ``algorithm`` on ``graph`` (a CSRGraph or a GraphShape;
        UserError if nothing runs it).

        ``num_sources``: how many sources the whole run has (default n); ``auto`` may depend on
        it, so choose once per run, not per batch.  ``predecessors``: ``/predecessors`` are
        stored (Floyd–Warshall then runs only where its rows are exact path sums);
        ``betweenness``: Brandes' engine runs (and gives the path statistics).  Checks the
        weights (finite, >= 0) of a built graph."""
        a = canonical(algorithm)
        eng = self.engine
        rejected = []
        if a == "auto":
            alg, reason = eng.auto_algorithm(graph, num_sources)
            c = dict(algorithm=alg, reason=reason)
        elif a in eng.RUNS:
            c = dict(algorithm=a, reason="as requested")
        else:
            sub = eng.substitute(graph, a)
            if sub is None:
                raise UserError(f"backend {self.name!r} cannot run algorithm {a!r}; it runs "
                                f"{', '.join(eng.RUNS)}")
            c = dict(algorithm=sub[0], reason=sub[1], substituted=True)
            rejected.append((a, f"the {self.name} engine has no {a}"))
        if predecessors and c["algorithm"] == "fw":
            why = fw_refusal(graph)
            if why is not None:
                alg = "msbfs" if not graph.weighted else eng.without_fw(graph)
                rejected.append(("fw", why))
                c = dict(algorithm=alg, substituted=True, replaced="fw",
                         reason=f"{why}; {alg} gives the same distances and its rows give the "
                                f"predecessors")
        check_applicable(graph, c["algorithm"])
        if hasattr(graph, "weights"):
            check_weights(graph)
        if betweenness:
            where, note = brandes_backend(graph, self.name)
            rejected.append((c["algorithm"], "betweenness is asked: Brandes' traversals give the "
                                             "path statistics too"))
            c.update(engine="brandes", engine_backend=where, engine_note=note)
        return Choice(self.name, requested=a, rejected=tuple(rejected), **c)

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


def choose(graph, algorithm: str = "auto", backend: str = "auto",
           num_sources: int | None = None, *, predecessors: bool = False,
           betweenness: bool = False) -> Choice:
    """Resolve backend and algorithm once for a run of ``num_sources`` sources (default n) on
    ``graph`` (or its shape): see :meth:`Backend.choose`."""
    return get_backend(backend).choose(graph, algorithm, num_sources, predecessors=predecessors,
                                       betweenness=betweenness)


def fw_refusal(graph) -> str | None:
    """Why Floyd–Warshall's rows cannot give predecessors on ``graph`` (None when they can: no
    weights or integer weights, where every sum is an exact path sum)."""
    exact = getattr(graph, "exact", None)
    if exact is None:
        from .predecessors import exact_rows

        exact = exact_rows(graph)
    if exact:
        return None
    return ("metrics.store_predecessors: Floyd-Warshall's sums of real weights are not path "
            "sums")


def can_run(graph, algorithm: str, backend: str) -> bool:
    """True when ``backend`` (``cpu`` or ``cuda``) is available here and runs ``algorithm`` on
    ``graph`` as asked (without substituting it)."""
    b = _BACKENDS.get(str(backend).lower())
    if b is None:
        raise UserError(f"unknown backend {backend!r}; expected cpu or cuda")
    return b.available() and b.can_run(graph, algorithm)


def brandes_backend(graph, backend: str) -> tuple[str, str]:
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


def report_substitution(p: Choice, log=None) -> None:
    """Send ``p.note`` to ``log`` (a callable taking one string) when ``p`` substitutes an
    algorithm; without ``log``, warn (:class:`AlgorithmSubstitution`)."""
    if not p.substituted:
        return
    if log is not None:
        log(p.note)
    else:
        warnings.warn(p.note, AlgorithmSubstitution, stacklevel=3)


__all__ = ["ALGORITHMS", "AlgorithmSubstitution", "Backend", "Choice", "brandes_backend", "can_run",
           "choose", "fw_refusal", "get_backend", "report_substitution",
           "resolve_backend"]
