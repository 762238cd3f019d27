"""The field job's observations: which output events are due at a step, the observables of the
whole field (reduced over the ranks' slabs, or read behind the steps on a GPU), the length
scale and S(k) on the host, and the blow-up checks. A mixin of
:class:`simengine.control.field_job.FieldJob` (it reads the job's solver, clock, grid)."""
from __future__ import annotations

import numpy as np
from numba import njit

from ..errors import SimulationError

#: |φ| above this is treated as a blow-up (φ lives in about [-1, 1])
BLOWUP = 1e6

#: observables-only stops of one-process CUDA runs whose field has at most this many bytes
#: read the field back asynchronously, behind the steps (two pinned host buffers of its size;
#: larger fields read it back at the stop, where the copy is small next to the steps)
ASYNC_OBSERVE_MAX_BYTES = 64 << 20


@njit(cache=True, nogil=True)
def _unbounded(flat, limit):
    """Whether a value is not finite or |value| > limit (one pass, no temporary arrays)."""
    for i in range(flat.size):
        if not abs(flat[i]) <= limit:  # NaN compares false
            return True
    return False


class FieldObservations:
    """Observables and events of a field job."""

    def due(self, done):
        return self.clock.due(done)

    def time_of(self, step):
        return self.clock.time_of(step)

    def finish_observation(self):
        """Complete the pending observation (its length scale from the host copy of the field
        taken at its step) and append it to the output's rows; no-op when none is pending."""
        if self._pending is None:
            return
        row, phi, out = self._pending
        self._pending = None
        self._host_spectrum(row, phi)
        self.last_observation = row
        out.obs.append(row)

    def observe(self, step, wall, defer_length=False):
        """Observables of the whole field (reduced over the ranks' slabs) and this rank's rows.
        A blow-up is seen by every rank at once (the reductions are global). ``defer_length``
        (one process): the row's ``length`` is left ``None`` for :meth:`finish_observation`."""
        enqueued, self._enqueued = self._enqueued, None
        sk = None  # (length, radial) from the GPU
        ms = self.measurer
        area = None  # the interface area, where the device or the ranks measured it
        if self.comm.size > 1:
            from ..field.distributed import rank_observables

            red = rank_observables(self.comm, self.solver, self.slabs, self.model, self.grid,
                                   spectrum=self._spectrum,
                                   radial=self.radial or ms.wants_radial, level=ms.area_level)
            phi = red["phi"]
            area = red.get("interface_area")
        elif enqueued is not None and enqueued[0] == step:
            red, phi = enqueued[1].result()  # enqueued by advance behind the steps
            sk = enqueued[1].spectrum_result((red["min"], red["max"]))
            area = enqueued[1].interface_area()
        else:
            red = self.solver.reductions()
            phi = None
            if self._spectrum is not None:
                pending = self._spectrum.enqueue(self.solver.owned_device())
                sk = pending.result((red["min"], red["max"]))
                area = pending.interface_area()
        lo, hi = float(red["min"]), float(red["max"])
        if not (np.isfinite(lo) and np.isfinite(hi) and np.isfinite(red["free_energy"])) \
                or max(abs(lo), abs(hi)) > BLOWUP:
            exc = SimulationError(f"the field blew up (min {lo:.3g}, max {hi:.3g}) by step {step}")
            exc.collective = True
            raise exc
        radial, length = None, None  # None: the host computes it below (or, deferred, later)
        if self.comm.size > 1:
            length = float(red["length"])
            if "structure_factor" in red:
                radial = (red["structure_factor_k"], red["structure_factor"])
        elif sk is not None:
            length = float(sk[0])
            radial = sk[1]
        elif phi is None:
            phi = self.solver.state()
        row = {"step": step, "time": self.time_of(step), "mass": float(red["mass"]),
               "free_energy": float(red["free_energy"]), "phi_min": lo, "phi_max": hi,
               "length": length, "wall_time": wall}
        if length is not None:
            self._radial_row(row, radial, area)
        elif not defer_length:
            self._host_spectrum(row, phi)
        return row, phi

    def _radial_row(self, row, radial, area):
        """The row's stored radial S(k) (``output.structure_factor``) and its coarsening
        measures (:mod:`simengine.field.measuring`)."""
        if radial is not None and self.radial:
            self.structure_factor_k = radial[0]
            row["structure_factor"] = radial[1]
        self.measurer.complete(row, area, radial)

    def _host_spectrum(self, row, phi):
        """The length scale, the radial S(k) and the coarsening measures of a host field into
        ``row``, from one transform."""
        from ..field.observables import length_and_radial

        length, radial = length_and_radial(phi, self.grid.spacing, self.boundary.kind,
                                           radial=self.radial or self.measurer.wants_radial)
        row["length"] = float(length)
        self._radial_row(row, radial, self.measurer.host_area(phi))

    def check_state(self, phi, step):
        from .. import profile

        with profile.phase("snapshot: field checked (finite, bounded)", phi.nbytes):
            bad = _unbounded(phi.reshape(-1), BLOWUP)
        if self.comm.allreduce(bool(bad), "or"):
            exc = SimulationError(f"the field became non-finite or blew up by step {step}")
            exc.collective = True
            raise exc
