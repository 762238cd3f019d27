"""The field job's output side: what is written at a stop (observables, snapshots, checkpoints),
the field a write takes (on the device or the host), run-ahead of the GPU while the host writes,
a checkpoint at an interrupt, and reading a checkpoint back. A mixin of
:class:`simengine.control.field_job.FieldJob`; the writer (``io/field_output.FieldOutput``) owns
the file."""
from __future__ import annotations

import numpy as np

from ..errors import UserError
from .field_observe import ASYNC_OBSERVE_MAX_BYTES

#: before a one-process CUDA run writes a snapshot/checkpoint, it enqueues the steps and the
#: observations of up to this many following observables-only stops (and at most
#: RUN_AHEAD_SECONDS of steps), so the GPU computes them while the host writes; the controller
#: then takes those stops' results in order (FieldJob._run_ahead)
RUN_AHEAD_STOPS = 32
RUN_AHEAD_SECONDS = 0.25
#: ... and the write then runs in a background thread (write-behind) instead of this one: off —
#: measured slower (H100 host, 200² fp64, a write every 20 000 steps: 3.36–4.63 µs/step against
#: 2.72–3.28 with the write in the launching thread: the writer's GIL holds slowed the thread
#: that takes the stops and tops the queue up)
RUN_AHEAD_WRITE_BEHIND = False


def _owned(a) -> bool:
    """Whether ``a`` is (a view of) a NumPy array that owns its memory — not of a buffer held
    elsewhere (a pinned host buffer that the next observation reuses)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a.base is None and a.flags.owndata


class FieldWrites:
    """The output side of a field job."""

    def make_output(self, path, fresh, truncate_to):
        from ..io.field_output import FieldOutput

        return FieldOutput(self, path, self.sc, fresh, truncate_to=truncate_to)

    def read_checkpoint(self, f) -> dict:
        """What resuming needs from the open output ``f`` (runs on rank 0)."""
        ds = f["checkpoint/phi"]
        done = int(ds.attrs["step"])
        obs_wall = f["observables/wall_time"][()] if "observables/wall_time" in f else []
        obs_step = f["observables/step"][()] if "observables/step" in f else []
        wall0 = float(obs_wall[np.searchsorted(obs_step, done, side="right") - 1]) \
            if len(obs_wall) else 0.0
        state = f.attrs.get("integrator_state")
        if isinstance(state, bytes):
            state = state.decode()
        return {"done": done, "elapsed": wall0, "path": str(f.filename),
                "integrator_state": state}

    def checkpoint_rows(self, ck):
        """This rank's rows of the checkpoint in the output, whatever split of blocks wrote it,
        each block's checksum verified (a corrupted block is a one-line error, exit 2)."""
        from ..io.field_store import load_checkpoint

        step, rows = load_checkpoint(ck["path"], self.slab.start, self.slab.stop)
        if step != ck["done"]:
            raise UserError(f"{ck['path']}: the checkpoint changed while resuming (step {step}, "
                            f"expected {ck['done']})")
        return rows

    def at_stop(self, done, out, elapsed):
        """Write what is due at step ``done`` (the initial state at 0, everything at the end).
        When only observables are due and the job pipelines observations, the row is completed
        (length scale) and appended by :meth:`finish_observation` during the next steps; rows
        stay in step order and every write includes all rows before it."""
        from .. import profile

        self.finish_observation()
        self._settled = self._settled or done > 0
        due = self.due(done)
        phi = None
        if self._ahead and self._ahead[0][0] == done:
            self._enqueued = self._ahead.pop(0)  # taken by observe
        if due == {"obs"} and self._pipeline:
            row, phi = self.observe(done, elapsed, defer_length=True)
            if row["length"] is None:
                self._pending = (row, phi, out)
            else:  # S(k) came from the GPU with the reductions
                self.last_observation = row
                out.obs.append(row)
            self._taken = (done, phi)
            if phi is not None:
                self._run_ahead(done)  # keep the GPU busy while this thread catches up
            return
        if due:
            with profile.phase("observables at a write stop"):
                row, phi = self.observe(done, elapsed)
            self.last_observation = row         # shown by the controller's progress lines
            if "obs" in due:
                out.obs.append(row)
        if ("snap" in due or "ckpt" in due) and phi is None:
            phi = self._field_to_write()  # S(k) came from the GPU: the field is needed here only
        if ("snap" in due or "ckpt" in due) and isinstance(phi, np.ndarray):
            self.check_state(phi, done)
            if not _owned(phi):  # a view of a buffer that is reused (pinned observations)
                phi = phi.copy()
        # (a field still on the device was checked by observe: its extremes and free energy)
        if "snap" in due:
            out.snaps.append((done, phi))  # the snapshot and the checkpoint share the array
        if "ckpt" in due:
            out.ckpt = (done, phi)
            self._restart_point(out)
        if "snap" in due or "ckpt" in due:
            if self._pipeline and done != self.total:
                self._wait_write(out)
                self._taken = (done, phi)  # the field here (an interrupt may checkpoint it)
                if self._run_ahead(done) and not RUN_AHEAD_WRITE_BEHIND:
                    # the GPU computes the next stops' steps while this thread writes
                    with profile.phase("write (while the GPU runs ahead)"):
                        out.write()
                    if "ckpt" in due:
                        self.last_ckpt = done
                    return
                # write-behind: the write runs in a thread while the next steps run; it is
                # waited for (and its error raised) at the next write, an interrupt, the end
                self._writing = (out, done if "ckpt" in due else None)
                out.write_behind()
                return
            self._wait_write(out)
            with profile.phase("write (synchronous)"):
                out.write(complete=(done == self.total))
        if "ckpt" in due:
            self.last_ckpt = done

    def _field_to_write(self):
        """The field for a snapshot/checkpoint: one process with its own CUDA solver keeps it on
        the device (a copy there, streamed to the part files in windows through pinned buffers
        by the writer, :mod:`simengine.io.part_stream`); otherwise this rank's rows on the host."""
        from .. import profile

        if self._pipeline and hasattr(self.solver, "owned_device"):
            from ..io.part_stream import device_snapshot

            src = device_snapshot(self.solver.owned_device(), self.solver.owned_shape,
                                  self.dtype)
            if src is not None:
                return src
        with profile.phase("snapshot: field copied to the host", self.solver.cells
                           * self.dtype.itemsize):
            return self.solver.state()

    def _run_ahead(self, done) -> int:
        """Top up the enqueued stops: the steps and observations of the observables-only stops
        after ``done`` (or after the last one already enqueued), up to the next stop that
        writes, :data:`RUN_AHEAD_STOPS` stops, RUN_AHEAD_SECONDS of steps beyond ``done`` at
        the measured rate, and pinned host copies within ASYNC_OBSERVE_MAX_BYTES; returns how
        many are enqueued. The GPU then runs on while this thread writes (synchronously: a
        write in a thread holds the GIL for tens of milliseconds and slowed the launches,
        docs/output.md) or computes the previous stops' S(k)."""
        field = self.solver.cells * self.dtype.itemsize
        most = min(RUN_AHEAD_STOPS, ASYNC_OBSERVE_MAX_BYTES // max(field, 1) - 2)
        if self._step_seconds is None or most < 1:
            return 0
        at = self._ahead[-1][0] if self._ahead else done
        budget = RUN_AHEAD_SECONDS - (at - done) * self._step_seconds
        while len(self._ahead) < most:
            nxt = self.next_stop(at)
            cost = (nxt - at) * self._step_seconds
            if nxt >= self.total or self.due(nxt) != {"obs"} or cost > budget:
                break
            self.solver.advance(int(nxt - at))
            self._ahead.append((nxt, self.solver.observe_async(slots=most + 2,
                                                               spectrum=self._spectrum)))
            at, budget = nxt, budget - cost
        return len(self._ahead)

    def _wait_write(self, out=None):
        """Wait for a write-behind (raising its error); its checkpoint becomes the last one."""
        if self._writing is None:
            return
        pending, step = self._writing
        self._writing = None
        from .. import profile

        with profile.phase("wait for the write-behind"):
            pending.wait()
        if step is not None:
            self.last_ckpt = step

    def checkpoint(self, done, out, elapsed):
        """Checkpoint at an interrupt (nothing to do when the last write was one at ``done``)."""
        self.finish_observation()
        self._wait_write()
        if self.last_ckpt == done:
            return
        if self._ahead:  # the GPU is past ``done``: its field is the host copy taken there
            if self._taken is None or self._taken[0] != done:
                raise RuntimeError(f"no host copy of the field at step {done}")
            phi = self._taken[1]  # a host array, or the field kept on the device for a write
            phi = phi.to_host() if hasattr(phi, "to_host") else np.array(phi)
            self._ahead = []
        else:
            phi = self.solver.state()
        self.check_state(phi, done)
        out.ckpt = (done, phi)
        self._restart_point(out)
        out.write()
        self.last_ckpt = done

    def _restart_point(self, out):
        """A checkpoint is a restart of the scheme (a multistep solver takes a start step next)
        and carries the adaptive controller's state, so that a run resumed from it takes the
        steps the uninterrupted run takes."""
        restart = getattr(self.solver, "restart", None)
        if restart is not None:
            restart()
        if self.adaptive is not None and getattr(out, "index", None) is not None:
            out.index.attrs["integrator_state"] = self.adaptive.state()
