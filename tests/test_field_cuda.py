"""CUDA field kernels against the NumPy reference.

Runs under whatever ``numba.cuda`` is: the simulator in CI (``NUMBA_ENABLE_CUDASIM=1``, small
grids, few steps) or a real GPU (larger, non-tile-multiple sizes, more steps). Skipped only when
``numba.cuda.is_available()`` is False.
"""
from __future__ import annotations

import json

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():  # pragma: no cover
    pytest.skip("no CUDA device and not the simulator", allow_module_level=True)

from field_cuda_common import BOUNDARIES, DT, field as _field, MODEL, SIM  # noqa: E402

from simengine.field import cuda as ck  # noqa: E402
from simengine.field import cuda_tuning  # noqa: E402
from simengine.field import reference as ref  # noqa: E402
from simengine.field.cuda_solver import CudaFieldSolver  # noqa: E402
from simengine.field.model import Boundary, Grid  # noqa: E402

VARIANTS = [("global", "modern"), ("texture", "modern"), ("shared", "modern"),
            ("shared", "seed"), ("combined", "modern"), ("combined", "seed")]


def _check(got, expect, dtype):
    if np.dtype(dtype) == np.float64:
        assert np.max(np.abs(got - expect)) <= 1e-12
    else:
        assert np.max(np.abs(got - expect)) <= 1e-5 * np.max(np.abs(expect))


def _run(shape, bnd, kernel, layout, dtype=np.float64, steps=1, block=None, spacing=0.9,
         integrator="rk2"):
    grid = Grid(shape, spacing)
    boundary = Boundary(bnd, 0.3)
    phi = _field(shape).astype(dtype)
    s = CudaFieldSolver(MODEL, grid, boundary, kernel=kernel, layout=layout, precision=dtype,
                        dt=DT, block=block, integrator=integrator)
    s.load(phi)
    s.advance(steps)
    expect = ref.run(phi.astype(np.float64), steps, DT, MODEL, grid, boundary, integrator)
    _check(s.state(), expect, dtype)
    return s


# ---------------------------------------------------------------------------------------------
# correctness against reference.py
# ---------------------------------------------------------------------------------------------
if SIM:
    # small blocks so that the grids are several tiles with ragged edges
    SMALL_BLOCKS = {("direct", 1): (8,), ("modern", 1): (8,), ("seed", 1): (12,),
                    ("direct", 2): (8, 4), ("modern", 2): (8, 4), ("seed", 2): (8, 8),
                    ("direct", 3): (4, 4, 2), ("modern", 3): (4, 4, 2), ("seed", 3): (8, 6, 6)}
    CASES = []
    for kern, lay in VARIANTS:
        for b in BOUNDARIES:
            CASES.append(((37,), b, kern, lay))
            CASES.append(((13, 11), b, kern, lay))
    # 3D: every kernel, boundaries spread over the variants (the simulator is slow in 3D)
    CASES += [((7, 6, 9), b, "global", "modern") for b in BOUNDARIES]
    CASES += [((7, 6, 9), b, "shared", "modern") for b in BOUNDARIES]
    CASES += [((7, 6, 9), "mirror", "texture", "modern"), ((7, 6, 9), "fixed", "combined", "modern"),
              ((6, 5, 7), "fixed", "shared", "seed")]
    # large enough for interior tiles (the modern layout's fast load path)
    CASES += [((20, 21), "fixed", "shared", "modern"), ((20, 21), "periodic", "combined", "modern"),
              ((8, 8, 10), "fixed", "shared", "modern"), ((8, 8, 10), "mirror", "combined", "modern")]
    STEPS = 1
else:
    SMALL_BLOCKS = {}
    CASES = [(shape, b, kern, lay) for shape in [(1001,), (257, 300), (50, 37, 41)]
             for kern, lay in VARIANTS for b in BOUNDARIES]
    STEPS = 5


def _block_for(kernel, layout, nd, shape=None):
    fam = layout if kernel in ("shared", "combined") else "direct"
    if SIM and shape == (8, 8, 10) and fam == "modern":
        return (4, 2, 2)
    return SMALL_BLOCKS.get((fam, nd))


@pytest.mark.parametrize("shape,bnd,kernel,layout", CASES,
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_kernel_matches_reference_fp64(shape, bnd, kernel, layout):
    _run(shape, bnd, kernel, layout, np.float64, STEPS, _block_for(kernel, layout, len(shape), shape))


FP32_CASES = ([((13, 11), "periodic", "global", "modern"), ((13, 11), "fixed", "shared", "modern"),
               ((13, 11), "mirror", "combined", "seed"), ((37,), "fixed", "texture", "modern")]
              if SIM else
              [(shape, b, kern, lay) for shape in [(257, 300), (50, 37, 41)]
               for kern, lay in VARIANTS for b in ("periodic", "fixed")])


@pytest.mark.parametrize("shape,bnd,kernel,layout", FP32_CASES,
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_kernel_matches_reference_fp32(shape, bnd, kernel, layout):
    _run(shape, bnd, kernel, layout, np.float32, STEPS, _block_for(kernel, layout, len(shape)))


CPT_CASES = ([((37,), "mirror", 2), ((13, 11), "periodic", 4), ((13, 11), "fixed", 2),
              ((7, 6, 9), "fixed", 2)] if SIM else
             [(shape, b, c) for shape in [(1001,), (257, 300), (50, 37, 41)]
              for b in BOUNDARIES for c in (1, 2, 4)])


@pytest.mark.parametrize("shape,bnd,cpt", CPT_CASES, ids=str)
@pytest.mark.parametrize("kernel", ["global", "texture"])
def test_cells_per_thread(shape, bnd, cpt, kernel):
    for dtype in (np.float64, np.float32):
        grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
        phi = _field(shape).astype(dtype)
        s = CudaFieldSolver(MODEL, grid, boundary, kernel=kernel, precision=dtype, dt=DT,
                            block=_block_for(kernel, "modern", len(shape)), cells_per_thread=cpt)
        s.load(phi)
        s.advance(STEPS)
        expect = ref.run(phi.astype(np.float64), STEPS, DT, MODEL, grid, boundary)
        _check(s.state(), expect, dtype)


def test_euler():
    shape = (13, 11) if SIM else (257, 300)
    _run(shape, "mirror", "shared", "modern", steps=2, block=_block_for("shared", "modern", 2),
         integrator="euler")


def test_default_blocks_and_tile_multiples():
    # default block shapes, sizes that are exact multiples of the 12-cell seed core / 32-wide tile
    if SIM:
        _run((24, 24), "periodic", "shared", "seed", steps=1)
        _run((16, 64), "fixed", "combined", "modern", steps=1)
    else:
        for kern, lay in VARIANTS:
            _run((96, 128), "mirror", kern, lay, steps=3)
            _run((64, 64, 64), "fixed", kern, lay, steps=2)


def test_stage_slice_only_touches_rows():
    shape = (12, 10) if SIM else (300, 257)
    grid, bnd = Grid(shape, 1.0), Boundary("periodic")
    phi = _field(shape, 3)
    lo, hi = 3, 8
    out0 = np.full(shape, 7.0)
    d_phi, d_out = cuda.to_device(phi), cuda.to_device(out0)
    for kern, lay in [("global", "modern"), ("shared", "modern"), ("combined", "seed")]:
        d_out.copy_to_device(out0)
        ck.stage(kern, d_phi, d_phi, d_out, 0.01, MODEL, grid, bnd, lo=lo, hi=hi, layout=lay,
                 block=_block_for(kern, lay, 2))
        got = d_out.copy_to_host()
        expect = ref.stage(phi, phi, 0.01, MODEL, grid, bnd)
        np.testing.assert_allclose(got[lo:hi], expect[lo:hi], rtol=0, atol=1e-12)
        assert np.all(got[:lo] == 7.0) and np.all(got[hi:] == 7.0)


TWIN_CASES = ([("global", (37,), "fixed"), ("shared", (13, 11), "mirror"),
               ("texture", (7, 6, 9), "periodic")] if SIM else
              [(k, shape, b) for k in ("global", "shared", "texture", "combined")
               for shape in [(1001,), (257, 300), (50, 37, 41)] for b in BOUNDARIES])


@pytest.mark.parametrize("kernel,shape,bnd", TWIN_CASES, ids=str)
def test_cpu_signature_twins(kernel, shape, bnd):
    """``cuda.<kernel>_stage_<d>d`` takes the CPU stage arguments, incl. a slice."""
    grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
    phi = _field(shape, 7)
    h = grid.spacing
    params = np.array([MODEL.mobility, MODEL.kappa, *MODEL.coefficients, 1 / h ** 2,
                       2.0 * len(shape)])
    fn = ck.get_stage(kernel, len(shape))
    assert fn.__name__ == f"{kernel}_stage_{len(shape)}d"
    lo, hi = 1, shape[0] - 1
    out0 = np.full(shape, 5.0)
    d_phi, d_out = cuda.to_device(phi), cuda.to_device(out0)
    tile = {1: (8,), 2: (4, 8), 3: (2, 4, 4)}[len(shape)] if SIM else None
    fn(d_phi, d_phi, d_out, 0.01, params, boundary.code, boundary.value, lo, hi, tile)
    got = d_out.copy_to_host()
    expect = ref.stage(phi, phi, 0.01, MODEL, grid, boundary)
    np.testing.assert_allclose(got[lo:hi], expect[lo:hi], rtol=0, atol=1e-12)
    assert np.all(got[:lo] == 5.0) and np.all(got[hi:] == 5.0)


# ---------------------------------------------------------------------------------------------
# reductions
# ---------------------------------------------------------------------------------------------
def host_free_energy(phi, model, grid, boundary):
    """F = h^d Σ [f(φ) + κ/2 Σ_axes ((φ[i+1]−φ[i])/h)²], forward differences (see the brief)."""
    try:  # the CPU engineer's definition, once it exists
        from simengine.field.observables import free_energy

        return float(free_energy(phi, model, grid, boundary))
    except ImportError:
        pass
    h = grid.spacing
    total = np.sum(model.f(phi))
    grad = 0.0
    for ax in range(phi.ndim):
        if boundary.kind == "periodic":
            d = np.roll(phi, -1, ax) - phi
        else:
            d = np.diff(phi, axis=ax)
            if boundary.kind == "fixed":
                lo = np.take(phi, [0], axis=ax) - boundary.value
                hi = boundary.value - np.take(phi, [-1], axis=ax)
                grad += np.sum(lo ** 2) + np.sum(hi ** 2)
        grad += np.sum(d ** 2)
    return float(h ** phi.ndim * (total + 0.5 * model.kappa * grad / h ** 2))


RED_CASES = ([((37,), "fixed"), ((13, 11), "periodic"), ((13, 11), "mirror"), ((13, 11), "fixed"),
              ((5, 6, 7), "periodic"), ((5, 6, 7), "fixed")] if SIM else
             [((1001,), "fixed"), ((257, 300), "periodic"), ((257, 300), "mirror"),
              ((257, 300), "fixed"), ((50, 37, 41), "periodic"), ((50, 37, 41), "mirror"),
              ((50, 37, 41), "fixed")])


@pytest.mark.parametrize("shape,bnd", RED_CASES, ids=str)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_reductions_match_host(shape, bnd, dtype):
    grid, boundary = Grid(shape, 0.8), Boundary(bnd, -0.4)
    phi = _field(shape, 5).astype(dtype)
    s = CudaFieldSolver(MODEL, grid, boundary, kernel="global", precision=dtype, dt=DT)
    s.load(phi)
    r = s.reductions()
    p64 = phi.astype(np.float64)
    assert r["mass"] == pytest.approx(p64.mean(), rel=1e-12, abs=1e-14)
    assert r["min"] == p64.min() and r["max"] == p64.max()
    assert r["free_energy"] == pytest.approx(host_free_energy(p64, MODEL, grid, boundary),
                                             rel=1e-12)


def test_mass_conserved_periodic_mirror():
    shape = (13, 11) if SIM else (257, 300)
    for bnd in ("periodic", "mirror"):
        s = _run(shape, bnd, "global", "modern", steps=2)
        m0 = _field(shape).mean()
        assert s.reductions()["mass"] == pytest.approx(m0, abs=1e-13)


# ---------------------------------------------------------------------------------------------
# checkpoint round trip and API
# ---------------------------------------------------------------------------------------------
def test_checkpoint_round_trip():
    shape = (13, 11) if SIM else (257, 300)
    grid, bnd = Grid(shape, 0.9), Boundary("fixed", 0.2)
    blk = _block_for("shared", "modern", 2)
    kw = dict(kernel="shared", layout="modern", precision="float64", dt=DT, block=blk)
    a = CudaFieldSolver(MODEL, grid, bnd, **kw)
    a.load(_field(shape))
    a.advance(2)
    b = CudaFieldSolver(MODEL, grid, bnd, **kw)
    b.load(_field(shape))
    b.advance(1)
    snap = b.state()
    c = CudaFieldSolver(MODEL, grid, bnd, **kw)
    c.load(snap)
    c.advance(1)
    np.testing.assert_array_equal(c.state(), a.state())
    assert isinstance(a.name, str) and "shared" in a.name


def test_rejects_bad_options():
    grid = Grid((8, 8))
    with pytest.raises(ValueError):
        CudaFieldSolver(MODEL, grid, Boundary(), kernel="nope", dt=DT)
    with pytest.raises(ValueError):
        CudaFieldSolver(MODEL, grid, Boundary(), integrator="rk4", dt=DT)
    s = CudaFieldSolver(MODEL, grid, Boundary(), kernel="global", dt=DT)
    with pytest.raises(ValueError):
        s.load(np.zeros((4, 4)))


def test_tuning_cache_and_occupancy(tmp_path, monkeypatch):
    monkeypatch.setenv("SIMENGINE_CACHE_DIR", str(tmp_path))
    shape = (16, 16) if SIM else (256, 256)
    grid, bnd = Grid(shape), Boundary("periodic")
    s = CudaFieldSolver(MODEL, grid, bnd, kernel="global", block="auto", dt=DT)
    s.load(_field(shape))
    s.advance(1)
    rep = s.occupancy()
    assert rep["kernel"] == "global" and rep["threads_per_block"] == int(np.prod(rep["block"]))
    key = cuda_tuning.tune_key("global", "modern", shape, np.float64, bnd)
    assert cuda_tuning.gpu_name() in key
    if SIM:
        assert tuple(s.block) == ck.DEFAULT_BLOCK[("direct", 2)]
        cuda_tuning._store(tmp_path / cuda_tuning.CACHE_FILE, key, {"block": [8, 4]})
        assert json.loads((tmp_path / cuda_tuning.CACHE_FILE).read_text())[key]["block"] == [8, 4]
    else:
        data = json.loads((tmp_path / cuda_tuning.CACHE_FILE).read_text())
        assert tuple(data[key]["block"]) == tuple(s.block)
        assert rep["registers_per_thread"] > 0 and 0 < rep["occupancy"] <= 1
        # second call: from the cache
        assert cuda_tuning.autotune_block("global", "modern", shape, np.float64, MODEL, grid,
                                          bnd) == tuple(s.block)


# ---------------------------------------------------------------------------------------------
# marching form of the direct kernels (a thread walks axis 0 with a register queue)
# ---------------------------------------------------------------------------------------------
MARCH_CASES = ([((13, 11), b, 32, 4, (8, 2)) for b in BOUNDARIES]
               + [((13, 11), "fixed", 3, 1, (8, 2)), ((13, 11), "mirror", 5, 2, (8, 2))]
               + [((7, 6, 9), b, 5, 4, (4, 4, 1)) for b in BOUNDARIES]
               + [((7, 6, 9), "periodic", 2, 1, (4, 2, 2))] if SIM else
               [(shape, b, m, u, None) for shape in [(257, 300), (50, 37, 41)]
                for b in BOUNDARIES for m, u in [(1, 4), (7, 4), (32, 4), (32, 1), (9, 2)]])


@pytest.mark.parametrize("shape,bnd,march,unroll,block", MARCH_CASES, ids=str)
def test_march_matches_reference(shape, bnd, march, unroll, block):
    """Every march length (chunks of axis 0 with a ragged last one), load-ahead (unroll)
    and boundary, fp64 and fp32, both direct kernels."""
    grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
    for kernel, dtype in (("texture", np.float64), ("global", np.float32)):
        phi = _field(shape, 2).astype(dtype)
        s = CudaFieldSolver(MODEL, grid, boundary, kernel=kernel, precision=dtype, dt=DT,
                            block=block, march=march)
        if unroll != s.plan.unroll:
            s.plan = ck.StageLaunch(kernel, len(shape), s.shape3, boundary.code, np.dtype(dtype),
                                  block=block, march=march, unroll=unroll)
        assert s.plan.march == march and "march" in s.name
        s.load(phi)
        s.advance(STEPS)
        expect = ref.run(phi.astype(np.float64), STEPS, DT, MODEL, grid, boundary)
        _check(s.state(), expect, dtype)


def test_march_slice_and_defaults():
    """A marching stage on rows lo:hi touches only those rows; explicit cells_per_thread turns
    the default march off."""
    for shape in ([(12, 10), (9, 6, 7)] if SIM else [(300, 257), (40, 33, 50)]):
        nd = len(shape)
        grid, bnd = Grid(shape, 1.0), Boundary("mirror")
        phi = _field(shape, 4)
        lo, hi = 2, shape[0] - 3
        d_phi = cuda.to_device(phi.reshape(-1))
        d_out = cuda.to_device(np.full(phi.size, 7.0))
        block = ((8, 2) if nd == 2 else (4, 2, 1)) if SIM else None
        plan = ck.StageLaunch("texture", nd, ck.view3(shape), bnd.code, np.float64, block=block,
                            lo=lo, hi=hi, march=3)
        plan(d_phi, d_phi, d_out, 0.01, ck.stage_scalars(MODEL, grid, bnd, np.float64))
        got = d_out.copy_to_host().reshape(shape)
        expect = ref.stage(phi, phi, 0.01, MODEL, grid, bnd)
        np.testing.assert_allclose(got[lo:hi], expect[lo:hi], rtol=0, atol=1e-12)
        assert np.all(got[:lo] == 7.0) and np.all(got[hi:] == 7.0)
        assert ck.StageLaunch("texture", nd, ck.view3(shape), 0, np.float64, cpt=2).march == 0
        default = ck.StageLaunch("texture", nd, ck.view3(shape), 0, np.float64)
        want = ck.DEFAULT_SMARCH.get(("float64", nd)) or ck.DEFAULT_MARCH[nd]
        if nd == 3 and not SIM:  # on a GPU: the planes that fill its waves best
            from simengine.field.cuda.plan import _sm_count
            from simengine.field.cuda.smarch import smarch_planes

            want = smarch_planes(ck.view3(shape)[::-1], (32, 8), "float64", 1, _sm_count())
        assert default.march == want
    assert ck.StageLaunch("shared", 3, (4, 4, 4), 0, np.float64, march=8).march == 0
    with pytest.raises(ValueError):
        ck.march_kernel(1, 0, True)


# ---------------------------------------------------------------------------------------------
# 2-D pair kernel (vec=2): 2 cells along x × rows per thread, pair loads
# ---------------------------------------------------------------------------------------------
VEC_CASES = ([((13, 12), b, r, "texture") for b in BOUNDARIES for r in (1, 2, 8)]
             + [((20, 18), b, 4, "global") for b in BOUNDARIES]
             + [((20, 18), "fixed", 2, "texture"), ((14, 11), "mirror", 4, "texture")]
             if SIM else
             [(shape, b, r, k) for shape in [(257, 300), (96, 128), (300, 257)]
              for b in BOUNDARIES for r, k in [(4, "texture"), (8, "texture"), (2, "global")]]
             + [((257, 300), "periodic", 1, "texture")])


@pytest.mark.parametrize("shape,bnd,rows,kernel", VEC_CASES, ids=str)
def test_vec_matches_reference(shape, bnd, rows, kernel):
    """The pair kernel equals reference.py for every boundary, rows per thread, both precisions,
    tile-multiple and ragged sizes; an odd row length falls back to the scalar kernel."""
    grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
    block = (2, 2) if SIM else None
    for dtype in (np.float64, np.float32):
        phi = _field(shape, 5).astype(dtype)
        s = CudaFieldSolver(MODEL, grid, boundary, kernel=kernel, precision=dtype, dt=DT,
                            block=block, cells_per_thread=rows, vec=2)
        assert s.plan.vec == (0 if shape[1] % 2 else 2)
        if s.plan.vec:
            assert s.plan.cpt == rows and "pair loads" in s.name
        s.load(phi)
        s.advance(STEPS)
        expect = ref.run(phi.astype(np.float64), STEPS, DT, MODEL, grid, boundary)
        _check(s.state(), expect, dtype)


def test_vec_slice_misaligned_and_defaults():
    """A pair-kernel stage on rows lo:hi touches only those rows; buffers that start at an odd
    element take the scalar fallback with the same result; the defaults and option checks."""
    shape = (16, 14) if SIM else (300, 258)
    grid, bnd = Grid(shape, 1.0), Boundary("fixed", 0.2)
    phi = _field(shape, 6)
    n = phi.size
    lo, hi = 3, shape[0] - 2
    scal = ck.stage_scalars(MODEL, grid, bnd, np.float64)
    plan = ck.StageLaunch("texture", 2, ck.view3(shape), bnd.code, np.float64,
                        block=(2, 2) if SIM else None, lo=lo, hi=hi, cpt=2, vec=2)
    assert plan.vec == 2 and plan.cpt == 2
    expect = ref.stage(phi, phi, 0.01, MODEL, grid, bnd)
    d_phi = cuda.to_device(phi.reshape(-1))
    d_out = cuda.to_device(np.full(n, 7.0))
    plan(d_phi, d_phi, d_out, 0.01, scal)
    got = d_out.copy_to_host().reshape(shape)
    np.testing.assert_allclose(got[lo:hi], expect[lo:hi], rtol=0, atol=1e-12)
    assert np.all(got[:lo] == 7.0) and np.all(got[hi:] == 7.0)
    # misaligned buffers (views starting at element 1)
    big_phi = cuda.to_device(np.concatenate([[0.0], phi.reshape(-1)]))
    big_out = cuda.to_device(np.full(n + 1, 7.0))
    plan(big_phi[1:], big_phi[1:], big_out[1:], 0.01, scal)
    got = big_out.copy_to_host()[1:].reshape(shape)
    np.testing.assert_allclose(got[lo:hi], expect[lo:hi], rtol=0, atol=1e-12)
    assert np.all(got[:lo] == 7.0) and np.all(got[hi:] == 7.0)
    if not SIM:
        assert plan._alt is not None and plan._alt.vec == 0
    # defaults: per dtype unless cells_per_thread / march is given; never in 1-D/3-D or tiled
    for dt in ("float32", "float64"):
        p = ck.StageLaunch("texture", 2, (1, 64, 64), 0, np.dtype(dt))
        assert p.vec == ck.DEFAULT_VEC[dt]
        if p.vec:
            assert p.cpt == ck.DEFAULT_VEC_ROWS and p.block == ck.DEFAULT_VEC_BLOCK
    assert ck.StageLaunch("texture", 2, (1, 64, 64), 0, np.float32, cpt=4).vec == 0
    assert ck.StageLaunch("texture", 2, (1, 64, 64), 0, np.float32, march=4).vec == 0
    assert ck.StageLaunch("shared", 2, (1, 64, 64), 0, np.float32, vec=2).vec == 0
    assert ck.StageLaunch("texture", 3, (8, 8, 8), 0, np.float32, vec=2).vec == 0
    assert ck.StageLaunch("texture", 2, (1, 64, 63), 0, np.float32, vec=2, cpt=8).cpt == 4
    with pytest.raises(ValueError):
        ck.StageLaunch("texture", 2, (1, 64, 64), 0, np.float32, vec=3)
    with pytest.raises(ValueError):
        ck.vec_kernel(0, True, "float32", 3)
