"""The fused GPU spectral step (field/spectral/gpu_step.py) driven by NumPy twins of its CUDA
kernels and of the cuFFT plan pair, against the host scheme (scheme.SBDF2 with NumPy Kernels) on
the same input: the buffer rotation, the start step, the arguments each launch gets and the
reductions' formulae are checked here; the CUDA source itself runs on the device
(tests/gpu/spectral_checks.py compares the GPU with the CPU)."""
from __future__ import annotations

import math

import numpy as np
import pytest

from simengine.field import observables
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.spectral import gpu_kernels as gk
from simengine.field.spectral.gpu_step import FusedSBDF2, symbol_table
from simengine.field.spectral.scheme import SBDF2, Kernels
from simengine.field.spectral.solver import stabilization_for
from simengine.field.spectral.transforms import Transform


class Dev(np.ndarray):
    """A host array with CuPy's ``get``."""

    def get(self):
        return np.array(self)


class FakeCp:
    @staticmethod
    def empty(shape, dtype):
        return np.full(shape, np.nan, dtype=dtype).view(Dev)

    @staticmethod
    def empty_like(a):
        return np.full_like(a, np.nan).view(Dev)

    @staticmethod
    def asarray(a, dtype=None):
        return np.array(a, dtype=dtype).view(Dev)


def _dims(shape):
    return [1] * (3 - len(shape)) + list(shape)


class Twins:
    """The kernels of gpu_kernels.SOURCE, argument for argument, in NumPy."""

    def __init__(self, shape):
        self.shape = tuple(shape)

    def get_function(self, name):
        return lambda grid, block, args: getattr(self, name)(*args)

    def sb_g(self, phi, prev, g, n, w, have, a0, a1, a2, a3, fv, sc, v):
        t = phi.dtype.type
        s = ((1 + w) * phi - w * prev).astype(phi.dtype) if have else phi
        g[...] = a0 + s * (a1 + s * (a2 + s * a3)) - fv - sc * (s - v)
        assert g.dtype == t(0).dtype

    def sb_update(self, hat, prev, ghat, out, ns, ncomp, tab, m1, m2, o1, o2, mob, kap, stab,
                  c1, c2, a, dt, scale, have):
        k = np.arange(int(ns))
        i2, r = k % int(m2), k // int(m2)
        lam = tab[r // int(m1)] + tab[int(o1) + r % int(m1)] + tab[int(o2) + i2]
        dt_ = hat.dtype
        mlam = (mob * lam).astype(dt_)
        dop = (mob * kap * lam * lam - mob * stab * lam).astype(dt_)
        den = np.repeat(a + dt * dop, int(ncomp))
        mlam = np.repeat(mlam, int(ncomp))
        h, gh = hat.reshape(-1), ghat.reshape(-1)
        num = c1 * h + dt * mlam * gh
        if have:
            num = num - c2 * prev.reshape(-1)
        o = num / den
        out.reshape(-1)[...] = o
        gh[...] = o * scale

    def sb_sums(self, x, y, z, mode, w, n0, n1, n2, nd, kind, v, a0, b1, b2, a3, part):
        p = np.asarray(x, dtype=np.float64).reshape(int(n0), int(n1), int(n2))
        sf = np.sum(p * (a0 + p * (b1 + p * (b2 + p * a3 / 4.0))))
        sg = 0.0
        for ax in range(3 - int(nd), 3):
            d = np.diff(p, axis=ax)
            sg += np.sum(d * d)
            first, last = np.take(p, 0, axis=ax), np.take(p, -1, axis=ax)
            if kind == 0:
                sg += np.sum((first - last) ** 2)
            elif kind == 2:
                sg += np.sum((v - last) ** 2) + np.sum((first - v) ** 2)
        sd = 0.0
        if mode == 1:
            sd = np.sum((p.reshape(-1) - np.asarray(y, np.float64).reshape(-1)) ** 2)
        elif mode == 2:
            st = ((1 + w) * y - w * z).astype(x.dtype)
            sd = np.sum((p.reshape(-1) - st.astype(np.float64).reshape(-1)) ** 2)
        part[:] = 0
        part[:gk.NSUMS] = [sd, p.sum(), (p * p).sum(), sf, sg, p.min(), p.max()]
        part[gk.NSUMS:] = np.tile([0, 0, 0, 0, 0, np.inf, -np.inf], gk.BLOCKS - 1)

    def sb_final(self, part, nblocks, out):
        b = part.reshape(int(nblocks), gk.NSUMS)
        out[:gk.NSUMS] = list(b[:, :5].sum(axis=0)) + [b[:, 5].min(), b[:, 6].max()]

    def sb_combine(self, x, y, z, n, a, b):
        z[...] = a * x + b * y

    def sb_shift(self, x, n, v):
        x[...] = x + v


class NumpyPlans:
    """cuFFT's R2C / C2R contract: unnormalised inverse, its input destroyed."""

    scale = None
    ncomp = 2
    name = "numpy twin"

    def __init__(self, shape):
        self.shape = tuple(shape)
        self.scale = 1.0 / math.prod(shape)

    def forward(self, real, spec):
        spec[...] = np.fft.rfftn(np.asarray(real))

    def inverse(self, spec, real):
        real[...] = np.fft.irfftn(np.asarray(spec), s=self.shape, axes=tuple(range(len(self.shape)))) * math.prod(self.shape)
        spec[...] = np.nan


class HostReal:
    """TransformCopy's contract (orthonormal real transforms) with scipy."""

    ncomp = 1
    scale = 1.0
    name = "scipy twin"

    def __init__(self, tr):
        self.tr = tr

    def forward(self, real, spec):
        spec[...] = self.tr.forward(np.asarray(real))

    def inverse(self, spec, real):
        real[...] = self.tr.inverse(np.asarray(spec))


def pair(shape, kind, precision="float64", symbol="fd", cpu=False):
    model, grid = CahnHilliard(), Grid(shape)
    b = Boundary(kind, 0.3 if kind == "fixed" else 0.0)
    S = stabilization_for(model, b, (-0.4, 0.4))
    dt = np.dtype(precision)
    host_tr = Transform(shape, grid.spacing, kind, symbol, dt, np)
    host = SBDF2(model, b, host_tr, Kernels(np, dt), S)
    if cpu:  # the numba module and scipy.fft: what the CPU solver runs
        from simengine.field.spectral.cpu_kernels import CpuModule, HostArrays, ScipyPlans
        from simengine.field.spectral.gpu_step import TransformCopy

        fft = ScipyPlans(shape, 2) if kind == "periodic" else TransformCopy(host_tr)
        fused = FusedSBDF2(HostArrays, model, grid, b, host_tr, S, dt, module=CpuModule(),
                           fft=fft)
    else:
        fft = NumpyPlans(shape) if kind == "periodic" else HostReal(host_tr)
        fused = FusedSBDF2(FakeCp, model, grid, b, host_tr, S, dt, module=Twins(shape),
                           fft=fft)
    phi0 = (0.3 * np.random.default_rng(2).standard_normal(shape)).astype(dt)
    host.load(phi0)
    fused.load(phi0)
    return host, fused, model, grid, b


@pytest.mark.parametrize("cpu", [False, True], ids=["twins", "numba"])
@pytest.mark.parametrize("shape,kind", [((12, 10), "periodic"), ((6, 5, 8), "periodic"),
                                        ((12, 9), "mirror"), ((7, 6, 5), "fixed"),
                                        ((15,), "periodic")])
def test_fused_fixed_steps_equal_the_host_scheme(shape, kind, cpu):
    host, fused, *_ = pair(shape, kind, cpu=cpu)
    host.step(0.1, 3)
    fused.step(0.1, 3)
    np.testing.assert_allclose(fused.phi, host.phi, rtol=0, atol=1e-13)
    for dt in (0.1, 0.15, 0.1):  # variable steps (ω ≠ 1)
        host.step(dt, 2)
        fused.step(dt, 2)
    np.testing.assert_allclose(fused.phi, host.phi, rtol=0, atol=1e-12)
    assert not np.isnan(np.asarray(fused.phi)).any()


@pytest.mark.parametrize("cpu", [False, True], ids=["twins", "numba"])
@pytest.mark.parametrize("shape,kind", [((12, 10), "periodic"), ((12, 9), "mirror"),
                                        ((7, 6, 5), "fixed"), ((6, 5, 8), "periodic")])
def test_fused_trials_give_the_host_error_and_energy(shape, kind, cpu):
    host, fused, model, grid, b = pair(shape, kind, cpu=cpu)
    for dt in (0.2, 0.3, 0.25, 0.4):
        e_host = host.trial(dt)
        e_fused = fused.trial(dt)
        assert e_fused == pytest.approx(e_host, rel=1e-9)
        ref = observables.free_energy(np.asarray(host.trial_phi), model, grid, b) \
            if hasattr(observables, "free_energy") else None
        f_host = _energy(np.asarray(host.trial_phi), model, grid, b)
        assert fused.trial_energy() == pytest.approx(f_host, rel=1e-12)
        if ref is not None:
            assert fused.trial_energy() == pytest.approx(ref, rel=1e-12)
        host.accept()
        fused.accept()
        assert fused.energy() == pytest.approx(f_host, rel=1e-12)
        np.testing.assert_allclose(fused.phi, host.phi, rtol=0, atol=1e-12)
    fused.restart()
    host.restart()
    assert fused.trial(0.3) == pytest.approx(host.trial(0.3), rel=1e-9)


def _energy(phi, model, grid, b):
    from simengine.field.spectral import energy

    return energy.free_energy(phi, model, grid, b, np)


@pytest.mark.parametrize("cpu", [False, True], ids=["twins", "numba"])
@pytest.mark.parametrize("kind,shape", [("fixed", (9, 8)), ("periodic", (5, 6, 7)),
                                        ("mirror", (6, 4, 5))])
def test_sums_are_the_field_partials(kind, shape, cpu):
    _, fused, model, grid, b = pair(shape, kind, cpu=cpu)
    v = fused.sums()
    p = observables.field_partials(np.asarray(fused.phi), 0, shape[0], model, b)
    assert (v[1], v[3], v[4], v[5], v[6]) == pytest.approx(
        (p.sum_phi, p.sum_f, p.sum_grad2, p.min, p.max), rel=1e-12)


def test_symbol_table_is_the_laplacian_symbol():
    from simengine.field.spectral.transforms import laplacian_symbol

    for shape, kind in (((6, 8), "periodic"), ((4, 5, 6), "mirror"), ((7,), "fixed")):
        tab, dims, (o1, o2) = symbol_table(shape, 1.0, kind, "exact")
        i0, i1, i2 = np.meshgrid(*[np.arange(d) for d in dims], indexing="ij")
        lam = tab[i0] + tab[o1 + i1] + tab[o2 + i2]
        want = laplacian_symbol(shape, 1.0, kind, "exact")
        np.testing.assert_array_equal(lam.reshape(want.shape), want)


class HostCupy:
    """NumPy under another name, with CuPy's ``asnumpy``: the slab transform's device branch
    (host staging of the transpose, DST-I through the odd extension) run on the host."""

    def __getattr__(self, name):
        return getattr(np, name)

    @staticmethod
    def asnumpy(a):
        return np.array(a)


class OneRank:
    rank, size, local_rank = 0, 1, 0

    @staticmethod
    def alltoall(blocks):
        assert all(type(b) is np.ndarray for b in blocks)  # host copies go to MPI
        return list(blocks)


@pytest.mark.parametrize("shape", [(12, 10), (6, 5, 8)], ids=str)
@pytest.mark.parametrize("kind", ["periodic", "mirror", "fixed"])
def test_slab_transform_device_branch_equals_the_whole_grid_transform(shape, kind):
    import scipy.fft as sfft

    from simengine.field.spectral.slabs import SlabTransform

    xp = HostCupy()
    st = SlabTransform(shape, 1.0, kind, "fd", np.float64, OneRank(), [(0, shape[0])], xp=xp,
                       fft=sfft)
    assert "host memory" in st.transport
    tr = Transform(shape, 1.0, kind, "fd", np.float64, np)
    a = np.random.default_rng(5).standard_normal(shape)
    np.testing.assert_allclose(st.forward(a), tr.forward(a), rtol=0, atol=1e-12)
    np.testing.assert_allclose(st.inverse(tr.forward(a)), a, rtol=0, atol=1e-12)
    np.testing.assert_array_equal(np.asarray(st.lam), tr.lam)


@pytest.mark.parametrize("kind", ["periodic", "mirror", "fixed"])
@pytest.mark.parametrize("shape", [(9, 7), (7, 5, 6)], ids=str)
def test_slab_sums_are_the_host_slab_partials(kind, shape):
    """slabs.slab_sums (the device form, here with NumPy) against observables.field_partials on
    every slab of a 3-way split, and their merge against the whole field's reductions."""
    from simengine.field.spectral.slabs import slab_sums

    model, grid = CahnHilliard(), Grid(shape)
    b = Boundary(kind, 0.3 if kind == "fixed" else 0.0)
    phi = np.random.default_rng(6).standard_normal(shape)
    rows = [(0, 3), (3, 5), (5, shape[0])]
    parts = []
    for r, (a, z) in enumerate(rows):
        above = phi[z:z + 1] if z < shape[0] else (phi[:1] if kind == "periodic" else None)
        got = slab_sums(phi[a:z], above, r == 0, model, b, np)
        local = np.concatenate(([np.zeros_like(phi[:1])] if r else []) + [phi[a:z]] +
                               ([above] if above is not None else []), axis=0)
        lo = 1 if r else 0
        want = observables.field_partials(local, lo, lo + z - a, model, b)
        np.testing.assert_allclose(got.to_array(), want.to_array(), rtol=1e-12, atol=1e-12)
        parts.append(got)
    merged = observables.merge_partials(parts, model, grid)
    whole = observables.reductions(phi, model, grid, b)
    assert merged["free_energy"] == pytest.approx(whole["free_energy"], rel=1e-12)
