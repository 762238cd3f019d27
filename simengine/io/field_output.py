"""The writer a field run uses: buffers observables, snapshots and a checkpoint between writes.

One process writes the whole field as one block (an MPI run splits the same calls: every rank
writes its block with :class:`~simengine.io.field_store.FieldParts`, rank 0 commits with
:class:`~simengine.io.field_store.FieldIndex`). The interface the field job uses is ``obs``,
``snaps``, ``ckpt`` and ``write(complete)``.
"""
from __future__ import annotations

import time
from pathlib import Path

from .. import __version__
from ..errors import OutputError
from .durable import remove
from .field_store import FieldIndex, FieldParts, clean_parts


def root_attributes(sc, solver_name) -> dict:
    return {"simengine_version": __version__, "name": sc.name, "scenario": sc.as_yaml(),
            "solver": solver_name, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z")}


class FieldOutput:
    """Buffers observables/snapshots between writes; each write costs the bytes it adds."""

    def __init__(self, job, path, sc, fresh, truncate_to=None):
        self.job, self.path, self.sc = job, Path(path), sc
        self.obs = []
        self.snaps = []
        self.ckpt = None
        grid = job.grid
        self.parts = FieldParts(self.path, grid.shape, job.dtype, sc.spec.output.compression)
        if fresh:
            self.index = FieldIndex(self.path, grid.shape, grid.spacing, float(sc.spec.time.dt),
                                    job.dtype, root_attributes(sc, job.solver.name), job.total)
        else:
            self.index = FieldIndex.load(self.path, check_checkpoint=False)
            if truncate_to is not None:
                self.index.truncate(truncate_to)
            self.index.steps_total = job.total
            try:
                self.index.commit()   # the truncated series, before any new part is written
            except OutputError as exc:
                raise self._failed(exc) from None
            clean_parts(self.index)   # parts of writes that never committed

    def write(self, complete=False):
        """Write the buffered snapshots and checkpoint as parts, then commit the index."""
        written = []
        try:
            snapshots = []
            for step, phi in self.snaps:
                written.append(self.parts.path_of("phi", step, 0, phi.shape[0]))
                snapshots.append((step, [self.parts.append_snapshot(step, phi, 0)]))
            checkpoint = None
            if self.ckpt is not None:
                step, phi = self.ckpt
                checkpoint = (step, [self.parts.write_checkpoint(step, phi, 0)])
                if step != self.index.ckpt_step:
                    written.append(self.parts.path_of("checkpoint", step, 0, phi.shape[0]))
            self.index.commit(snapshots, checkpoint, self.obs, complete)
        except OutputError as exc:
            for p in written:
                remove(p)
            raise self._failed(exc) from None
        self.obs, self.snaps, self.ckpt = [], [], None

    def _failed(self, exc):
        if self.index.ckpt_step is None:
            return OutputError(f"{exc}; nothing was committed to {self.path}")
        return OutputError(f"{exc}; the checkpoint at step {self.index.ckpt_step} in "
                           f"{self.path} is intact (continue with --resume)")
