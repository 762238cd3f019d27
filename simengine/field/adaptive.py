"""Adaptive time steps: the step-size controller and the loop that reaches a given time.

A *trial stepper* offers ``trial(dt) -> err`` (a candidate step from the current level and its
error estimate, not yet taken), ``accept()`` and ``energy()`` / ``trial_energy()`` (the free
energy of the current level / of the candidate). Two exist: the spectral SBDF2 solver
(:class:`simengine.field.spectral.solver.SpectralFieldSolver`; estimate ‖φⁿ⁺¹ − φ*‖) and
:class:`StepDoubling` over any stencil solver (RK2 or Euler: one step of dt against two of dt/2,
estimate ‖φ_half − φ_full‖ / (2^p − 1), the two half steps taken).

The controller is the standard one (Hairer–Nørsett–Wanner II.4): a step is accepted when
err ≤ tolerance; the next dt is dt·min(grow, max(shrink, safety·(tol/err)^(1/(p+1)))) with
p the order the estimate measures, never above ``dt_max``; a rejected step is retried with the
smaller dt. A step is also rejected when the free energy rises (more than rounding): F never
increases between accepted steps (for fixed walls the functional is the grand potential
Ω = F − f′(v)·h^d·Σφ: the walls are a reservoir at μ = f′(v), through which F itself may rise;
:func:`reservoir_term`). :func:`advance_to` lands exactly on the target time (the last two steps
before it share the remaining interval when it is under two steps, so no sliver step follows).

Two guards stop a run that cannot go on, with one line (:class:`StepUnderflow`): a step below
:func:`step_floor` (a blow-up drives the error estimate up and dt down), and
:data:`STALL_REJECTIONS` free-energy rejections among :data:`STALL_WINDOW` trials at steps far
below the problem's time scale (the functional rises at every step size tried: no step size can
satisfy the check, so the run would crawl on at a tiny dt forever). ``simengine validate``
refuses the keys that would hit the floor from the start (simengine/config/time_checks.py).
"""
from __future__ import annotations

import json
import math
from collections import deque

import numpy as np

#: time.tolerance when not given: the RMS of the error estimate per step relative to the RMS
#: fluctuation of φ about its mean
DEFAULT_TOLERANCE = 1e-3
SAFETY = 0.9
#: the largest growth of dt from one accepted step to the next (also keeps the ratio of
#: consecutive SBDF2 steps within its zero-stability bound 1 + √2)
GROW = 2.0
SHRINK = 0.2
#: a free-energy rise above this many ulps of the energy scale rejects the step
ENERGY_ULPS = 256
#: a step below this fraction of the problem's time scale (its explicit stability limit) ...
FLOOR_OF_SCALE = 1e-12
#: ... or of the time reached (45 ulps: below it t + dt rounds to t) is a stall
FLOOR_OF_T = 1e-14
#: this many free-energy rejections among the last STALL_WINDOW trials, at steps below
#: STALL_OF_SCALE × the problem's time scale (where a scheme stable at its explicit limit cannot
#: raise the functional: the check itself cannot be met), is a stall
STALL_REJECTIONS = 500
STALL_WINDOW = 2000
STALL_OF_SCALE = 1e-6


def step_floor(t: float, scale: float) -> float:
    """The smallest step an adaptive run takes at time ``t`` (``scale``: the problem's explicit
    stability limit, its fastest time scale; None: 0.01, the classic model on a unit grid)."""
    return max(FLOOR_OF_T * abs(float(t)), FLOOR_OF_SCALE * (0.01 if scale is None else scale))


def reservoir_term(model, grid, boundary, sum_phi: float) -> float:
    """f′(v)·h^d·Σφ for fixed walls at v (0 otherwise): Ω = F − this never rises."""
    if boundary.kind != "fixed":
        return 0.0
    return float(model.fprime(float(boundary.value))) * float(grid.spacing) ** grid.ndim \
        * float(sum_phi)


class StepUnderflow(RuntimeError):
    pass


class Controller:
    """Step-size state: the proposed dt, counts of accepted and rejected steps."""

    def __init__(self, dt0, tolerance, dt_max=None, exponent=0.5, dt_limit=None,
                 scale=None):
        self.dt = float(dt0)
        #: the problem's time scale for :func:`step_floor`
        self.scale = scale
        self._energy_rejections = deque()   # trial numbers of the recent free-energy rejections
        self._trials = 0
        self.tol = float(tolerance)
        caps = [c for c in (dt_max, dt_limit) if c]
        self.cap = min(caps) if caps else math.inf
        self.dt = min(self.dt, self.cap)
        self.exponent = float(exponent)
        self.accepted = 0
        self.rejected = 0
        self.last_dt = None  # the last accepted step's dt

    def factor(self, err: float) -> float:
        if not math.isfinite(err):
            return SHRINK
        if err <= 0:
            return GROW
        return min(GROW, max(SHRINK, SAFETY * (self.tol / err) ** self.exponent))

    def state(self) -> str:
        return json.dumps({"dt": self.dt, "accepted": self.accepted, "rejected": self.rejected})

    def load_state(self, text) -> None:
        d = json.loads(text)
        self.dt = float(d["dt"])
        self.accepted, self.rejected = int(d["accepted"]), int(d["rejected"])


def energy_tolerance(energy: float, cells: int, cell_volume: float, dtype) -> float:
    """The rise of F that counts as rounding: ENERGY_ULPS ulps of |F| + the number of cells."""
    eps = float(np.finfo(dtype).eps)
    return ENERGY_ULPS * eps * (abs(energy) + cells * cell_volume)


def advance_to(stepper, ctrl: Controller, t: float, t_stop: float, *, energy_tol=None,
               on_step=None, allreduce=None):
    """Accepted steps from ``t`` to exactly ``t_stop``; returns the new time (= ``t_stop``).
    ``energy_tol(F)``: the rounding allowance of a free-energy check (None: no check);
    ``on_step(t)``: called after each accepted step (progress; returning True stops early, at
    the time reached); ``allreduce(x, op)``: agree on the error and energy across ranks."""
    red = allreduce or (lambda x, op: x)
    f_now = red(float(stepper.energy()), "max") if energy_tol else None
    while t < t_stop:
        remaining = t_stop - t
        planned = min(ctrl.dt, ctrl.cap)
        dt = planned
        last = dt >= remaining
        if last:
            dt = remaining
        elif 2 * dt > remaining:  # share what is left with the next step: no sliver step
            dt = 0.5 * remaining
        if dt <= step_floor(t, ctrl.scale):
            raise StepUnderflow(f"the adaptive step fell to {dt:.3g} at t = {t:.6g}, below the "
                                f"floor {step_floor(t, ctrl.scale):.3g}")
        err = red(float(stepper.trial(dt)), "max")
        ctrl._trials += 1
        ok = err <= ctrl.tol
        f_new = None
        if ok and energy_tol:
            f_new = red(float(stepper.trial_energy()), "max")
            ok = f_new <= f_now + energy_tol(f_now)
            if not ok:
                err = max(err, ctrl.tol * 4.0)  # shrink by about half
                _count_energy_rejection(ctrl, t, dt)
        fac = ctrl.factor(err)
        if not ok:
            ctrl.rejected += 1
            ctrl.dt = min(dt * min(fac, 0.9), ctrl.cap)
            continue
        stepper.accept()
        ctrl.accepted += 1
        ctrl.last_dt = dt
        f_now = f_new
        t = t_stop if last else t + dt
        if dt < planned:  # shortened to land: keep the plan (within GROW of this step)
            ctrl.dt = min(planned, GROW * dt, ctrl.cap)
        else:
            ctrl.dt = min(dt * fac, ctrl.cap)
        if on_step is not None and on_step(t):
            break
    return t


def _count_energy_rejection(ctrl, t, dt):
    recent = ctrl._energy_rejections
    if dt >= STALL_OF_SCALE * (0.01 if ctrl.scale is None else ctrl.scale):
        recent.clear()
        return
    recent.append(ctrl._trials)
    while recent and recent[0] <= ctrl._trials - STALL_WINDOW:
        recent.popleft()
    if len(recent) >= STALL_REJECTIONS:
        raise StepUnderflow(f"the free energy rose at {len(recent)} of the last {STALL_WINDOW} "
                            f"trial steps (dt {dt:.3g} at t = {t:.6g}): no step size keeps it "
                            f"from rising")


class StepDoubling:
    """The trial-stepper protocol over a stencil solver (:class:`simengine.field.solver.
    FieldSolver`): a trial is one step of dt from the current field and two of dt/2; the
    estimate is ‖φ_half − φ_full‖/(2^p − 1) and the result the two half steps. Host copies of
    the field per step (a whole grid or one slab; ``state``/``load``)."""

    def __init__(self, solver, order: int, energy_of):
        from . import integrator as integ

        self.s, self.order, self.energy_of, self._integ = solver, int(order), energy_of, integ
        self._start = None
        self._trial = None

    def _set_dt(self, dt):
        s = self.s
        s.dt = float(dt)
        s.coefs = self._integ.coefficients(s.scheme, s.dt, s.dtype.type)

    def trial(self, dt):
        s = self.s
        if self._start is None:
            self._start = s.state()
        start = self._start
        self._set_dt(dt)
        s.advance(1)
        full = s.state()
        s.load(start)
        self._set_dt(0.5 * dt)
        s.advance(2)
        half = s.state()
        from .spectral.scheme import relative

        d = (half.astype(np.float64) - full)
        err = relative(float(np.mean(d * d)), float(np.var(half, dtype=np.float64))) \
            / (2 ** self.order - 1)
        self._trial = half
        s.load(start)  # the trial is applied by accept()
        return err

    def trial_energy(self):
        return self.energy_of(self._trial)

    def energy(self):
        return self.energy_of(self.s.state() if self._start is None else self._start)

    def accept(self):
        self.s.load(self._trial)
        self._start = self._trial
        self._trial = None
