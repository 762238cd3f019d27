"""Physics and convergence of the CPU field solver (conservation, energy, orders, linear rate)."""
import math

import numpy as np
import pytest

from simengine.field import cpu as ck
from simengine.field import observables as obs
from simengine.field import reference as ref
from simengine.field.initial import mode_wavenumbers, noise, single_mode
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.backends import make_solver
from simengine.field.stability import laplacian_symbol, linear_rate, max_stable_dt

CLASSIC = CahnHilliard.classic()


@pytest.mark.parametrize("kind", ["periodic", "mirror"])
def test_mass_conserved_1000_steps(kind):
    grid = Grid((16, 20))
    b = Boundary(kind)
    dt = 0.5 * max_stable_dt(CLASSIC, grid, b, (-1, 1))
    s = make_solver(CLASSIC, grid, b, backend="cpu", dt=dt)
    phi0 = noise(grid.shape, mean=0.3, amplitude=0.4, seed=3)
    s.load(phi0)
    m0 = s.reductions()["mass"]
    s.advance(1000)
    phi = s.state()
    assert np.abs(phi - phi0).max() > 0.1  # a real evolution, not a frozen field
    assert abs(obs.mass(phi) - m0) <= 1e-12 * abs(m0)


def test_fixed_boundary_exchanges_mass():
    grid = Grid((16, 16))
    b = Boundary("fixed", 0.8)
    s = make_solver(CLASSIC, grid, b, backend="cpu", dt=0.01)
    s.load(noise(grid.shape, mean=-0.2, amplitude=0.05, seed=3))
    m0 = s.reductions()["mass"]
    s.advance(200)
    assert abs(s.reductions()["mass"] - m0) > 1e-3


@pytest.mark.parametrize("kind", ["periodic", "mirror"])
def test_free_energy_non_increasing(kind):
    grid = Grid((24, 24))
    b = Boundary(kind)
    dt = 0.25 * max_stable_dt(CLASSIC, grid, b, (-1, 1))
    s = make_solver(CLASSIC, grid, b, backend="cpu", dt=dt)
    s.load(noise(grid.shape, mean=0.0, amplitude=0.3, seed=5))
    energies = [s.reductions()["free_energy"]]
    for _ in range(40):
        s.advance(10)
        energies.append(s.reductions()["free_energy"])
    e = np.array(energies)
    assert np.all(np.diff(e) <= 1e-12 * np.abs(e[:-1]).max())
    assert e[-1] < e[0] - 10.0  # it really relaxed (spinodal decomposition lowers F a lot)


def _run(phi0, grid, b, dt, nsteps, integrator="rk2", model=CLASSIC):
    s = make_solver(model, grid, b, backend="cpu", dt=dt, integrator=integrator)
    s.load(phi0)
    s.advance(nsteps)
    return s.state()


@pytest.mark.parametrize("integrator,order", [("rk2", 2), ("euler", 1)])
def test_time_order(integrator, order):
    grid = Grid((32,), 1.0)
    b = Boundary("periodic")
    x = np.arange(32)
    phi0 = 0.2 + 0.3 * np.cos(2 * np.pi * x / 32) + 0.1 * np.sin(4 * np.pi * x / 32)
    T = 4.0
    fine = _run(phi0, grid, b, T / 3200, 3200, "rk2")
    errs = [np.abs(_run(phi0, grid, b, T / n, n, integrator) - fine).max() for n in (50, 100, 200)]
    r1, r2 = errs[0] / errs[1], errs[1] / errs[2]
    target = 2.0 ** order
    assert abs(r1 - target) < 0.15 * target and abs(r2 - target) < 0.1 * target, (errs, r1, r2)


def test_stencil_second_order_in_space():
    """R(φ) of the stage against the continuum M ∂²(f'(φ) − κ∂²φ) for a smooth periodic φ."""
    model = CahnHilliard(mobility=1.3, kappa=0.6, coefficients=(0.0, -1.0, 0.0, 1.0))
    A, m, L = 0.5, 0.1, 2 * np.pi
    errs = []
    for n in (16, 32, 64):
        h = L / n
        x = np.arange(n) * h
        phi = m + A * np.sin(x)
        p1 = A * np.cos(x)
        p2 = -A * np.sin(x)
        p4 = A * np.sin(x)
        # μ'' = −φ'' + (φ³)'' − κ φ'''' , (φ³)'' = 6 φ φ'² + 3 φ² φ''
        exact = model.mobility * (-p2 + 6 * phi * p1 ** 2 + 3 * phi ** 2 * p2 - model.kappa * p4)
        grid = Grid((n,), h)
        out = np.zeros(n)
        ck.texture_stage_1d(phi, np.zeros(n), out, 1.0, ck.make_params(model, grid), 0, 0.0, 0, n,
                            ck.default_tile(1))
        assert np.allclose(out, ref.rhs(phi, model, grid, Boundary("periodic")), rtol=0,
                           atol=1e-12 * np.abs(out).max())
        errs.append(np.abs(out - exact).max())
    r1, r2 = errs[0] / errs[1], errs[1] / errs[2]
    assert 3.6 < r1 < 4.4 and 3.8 < r2 < 4.2, errs


@pytest.mark.parametrize("kind,shape,modes,mean", [
    ("periodic", (32, 32), (4, 0), 0.0),
    ("mirror", (24, 20), (3, 2), 0.1),
    ("fixed", (20, 22), (2, 3), 0.0),
])
def test_single_mode_grows_at_discrete_linear_rate(kind, shape, modes, mean):
    eps = 1e-7
    grid = Grid(shape, 1.0)
    b = Boundary(kind, mean)
    phi0 = single_mode(shape, mean=mean, amplitude=eps, modes=modes, kind=kind)
    lam = laplacian_symbol(mode_wavenumbers(shape, modes, 1.0, kind), 1.0)
    omega = linear_rate(CLASSIC, grid, mean, lam)
    assert omega > 0.1  # a growing mode: the test checks growth, not decay
    dt = 0.01
    n = int(round(5.0 / (omega * dt)))  # grow by about e^5
    phi = _run(phi0, grid, b, dt, n)
    basis = (phi0 - mean) / eps
    amp = float(np.sum((phi - mean) * basis) / np.sum(basis * basis))
    expected = eps * math.exp(omega * dt * n)
    assert expected > 100 * eps
    assert abs(amp / expected - 1) < 2e-3, (amp, expected)
