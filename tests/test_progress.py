"""Progress lines name the step whose observables they show (simengine/progress.py)."""
from __future__ import annotations

import io

from simengine.progress import Progress


def _row(step):
    return {"step": step, "time": step * 0.02, "free_energy": -1.0 - step, "length": 3.0,
            "mass": 0.0}


def test_line_waits_for_the_observation_of_its_step():
    out = io.StringIO()
    p = Progress(20, stream=out, log_every=1.0)
    p.observe(_row(0))
    p.last_log -= 1.5           # a line is due ...
    p.update(19)                # ... but the observables are of step 0: held back
    assert out.getvalue() == ""
    p.observe(_row(19))         # the observation of step 19 prints it
    line = out.getvalue().strip()
    assert line.startswith("step 19/20") and "t = 0.38" in line and "at step" not in line
    p.update(20)
    p.observe(_row(20))
    p.close()
    assert out.getvalue().strip().splitlines()[-1].startswith("step 20/20")
    assert "t = 0.4" in out.getvalue().strip().splitlines()[-1]


def test_a_line_that_waited_long_marks_the_step_of_its_observables():
    out = io.StringIO()
    p = Progress(1000, stream=out, log_every=1.0)
    p.observe(_row(0))
    p.last_log -= 5.0           # waited more than 3 periods: printed, marked
    p.update(500)
    line = out.getvalue().strip()
    assert line.startswith("step 500/1000") and "| at step 0: t = 0," in line
