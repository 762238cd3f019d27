"""Stability limit, observables definitions, solver interface."""
import math

import numpy as np
import pytest

from simengine.field import observables as obs
from simengine.field import reference as ref
from simengine.field.initial import noise, single_mode
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.backends import make_solver
from simengine.field.solver import CpuFieldSolver
from simengine.field.stability import check_dt, max_stable_dt

CLASSIC = CahnHilliard.classic()


def test_max_stable_dt_formula():
    # periodic, even N, h = M = κ = 1, f''max = f''(±1) = 2: Λmax = 4d, dt = 2/(Λ(2 + Λ))
    for d, shape in ((1, (32,)), (2, (16, 16)), (3, (8, 8, 8))):
        lam = 4.0 * d
        assert max_stable_dt(CLASSIC, Grid(shape), Boundary("periodic")) == pytest.approx(
            2.0 / (lam * (2.0 + lam)), rel=1e-14)
    # spacing h scales Λ by 1/h²; fixed admits πN/(N+1) only
    n, h = 10, 0.5
    lam = 4 / h ** 2 * math.sin(math.pi * n / (2 * (n + 1))) ** 2
    assert max_stable_dt(CLASSIC, Grid((n,), h), Boundary("fixed", 0.0)) == pytest.approx(
        2.0 / (lam * (2.0 + lam)))
    # a wider φ range raises f''max and lowers the limit
    assert max_stable_dt(CLASSIC, Grid((16,)), Boundary("periodic"), (-2, 2)) < \
        max_stable_dt(CLASSIC, Grid((16,)), Boundary("periodic"))
    ok, dmax = check_dt(0.5, CLASSIC, Grid((16,)), Boundary("periodic"))
    assert not ok and dmax == max_stable_dt(CLASSIC, Grid((16,)), Boundary("periodic"))


@pytest.mark.parametrize("kind,shape", [("periodic", (32,)), ("periodic", (16, 16)),
                                        ("mirror", (12, 14)), ("fixed", (12, 10))])
def test_dt_above_limit_blows_up_below_does_not(kind, shape):
    grid = Grid(shape)
    b = Boundary(kind, 1.0)
    phi0 = noise(shape, mean=1.0, amplitude=0.01, seed=1)
    dmax = max_stable_dt(CLASSIC, grid, b, (phi0.min(), phi0.max()))
    results = {}
    for f in (0.95, 1.05):
        s = make_solver(CLASSIC, grid, b, backend="cpu", dt=f * dmax)
        s.load(phi0)
        with np.errstate(all="ignore"):
            s.advance(1500)
        phi = s.state()
        results[f] = np.nanmax(np.abs(phi - 1.0)) if np.all(np.isfinite(phi)) else np.inf
    assert results[0.95] < 0.02
    assert results[1.05] > 1.0


def _free_energy_loop(phi, model, grid, b):
    """Brute force: pad by one ghost on the high side per axis and sum forward differences."""
    h = grid.spacing
    total = float(np.sum(model.f(phi)))
    g = 0.0
    for ax in range(phi.ndim):
        n = phi.shape[ax]
        for i in range(n):
            a = np.take(phi, i, axis=ax)
            if i + 1 < n:
                nxt = np.take(phi, i + 1, axis=ax)
            elif b.kind == "periodic":
                nxt = np.take(phi, 0, axis=ax)
            elif b.kind == "mirror":
                nxt = a
            else:
                nxt = np.full_like(a, b.value)
            g += float(np.sum((nxt - a) ** 2))
        if b.kind == "fixed":
            g += float(np.sum((np.take(phi, 0, axis=ax) - b.value) ** 2))
    return (total + 0.5 * model.kappa * g / h ** 2) * h ** phi.ndim


@pytest.mark.parametrize("kind", ["periodic", "mirror", "fixed"])
def test_free_energy_definition(kind):
    model = CahnHilliard(1.0, 0.8, (0.1, -1.0, 0.3, 1.0))
    grid = Grid((5, 6, 7), 0.7)
    b = Boundary(kind, 0.4)
    phi = noise(grid.shape, 0.1, 0.8, seed=2)
    assert obs.free_energy(phi, model, grid, b) == pytest.approx(
        _free_energy_loop(phi, model, grid, b), rel=1e-12)
    # uniform periodic field: only bulk
    assert obs.free_energy(np.full((4, 4), 0.5), CLASSIC, Grid((4, 4), 2.0),
                           Boundary("periodic")) == pytest.approx(16 * 4 * CLASSIC.f(0.5))


def test_characteristic_length():
    phi = single_mode((64, 32), amplitude=0.5, modes=(4, 0))
    assert obs.characteristic_length(phi, 0.5) == pytest.approx(64 * 0.5 / 4)
    assert obs.characteristic_length(np.full((8, 8), 0.3)) == math.inf
    assert obs.mass(phi) == pytest.approx(0.0, abs=1e-15)


def test_noise_reproducible():
    a = noise((5, 7), 0.2, 0.1, seed=42)
    assert np.array_equal(a, noise((5, 7), 0.2, 0.1, seed=42))
    assert not np.array_equal(a, noise((5, 7), 0.2, 0.1, seed=43))
    assert a.min() >= 0.1 and a.max() <= 0.3
    assert noise((3,), dtype=np.float32).dtype == np.float32


def test_solver_interface_and_errors():
    grid = Grid((12, 10))
    b = Boundary("mirror")
    s = make_solver(CLASSIC, grid, b, backend="auto", kernel="shared", precision="float32", dt=0.01)
    # auto = CUDA exactly when a real GPU is usable (never the simulator)
    from simengine.field.backends import cuda_usable
    assert (s.backend == "cuda") == cuda_usable()
    s = make_solver(CLASSIC, grid, b, backend="cpu", kernel="shared", precision="float32", dt=0.01)
    assert isinstance(s, CpuFieldSolver) and s.name == "cpu/shared/float32"
    phi0 = noise(grid.shape, 0.0, 0.2, seed=0)
    s.load(phi0)
    st = s.state()
    st[...] = 9.0  # a host copy
    assert s.state().max() < 1
    r = s.reductions()
    assert set(r) == {"mass", "free_energy", "min", "max"}
    e = make_solver(CLASSIC, grid, b, backend="cpu", kernel="texture", integrator="euler", dt=0.01)
    e.load(phi0)
    e.advance(4)
    assert np.abs(e.state() - ref.run(phi0, 4, 0.01, CLASSIC, grid, b, "euler")).max() < 1e-13
    with pytest.raises(ValueError, match="kernel"):
        make_solver(CLASSIC, grid, b, kernel="warp", dt=0.01)
    with pytest.raises(ValueError, match="backend"):
        make_solver(CLASSIC, grid, b, backend="tpu", dt=0.01)
    with pytest.raises(ValueError, match="integrator"):
        make_solver(CLASSIC, grid, b, backend="cpu", integrator="rk4", dt=0.01)
    with pytest.raises(ValueError, match="shape"):
        s.load(np.zeros((3, 3)))


def test_stability_limit_of_huge_axes_allocates_nothing_big():
    """The stability limit of a 10⁹-cell axis comes from the peak modes only (it built arrays of
    every mode: a fuzzed scenario made ``simengine validate`` take 23 GB)."""
    import tracemalloc

    from simengine.field.stability import _lambda_axis_max

    tracemalloc.start()
    try:
        got = {kind: _lambda_axis_max(10**9 + 1, 0.5, kind)
               for kind in ("periodic", "mirror", "fixed")}
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert peak < 1 << 20
    assert all(15.999 < v <= 16.0 for v in got.values())  # 4/h² · sin² of an angle near π/2
