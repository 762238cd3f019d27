"""A field run's time line: the unit the controller counts, the total, and the output cadences.

Fixed steps (``time: {dt, steps}`` or ``{dt, end}`` with end a multiple of dt): the unit is one
step of dt. The cadences are ``output.*_every`` (steps) and ``output.*_dt`` (simulated time, a
multiple of dt), both kept: a stop is due where either is.

Adaptive steps (``time: {end, dt, adaptive: true}``): the steps are not known in advance, so
the controller counts *ticks*, the largest time unit that divides ``end`` and every ``*_dt``
(exactly, in decimal), halved until the run has at least :data:`MIN_TICKS` of them (finer
progress and interrupt points). Every stop is a whole number of ticks and the stepper lands
exactly on it; the output's ``step`` columns count ticks and its ``dt`` attribute is the tick,
so ``time = step·dt`` holds in the file as for fixed steps. The number of accepted steps is in
the run's log and its checkpoint's ``integrator_state``.
"""
from __future__ import annotations

import math
from fractions import Fraction

#: an adaptive run is cut into at least this many ticks
MIN_TICKS = 1000
#: and at most this many (int64 step columns, float64 times step·tick)
MAX_TICKS = 2 ** 50
KINDS = (("obs", "observables"), ("snap", "snapshot"), ("ckpt", "checkpoint"))


def decimal(x: float) -> Fraction:
    """The number as written (shortest repr), exactly: 0.1 → 1/10."""
    return Fraction(repr(float(x)))


def _gcd(a: Fraction, b: Fraction) -> Fraction:
    return Fraction(math.gcd(a.numerator * b.denominator, b.numerator * a.denominator),
                    a.denominator * b.denominator)


def multiple_of(x: float, unit: float) -> int | None:
    """``x / unit`` when it is a whole number (to 1e-9 relative), else None."""
    n = round(float(x) / float(unit))
    if n >= 1 and abs(n * float(unit) - float(x)) <= 1e-9 * float(x):
        return int(n)
    return None


class ClockError(ValueError):
    """A time line the clock cannot count; ``key`` is the scenario key to blame."""

    def __init__(self, key: tuple, message: str):
        super().__init__(message)
        self.key = tuple(key)


def adaptive_unit(end: float, dts: dict) -> Fraction:
    """The largest decimal unit dividing ``end`` and every cadence (before the halving to
    MIN_TICKS); the first cadence that leaves more than MAX_TICKS of it is a :class:`ClockError`."""
    tick = decimal(end)
    for k, name in KINDS:
        v = dts.get(k)
        if not v:
            continue
        new = _gcd(tick, decimal(v))
        units = decimal(end) / new
        if units > MAX_TICKS:
            key = ("output", f"{name}_dt")
            if decimal(v) == new:              # a whole divisor, only far too fine for end
                raise ClockError(key, f"{float(v):.6g} cuts time.end = {float(end):.6g} into "
                                      f"{float(units):.3g} intervals; at most 2^50")
            raise ClockError(key, f"{float(v):.6g} and time.end = {float(end):.6g} (or the other "
                                  f"*_dt) share no time unit coarser than {float(new):.3g} "
                                  f"({float(units):.3g} ticks; at most 2^50): use cadences "
                                  f"that divide time.end")
        tick = new
    return tick


class Clock:
    """``adaptive``, ``unit_dt`` (dt or the tick), ``total`` (units), ``periods`` ({kind:
    [units]}), ``origin`` (the simulated time of unit 0: 0, or the stored field's time with
    ``initial.time_from_file``), ``end`` (simulated time of the last unit)."""

    def __init__(self, spec, origin: float = 0.0):
        t, o = spec.time, spec.output
        self.origin = float(origin)
        self.adaptive = bool(t.adaptive)
        self.dt = float(t.dt)
        dts = {k: getattr(o, f"{name}_dt", None) for k, name in KINDS}
        if self.adaptive:
            tick = adaptive_unit(t.end, dts)
            n = decimal(t.end) / tick
            k = 1
            while n * k < MIN_TICKS:  # powers of two: a tick that is exact in binary stays so
                k *= 2
            tick /= k
            self.total = int(decimal(t.end) / tick)
            if self.total > MAX_TICKS:
                raise ClockError(("time", "end"), f"{float(t.end):.6g} needs {self.total:.3g} "
                                                  f"ticks of {float(tick):.3g}; at most 2^50")
            self.unit_dt = float(tick)
            self.periods = {k: ([int(decimal(v) / tick)] if v else []) for k, v in dts.items()}
        else:
            self.unit_dt = self.dt
            self.total = int(t.steps)
            self.periods = {}
            for k, name in KINDS:
                every = int(getattr(o, f"{name}_every") or 0)
                per = [every] if every else []
                v = dts[k]
                if v:
                    n = multiple_of(v, self.dt)
                    if n is None:  # checked by the schema; kept for direct callers
                        raise ClockError(("output", f"{name}_dt"),
                                         f"{v:.6g} is not a multiple of time.dt = {self.dt:.6g}")
                    per.append(n)
                self.periods[k] = per
        self.end = self.origin + self.total * self.unit_dt

    def next_stop(self, done: int) -> int:
        nxt = self.total
        for per in self.periods.values():
            for every in per:
                nxt = min(nxt, (done // every + 1) * every)
        return nxt

    def due(self, done: int) -> set:
        kinds = {k for k, per in self.periods.items() if any(done % e == 0 for e in per)}
        if done == 0 or done == self.total:
            kinds |= {"obs", "snap", "ckpt"}
        return kinds

    def time_of(self, units: int) -> float:
        return self.origin + units * self.unit_dt

    def units_at(self, t: float) -> float:
        """The (fractional) units from the origin to time ``t``."""
        return (t - self.origin) / self.unit_dt


def time_words(spec, dt_max: float) -> str:
    """How the run steps, for ``simengine validate``: ``500 steps of dt = 0.01 (stability
    limit 0.025)`` or ``adaptive steps to t = 10000 from dt = 0.01 (tolerance 0.001)``."""
    t = spec.time
    limit = (f" (explicit stability limit {dt_max:.6g}, not binding)"
             if spec.solver.integrator == "spectral" else f" (stability limit {dt_max:.6g})")
    if t.adaptive:
        from .adaptive import DEFAULT_TOLERANCE

        return (f"adaptive steps to t = {t.end:g} from dt = {t.dt:g} (tolerance "
                f"{t.tolerance or DEFAULT_TOLERANCE:g}{f', dt_max {t.dt_max:g}' if t.dt_max else ''})"
                + limit)
    return f"{t.steps} steps of dt = {t.dt:g}" + limit


def integrator_words(spec) -> str:
    s = spec.solver
    if s.integrator == "spectral":
        from .spectral.transforms import TRANSFORM_NAMES

        return (f"integrator spectral ({TRANSFORM_NAMES[spec.boundary.type]}, symbol "
                f"{s.symbol or 'fd'})")
    return f"integrator {s.integrator}, kernel {s.kernel}"
