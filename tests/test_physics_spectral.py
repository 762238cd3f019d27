"""The spectral integrator for a general model (field/spectral/model_scheme.py): any f′, and
M(φ) by Zhu et al.'s splitting — second order towards the stencil RK2 solution, exactly the
plain SBDF2 step when M is constant, energy non-increasing with adaptive steps."""
import numpy as np
import pytest

import simengine.physics as P
from simengine.field.backends import make_solver
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.spectral.solver import SpectralFieldSolver
from simengine.physics.polynomial import Polynomial

T = 4.0


def _rk2(model, g, b, phi):
    r = make_solver(model, g, b, backend="cpu", kernel="global", dt=1e-3)
    r.load(phi)
    r.advance(int(T / 1e-3))
    return r.state()


def _spectral(model, g, b, phi, dt):
    s = SpectralFieldSolver(model, g, b, dt=dt)
    s.load(phi)
    s.advance(int(round(T / dt)))
    return s.state()


@pytest.mark.parametrize("case", ["degenerate-periodic", "fh-degenerate-mirror",
                                  "quintic-fixed"])
def test_second_order_towards_the_stencil_solution(case):
    if case == "degenerate-periodic":
        lw = P.Model(Polynomial((0, -1, 0, 1)), P.mobility("degenerate", m0=1.0), 1.0)
        mean, kind = 0.0, "periodic"
    elif case == "fh-degenerate-mirror":
        lw = P.Model(P.free_energy("flory_huggins", chi=3.0),
                     P.mobility("degenerate", m0=1.0, variable="c"), 1.0)
        mean, kind = 0.5, "mirror"
    else:
        lw = P.Model(Polynomial((0.05, -1, 0, 0, 0, 1)), P.mobility("constant", m=1.0), 1.0)
        mean, kind = 0.0, "fixed"
    model = CahnHilliard.of(lw)
    g, b = Grid((16, 16)), Boundary(kind, mean + 0.1)
    phi = mean + 0.2 * (np.random.default_rng(1).random((16, 16)) - 0.5)
    want = _rk2(model, g, b, phi)
    e1, e2 = (np.max(np.abs(_spectral(model, g, b, phi, dt) - want)) for dt in (0.1, 0.05))
    assert e2 < 2e-3
    assert e1 / e2 >= 3.0, (e1, e2)


def test_constant_m_through_the_splitting_is_the_plain_step():
    """M given as a degree-0 polynomial runs the splitting (R(φ*) + Dψ*); with A = M it is the
    SBDF2 step of the cubic model to rounding."""
    plain = CahnHilliard(1.0, 1.0, (0.0, -1.0, 0.0, 1.0))
    lw = P.Model(Polynomial((0, -1, 0, 1)), P.mobility("polynomial", coefficients=(1.0,)), 1.0)
    model = CahnHilliard.of(lw, reference_mobility=1.0)
    assert model.variable_mobility
    g, b = Grid((24, 20)), Boundary("periodic")
    phi = 0.1 * np.random.default_rng(2).standard_normal((24, 20))
    a, c = (_spectral(m, g, b, phi, 0.2) for m in (plain, model))
    assert np.max(np.abs(a - c)) <= 1e-11


def test_error_controlled_degenerate_steps_lower_the_energy():
    """Steps accepted by the adaptive controller on the error estimate alone (its energy check
    off) never raise F while dt grows past 1 (100 × the first step): the splitting with
    A = max M is stable at large steps."""
    from simengine.field.adaptive import Controller, advance_to

    lw = P.Model(Polynomial((0, -1, 0, 1)), P.mobility("degenerate", m0=1.0), 1.0)
    model = CahnHilliard.of(lw)
    g, b = Grid((32, 32)), Boundary("periodic")
    s = SpectralFieldSolver(model, g, b, dt=0.01)
    s.load(0.05 * np.random.default_rng(3).standard_normal((32, 32)))
    ctrl = Controller(0.01, 1e-3)
    energies, dts = [s.energy()], []

    def on_step(t):
        energies.append(s.energy())
        dts.append(ctrl.dt)

    advance_to(s, ctrl, 0.0, 300.0, on_step=on_step)
    assert len(energies) > 20 and max(dts) > 1.0, (len(energies), max(dts))
    assert all(b <= a + 1e-12 * abs(a) for a, b in zip(energies, energies[1:]))
    assert energies[-1] < energies[0] - 50
