"""The field job's adaptive stepping: from one stop (a whole number of ticks,
:mod:`simengine.field.clock`) to the next through :func:`simengine.field.adaptive.advance_to`,
with progress, interrupts and the controller's state for checkpoints.

An interrupt (SIGINT/SIGTERM) is honoured at the next tick boundary: the stepper lands there,
so the checkpoint stays on the file's time grid. Each checkpoint is a restart of a multistep
scheme (the spectral solver's next step is a start step, ``solver.restart()``), in the
uninterrupted run and after ``--resume`` alike, and the controller's state (the proposed dt,
the counts) is stored with it (``integrator_state``), so a resumed run takes the same steps.
"""
from __future__ import annotations

import math
import time

import numpy as np

from ..errors import SimulationError
from .adaptive import (DEFAULT_TOLERANCE, Controller, StepDoubling, StepUnderflow, advance_to,
                       energy_tolerance, reservoir_term)

#: the order of the quantity each stepper's estimate measures (exponent 1/(p+1))
EXPONENT = {"spectral": 0.5, "rk2": 1.0 / 3.0, "euler": 0.5}
#: adaptive RK2/Euler stay this far below the explicit stability limit
LIMIT_MARGIN = 0.95
#: a look at the clock, the interrupt flag and the progress every this many seconds
PIECE_SECONDS = 0.3


class AdaptiveDriver:
    def __init__(self, job):
        spec = job.spec
        t = spec.time
        self.job = job
        self.solver = job.solver
        integ = spec.solver.integrator
        from .stability import max_stable_dt

        m, g, b = job.model, job.grid, job.boundary
        explicit = max_stable_dt(m, g, b, phi_range=job.phi_range)
        limit = None
        if integ == "spectral":
            self.stepper = job.solver        # its energy() is Ω for fixed walls
        else:
            from .observables import free_energy

            limit = LIMIT_MARGIN * explicit
            self.stepper = StepDoubling(
                job.solver, 2 if integ == "rk2" else 1,
                lambda p: free_energy(p, m, g, b) - reservoir_term(m, g, b, np.sum(p)))
        self.ctrl = Controller(t.dt, t.tolerance or DEFAULT_TOLERANCE, t.dt_max,
                               EXPONENT[integ], dt_limit=limit,
                               scale=explicit if math.isfinite(explicit) else None)
        vol = float(g.spacing) ** g.ndim
        if b.kind == "fixed":            # the rounding of f′(v)·Σφ in Ω
            v = float(b.value)
            vol *= 1.0 + abs(float(m.fprime(v))) * max(1.0, abs(v))
        self.energy_tol = lambda F: energy_tolerance(F, g.cells, vol, job.dtype)  # noqa: E731
        self.history = []  # (t, dt) at each stop

    def advance(self, done, stop, stop_requested, progress):
        clock = self.job.clock
        t = clock.time_of(done)
        last_look = [time.perf_counter()]
        interrupted = [False]

        comm = self.job.comm
        ranks = comm.size > 1
        # on ranks every look is agreed (collective, at every step), so all stop together
        agree = (lambda x, op: comm.allreduce(x, op)) if ranks else None  # noqa: E731

        def on_step(now):
            due = time.perf_counter() - last_look[0] >= PIECE_SECONDS
            if ranks:
                due = comm.allreduce(bool(due), "or")
            if not due:
                return False
            last_look[0] = time.perf_counter()
            progress(min(int(clock.units_at(now)), stop - 1))
            asked = bool(stop_requested())
            interrupted[0] = comm.allreduce(asked, "or") if ranks else asked
            return interrupted[0]

        try:
            t = advance_to(self.stepper, self.ctrl, t, clock.time_of(stop),
                           energy_tol=self.energy_tol, on_step=on_step, allreduce=agree)
            if interrupted[0] and t < clock.time_of(stop):
                land = min(stop, math.floor(clock.units_at(t)) + 1)
                advance_to(self.stepper, self.ctrl, t, clock.time_of(land),
                           energy_tol=self.energy_tol, allreduce=agree)
                stop = land
        except StepUnderflow as exc:
            raise SimulationError(f"{exc} (the field may have blown up)") from None
        self.history.append((clock.time_of(stop), self.ctrl.last_dt))
        progress(stop)
        return stop

    def state(self) -> str:
        return self.ctrl.state()

    def load_state(self, text) -> None:
        self.ctrl.load_state(text)

    def dt_at_decades(self) -> list:
        """[(t, dt)]: the last accepted step before the first stop at or after each power of
        ten (of this process's run)."""
        out, k = [], None
        for t, dt in self.history:
            if t <= 0 or not dt:
                continue
            d = math.floor(math.log10(t) + 1e-9)
            if k is None or d > k:
                out.append((t, dt))
                k = d
        return out

    def summary(self) -> str:
        c = self.ctrl
        dec = ", ".join(f"{dt:.3g} at t = {t:g}" for t, dt in self.dt_at_decades())
        return (f"{c.accepted} accepted steps, {c.rejected} rejected"
                + (f"; dt {dec}" if dec else ""))


def phi_range_of(phi) -> tuple:
    return float(np.min(phi)), float(np.max(phi))
