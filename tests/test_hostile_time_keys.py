"""Issue 54, spectral and adaptive keys: a seeded fuzzer over ``time.end``, ``time.dt``,
``time.tolerance``, ``time.dt_max``, ``grid.spacing``, ``output.*_dt`` and the ``fixed`` wall
value of tiny adaptive and fixed-step runs, in-process.

Every case: ``validate`` and ``run`` agree — both exit 0 (the run finishes, under a watchdog) or
both exit 2 with the same one line (bounded, naming the scenario file and a key, no traceback),
and a refused run leaves nothing behind. Values: extreme (1e±300, 1e±30), just past the limits
(below the adaptive step floor, below the tolerance the precision resolves), not a multiple of
the run's time unit (7/3, 1/3, 2.3333…), and ordinary ones.
"""
import contextlib
import io
import random
import re
import signal

import numpy as np
import pytest
import yaml

from simengine.cli import main
from simengine.field.adaptive import (Controller, StepUnderflow, advance_to, step_floor)

#: a case still running after this long is a stall (the runs take well under a second)
HANG_S = 60

BASES = {
    "spectral-adaptive": dict(
        grid={"shape": [8, 8], "spacing": 1.0}, boundary={"type": "periodic"},
        time={"end": 1.0, "dt": 0.01, "adaptive": True, "tolerance": 1e-3},
        solver={"integrator": "spectral", "backend": "cpu"},
        output={"observables_dt": 0.25, "snapshot_dt": 0.5, "checkpoint_dt": 1.0}),
    "rk2-adaptive": dict(
        grid={"shape": [8, 8], "spacing": 1.0}, boundary={"type": "mirror"},
        time={"end": 0.5, "dt": 0.01, "adaptive": True},
        solver={"integrator": "rk2", "backend": "cpu"},
        output={"observables_dt": 0.25}),
    "spectral-fixed-steps": dict(
        grid={"shape": [8, 8], "spacing": 1.0}, boundary={"type": "fixed", "value": 0.5},
        time={"end": 0.5, "dt": 0.05}, solver={"integrator": "spectral", "backend": "cpu"},
        output={"observables_dt": 0.25}),
}
#: the keys of each base and the values drawn for them
REFUSED_SMALL = [1e-300, 1e-100, 1e-30, 1e-16]
EXTREME = [1e300, 1e30, 1e-300, 1e-30]
ODD = [7 / 3, 1 / 3, 2.3333333333333335, 0.7, 0.3]
KEYS = {
    "time.end": REFUSED_SMALL + [1e300, 1e30, 1e20] + ODD + [0.25, 1.5],
    "time.dt": EXTREME + [1e-13, 1e-6, 0.03, 2.0] + ODD,
    "time.tolerance": REFUSED_SMALL + [1e-13, 1e300, 1e30, 0.5, 1e-4],
    "time.dt_max": REFUSED_SMALL + [1e300, 1e30, 0.02, 0.2] + ODD,
    "grid.spacing": EXTREME + [1e-3, 0.1, 2.0, 1e3],
    "output.observables_dt": REFUSED_SMALL + [1e300, 1e30] + ODD + [0.125],
    "output.snapshot_dt": REFUSED_SMALL + [1e300] + ODD + [0.125],
    "output.checkpoint_dt": REFUSED_SMALL + [1e300] + ODD,
    "boundary.value": [2.0, -2.0, 1.5, 3.0, 1e3, 1e30],
}
APPLIES = {"spectral-adaptive": [k for k in KEYS if k != "boundary.value"],
           "rk2-adaptive": ["time.end", "time.dt", "time.tolerance", "time.dt_max",
                            "output.observables_dt", "boundary.value"],
           "spectral-fixed-steps": ["time.end", "time.dt", "grid.spacing",
                                    "output.observables_dt", "boundary.value"]}
SEED = 54
CASES_PER_BASE = {"spectral-adaptive": 40, "rk2-adaptive": 16, "spectral-fixed-steps": 14}


def cases():
    rng = random.Random(SEED)
    out = []
    for base, n in CASES_PER_BASE.items():
        for i in range(n):
            # one key at a time, or two at once (a fuzzed pair interacts: end with a cadence)
            keys = rng.sample(APPLIES[base], 2 if i % 4 == 3 else 1)
            out.append((base, tuple((k, rng.choice(KEYS[k])) for k in keys)))
    out += [("rk2-adaptive", (("boundary.value", 2.0),)),          # the stall of round 5
            ("spectral-adaptive", (("grid.spacing", 1e-3),)),
            ("spectral-adaptive", (("time.tolerance", 1e-300),)),
            ("spectral-adaptive", (("output.snapshot_dt", 2.3333333333333335),))]
    return out


def scenario(tmp_path, base, changes):
    d = {"kind": "field", "name": "fuzz", **yaml.safe_load(yaml.safe_dump(BASES[base]))}
    for key, value in changes:
        section, name = key.split(".")
        if key == "boundary.value":
            d["boundary"]["type"] = "fixed"
        d[section][name] = value
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(d))
    return p


class Hang(BaseException):
    pass


@contextlib.contextmanager
def watchdog(seconds):
    def fire(signum, frame):
        raise Hang(f"a case ran longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def command(argv):
    out, err = io.StringIO(), io.StringIO()
    with watchdog(HANG_S), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(argv)
    return rc, err.getvalue()


def error_line(err):
    lines = [ln for ln in err.splitlines() if not ln.startswith(("note: ", "plan: "))]
    return [ln for ln in lines if ln.startswith("simengine: ")]


@pytest.mark.parametrize("base,changes", cases(), ids=lambda c: str(c)[:60])
def test_validate_and_run_agree(tmp_path, base, changes):
    path = scenario(tmp_path, base, changes)
    out = tmp_path / "o.h5"
    rc_v, err_v = command(["validate", str(path)])
    rc_r, err_r = command(["run", str(path), "-o", str(out)])
    assert "Traceback" not in err_v + err_r
    assert rc_v in (0, 2), err_v
    assert rc_r == rc_v, (rc_v, err_v[-600:], rc_r, err_r[-600:])
    if rc_v == 0:
        assert out.exists()
        return
    # one line, bounded, naming the file and a key; the same line from both commands
    assert err_v.count("\n") == 1 and err_v.startswith("simengine: error: "), err_v
    assert len(err_v) <= 300, err_v
    assert str(path.name) in err_v and re.search(
        r"\b(time|output|grid|boundary|model)(\.|: '?)\w+", err_v), err_v
    assert error_line(err_r) == [err_v.strip()], (err_v, err_r)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["s.yaml"], list(tmp_path.iterdir())


# ----------------------------------------------------------------------------- the two guards
class _Rising:
    """A trial stepper whose free energy rises at every step (by 1e-3·dt: within the rounding
    allowance only below dt = 1e-10): the stall of a functional that is not the system's
    Lyapunov function (F of an open, fixed-wall box) — tiny accepted steps, and a rejection at
    every attempt to grow."""

    def __init__(self):
        self.F = 0.0
        self.trials = 0

    def trial(self, dt):
        self.trials += 1
        self._dt = dt
        return 1e-18

    def energy(self):
        return self.F

    def trial_energy(self):
        return self.F + 1e-3 * self._dt

    def accept(self):
        self.F = self.trial_energy()


def test_a_functional_that_always_rises_stops_in_bounded_trials():
    s, ctrl = _Rising(), Controller(0.01, 1e-3, scale=0.025)
    with pytest.raises(StepUnderflow, match="rose at 500 of the last 2000 trial steps"):
        advance_to(s, ctrl, 0.0, 1.0, energy_tol=lambda F: 1e-13)
    assert s.trials <= 2000 and s.F > 0           # it did accept (tiny) steps


def test_step_floor_scales_with_the_problem_and_with_t():
    assert step_floor(0.0, 0.025) == pytest.approx(2.5e-14)
    assert step_floor(1e6, 0.025) == pytest.approx(1e-8)
    assert step_floor(0.0, 1e-14) == pytest.approx(1e-26)   # h = 1e-3: the old floor 1e-14 stalled


def test_fixed_wall_grand_potential_never_rises(tmp_path):
    """The wall at 2.0 of round 5 (a reservoir): F rises, Ω = F − f′(v)·h^d·Σφ does not, and
    the adaptive run reaches its end."""
    import h5py

    path = scenario(tmp_path, "spectral-adaptive", (("boundary.value", 2.0),
                                                    ("time.end", 4.0)))
    d = yaml.safe_load(path.read_text())
    d["boundary"] = {"type": "fixed", "value": 2.0}
    path.write_text(yaml.safe_dump(d))
    out = tmp_path / "o.h5"
    assert command(["run", str(path), "-o", str(out)])[0] == 0
    with h5py.File(out) as f:
        obs = f["observables"]
        F = np.asarray(obs["free_energy"][()], dtype=float)
        mean = np.asarray(obs["mass"][()], dtype=float)
    omega = F - 6.0 * mean * 64             # f′(2) = −2 + 8 = 6, h = 1, 64 cells
    assert F[-1] > F[0] + 1                 # the reservoir feeds the box
    assert np.all(np.diff(omega) <= 1e-9 * np.abs(omega[:-1]) + 1e-9)


@pytest.mark.gpu
def test_fixed_wall_adaptive_run_on_the_gpu(tmp_path):
    """The fused GPU step's functional is Ω too (SpectralFieldSolver.energy on CuPy arrays):
    the wall at 2.0 reaches its end on the device, as on the host."""
    pytest.importorskip("cupy")
    from simengine.resources import real_gpu

    if not real_gpu():
        pytest.skip("needs a real CUDA GPU")
    path = scenario(tmp_path, "spectral-adaptive", (("boundary.value", 2.0), ("time.end", 4.0)))
    d = yaml.safe_load(path.read_text())
    d["solver"]["backend"] = "cuda"
    path.write_text(yaml.safe_dump(d))
    rc, err = command(["run", str(path), "-o", str(tmp_path / "o.h5")])
    assert rc == 0, err[-600:]
