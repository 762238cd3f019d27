"""Problem descriptions: what a plan is computed from.

A :class:`FieldProblem` is the interface the field rules read (duck-typed; rule functions need not
import it): ``ndim``, ``shape``, ``precision``, ``boundary``, ``integrator``, ``backend``
(resolved: ``cpu`` | ``cuda``), ``kernel`` (the memory strategy), ``fused`` (``'auto'`` | True |
False), ``ranks``, ``devices``, ``symbol``, ``adaptive``. A :class:`NetworkProblem` holds the graph's
*shape* (:class:`GraphShape`: vertices, arcs, weighted, integer weights, directed — the numbers the
engines' rules read, from the built graph or predicted from the scenario) and the metrics asked for.
"""
from __future__ import annotations

from dataclasses import dataclass, field


@dataclass(frozen=True)
class FieldProblem:
    ndim: int
    shape: tuple
    precision: str                 #: ``float32`` | ``float64``
    boundary: str                  #: ``periodic`` | ``mirror`` | ``fixed``
    integrator: str                #: ``rk2`` | ``euler`` | ``spectral``
    backend: str                   #: resolved: ``cpu`` | ``cuda``
    kernel: str                    #: the memory strategy (``solver.kernel``)
    fused: object = "auto"         #: ``'auto'`` | True | False
    ranks: int = 1
    devices: int = 0               #: GPUs in use (0 on the CPU)
    symbol: str = "fd"             #: spectral integrator: ``fd`` | ``exact``
    adaptive: bool = False
    requested_backend: str = "auto"
    #: launch hints of the unfused CUDA kernels (``solver.block``, ``solver.layout``)
    block: object = None
    layout: str | None = None
    tile: tuple | None = None
    steps: int = 0                 #: fixed steps (0: adaptive, the steps are not known)
    snapshot_every: int = 0
    end: float | None = None       #: ``time.end``, the simulated time to reach
    snapshot_dt: float | None = None   #: ``output.snapshot_dt``
    #: what the physics asks of a target (``field/model_rules.needs``: general, mobility, ...)
    model_needs: tuple = ()
    #: the physics in words (``Model.describe``; empty for the original cubic keys)
    model: str = ""

    @property
    def cells(self) -> int:
        n = 1
        for s in self.shape:
            n *= int(s)
        return n


@dataclass(frozen=True)
class GraphShape:
    """The numbers of a graph the engines' rules read (the same attribute names as
    :class:`~simengine.network.graph.CSRGraph`)."""

    n: int
    num_arcs: int
    weighted: bool
    dial: bool                     #: every weight an integer in [0, DIAL_MAX_WEIGHT] (or none)
    exact: bool                    #: every distance an exact float64 sum (no or integer weights)
    directed: bool
    build_bytes: int = 0           #: working memory while building the graph (beyond the CSR)
    how: str = "the graph"         #: where the numbers come from
    #: (smallest, largest) weight, None when unweighted or not known before the graph is read
    weight_range: tuple | None = None

    @classmethod
    def of(cls, graph, how: str = "the graph") -> "GraphShape":
        """The shape of a built graph."""
        from ..network.predecessors import exact_rows
        from ..network.weights import dial_applicable

        lines = graph.num_arcs if graph.directed else graph.num_arcs // 2
        w = graph.weights if graph.weighted else None
        rng = (float(w.min()), float(w.max())) if w is not None and len(w) else None
        return cls(int(graph.n), int(graph.num_arcs), bool(graph.weighted),
                   dial_applicable(graph), exact_rows(graph), bool(graph.directed),
                   100 * lines + 48 * graph.num_arcs, how, rng)

    @property
    def density(self) -> float:
        n = self.n
        return self.num_arcs / (n * (n - 1)) if n > 1 else 1.0


@dataclass(frozen=True)
class NetworkProblem:
    graph: GraphShape
    backend: str                   #: resolved: ``cpu`` | ``cuda``
    algorithm: str                 #: as asked (``auto`` or a name of network/algorithms.py)
    num_sources: int               #: the whole run's sources
    statistics: tuple = ()
    store_distances: bool = False
    store_predecessors: bool = False
    batch: int | None = None       #: ``solver.batch`` as given
    checkpoint_every: int = 1
    ranks: int = 1
    requested_backend: str = "auto"
    graph_key: str = "graph"       #: the scenario key the graph comes from
    file_path: str = ""            #: ``graph.file.path`` as written (a graph file)
    #: the built graph, when there is one: the rules that read the graph itself (the GPU's
    #: probe BFS, ``per_source.should_run``) get it; the others read ``graph`` (the shape)
    built: object = field(default=None, compare=False, repr=False)

    def __getstate__(self):
        """Pickled (the plan broadcast from rank 0) without the built graph: every rank has
        its own."""
        return {**self.__dict__, "built": None}

    @property
    def betweenness(self) -> bool:
        return "betweenness" in self.statistics

    @property
    def sources_per_rank(self) -> int:
        return -(-self.num_sources // max(1, self.ranks))
