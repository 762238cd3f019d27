"""The graph-structure entries of ``metrics.statistics`` — ``clustering``, ``assortativity``,
``kcore`` — for a network run: one pass each over the graph, after the shortest paths (they need
no distances).  Definitions: :mod:`simengine.network.clustering`,
:mod:`simengine.network.degree_structure` and docs/network.md, "Structure statistics".

``clustering`` runs on the run's backend (a CUDA kernel on ``cuda``); ``assortativity`` and
``kcore`` have CPU kernels only (O(m), cheap): on a ``cuda`` run they are computed on the CPU and
the log says so once.
"""
from __future__ import annotations

#: the entries of ``metrics.statistics`` this module computes
STRUCTURE = ("clustering", "assortativity", "kcore")

#: the result keys each entry produces (scalars go to /statistics, arrays to /vertex)
STRUCTURE_KEYS = {
    "clustering": ("average_clustering", "transitivity", "clustering"),
    "assortativity": ("degree_assortativity",),
    "kcore": ("degeneracy", "core_number"),
}


def structure_results(graph, wanted, backend: str = "cpu", log=None, device=None):
    """``(scalars, vertex_arrays)`` of the structure statistics named in ``wanted``."""
    wanted = [w for w in STRUCTURE if w in set(wanted)]
    scalars, vertex = {}, {}
    if not wanted:
        return scalars, vertex
    cpu_only = [w for w in wanted if w != "clustering"]
    if backend == "cuda" and cpu_only and log is not None:
        log(f"metrics.statistics: {' and '.join(cpu_only)} computed on the CPU (no GPU kernel; "
            f"one O(m) pass)")
    if "clustering" in wanted:
        from .clustering import clustering_results

        r = clustering_results(graph, backend, device)
        scalars["average_clustering"] = r["average_clustering"]
        scalars["transitivity"] = r["transitivity"]
        vertex["clustering"] = r["clustering"]
    if "assortativity" in wanted:
        from .degree_structure import degree_assortativity

        scalars["degree_assortativity"] = degree_assortativity(graph)
    if "kcore" in wanted:
        from .degree_structure import core_numbers

        core = core_numbers(graph)
        vertex["core_number"] = core
        scalars["degeneracy"] = int(core.max()) if len(core) else 0
    return scalars, vertex


def job_structure_results(job):
    """:func:`structure_results` for a :class:`~simengine.control.network_job.NetworkJob` (its
    ``metrics.statistics``, backend and log)."""
    return structure_results(job.graph, job.spec.metrics.statistics, job.backend, job.log)


def extra_metrics(job) -> dict:
    """Components and spanning-forest weight, when the scenario asks for them."""
    return graph_extras(job.graph, job.spec.metrics.statistics)


def graph_extras(graph, wanted) -> dict:
    """``components`` (and the component summary) and ``mst_weight`` (undirected graphs) when
    ``wanted`` names them: extra passes over the graph, no distances."""
    from . import components, mst

    out = {}
    wanted = set(wanted)
    if "components" in wanted:
        summary = components.component_summary(graph)
        out["components"] = summary["weak_components"]
        out.update(summary)
    if "mst_weight" in wanted and not graph.directed:
        out["mst_weight"] = mst.minimum_spanning_forest_weight(graph)
    return out


def startup_seconds(job) -> dict:
    """Start-up of the process that created the output (root attributes of the file), never in
    ``elapsed``: the graph's generation or reading, the
    kernels' compilation (or load from numba's disk cache), the GPU upload."""
    out = {"startup_graph_seconds": float(getattr(job, "graph_seconds", 0.0)),
           "startup_compile_seconds": float(getattr(job, "warmup_seconds", 0.0)
                                            + getattr(job, "host_seconds", 0.0))}
    if getattr(job, "backend", None) == "cuda":
        out["startup_upload_seconds"] = float(getattr(job, "upload_seconds", 0.0))
    return out
