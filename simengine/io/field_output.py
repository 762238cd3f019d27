"""The writer a field run uses: buffers observables, snapshots and a checkpoint between writes.

The field job hands it ``obs`` rows, ``snaps`` and ``ckpt`` (this process's rows of the field)
and calls ``write(complete)``. Every process writes its own block of rows as parts
(:class:`~simengine.io.field_store.FieldParts`, rows ``job.slab.start:job.slab.stop``); the
blocks' row ranges are gathered on rank 0, which commits the index
(:class:`~simengine.io.field_store.FieldIndex`) once every block is durable; the outcome is
broadcast, so that a failed write stops every rank with the same one-line error. In one process
the communicator is trivial and the block is the whole field.
"""
from __future__ import annotations

import threading
import time
from pathlib import Path

from ..version import __version__
from ..errors import OutputError
from .durable import ignore_file_size_signal, remove
from .field_store import FieldIndex, FieldParts, clean_parts
from .metadata import annotate_field, plan_attributes


def root_attributes(sc, solver_name) -> dict:
    return {"simengine_version": __version__, "name": sc.name, "scenario": sc.as_yaml(),
            "solver": solver_name, "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
            "energy_convention": ENERGY_CONVENTION}


#: how /observables/free_energy is defined (root attribute ``energy_convention``)
ENERGY_CONVENTION = (
    "F = h^d Σ_cells [f(φ) + κ/2 |∇φ|²] (forward differences); with model.potential f(φ) = a0 φ + "
    "a1 φ²/2 + a2 φ³/3 + a3 φ⁴/4, the integral of f′ from 0, so f(0) = 0 (PFHub's "
    "ρ(c − cα)²(cβ − c)² given as coefficients is f + ρ cα² cβ²: F differs by that constant × the "
    "volume N·h^d); with model.free_energy f is the law's own (double_well: ρ(c − cα)²(cβ − c)², "
    "its constant kept)")


def _origin(job) -> dict:
    """``time_origin`` (t of step 0) for a run continued from a stored field's time."""
    clock = getattr(job, "clock", None)
    origin = float(getattr(clock, "origin", 0.0) or 0.0)
    return {"time_origin": origin} if origin else {}


def _collective(exc: OutputError) -> OutputError:
    exc.collective = True  # raised by every rank with the same text: printed once
    return exc


class FieldOutput:
    """Buffers observables/snapshots between writes; each write costs the bytes it adds."""

    def __init__(self, job, path, sc, fresh, truncate_to=None):
        from ..parallel import SerialComm

        self.job, self.path, self.sc = job, Path(path), sc
        self.comm = getattr(job, "comm", None) or SerialComm()
        slab = getattr(job, "slab", None)
        self.lo = int(slab.start) if slab is not None else 0
        self.obs = []
        self.snaps = []
        self.ckpt = None
        self._behind = None        # the background write (write_behind), if one runs
        self._behind_error = None
        grid = job.grid
        self.parts = FieldParts(self.path, grid.shape, job.dtype, sc.spec.output.compression)
        ignore_file_size_signal()  # every rank writes parts: EFBIG instead of SIGXFSZ
        self.index = None
        self.ckpt_step = None if fresh else truncate_to   # the committed checkpoint's step
        error = None
        if self.comm.rank == 0:
            if fresh:
                self.index = FieldIndex(self.path, grid.shape, grid.spacing,
                                        float(getattr(job, "file_dt", sc.spec.time.dt)), job.dtype,
                                        {**root_attributes(sc, job.solver.name),
                                         **plan_attributes(job.run_plan),
                                         **_origin(job)}, job.total,
                                        structure_factor=bool(sc.spec.output.structure_factor))
                self.index.hook = annotate_field
            else:
                self.index = FieldIndex.load(self.path, check_checkpoint=False)
                self.index.hook = annotate_field
                if truncate_to is not None:
                    self.index.truncate(truncate_to)
                self.index.steps_total = job.total
                try:
                    self.index.commit()  # the truncated series, before any new part is written
                    clean_parts(self.index)  # parts of writes that never committed
                except OutputError as exc:
                    error = self._failed(exc)
        run_id = self.index.run_id if self.index is not None else None
        error, run_id = self.comm.bcast((error, run_id))  # no part before the clean-up is done
        self.parts.run_id = run_id
        if error is not None:
            raise _collective(OutputError(error))

    def write(self, complete=False):
        """Write this process's blocks of the buffered snapshots and checkpoint, then commit
        (after any write still running in the background, :meth:`write_behind`)."""
        self.wait()
        self._write(self._take(), complete)

    def write_behind(self) -> None:
        """Start writing what is buffered in a background thread and return (one process
        only: the write of a multi-rank run is collective). The buffers are handed to the
        write, so new rows and snapshots can be buffered meanwhile; the next write,
        :meth:`wait` or :meth:`write` waits for it first and raises its error. The write is
        the same durable sequence (parts fsynced, then the index committed), so a kill during
        it leaves the last committed state, as with a synchronous write."""
        if self.comm.size != 1:
            raise RuntimeError("write_behind is for one process")
        self.wait()
        batch = self._take()

        def run():
            from .. import profile

            try:
                with profile.phase("write-behind (the whole write, in its thread)"):
                    self._write(batch, False)
            except BaseException as exc:  # re-raised by wait() in the caller's thread
                self._behind_error = exc

        self._behind = threading.Thread(target=run, name="simengine-writer")
        self._behind.start()

    def wait(self) -> None:
        """Wait for a background write (:meth:`write_behind`) and raise its error, if any."""
        t, self._behind = self._behind, None
        if t is not None:
            t.join()
        exc, self._behind_error = self._behind_error, None
        if exc is not None:
            raise exc

    def _take(self):
        """The buffered (snapshots, checkpoint, rows), emptying the buffers."""
        batch = (self.snaps, self.ckpt, self.obs)
        self.snaps, self.ckpt, self.obs = [], None, []
        return batch

    def _write(self, batch, complete):
        snaps, ckpt, obs = batch
        written, mine, error, committed = [], {"snaps": [], "ckpt": None, "sums": {}}, None, False
        # a checkpoint of the very field a snapshot of this write holds (the usual end of a
        # run) maps that snapshot's parts: the field's bytes are written once. Every rank
        # decides alike (the same steps and the same sharing by the job).
        shared = ckpt is not None and any(step == ckpt[0] and phi is ckpt[1]
                                          for step, phi in snaps)
        try:
            for step, phi in snaps:
                written.append(self.parts.path_of("phi", step, self.lo, self.lo + phi.shape[0]))
                mine["snaps"].append(self.parts.append_snapshot(step, phi, self.lo))
                if shared and step == ckpt[0]:
                    mine["ckpt"] = mine["snaps"][-1]
            if ckpt is not None and not shared:
                step, phi = ckpt
                if step != self.ckpt_step:
                    written.append(self.parts.path_of("checkpoint", step, self.lo,
                                                      self.lo + phi.shape[0]))
                mine["ckpt"] = self.parts.write_checkpoint(step, phi, self.lo)
        except OutputError as exc:
            error = str(exc)
        mine["sums"] = self.parts.take_digests()
        gathered = self.comm.gather((error, mine), root=0)
        if self.comm.rank == 0:
            error = next((e for e, _ in gathered if e), None)
            if error is None:
                snapshots = [(step, [m["snaps"][i] for _, m in gathered])
                             for i, (step, _) in enumerate(snaps)]
                checkpoint = None if ckpt is None else \
                    (ckpt[0], [m["ckpt"] for _, m in gathered],
                     "phi" if shared else "checkpoint")
                sums = {k: v for _, m in gathered for k, v in m["sums"].items()}
                try:
                    if getattr(self.job, "structure_factor_k", None) is not None:
                        self.index.radial_k = self.job.structure_factor_k
                    self.index.commit(snapshots, checkpoint, obs, complete, digests=sums)
                except OutputError as exc:
                    error, committed = str(exc), getattr(exc, "committed", False)
            if error is not None:
                error = self._failed(error)
        error, committed = self.comm.bcast((error, committed))
        if error is not None:
            if not committed:  # parts the index does not name; a committed index keeps its own
                for p in written:
                    remove(p)
            raise _collective(OutputError(error))
        if ckpt is not None:
            self.ckpt_step = ckpt[0]

    def _failed(self, exc) -> str:
        """The one-line message for a failed write (rank 0 knows the committed checkpoint)."""
        if self.index is None or self.index.ckpt_step is None:
            return f"{exc}; nothing was committed to {self.path}"
        return (f"{exc}; the checkpoint at step {self.index.ckpt_step} in {self.path} is intact "
                f"(continue with --resume)")
