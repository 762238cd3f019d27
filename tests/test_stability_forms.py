"""The explicit stability limit against real runs, for every potential form (issue 48, item 1).

For each form — the classic ``{b, u}`` and ``coefficients`` (PFHub 1a's asymmetric double well,
a double well with unequal wells, a convex single well, a quadratic) — a scenario is validated
just below and just above the limit, and the same initial field is run on the CPU solver:
validate must accept exactly the dt whose run stays bounded."""
import numpy as np
import pytest
import yaml

from simengine.config import scenario_from_text
from simengine.errors import UserError
from simengine.field.backends import make_solver
from simengine.field.initial import noise
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.stability import fsecond_bound, max_stable_dt, wells

N = 64
STEPS = 8000
#: potential key, M, κ, initial mean, the form's wells
FORMS = {
    "classic": ({"b": 1.0, "u": 1.0}, 1.0, 1.0, 0.0, [-1.0, 1.0]),
    "classic-wide": ({"b": 2.0, "u": 0.5}, 1.0, 1.0, 0.1, [-2.0, 2.0]),
    "pfhub-1a": ({"coefficients": [-2.1, 14.2, -30.0, 20.0]}, 5.0, 2.0, 0.5, [0.3, 0.7]),
    # f' = (φ + 1)(φ − 0.2)(φ − 1.5): wells −1 and 1.5, f'' larger at 1.5
    "unequal-wells": ({"coefficients": [0.3, -1.4, -0.7, 1.0]}, 1.0, 1.0, 0.2, [-1.0, 1.5]),
    "convex-quartic": ({"coefficients": [0.0, 0.5, 0.0, 1.0]}, 1.0, 1.0, 0.3, [0.0]),
    "quadratic": ({"coefficients": [0.2, 1.5, 0.0, 0.0]}, 1.0, 1.0, 0.0, [-0.2 / 1.5]),
}


AMP = 0.02


def _model(form):
    pot, mob, kap, _, _ = FORMS[form]
    a = pot.get("coefficients") or [0.0, -pot["b"], 0.0, pot["u"]]
    return CahnHilliard(mob, kap, tuple(a))


def _steepest_well(form):
    """The well where f'' is largest (the limit's f'' once φ sits there)."""
    model = _model(form)
    return max(wells(model), key=lambda w: float(model.fsecond(w)))


def _scenario(form, dt, mean, amp):
    pot, mob, kap, _, _ = FORMS[form]
    return {"kind": "field", "name": f"stab-{form}", "grid": {"shape": [N], "spacing": 1.0},
            "boundary": {"type": "periodic"},
            "model": {"mobility": mob, "kappa": kap, "potential": pot},
            "initial": {"type": "noise", "mean": mean, "amplitude": amp, "seed": 3},
            "time": {"dt": dt, "steps": STEPS},
            "solver": {"backend": "cpu", "kernel": "global"}}


def _validate(form, dt, mean, amp=AMP):
    """(accepted, the limit validate reports when it refuses)."""
    try:
        scenario_from_text(yaml.safe_dump(_scenario(form, dt, mean, amp)))
    except UserError as exc:
        assert "time.dt" in str(exc) and "stability limit" in str(exc)
        return False, float(str(exc).split("stability limit ")[1].split()[0])
    return True, None


def _limit(form, mean, amp=AMP):
    return max_stable_dt(_model(form), Grid((N,)), Boundary("periodic"),
                         (mean - amp, mean + amp))


def _run_bounded(model, dt, mean, amp=AMP) -> bool:
    s = make_solver(model, Grid((N,)), Boundary("periodic"), backend="cpu", kernel="global",
                    dt=dt)
    s.load(noise((N,), mean=mean, amplitude=amp, seed=3))
    with np.errstate(all="ignore"):
        for _ in range(STEPS // 500):
            s.advance(500)
            phi = s.state()
            if not np.all(np.isfinite(phi)) or np.abs(phi).max() > 1e3:
                return False
    return True


@pytest.mark.parametrize("form", sorted(FORMS))
def test_wells_of_each_form(form):
    model = _model(form)
    assert wells(model) == pytest.approx(FORMS[form][4], abs=1e-9)
    # the bound is the maximum of f'' over the initial range and every well
    mean = FORMS[form][3]
    span = np.linspace(min(FORMS[form][4] + [mean - AMP]), max(FORMS[form][4] + [mean + AMP]),
                       2001)
    assert fsecond_bound(model, Boundary("periodic"), (mean - AMP, mean + AMP)) == \
        pytest.approx(float(np.max(model.fsecond(span))), rel=1e-6)


@pytest.mark.parametrize("factor", [0.97, 1.03])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_at_the_steepest_well_the_limit_is_sharp(form, factor):
    """φ starts at the well where f'' is largest: the linear analysis is exact, so 3 % below the
    limit stays bounded and 3 % above blows up, and validate says which."""
    mean, amp = _steepest_well(form), 1e-4
    dt = factor * _limit(form, mean, amp)
    accepted, _ = _validate(form, dt, mean, amp)
    bounded = _run_bounded(_model(form), dt, mean, amp)
    assert accepted == bounded == (factor < 1), (form, factor, accepted, bounded)


@pytest.mark.parametrize("factor", [0.97, 1.2])
@pytest.mark.parametrize("form", sorted(FORMS))
def test_a_quench_is_judged_by_the_wells_it_reaches(form, factor):
    """φ starts near the spinodal (f'' < 0 there: PFHub 1a's case): the run reaches the wells,
    so the limit must come from them. Domains of a few cells lower the effective rate a little
    (1.1× blows up only after coarsening), so the step above is 1.2× — for PFHub 1a still below
    the limit of the initial range alone, which validate used to accept."""
    mean = FORMS[form][3]
    dt = factor * _limit(form, mean)
    accepted, reported = _validate(form, dt, mean)
    bounded = _run_bounded(_model(form), dt, mean)
    assert accepted == bounded == (factor < 1), (form, factor, accepted, bounded)
    if not accepted:
        assert reported == pytest.approx(_limit(form, mean), rel=1e-5)


def test_pfhub_1a_limit_is_the_wells_one():
    """The issue's case: BM1a on 200², M = 5, κ = 2, dt = 0.0032 from c = 0.5 ± 0.02."""
    model = _model("pfhub-1a")
    dmax = max_stable_dt(model, Grid((200, 200)), Boundary("periodic"), (0.48, 0.52))
    assert dmax == pytest.approx(2 / (5 * 8 * (1.6 + 16)), rel=1e-9)   # 0.00284
    assert dmax < 0.0032
