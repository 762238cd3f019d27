"""The time keys of a field scenario that its clock or its adaptive controller cannot honour,
refused by ``simengine validate`` (and so by ``run``, which loads through the same checks) in one
line naming the key and the limit, instead of a run that refuses or stops later:

* the clock (:class:`simengine.field.clock.Clock`): ``time.end`` and the ``output.*_dt`` cadences
  need a common time unit, at most 2^50 of them in the run;
* the adaptive controller (:mod:`simengine.field.adaptive`): ``time.dt``, ``time.dt_max`` and
  the stops the cadences put (every ``time unit``; the last two steps before a stop share it)
  must stay above :func:`~simengine.field.adaptive.step_floor`, and ``time.tolerance`` above
  what the run's precision can resolve (:data:`TOLERANCE_ULPS` ulps).
"""
from __future__ import annotations

import numpy as np

from ..errors import UserError
from ..field.adaptive import FLOOR_OF_SCALE, FLOOR_OF_T, step_floor
from ..field.clock import KINDS, ClockError, Clock, adaptive_unit

#: the smallest ``time.tolerance``: this many ulps of the precision (the estimate's own rounding
#: is about 10 ulps of the field's fluctuation)
TOLERANCE_ULPS = 1000


def _refuse(located, key, text):
    return UserError(f"{located.where(key)}: {'.'.join(key)}: {text}")


def check_clock(spec, located):
    """The run's time line can be counted (the same :class:`Clock` the run builds)."""
    try:
        Clock(spec)
    except ClockError as exc:
        raise _refuse(located, exc.key, str(exc)) from None


def check_adaptive(spec, located, scale):
    """An adaptive run's first step, largest step, stops and tolerance against the step floor
    (``scale``: the explicit stability limit, the problem's fastest time scale)."""
    t, o = spec.time, spec.output
    if not t.adaptive:
        return
    floor0, floor_end = step_floor(0.0, scale), step_floor(t.end, scale)

    def how(at):
        if step_floor(at, scale) > step_floor(0.0, scale):
            return f"{FLOOR_OF_T:g} × t"
        return f"{FLOOR_OF_SCALE:g} × the explicit stability limit {scale or 0.01:.3g}"

    if t.dt <= floor0:
        raise _refuse(located, ("time", "dt"), f"{t.dt:.3g} is at or below the adaptive step "
                                               f"floor at t = 0, {floor0:.3g} ({how(0.0)})")
    if t.dt_max is not None and t.dt_max <= 2 * floor_end:
        raise _refuse(located, ("time", "dt_max"),
                      f"{t.dt_max:.3g} is within 2× of the adaptive step floor at t = time.end, "
                      f"{floor_end:.3g} ({how(t.end)})")
    dts = {k: getattr(o, f"{name}_dt", None) for k, name in KINDS}
    unit = float(adaptive_unit(t.end, dts))
    if unit <= 2 * floor_end:      # the last two steps before a stop share the interval
        given = [(float(v), ("output", f"{name}_dt")) for (k, name), v in
                 zip(KINDS, dts.values()) if v]
        key = min(given)[1] if given and min(given)[0] < t.end else ("time", "end")
        raise _refuse(located, key, f"stops every {unit:.3g} need steps within 2× of the "
                                    f"adaptive step floor at t = time.end, {floor_end:.3g} "
                                    f"({how(t.end)})")
    if t.tolerance is not None:
        least = TOLERANCE_ULPS * float(np.finfo(spec.solver.precision).eps)
        if t.tolerance < least:
            raise _refuse(located, ("time", "tolerance"),
                          f"{t.tolerance:.3g} is below what {spec.solver.precision} resolves, "
                          f"{least:.3g} ({TOLERANCE_ULPS} ulps): the error estimate's own "
                          f"rounding would reject every step")


def check_time(spec, located, scale):
    """Every check of this module (``scale``: the explicit stability limit)."""
    check_clock(spec, located)
    check_adaptive(spec, located, scale)
