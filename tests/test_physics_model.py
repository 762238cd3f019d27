"""The physics model object (simengine/physics/): free energies, mobilities, their derived
numbers, the CPU model kernel and the conserved noise against the NumPy reference."""
import math

import numpy as np
import pytest
from numba import cuda

import simengine.physics as P
from simengine.errors import SimulationError
from simengine.field import reference as ref
from simengine.field.backends import make_solver
from simengine.field.decomposition import SlabGroup
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.noise import add_noise, reference_noise
from simengine.field.solver import CpuFieldSolver
from simengine.physics import philox
from simengine.physics.base import FreeEnergy
from simengine.physics.polynomial import Polynomial


def law(fe, mob=None, kappa=1.0, noise=None):
    return P.Model(fe, mob or P.mobility("constant", m=1.0), kappa, noise)


# ------------------------------------------------------------------ derived numbers
def test_classic_sigma_fmin_and_bound():
    m = law(Polynomial((0.0, -1.0, 0.0, 1.0)))
    assert m.equilibria == pytest.approx((-1.0, 1.0), abs=1e-12)
    assert m.sigma == pytest.approx(2 * math.sqrt(2) / 3, rel=1e-10)
    assert m.f_min(0.0) == pytest.approx(-0.25, abs=1e-12)
    assert m.fpp_bound(-1.0, 1.0) == pytest.approx(2.0)
    assert m.fpp_bound(-0.1, 0.1) == pytest.approx(-1.0 + 3 * 0.01)
    assert m.cubic == (0.0, -1.0, 0.0, 1.0)


def test_double_well_closed_forms_equal_the_numerical_ones():
    dw = P.free_energy("double_well", rho=5.0, c_alpha=0.3, c_beta=0.7)
    x = np.linspace(0.0, 1.0, 11)
    poly = Polynomial(dw.cubic(), offset=dw.offset)     # the same f as a plain polynomial
    assert np.allclose(poly.f(x), dw.f(x), rtol=0, atol=1e-14)
    num = FreeEnergy.binodal(poly)
    assert num[:2] == pytest.approx((0.3, 0.7), abs=1e-12)
    assert FreeEnergy.sigma(poly, 2.0) == pytest.approx(dw.sigma(2.0), rel=1e-9)
    assert dw.sigma(2.0) == pytest.approx(math.sqrt(20) * 0.4 ** 3 / 6)
    assert dw.f_min(0.5) == pytest.approx(0.0, abs=1e-14)


def test_flory_huggins_spinodal_binodal_critical():
    fh = P.free_energy("flory_huggins", chi=2.0, n_a=1.0, n_b=2.0)
    assert fh.chi_critical == pytest.approx(0.5 * (1 + 1 / math.sqrt(2)) ** 2)
    sp = fh.spinodals()
    assert FreeEnergy.spinodals(fh) == pytest.approx(sp, abs=1e-9)
    assert np.allclose(fh.fpp(np.array(sp)), 0.0, atol=1e-9)
    a, b, s = fh.binodal()
    assert fh.fp(a) == pytest.approx(s, abs=1e-10) and fh.fp(b) == pytest.approx(s, abs=1e-10)
    assert (fh.f(b) - fh.f(a)) / (b - a) == pytest.approx(s, abs=1e-10)
    assert 0 < a < sp[0] < sp[1] < b < 1
    assert P.free_energy("flory_huggins", chi=1.9).binodal() is None     # below χ_c = 2
    assert fh.sigma(1.0) > 0


def test_higher_degree_polynomial_bound_is_exact():
    p = Polynomial((0.0, -1.0, 0.0, 0.0, 0.0, 1.0))
    xs = np.linspace(-1.3, 0.4, 100001)
    assert p.fpp_bound(-1.3, 0.4) == pytest.approx(np.max(p.fpp(xs)), rel=1e-9)
    assert p.cubic() is None and law(p).general


def test_philox_known_answers():
    # Random123 kat_vectors, philox4x32 10 rounds
    assert philox.philox4x32(0, 0, 0, 0, 0, 0) == (0x6627e8d5, 0xe169c58d, 0xbc57ac4c,
                                                    0x9b00dbd8)
    key = (0x243f6a88, 0x85a308d3, 0x13198a2e, 0x03707344, 0xa4093822, 0x299f31d0)
    want = (0xd16cfe09, 0x94fdcceb, 0x5001e420, 0x24126ea1)
    assert philox.philox4x32(*key) == want
    assert tuple(philox.philox_cpu(*key)) == want
    assert philox.normal_cpu(7, 2**40 + 3, 2**33 + 5, 2) == philox.normal_py(7, 2**40 + 3,
                                                                            2**33 + 5, 2)


# ------------------------------------------------------------------ the model kernel
LAWS = {
    "fh-degenerate": (law(P.free_energy("flory_huggins", chi=3.0),
                          P.mobility("degenerate", m0=1.0, variable="c"), 0.7), 0.5),
    "cubic-degenerate": (law(Polynomial((0.0, -1.0, 0.0, 1.0)),
                             P.mobility("degenerate", m0=1.3), 0.8), 0.0),
    "quintic-constant": (law(Polynomial((0.1, -1.0, 0.0, 0.0, 0.0, 1.0)),
                             P.mobility("constant", m=2.0), 0.6), 0.0),
    "fh-polymob": (law(P.free_energy("flory_huggins", chi=2.6, n_a=1.5, n_b=1.0),
                       P.mobility("polynomial", coefficients=(0.2, 0.5, -0.3))), 0.45),
}
SHAPES = {1: (13,), 2: (9, 11), 3: (5, 6, 7)}


@pytest.mark.parametrize("name", list(LAWS))
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_model_kernel_equals_reference(name, ndim):
    lw, mean = LAWS[name]
    model = CahnHilliard.of(lw)
    assert model.general and np.isnan(model.coefficients).all()
    rng = np.random.default_rng(ndim)
    shape = SHAPES[ndim]
    for kind, v in (("periodic", 0.0), ("mirror", 0.0), ("fixed", mean + 0.1)):
        g, b = Grid(shape, 1.3), Boundary(kind, v)
        phi = mean + 0.2 * (rng.random(shape) - 0.5)
        want = phi
        for _ in range(3):
            want = ref.step(want, 0.01, model, g, b)
        for dt, tol in ((np.float64, 1e-12), (np.float32, 1e-5)):
            s = make_solver(model, g, b, backend="cpu", kernel="global", precision=dt,
                            dt=0.01)
            s.load(phi.astype(dt))
            s.advance(3)
            err = np.max(np.abs(s.state() - want)) / np.max(np.abs(want))
            assert err <= tol, (kind, dt, err)


def test_constant_mobility_face_form_is_m_lap_mu():
    """The conservative face form with a constant M is the cubic kernels' M·lap μ."""
    cubic = CahnHilliard(1.7, 0.9, (0.1, -1.0, 0.2, 1.0))
    lw = law(Polynomial((0.1, -1.0, 0.2, 1.0)), P.mobility("polynomial", coefficients=(1.7,)),
             0.9)
    model = CahnHilliard.of(lw)
    phi = 0.3 * np.random.default_rng(1).standard_normal((12, 10))
    for kind in ("periodic", "mirror", "fixed"):
        g, b = Grid(phi.shape), Boundary(kind, 0.2)
        assert np.allclose(ref.rhs(phi, model, g, b), ref.rhs(phi, cubic, g, b), rtol=0,
                           atol=1e-12)


def test_legacy_law_runs_the_cubic_kernels_bit_for_bit():
    lw = law(Polynomial((0.0, -1.0, 0.0, 1.0)), P.mobility("constant", m=1.0))
    model = CahnHilliard.of(lw)
    assert not model.general and model.coefficients == (0.0, -1.0, 0.0, 1.0)
    phi = 0.1 * np.random.default_rng(2).standard_normal((40, 36))
    out = []
    for m in (CahnHilliard.classic(), model):
        s = make_solver(m, Grid(phi.shape), Boundary("periodic"), backend="cpu",
                        kernel="texture", dt=0.01)
        s.load(phi)
        s.advance(5)
        out.append(s.state())
    assert np.array_equal(out[0], out[1])


def test_other_strategies_and_cuda_refuse_a_general_model():
    model = CahnHilliard.of(LAWS["fh-degenerate"][0])
    with pytest.raises(ValueError, match="kernel global only"):
        make_solver(model, Grid((8, 8)), Boundary("periodic"), backend="cpu",
                    kernel="texture", dt=0.01)


def test_flory_huggins_leaving_the_domain_stops_with_the_step():
    lw = law(P.free_energy("flory_huggins", chi=3.0))
    model = CahnHilliard.of(lw)
    s = make_solver(model, Grid((16, 16)), Boundary("periodic"), backend="cpu",
                    kernel="global", dt=5.0)             # far beyond the stability limit
    s.load(0.5 + 0.1 * np.random.default_rng(3).standard_normal((16, 16)).clip(-3, 3))
    with pytest.raises(SimulationError, match=r"^step \d+: c left the domain \(0, 1\)"):
        s.advance(50)


# ------------------------------------------------------------------ noise
def noisy(mob, amplitude=0.3, seed=11):
    return CahnHilliard.of(law(Polynomial((0.0, -1.0, 0.0, 1.0)), mob, 1.0,
                               P.Noise(amplitude, seed)))


@pytest.mark.parametrize("mob", [P.mobility("constant", m=2.0),
                                 P.mobility("degenerate", m0=1.0)])
@pytest.mark.parametrize("ndim", [1, 2, 3])
def test_noise_kernel_equals_reference_and_conserves_mass(mob, ndim):
    model = noisy(mob)
    shape = {1: (7,), 2: (5, 6), 3: (3, 4, 5)}[ndim]
    rng = np.random.default_rng(ndim)
    for kind in ("periodic", "mirror"):
        g, b = Grid(shape, 1.5), Boundary(kind)
        phi = 0.3 * (rng.random(shape) - 0.5)
        out = np.zeros_like(phi)
        add_noise(phi, out, model=model, grid=g, boundary=b, dt=0.01, step=5, lo=0,
                  hi=shape[0], row0=0)
        want = reference_noise(shape, model=model, grid=g, boundary=b, dt=0.01, step=5,
                               phi=phi)
        assert np.max(np.abs(out - phi - want)) <= 1e-12 * np.max(np.abs(want))
        assert abs(np.sum(out - phi)) <= 1e-13 * np.sum(np.abs(want))
        assert np.std(want) > 0


def test_noise_variance_is_two_a_m_dt_over_h_d():
    """Each face's integrated flux has variance 2·A·M·dt/h^d: the increment of a periodic 1-D
    cell is (Ξ₋ − Ξ₊)/h, variance 2·(2AM dt/h)/h²."""
    a, m, dt, h = 0.3, 2.0, 0.01, 1.5
    model = noisy(P.mobility("constant", m=m), a)
    g, b = Grid((4096,), h), Boundary("periodic")
    d = reference_noise  # noqa: F841  (the kernel is the tested equal of the reference)
    phi = np.zeros(4096)
    out = np.zeros_like(phi)
    var = []
    for step in range(8):
        add_noise(phi, out, model=model, grid=g, boundary=b, dt=dt, step=step, lo=0, hi=4096,
                  row0=0)
        var.append(np.var(out))
    want = 2 * (2 * a * m * dt / h) / h ** 2
    assert np.mean(var) == pytest.approx(want, rel=0.03)


@pytest.mark.parametrize("mob", [P.mobility("constant", m=1.0),
                                 P.mobility("degenerate", m0=1.0)])
def test_noise_same_on_slabs_and_after_resume(mob):
    model = noisy(mob, 0.05)
    shape, kind = (12, 10), "periodic"
    g, b = Grid(shape), Boundary(kind)
    phi = 0.2 * np.random.default_rng(5).standard_normal(shape)
    whole = CpuFieldSolver(model, g, b, kernel="global", dt=0.01)
    whole.load(phi)
    whole.advance(6)
    want = whole.state()
    for split in (2, 3):
        grp = SlabGroup(lambda s, ex: CpuFieldSolver(model, g, b, kernel="global", dt=0.01,
                                                     slab=s, exchange=ex), shape[0], split, kind)
        grp.load(phi)
        grp.advance(6)
        assert np.array_equal(grp.state(), want)
    first = CpuFieldSolver(model, g, b, kernel="global", dt=0.01)
    first.load(phi)
    first.advance(4)
    again = CpuFieldSolver(model, g, b, kernel="global", dt=0.01)
    again.load(first.state())
    again.steps = 4                            # what the field job sets on --resume
    again.advance(2)
    assert np.array_equal(again.state(), want)
    other = CpuFieldSolver(noisy(mob, 0.05, seed=12), g, b, kernel="global", dt=0.01)
    other.load(phi)
    other.advance(6)
    assert not np.array_equal(other.state(), want)


# ------------------------------------------------------------------ the plan's model row
def test_plan_refuses_what_the_model_kernels_do_not_run_in_one_line():
    from simengine.errors import UserError
    from simengine.plan import FieldProblem, build

    base = dict(ndim=2, shape=(16, 16), precision="float64", boundary="periodic",
                integrator="rk2", backend="cpu", kernel="global")
    gm = ("general", "mobility")
    assert "model fh" in build(FieldProblem(**base, model_needs=gm, model="fh")).line
    cases = [
        (dict(kernel="texture"), gm, r"solver\.kernel: texture: .* kernel global only"),
        (dict(backend="cuda"), gm, r"runs on backend cpu"),
        (dict(integrator="spectral", symbol="exact"), gm, r"symbol fd only"),
        (dict(integrator="spectral", ranks=2), gm, r"in one process"),
        (dict(integrator="spectral"), ("noise",), r"model\.noise runs with integrator rk2"),
        (dict(adaptive=True, end=10.0), ("noise",), r"^time\.adaptive: model\.noise"),
        (dict(boundary="fixed"), ("noise",), r"not fixed"),
    ]
    for change, needs, match in cases:
        with pytest.raises(UserError, match=match) as err:
            build(FieldProblem(**{**base, **change}, model_needs=needs))
        assert "\n" not in str(err.value)
    build(FieldProblem(**{**base, "integrator": "spectral"}, model_needs=gm))


def test_cuda_solver_refuses_a_general_model_in_one_line():
    from simengine.field.cuda_solver import CudaFieldSolver

    model = CahnHilliard.of(LAWS["quintic-constant"][0])
    with pytest.raises(ValueError, match="runs on backend cpu") as err:
        CudaFieldSolver(model, Grid((8, 8)), Boundary("periodic"), kernel="global", dt=0.01)
    assert "\n" not in str(err.value)


def test_philox_cuda_device_function_gives_the_cpu_numbers():
    """The same Philox source as a CUDA device function (simulator here; the GPU in CI's
    device run): the integers and the normals of (seed, step, cell, axis) equal the CPU's."""
    _, normal_dev = philox.cuda_device()

    @cuda.jit
    def draw(out, seed, step):
        i = cuda.grid(1)
        if i < out.shape[0]:
            out[i] = normal_dev(seed, step, i * 7919, i % 3)

    out = cuda.to_device(np.zeros(16))
    draw[1, 16](out, np.int64(2**35 + 9), np.int64(123456789))
    want = [philox.normal_cpu(2**35 + 9, 123456789, i * 7919, i % 3) for i in range(16)]
    assert np.allclose(out.copy_to_host(), want, rtol=1e-15, atol=0)
