"""The writer a network run uses: ``write(done, elapsed, results=None)`` after each batch of work.

Each write stores the distance rows computed since the previous one and a checkpoint of the
accumulators as parts, then commits the index (:mod:`simengine.io.network_store`).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import OutputError
from .durable import remove
from .metadata import annotate_network
from .network_store import NetworkIndex, NetworkParts, clean_parts


class NetworkOutput:
    """The output of a network run, written by rank 0. Plain data in: the root ``attributes``,
    the graph's ``n``, the run's ``sources`` (in plan order), the dtype of stored distance rows
    (None: none stored), whether predecessor rows come beside them, the input's vertex ids
    (None: 0..n-1); each :meth:`write` takes the rows computed since the last one and the
    accumulators' state."""

    def __init__(self, path, fresh, *, compression=None, attributes=None, n=0, sources=(),
                 store_dtype=None, predecessors=False, vertex_ids=None):
        self.path = Path(path)
        self.parts = NetworkParts(self.path, compression)
        if fresh:
            unreachable = None
            if store_dtype is not None:
                from ..network.statistics import unreachable_sentinel

                unreachable = unreachable_sentinel(store_dtype)
            self.index = NetworkIndex(self.path, attributes, n, len(sources), store_dtype,
                                      unreachable, compression)
            self.index.hook = annotate_network
            self.index.predecessors = bool(predecessors)
            self.parts.run_id = self.index.run_id
            if vertex_ids is not None:   # the input's name of vertex i
                self.index.vertex_id = vertex_ids
            self.index.source_rows = np.asarray(sources, dtype=np.int64)
            self.rows_done = 0
            try:
                self.parts.write_sources(sources)
            except OutputError as exc:
                raise OutputError(f"{exc}; nothing was committed to {self.path}") from None
        else:
            self.index, _ = NetworkIndex.load(self.path, check_checkpoint=False)
            self.index.hook = annotate_network
            self.index.compression = compression
            self.parts.run_id = self.index.run_id
            self.rows_done = self.index.rows[-1][1] if self.index.rows else 0
            clean_parts(self.index)

    def write(self, done, elapsed, state, rows=(), pred_rows=(), results=None):
        """Commit the distance ``rows`` (and ``pred_rows``) computed since the last write, the
        accumulators' ``state`` as the checkpoint after ``done`` sources, and at the end the
        ``results`` ((scalars, per-vertex, histogram, bin width, scope, per-arc results))."""
        written = []
        try:
            committed = []
            if len(rows):
                block = np.concatenate(rows)
                preds = np.concatenate(pred_rows) if self.index.predecessors else None
                first, end = self.parts.append_rows(self.rows_done, block, preds)
                written.append(self.parts.root / f"distances/r{first:012d}-{end:012d}.h5")
                committed.append((first, end))
            layout = self.parts.write_checkpoint(done, state)
            small = {k: v for k, v in state.items() if np.ndim(v) == 0}
            self.index.commit(committed, (done, elapsed, layout, small), results,
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
        if committed:
            self.rows_done = committed[-1][1]
