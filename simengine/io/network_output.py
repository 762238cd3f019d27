"""The writer a network run uses: ``write(done, elapsed, results=None)`` after each batch of work.

Each write stores the distance rows computed since the previous one and a checkpoint of the
accumulators as parts, then commits the index (:mod:`simengine.io.network_store`).
"""
from __future__ import annotations

import time
from pathlib import Path

import numpy as np

from ..version import __version__
from ..errors import OutputError
from .durable import remove
from .network_store import NetworkIndex, NetworkParts, clean_parts
from .metadata import annotate_network, plan_attributes


def _attributes(job, sc):
    from ..network.structure import startup_seconds   # the graph, compile, upload: not work

    g = job.graph
    return {"simengine_version": __version__, "name": sc.name, "scenario": sc.as_yaml(),
            "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"), "algorithm": job.algorithm,
            "backend": job.backend, "graph_n": g.n, "graph_arcs": g.num_arcs,
            "graph_directed": bool(g.directed), "graph_weighted": bool(g.weighted),
            "graph_hash": g.content_hash(), **startup_seconds(job),
            **plan_attributes(job.run_plan)}


class NetworkOutput:
    def __init__(self, job, path, sc, fresh, truncate_to=None):
        self.job, self.path, self.sc = job, Path(path), sc
        compression = sc.spec.output.compression
        self.parts = NetworkParts(self.path, compression)
        if fresh:
            unreachable = None
            if job.store_dtype is not None:
                from ..network.statistics import unreachable_sentinel

                unreachable = unreachable_sentinel(job.store_dtype)
            self.index = NetworkIndex(self.path, _attributes(job, sc), job.graph.n, job.total,
                                      job.store_dtype, unreachable, compression)
            self.index.hook = annotate_network
            self.index.predecessors = bool(getattr(job, "store_predecessors", False))
            self.parts.run_id = self.index.run_id
            if job.graph.ids is not None:   # the input's name of vertex i
                self.index.vertex_id = job.graph.output_ids()
            self.index.source_rows = np.asarray(job.sources, dtype=np.int64)
            self.rows_done = 0
            try:
                self.parts.write_sources(job.sources)
            except OutputError as exc:
                raise OutputError(f"{exc}; nothing was committed to {self.path}") from None
        else:
            self.index, _ = NetworkIndex.load(self.path, check_checkpoint=False)
            self.index.hook = annotate_network
            self.index.compression = compression
            self.parts.run_id = self.index.run_id
            self.rows_done = self.index.rows[-1][1] if self.index.rows else 0
            clean_parts(self.index)

    def write(self, done, elapsed, results=None):
        job = self.job
        written = []
        try:
            rows = []
            if job.pending_rows:
                block = np.concatenate(job.pending_rows)
                preds = (np.concatenate(job.pending_pred_rows) if self.index.predecessors
                         else None)
                first, end = self.parts.append_rows(self.rows_done, block, preds)
                written.append(self.parts.root / f"distances/r{first:012d}-{end:012d}.h5")
                rows.append((first, end))
            state = job.stats.state(copy=False)     # written before the next add
            layout = self.parts.write_checkpoint(done, state)
            small = {k: v for k, v in state.items() if np.ndim(v) == 0}
            self.index.commit(rows, (done, elapsed, layout, small),
                              self._results(results) if results is not None else None,
                              complete=results is not None, digests=self.parts.take_digests())
        except OutputError as exc:
            if not getattr(exc, "committed", False):
                for p in written:
                    remove(p)
            last = self.index.done
            tail = (f"nothing was committed to {self.path}" if last is None else
                    f"the checkpoint after {last} sources in {self.path} is intact (continue "
                    f"with --resume)")
            raise OutputError(f"{exc}; {tail}") from None
        job.pending_rows = []
        job.pending_pred_rows = []
        if rows:
            self.rows_done = rows[-1][1]

    def _results(self, res):
        from ..network.structure import extra_metrics
        from ..network.statistics import select_statistics

        res = select_statistics(res, self.job.spec.metrics.statistics)
        scalars = {k: v for k, v in res.items()
                   if np.ndim(v) == 0 and isinstance(v, (int, float, bool, np.integer, np.floating,
                                                         np.bool_))}
        scalars.update(extra_metrics(self.job))
        vertex = {k: res[k] for k in ("eccentricity", "closeness", "harmonic", "betweenness",
                                      "betweenness_stderr") if k in res}
        from ..network.structure import job_structure_results
        more_scalars, more_vertex = job_structure_results(self.job)
        scalars.update(more_scalars)
        vertex.update(more_vertex)
        hist = res.get("distance_histogram")
        edge = getattr(self.job, "edge_results", None)    # /edge: per-arc results
        return (scalars, vertex, hist, float(res.get("histogram_bin_width", 1.0)),
                str(res.get("scope", "all sources")), edge)
