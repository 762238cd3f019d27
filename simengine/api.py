"""The Python API: run scenarios and compute shortest-path statistics without the command line.

``simengine.run``, ``simengine.load``, ``simengine.path_statistics`` and ``simengine.PathResults``
are these objects (docs/python.md has worked examples). Results of graph runs are keyed by the
caller's own vertex labels (networkx node labels, or the labels passed in), never by positions.
"""
from __future__ import annotations

from collections.abc import Mapping
from pathlib import Path

import numpy as np

from .errors import UserError

__all__ = ["load", "run", "run_ensemble", "path_statistics", "PathResults", "VertexValues"]


# =============================================================================== scenarios
def load(scenario, overrides=None):
    """A validated :class:`~simengine.config.Scenario` from a dict, a YAML file path or YAML text.

    ``overrides`` are ``"key.path=value"`` strings as with ``--set``. Bad input raises
    :class:`~simengine.errors.UserError` with the same one-line message the CLI prints.
    """
    from .config import load_scenario, scenario_from_text, validate_located
    from .config.loader import Located, apply_overrides

    if isinstance(scenario, Mapping):
        name = scenario.get("name", "scenario")
        located = Located(dict(scenario), {}, Path(f"<{name}>"))
        return validate_located(apply_overrides(located, overrides))
    if isinstance(scenario, str) and "\n" in scenario:
        return scenario_from_text(scenario, overrides=overrides)
    if isinstance(scenario, (str, Path)):
        return load_scenario(scenario, overrides)
    raise TypeError(f"expected a dict, a YAML path or YAML text, got {type(scenario).__name__}")


def run(scenario, output=None, *, overrides=None, resume=False, overwrite=False, progress=False,
        log=None) -> Path:
    """Run a scenario (dict, YAML path or YAML text) and return the path of its HDF5 output.

    ``output`` defaults to ``outputs/<name>.h5``; ``resume``/``overwrite`` behave as the CLI
    flags; ``progress=True`` shows the progress bar or log lines; ``log`` receives the run's
    messages (default: none). Raises :class:`~simengine.errors.UserError` for bad input,
    :class:`~simengine.errors.SimulationError` when the field blows up, and
    ``simengine.control.runner.Interrupted`` after Ctrl-C (a checkpoint was written).
    """
    from .control.runner import Runner

    sc = load(scenario, overrides)
    runner = Runner(sc, output, resume=resume, overwrite=overwrite, progress=progress,
                    log=log or (lambda msg: None))
    runner.run()
    return runner.output


def run_ensemble(scenarios, outputs, *, overrides=None, progress=False, log=None) -> list:
    """Run field scenarios that differ only in their ``initial`` block as one ensemble (one
    solver, one launch per stage on a GPU) and return their output paths; every output is the
    file :func:`run` with ``resume=True`` would write (fields and observables bit for bit).

    ``scenarios``: dicts, YAML paths or YAML texts (``overrides`` apply to each); ``outputs``: one
    path per scenario. Complete outputs are skipped, interrupted ones resumed. After every member
    has run, the first failure is raised: :class:`~simengine.errors.UserError` (bad input, or
    scenarios that cannot share an ensemble), :class:`~simengine.errors.SimulationError` (a
    member blew up; the others finished), ``simengine.control.runner.Interrupted`` (Ctrl-C: checkpoints
    were written).
    """
    from .errors import SimulationError
    from .control.ensemble_run import run_ensemble as _run
    from .control.runner import Interrupted

    scs = [load(s, overrides) for s in scenarios]
    outputs = [Path(p) for p in outputs]
    results = _run(scs, outputs, log=log or (lambda msg: None), progress=progress)
    for rc, message in results:
        if rc == 2:
            raise UserError(message.removeprefix("error: "))
        if rc == 130:
            raise Interrupted(message)
        if rc:
            raise SimulationError(message)
    return outputs


# =============================================================================== graphs
class VertexValues(Mapping):
    """A read-only mapping vertex label → value, backed by one NumPy array.

    ``values[label]`` is a float; ``values.array`` is the array in vertex order and
    ``values.labels`` the labels in the same order; iteration yields labels.
    """

    def __init__(self, labels, index, array):
        self.labels = labels
        self._index = index
        self.array = np.asarray(array)
        self.array.setflags(write=False)

    def __getitem__(self, label):
        try:
            i = self._index[label]
        except (KeyError, TypeError):
            raise KeyError(label) from None
        return self.array[i].item()

    def __iter__(self):
        return iter(self.labels)

    def __len__(self):
        return len(self.labels)

    def __repr__(self):
        head = ", ".join(f"{lab!r}: {self.array[i]:.6g}" for i, lab in enumerate(self.labels[:4]))
        more = ", ..." if len(self.labels) > 4 else ""
        return f"VertexValues({{{head}{more}}}, n={len(self.labels)})"


#: per-vertex results a PathResults exposes as label → value mappings (None when not computed)
VERTEX_VALUES = ("eccentricity", "closeness", "harmonic", "betweenness", "betweenness_stderr",
                 "clustering", "core_number")

SCALARS = ("n", "mean_distance", "diameter", "radius", "efficiency", "reachable_pairs",
           "unreachable_pairs", "connected", "sampled", "estimate", "sources_done")


class PathResults:
    """Shortest-path statistics of one graph, keyed by the caller's vertex labels.

    Attributes
    ----------
    labels : tuple of the vertex labels, in the graph's vertex order.
    eccentricity, closeness, harmonic : :class:`VertexValues` (label → value); eccentricity is
        NaN for vertices that were not sources (sampled runs).
    betweenness, betweenness_stderr, clustering, core_number : :class:`VertexValues` when
        computed (the ``betweenness`` / ``clustering`` / ``kcore`` statistics), else None.
    distance_histogram : int64 array, ordered pairs by distance bin; ``bin_width`` its width.
    statistics : dict of every scalar (``mean_distance``, ``diameter``, ``radius``,
        ``efficiency``, ``connected``, ..., ``*_se`` for sampled runs); each is also an attribute.
    sources : tuple of the labels of the source vertices.
    edge_betweenness : {(u, v): value} (networkx ``edge_betweenness_centrality``) with the
        ``edge_betweenness`` statistic, else None.
    """

    def __init__(self, labels, results: dict, sources=None):
        labels = tuple(labels)
        n = len(labels)
        index = {lab: i for i, lab in enumerate(labels)}
        if len(index) != n:
            raise ValueError("vertex labels must be distinct")
        self.labels = labels
        self._index = index
        self.statistics = {k: (v.item() if isinstance(v, np.generic) else v)
                           for k, v in results.items() if np.ndim(v) == 0}
        for name in VERTEX_VALUES:
            arr = results.get(name)
            setattr(self, name, None if arr is None else VertexValues(labels, index, arr))
        self.distance_histogram = np.asarray(results.get("distance_histogram", np.zeros(0, int)))
        self.bin_width = float(results.get("histogram_bin_width", 1.0))
        self.sources = tuple(labels[int(i)] for i in (np.arange(n) if sources is None else sources))
        #: {(u, v): value} with the ``edge_betweenness`` statistic, else None
        self.edge_betweenness = None

    def __getattr__(self, name):
        stats = self.__dict__.get("statistics", {})
        if name in stats:
            return stats[name]
        raise AttributeError(name)

    def __repr__(self):
        parts = [f"{k}={self.statistics[k]!r}" for k in SCALARS if k in self.statistics]
        return f"PathResults({', '.join(parts)})"

    @classmethod
    def from_output(cls, path) -> "PathResults":
        """Read a network run's output file (vertex labels from ``/vertex/id`` when stored)."""
        from .io.reader import Result

        with Result(path) as r:
            if r.kind != "network":
                raise UserError(f"{path}: holds a {r.kind} run, not a network run")
            res = dict(r.statistics)
            res.update(r.vertex)
            labels = r.vertex_ids.tolist()
            if r.distance_histogram is not None:
                res["distance_histogram"] = r.distance_histogram
                res["histogram_bin_width"] = float(
                    r.file["distance_histogram"].attrs.get("bin_width", 1.0))
            sources = r.file["sources"][()] if "sources" in r.file else None  # row numbers
        return cls(labels, res, sources)


def _as_graph(graph, weight, labels, directed):
    """(CSRGraph, labels) for a networkx graph, a scipy sparse matrix or a CSRGraph; without
    ``weight`` the graph is unweighted (networkx's convention), whatever it carries."""
    import dataclasses

    from .network.graph import CSRGraph

    if isinstance(graph, CSRGraph):
        g = graph
        if weight is None and g.weighted:
            g = dataclasses.replace(g, weights=None, _transpose=None)
    elif hasattr(graph, "nodes") and hasattr(graph, "edges"):  # networkx
        if labels is None:
            labels = list(graph.nodes)
        if weight is True:
            weight = "weight"
        g = CSRGraph.from_networkx(graph, weight=weight)
    elif hasattr(graph, "tocoo"):  # scipy.sparse
        A = graph.tocoo()
        if A.shape[0] != A.shape[1]:
            raise ValueError(f"the adjacency matrix must be square, got shape {A.shape}")
        weighted = weight is not None and not np.all(A.data == 1)
        g = CSRGraph.from_scipy(A, directed=True if directed is None else bool(directed),
                                weighted=weighted)
    else:
        raise TypeError("expected a networkx graph, a scipy.sparse matrix or a CSRGraph, got "
                        f"{type(graph).__name__}")
    if directed is not None and not hasattr(graph, "tocoo") and bool(directed) != g.directed:
        g = _with_direction(g, bool(directed))
    labels = list(range(g.n)) if labels is None else list(labels)
    if len(labels) != g.n:
        raise ValueError(f"{len(labels)} labels for a graph of {g.n} vertices")
    return g, labels


def _with_direction(g, directed: bool):
    """``g`` seen as directed or undirected, as networkx's ``to_directed`` / ``to_undirected``:
    an undirected graph's edges become both arcs; a directed graph's arcs become edges (an arc
    pair u → v, v → u becomes one edge of the smaller weight)."""
    from .network.graph import CSRGraph

    src, dst = g.arcs()
    out = CSRGraph.from_edges(g.n, src, dst, g.weights, directed=directed)
    out.ids = g.ids
    return out


def _wanted(statistics):
    """The checked list of statistics (the names ``metrics.statistics`` takes), or None."""
    if statistics is None:
        return None
    from .config.schema import STATISTICS

    if isinstance(statistics, str):
        statistics = [statistics]
    wanted = list(statistics)
    for name in wanted:
        if name not in STATISTICS:
            raise UserError(f"statistics: {name!r} is not a statistic; expected some of "
                            f"{', '.join(STATISTICS)}")
    return wanted


def path_statistics(graph, *, sources="all", algorithm="auto", weight=None, labels=None,
                    directed=None, backend="cpu", bin_width=1.0, statistics=None,
                    betweenness_normalized=False) -> PathResults:
    """All-pairs (or sampled) shortest-path statistics of ``graph``, keyed by vertex label.

    Parameters
    ----------
    graph : networkx Graph/DiGraph (labels = its nodes), scipy.sparse square matrix (entry (i, j) is
        the arc i → j; labels = 0..n−1 or ``labels``) or :class:`~simengine.network.graph.CSRGraph`.
    sources : ``"all"``, ``{"sample": K, "seed": S}`` (estimates with standard errors) or a list of
        labels.
    algorithm : ``auto`` | ``msbfs`` | ``bfs`` | ``dial`` | ``dijkstra`` | ``fw`` (docs/network.md).
    weight : as networkx: ``None`` (default) counts hops whatever the graph carries; an edge
        attribute name (networkx) holds the lengths; for a scipy matrix or a CSRGraph any value
        but ``None`` (e.g. ``True``) uses its entries / weights (a matrix of ones is unweighted).
    directed : None (default) keeps the graph's own direction (a scipy matrix is directed);
        ``False`` treats a directed graph as undirected (networkx's ``G.to_undirected()``: every
        arc an edge; a pair u → v, v → u one edge of the smaller weight), ``True`` an
        undirected one as directed (``G.to_directed()``: each edge both arcs — the same
        distances; betweenness on the directed scale).
    backend : ``cpu`` or ``cuda``.
    bin_width : distance-histogram bin width for weighted graphs.
    statistics : None (every path statistic of the one fused pass, as before) or a list of the
        names a scenario's ``metrics.statistics`` takes — ``betweenness`` runs Brandes' engine
        (``res.betweenness``), ``components``, ``mst_weight``, ``clustering``, ``assortativity``,
        ``kcore`` add their passes — and the results hold those only.
    betweenness_normalized : betweenness divided by (n−1)(n−2) (networkx's ``normalized=True``).
    """
    from .network.apsp import choose_sources, run_sources
    from .network.betweenness import mode
    from .network.statistics import PathStatistics, select_statistics
    from .network.structure import graph_extras, structure_results

    wanted = _wanted(statistics)
    g, labels = _as_graph(graph, weight, labels, directed)
    if isinstance(sources, (list, tuple)):
        index = {lab: i for i, lab in enumerate(labels)}
        missing = [s for s in sources if s not in index]
        if missing:
            raise UserError(f"sources: {missing[0]!r} is not a vertex of the graph")
        sources = [index[s] for s in sources]
    src, sampled = choose_sources(g.n, sources)
    btw = wanted is not None and "betweenness" in wanted
    stats = PathStatistics.for_graph(g, bin_width=bin_width, sampled=sampled,
                                     planned_sources=len(src),
                                     betweenness=mode(btw, betweenness_normalized))
    run_sources(g, src, stats, algorithm=algorithm, backend=backend)
    res = stats.results(graph=g) if btw else stats.results()
    edges = None
    if wanted is not None and "edge_betweenness" in wanted:
        from .network.edge_betweenness import edge_betweenness

        edges = edge_betweenness(g, src, sampled=sampled, normalized=betweenness_normalized,
                                 backend=backend)
    if wanted is not None:
        res = select_statistics(res, wanted)
        res.update(graph_extras(g, wanted))
        scalars, vertex = structure_results(g, wanted, backend)
        res.update(scalars)
        res.update(vertex)
    out = PathResults(labels, res, src)
    if edges is not None:
        out.edge_betweenness = _edge_values(g, labels, edges)
    return out


def _edge_values(g, labels, edges) -> dict:
    """{(u, v): value} by vertex label, as networkx's ``edge_betweenness_centrality``: one key
    per arc of a directed graph, one per edge (its first arc in CSR order) of an undirected one."""
    src, dst, val = edges["edge_source"], edges["edge_target"], edges["edge_betweenness"]
    out = {}
    for u, v, x in zip(src.tolist(), dst.tolist(), val.tolist()):
        if g.directed or (labels[v], labels[u]) not in out:
            out[(labels[u], labels[v])] = x
    return out
