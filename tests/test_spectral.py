"""The spectral integrator (simengine/field/spectral): its symbol is the stencil's Laplacian, it
converges at second order to the stencil RK2 solution, its adaptive runs never raise F, and the
host DST-I of the GPU path equals SciPy's."""
import numpy as np
import pytest
import scipy.fft as sfft

from simengine.field import reference as ref
from simengine.field.adaptive import Controller, StepDoubling, advance_to, energy_tolerance
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.observables import free_energy, reductions
from simengine.field.spectral import rules
from simengine.field.spectral.energy import free_energy as device_free_energy
from simengine.field.spectral.solver import SpectralFieldSolver
from simengine.field.spectral.transforms import Transform, _dst1_axis_xp

KINDS = ("periodic", "mirror", "fixed")


def _boundary(kind):
    return Boundary(kind, 0.3 if kind == "fixed" else 0.0)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("shape", [(11,), (6, 9), (4, 5, 7)])
def test_fd_symbol_is_the_stencil_laplacian(kind, shape):
    """inverse(λ · forward(φ − v)) equals the stencil Laplacian with the boundary's ghost rule
    (DCT-II ↔ the mirror rule φ₋₁ = φ₀, DST-I ↔ φ = v outside) on random fields."""
    b = _boundary(kind)
    h = 0.7
    phi = np.random.default_rng(3).standard_normal(shape)
    tr = Transform(shape, h, kind, "fd")
    v = b.value if kind == "fixed" else 0.0
    spectral = tr.inverse(tr.lam * tr.forward(phi - v))
    stencil = ref._lap_of_padded(ref.pad(phi, 1, b, b.value), h)
    assert np.max(np.abs(spectral - stencil)) < 1e-12 * np.max(np.abs(stencil))
    # a periodic FFT on mirror or fixed walls would not be the stencil's operator
    if kind != "periodic":
        wrong = Transform(shape, h, "periodic", "fd")
        bad = wrong.inverse(wrong.lam * wrong.forward(phi - v))
        assert np.max(np.abs(bad - stencil)) > 1e-3


def test_exact_symbol_is_minus_k_squared():
    tr = Transform((8,), 1.0, "periodic", "exact")
    k = 2 * np.pi * np.fft.rfftfreq(8)
    assert np.allclose(tr.lam, -k * k, rtol=0, atol=1e-15)
    fd = Transform((8,), 1.0, "periodic", "fd")
    assert np.all(fd.lam[1:] > tr.lam[1:])  # |fd| < k² away from k = 0


def test_gpu_dst1_form_equals_scipy():
    x = np.random.default_rng(0).standard_normal((5, 7))
    for ax in (0, 1):
        assert np.allclose(_dst1_axis_xp(x, ax, np), sfft.dst(x, type=1, norm="ortho", axis=ax),
                           rtol=0, atol=1e-13)


def _rk2_reference(phi0, T, model, grid, b, steps=1600):
    p = phi0.copy()
    for _ in range(steps):
        p = ref.step(p, T / steps, model, grid, b, "rk2")
    return p


@pytest.mark.parametrize("kind", KINDS)
def test_second_order_against_rk2(kind):
    """Fixed-dt runs at dt and dt/2 against RK2 at a tiny dt: error ratio ≥ 3."""
    m, g, b = CahnHilliard(), Grid((16, 16)), _boundary(kind)
    phi0 = 0.3 * np.random.default_rng(1).standard_normal(g.shape)
    T = 2.0
    exact = _rk2_reference(phi0, T, m, g, b)
    errs = []
    for dt in (0.1, 0.05):
        s = SpectralFieldSolver(m, g, b, dt=dt)
        s.load(phi0)
        s.advance(int(round(T / dt)))
        errs.append(np.max(np.abs(s.state() - exact)))
    assert errs[0] / errs[1] >= 3.0, errs


def test_float32_follows_float64():
    m, g, b = CahnHilliard(), Grid((16, 16)), Boundary("mirror")
    phi0 = 0.3 * np.random.default_rng(2).standard_normal(g.shape)
    out = {}
    for prec in ("float32", "float64"):
        s = SpectralFieldSolver(m, g, b, dt=0.1, precision=prec)
        s.load(phi0)
        s.advance(20)
        assert s.state().dtype == np.dtype(prec)
        out[prec] = s.state().astype(np.float64)
    assert np.max(np.abs(out["float32"] - out["float64"])) < 1e-4


def test_reductions_match_observables():
    m, g, b = CahnHilliard(), Grid((9, 12)), _boundary("fixed")
    phi = np.random.default_rng(4).standard_normal(g.shape)
    s = SpectralFieldSolver(m, g, b, dt=0.1)
    s.load(phi)
    want = reductions(phi, m, g, b)
    got = s.reductions()
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-12)
    assert device_free_energy(phi, m, g, b) == pytest.approx(free_energy(phi, m, g, b), rel=1e-12)


@pytest.mark.parametrize("kind", ["periodic", "mirror"])
def test_adaptive_energy_never_rises(kind):
    """Every accepted step of an adaptive run lowers F (or keeps it within rounding); dt grows
    by orders of magnitude as the pattern coarsens; mass is conserved."""
    m, g, b = CahnHilliard(), Grid((32, 32)), _boundary(kind)
    phi0 = 0.05 * (2 * np.random.default_rng(5).random(g.shape) - 1)
    s = SpectralFieldSolver(m, g, b, dt=0.01)
    s.load(phi0)
    ctrl = Controller(0.01, 1e-3)
    energies, dts = [s.energy()], []

    def seen(t):
        energies.append(s.energy())
        dts.append(ctrl.last_dt)

    tol = lambda F: energy_tolerance(F, g.cells, 1.0, np.float64)  # noqa: E731
    t = advance_to(s, ctrl, 0.0, 400.0, energy_tol=tol, on_step=seen)
    assert t == 400.0
    rises = np.diff(energies)
    assert np.all(rises <= [tol(F) for F in energies[:-1]])
    assert energies[-1] < energies[0]
    assert max(dts) > 100 * 0.01
    assert abs(s.reductions()["mass"] - phi0.mean()) < 1e-13


def test_step_doubling_rk2_stays_under_the_stability_limit():
    from simengine.field.solver import CpuFieldSolver
    from simengine.field.stability import max_stable_dt

    m, g, b = CahnHilliard(), Grid((16, 16)), Boundary("periodic")
    phi0 = 0.05 * (2 * np.random.default_rng(6).random(g.shape) - 1)
    solver = CpuFieldSolver(m, g, b, dt=0.01)
    solver.load(phi0)
    limit = max_stable_dt(m, g, b, phi_range=(-1, 1))
    ctrl = Controller(0.01, 1e-4, exponent=1 / 3, dt_limit=limit)
    stepper = StepDoubling(solver, 2, lambda p: free_energy(p, m, g, b))
    dts = []
    advance_to(stepper, ctrl, 0.0, 20.0, on_step=lambda t: dts.append(ctrl.last_dt))
    assert max(dts) <= limit
    # against fixed-dt RK2 at a small dt
    exact = _rk2_reference(phi0, 20.0, m, g, b, steps=4000)
    assert np.max(np.abs(solver.state() - exact)) < 1e-2


def test_rules_answer_for_the_plan():
    class P:
        ndim, shape, precision, boundary, integrator = 2, (256, 256), "float64", "mirror", \
            "spectral"
        backend, kernel, fused, ranks, devices, symbol, adaptive = "cpu", "texture", "auto", \
            1, 1, "fd", True

    assert rules.can_run(P()) == (True, "")
    assert rules.describe(P()) == "spectral sbdf2 dct-ii symbol=fd adaptive"
    assert rules.memory_bytes(P()) > 256 * 256 * 8 * 10
    P.ranks = 2
    assert rules.can_run(P()) == (True, "")  # MPI slabs on the CPU
    assert rules.describe(P()).endswith("adaptive slabs=2 transpose=alltoall")
    P.backend = "cuda"  # GPU ranks: CuPy's absence is the one-line refusal here
    ok, why = rules.can_run(P())
    try:
        import cupy  # noqa: F401
    except ImportError:
        assert not ok and "CuPy" in why and "\n" not in why
    assert rules.describe(P()).endswith("slabs=2 transpose=host-staged-alltoall")
