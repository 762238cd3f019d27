"""The 3-D shared-memory marching stage kernel (``cuda/smarch.py``, the 3-D default of kernels
A/C) against the non-marching direct kernel (bit-identical under the simulator: same
arithmetic in the same order) and against ``reference.py``; slices ``lo:hi``, slabs, defaults.

Simulator (CI): 12×10×9-ish grids, 8×4 / 4×4 blocks (ragged tiles and chunks), one stage,
1/2/3 planes of loads in flight.
Real GPU: 50×37×41 and 64×70×45 with the default block; the device contracts multiply-adds
into FMAs, so there the direct kernel is matched to 1e-12 relative (fp64) / 1e-5 (fp32)."""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():  # pragma: no cover
    pytest.skip("no CUDA device and not the simulator", allow_module_level=True)

from field_cuda_common import DT, MODEL, SIM  # noqa: E402

from simengine.field import cuda as ck  # noqa: E402
from simengine.field import reference as ref  # noqa: E402
from simengine.field.cuda.smarch import smarch_counts, smarch_fits  # noqa: E402
from simengine.field.cuda_solver import CudaFieldSolver  # noqa: E402
from simengine.field.decomposition import SlabGroup  # noqa: E402
from simengine.field.model import Boundary, Grid  # noqa: E402


if SIM:
    # (shape, boundary, dtype, kernel, block, planes, lo, hi)
    CASES = [((12, 10, 9), "periodic", np.float64, "texture", (8, 4), 5, 0, None),
             ((12, 10, 9), "mirror", np.float32, "global", (8, 4), 5, 0, None),
             ((12, 10, 9), "fixed", np.float64, "texture", (8, 4), 4, 2, 9),
             ((7, 6, 5), "fixed", np.float32, "texture", (4, 4), 3, 0, None),   # 4 loads, 3 μ
             ((7, 6, 5), "mirror", np.float64, "global", (4, 4), 2, 1, 6)]
else:
    CASES = [((50, 37, 41), b, dt, "texture", None, 32, 0, None)
             for b in ("periodic", "mirror", "fixed") for dt in (np.float64, np.float32)]
    CASES += [((64, 70, 45), "fixed", np.float64, "global", None, 7, 3, 60),
              ((64, 70, 45), "periodic", np.float32, "global", (64, 4), 7, 3, 60)]


def _field(shape, seed, dtype):
    return np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype)


def _stage(plan, phi, base, coef, scal):
    n = phi.size
    d_src, d_base = cuda.to_device(phi.reshape(n)), cuda.to_device(base.reshape(n))
    d_out = cuda.to_device(np.full(n, 7.0, phi.dtype))
    plan(d_src, d_base, d_out, coef, scal)
    return d_out.copy_to_host().reshape(phi.shape)


@pytest.mark.parametrize("shape,bnd,dtype,kernel,block,planes,lo,hi", CASES, ids=str)
def test_smarch_equals_direct_and_reference(shape, bnd, dtype, kernel, block, planes, lo, hi):
    grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
    dt_ = np.dtype(dtype)
    s3 = ck.view3(shape)
    hi_ = shape[0] if hi is None else hi
    phi, base = _field(shape, 1, dtype), _field(shape, 2, dtype)
    scal = ck.stage_scalars(MODEL, grid, boundary, dt_)
    # planes of loads in flight: 1 (mirror), 3 (fixed), the default (periodic)
    ahead = {"mirror": 1, "fixed": 3}.get(bnd)
    sm = ck.StageLaunch(kernel, 3, s3, boundary.code, dt_, block=block, lo=lo, hi=hi,
                      march=planes, smarch=True, unroll=ahead)
    assert sm.smarch and sm.march == planes and sm.unroll == (ahead or ck.DEFAULT_SMARCH_AHEAD)
    direct = ck.StageLaunch(kernel, 3, s3, boundary.code, dt_, lo=lo, hi=hi, cpt=1, march=0)
    assert not direct.smarch and not direct.march
    coef = dt_.type(0.37)
    got = _stage(sm, phi, base, coef, scal)
    expect = _stage(direct, phi, base, coef, scal)
    # rows outside lo:hi untouched
    assert np.all(got[:lo] == 7.0) and np.all(got[hi_:] == 7.0)
    if SIM:
        assert np.array_equal(got, expect), np.max(np.abs(got - expect))
    else:
        tol = 1e-12 if dt_ == np.float64 else 1e-5
        err = np.max(np.abs(got.astype(np.float64) - expect)) / np.max(np.abs(expect))
        assert err <= tol, err
    r = ref.stage(phi.astype(np.float64), base.astype(np.float64), float(coef), MODEL, grid,
                  boundary)
    tol = 1e-12 if dt_ == np.float64 else 2e-5
    err = np.max(np.abs(got[lo:hi_] - r[lo:hi_])) / np.max(np.abs(r[lo:hi_]))
    assert err <= tol, err


def test_smarch_is_the_3d_default():
    """The default 3-D direct-kernel plan runs the shared-memory march; explicit ``march``
    selects the register form (unless ``smarch=True``), ``cells_per_thread`` the direct kernel,
    a block of the register form (z > 1) keeps the register form; fp32 runs it with 2 rows per
    thread."""
    s3 = (9, 8, 7)
    d = ck.StageLaunch("texture", 3, s3, 0, np.float64)
    assert d.smarch and d.march == ck.DEFAULT_SMARCH[("float64", 3)]
    assert d.block == ck.DEFAULT_SMARCH_BLOCK and d.griddim == (1, 1, 1)
    assert d.unroll == ck.DEFAULT_SMARCH_AHEAD
    assert ck.StageLaunch("global", 3, s3, 0, np.float64).smarch
    # fp32: the shared-memory march too, 2 rows per thread at every size (measured faster)
    g = ck.StageLaunch("global", 3, s3, 0, np.float32)
    assert g.smarch and g.march == ck.DEFAULT_SMARCH[("float32", 3)] and g.rows == 2
    assert not ck.StageLaunch("global", 3, s3, 0, np.float32, march=16).smarch
    r = ck.StageLaunch("texture", 3, s3, 0, np.float64, march=16)
    assert r.march == 16 and not r.smarch and r.block == ck.DEFAULT_MARCH_BLOCK[3]
    e = ck.StageLaunch("texture", 3, s3, 0, np.float64, march=16, smarch=True, block=(8, 4))
    assert e.smarch and e.block == (8, 4, 1) and e.griddim == (1, 2, 1)
    c = ck.StageLaunch("texture", 3, s3, 0, np.float64, cpt=1)
    assert not c.smarch and not c.march
    z = ck.StageLaunch("texture", 3, s3, 0, np.float64, block=(4, 4, 2))
    assert not z.smarch and z.march == ck.DEFAULT_MARCH[3]
    assert not ck.StageLaunch("texture", 2, (1, 9, 8), 0, np.float64, march=4, smarch=True).smarch
    assert not ck.StageLaunch("shared", 3, s3, 0, np.float64).smarch
    # 2 rows per thread from SMARCH_ROWS2_MIN_CELLS (2^24: 256³) cells up, unless a block or
    # the rows are given; a slab counts its own planes
    assert ck.SMARCH_ROWS2_MIN_CELLS["float64"] == 1 << 24
    big = (256, 256, 256)
    assert ck.StageLaunch("texture", 3, big, 0, np.float64).rows == 2
    assert ck.StageLaunch("texture", 3, (255, 256, 256), 0, np.float64).rows == 1
    assert ck.StageLaunch("texture", 3, big, 0, np.float64, lo=0, hi=128).rows == 1
    assert ck.StageLaunch("texture", 3, big, 0, np.float64, block=(32, 8)).rows == 1
    assert ck.StageLaunch("texture", 3, big, 0, np.float64, smarch_rows=1).rows == 1
    assert ck.StageLaunch("texture", 3, (512,) * 3, 0, np.float64).griddim == (16, 32, 8)
    assert d.rows == 1
    # block checks
    assert smarch_fits((32, 8)) and smarch_fits((4, 4, 1)) and not smarch_fits((2, 2))
    assert not smarch_fits((4, 4, 2))
    assert smarch_counts((32, 8)) == (2, 2, 3 * (36 * 12 + 34 * 10))
    with pytest.raises(ValueError):
        ck.StageLaunch("texture", 3, s3, 0, np.float64, block=(2, 2), march=4, smarch=True)
    with pytest.raises(ValueError):
        ck.smarch_kernel(0, True, "float64", (8, 4), 0)
    s = CudaFieldSolver(MODEL, Grid(s3), Boundary("periodic"), dt=DT, fused=False,
                        block=(4, 4, 1) if SIM else None)
    assert s.plan.smarch and "shared-memory march" in s.name


@pytest.mark.parametrize("bnd", ["periodic", "fixed"] if SIM else ["periodic", "mirror", "fixed"])
def test_smarch_solver_and_slabs(bnd):
    """RK2 steps of the default 3-D solver (shared-memory march) equal reference.py, and slabs
    (lo/hi rows + host halo exchange, as MPI uses them) equal the whole grid bit for bit."""
    shape = (10, 7, 9) if SIM else (40, 33, 50)
    steps = 2 if SIM else 5
    block = (4, 4, 1) if SIM else None
    grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
    phi = _field(shape, 3, np.float64)

    def factory(slab=None, exchange=None):
        return CudaFieldSolver(MODEL, grid, boundary, kernel="texture", precision=np.float64,
                               dt=DT, block=block, slab=slab, exchange=exchange,
                               fused=False)  # the stages (auto: the fused 3-D form on a GPU)

    whole = factory()
    assert whole.plan.smarch
    whole.load(phi)
    whole.advance(steps)
    expect = whole.state()
    r = ref.run(phi, steps, DT, MODEL, grid, boundary)
    assert np.max(np.abs(expect - r)) <= 1e-12 * np.max(np.abs(r))
    g = SlabGroup(factory, shape[0], [(0, 4), (4, shape[0])] if SIM else 3, bnd)
    g.load(phi)
    g.advance(steps)
    got = g.state()
    assert np.array_equal(got, expect), np.max(np.abs(got - expect))


# ---- candidate options of the shared-memory march (issue 12 follow-up): 2 output rows per
# thread along y (``smarch_rows=2``) and the ring base of stage 1 (``smarch_ring_base``: base is
# src → the own cell's φ(k) from the shared φ ring, a second kernel in ``plan.same``)
if SIM:
    # (shape, boundary, dtype, kernel, block, planes, lo, hi, rows, ring base, ahead)
    OPT_CASES = [((5, 17, 9), "periodic", np.float64, "texture", (8, 8), 4, 0, None, 2, True, 2),
                 ((5, 11, 13), "mirror", np.float32, "global", (16, 4), 3, 0, None, 2, False, 1),
                 ((8, 10, 9), "fixed", np.float64, "texture", (8, 8), 3, 2, 7, 2, True, 3),
                 ((6, 10, 12), "fixed", np.float32, "texture", (8, 4), 4, 0, None, 1, True, 2),
                 ((8, 10, 9), "mirror", np.float64, "global", (4, 4), 3, 1, 7, 1, True, 1)]
else:
    OPT_CASES = [((50, 37, 41), b, dt, "texture", None, 32, 0, None, r, rb, 2)
                 for b in ("periodic", "mirror", "fixed") for dt in (np.float64, np.float32)
                 for r, rb in ((2, False), (1, True), (2, True))]
    OPT_CASES += [((64, 70, 45), "fixed", np.float64, "global", (32, 4), 7, 3, 60, 2, True, 1)]


@pytest.mark.parametrize("shape,bnd,dtype,kernel,block,planes,lo,hi,rows,ring,ahead", OPT_CASES,
                         ids=str)
def test_smarch_rows_and_ring_base_equal_direct(shape, bnd, dtype, kernel, block, planes, lo, hi,
                                                rows, ring, ahead):
    """Both stage forms (base is src: stage 1, the ring-base kernel where on; base another
    array: stage 2) of every option equal the direct kernel bit for bit (simulator); the launch
    grid covers the BX × BY·rows tiles."""
    grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
    dt_ = np.dtype(dtype)
    s3 = ck.view3(shape)
    hi_ = shape[0] if hi is None else hi
    phi, base = _field(shape, 4, dtype), _field(shape, 5, dtype)
    scal = ck.stage_scalars(MODEL, grid, boundary, dt_)
    sm = ck.StageLaunch(kernel, 3, s3, boundary.code, dt_, block=block, lo=lo, hi=hi,
                      march=planes, smarch=True, unroll=ahead, smarch_rows=rows,
                      smarch_ring_base=ring)
    assert sm.smarch and sm.rows == rows and sm.ring_base == ring and sm.unroll == ahead
    assert (sm.same is not None) == ring
    bx, by = sm.block[:2]
    assert sm.griddim == (-(-shape[2] // bx), -(-shape[1] // (by * rows)),
                          -(-(hi_ - lo) // planes))
    if ring:
        assert sm.same.src_is_base and sm.same.rows == rows and sm.same.griddim == sm.griddim
        assert sm.same.fn is not sm.fn
    direct = ck.StageLaunch(kernel, 3, s3, boundary.code, dt_, lo=lo, hi=hi, cpt=1, march=0)
    coef = dt_.type(0.37)
    n = phi.size
    for b in (phi, base):  # stage 1 (base is src), stage 2
        got_expect = []
        for plan in (sm, direct):
            d_src = cuda.to_device(phi.reshape(n))
            d_base = d_src if b is phi else cuda.to_device(b.reshape(n))
            d_out = cuda.to_device(np.full(n, 7.0, phi.dtype))
            plan(d_src, d_base, d_out, coef, scal)
            got_expect.append(d_out.copy_to_host().reshape(shape))
        got, expect = got_expect
        assert np.all(got[:lo] == 7.0) and np.all(got[hi_:] == 7.0)
        if SIM:
            assert np.array_equal(got, expect), np.max(np.abs(got - expect))
        else:
            tol = 1e-12 if dt_ == np.float64 else 1e-5
            err = np.max(np.abs(got.astype(np.float64) - expect)) / np.max(np.abs(expect))
            assert err <= tol, err


def test_smarch_options_plan():
    """Defaults off (``DEFAULT_SMARCH_ROWS`` = 1, no ring base: the plan is the former one);
    rows and the ring base are validated; the ring-base plan refuses a base other than src;
    fits/counts with rows."""
    s3 = (9, 8, 7)
    d = ck.StageLaunch("texture", 3, s3, 0, np.float64)
    assert d.smarch and d.rows == ck.DEFAULT_SMARCH_ROWS and d.ring_base == \
        ck.DEFAULT_SMARCH_RING_BASE
    r2 = ck.StageLaunch("texture", 3, (9, 40, 70), 0, np.float64, smarch_rows=2)
    assert r2.smarch and r2.rows == 2 and r2.block == (32, 8, 1) and r2.griddim == (3, 3, 1)
    # the register form and the other kernels ignore the options
    g = ck.StageLaunch("global", 3, s3, 0, np.float32, march=16, smarch_rows=2,
                     smarch_ring_base=True)
    assert not g.smarch and g.rows == 1 and not g.ring_base and g.same is None
    t = ck.StageLaunch("shared", 3, s3, 0, np.float64, smarch_rows=2, smarch_ring_base=True)
    assert not t.smarch and t.rows == 1 and not t.ring_base and t.same is None
    with pytest.raises(ValueError):
        ck.StageLaunch("texture", 3, s3, 0, np.float64, smarch_rows=3)
    with pytest.raises(ValueError):  # 4x4 threads with 2 rows: 6 loads per thread
        ck.StageLaunch("texture", 3, s3, 0, np.float64, block=(4, 4), march=4, smarch=True,
                     smarch_rows=2)
    # a block that does not fit with 2 rows keeps the register form when smarch is not forced
    assert not ck.StageLaunch("texture", 3, s3, 0, np.float64, block=(4, 4, 1),
                            smarch_rows=2).smarch
    assert ck.StageLaunch("texture", 3, s3, 0, np.float64, block=(8, 8, 1), smarch_rows=2).smarch
    assert smarch_fits((32, 8), 2) and smarch_fits((8, 8), 2) and not smarch_fits((8, 4), 2)
    assert smarch_counts((32, 8), 2) == (3, 3, 3 * (36 * 20 + 34 * 18))
    assert smarch_counts((32, 8), 1) == smarch_counts((32, 8))
    with pytest.raises(ValueError):
        ck.smarch_kernel(0, True, "float64", (8, 8), 4, None, 2, 3)
    rb = ck.StageLaunch("texture", 3, s3, 0, np.float64, block=(4, 4), march=4, smarch=True,
                      smarch_ring_base=True)
    a, b, o = (cuda.to_device(np.zeros(9 * 8 * 7)) for _ in range(3))
    scal = ck.stage_scalars(MODEL, Grid(s3), Boundary("periodic"), np.dtype(np.float64))
    with pytest.raises(ValueError):
        rb.same(a, b, o, 0.5, scal)


def test_smarch_ring_base_record_picks_the_kernel(monkeypatch):
    """Graph recording (cuda_solver/graph.py record the stages through ``StageLaunch.record``):
    base is src records the ring-base kernel once it has been launched (compiled), else the
    ordinary kernel (right for any base); base another array always the ordinary kernel."""
    from simengine.field.cuda import plan as plan_mod

    s3 = (9, 8, 7)
    p = ck.StageLaunch("texture", 3, s3, 0, np.float64, block=(4, 4), march=4, smarch=True,
                     smarch_ring_base=True)
    rec = []
    monkeypatch.setattr(plan_mod.StageLaunch, "_prepare",
                        lambda self, args: (None, None, self.fn, args))
    monkeypatch.setattr(plan_mod._launch_api, "record",
                        lambda target, config, kernel, kargs: rec.append(kernel))
    a, b, o = object(), object(), object()
    monkeypatch.setattr(p, "_fast", "compiled")
    p.record(None, a, a, o, 0.5, ())
    p.record(None, a, b, o, 0.5, ())
    assert rec == [p.fn, p.fn]
    monkeypatch.setattr(p.same, "_fast", "compiled")
    rec.clear()
    p.record(None, a, a, o, 0.5, ())
    p.record(None, a, b, o, 0.5, ())
    assert rec == [p.same.fn, p.fn] and p.same.fn is not p.fn


@pytest.mark.parametrize("rows,ring", [(2, True)])  # each option alone: the kernel tests above
def test_smarch_options_solver(monkeypatch, rows, ring):
    """RK2 steps of the solver with the option defaults switched on (as the lead would switch
    them in config.py) equal the solver with them off bit for bit (simulator), and slabs equal
    the whole grid."""
    from simengine.field.cuda import plan as plan_mod

    shape = (6, 19, 10) if SIM else (40, 33, 50)
    steps = 1 if SIM else 5
    block = (8, 8, 1) if SIM else None
    bnd = "fixed"
    grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
    phi = _field(shape, 6, np.float64)

    def factory(slab=None, exchange=None):
        return CudaFieldSolver(MODEL, grid, boundary, kernel="texture", precision=np.float64,
                               dt=DT, block=block, slab=slab, exchange=exchange,
                               fused=False)  # the stages (auto: the fused 3-D form on a GPU)

    off = factory()
    assert off.plan.smarch and off.plan.rows == 1 and off.plan.same is None
    off.load(phi)
    off.advance(steps)
    expect = off.state()
    monkeypatch.setattr(plan_mod, "DEFAULT_SMARCH_ROWS", rows)
    monkeypatch.setattr(plan_mod, "DEFAULT_SMARCH_RING_BASE", ring)
    on = factory()
    assert on.plan.smarch and on.plan.rows == rows and (on.plan.same is not None) == ring
    on.load(phi)
    on.advance(steps)
    got = on.state()
    if SIM:
        assert np.array_equal(got, expect), np.max(np.abs(got - expect))
    else:
        assert np.max(np.abs(got - expect)) <= 1e-12 * np.max(np.abs(expect))
    g = SlabGroup(factory, shape[0], [(0, 4), (4, shape[0])] if SIM else 3, bnd)
    g.load(phi)
    g.advance(steps)
    assert np.array_equal(g.state(), got)


def _bench():
    import importlib.util

    from conftest import ROOT

    path = ROOT / "benchmarks" / "bench_field_gpu.py"
    spec = importlib.util.spec_from_file_location("_bench_field_gpu", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    return mod


def test_bench_smarch_options():
    """benchmarks/bench_field_gpu.py ``--smarch block:planes:ahead[:r<rows>][b]`` parses into
    the variants the 'smarch' group times, and its correctness check (``rk2_check``: 3 RK2 steps
    launched as the solver does, stage 1 with base is src) finds the options equal to the
    direct kernel (simulator: exactly) and a wrong field different."""
    bench = _bench()
    v = bench.parse_smarch("32x8:64:2,32x8:64:2:r2,32x8:64:1:b, 32x4:32:2:r2b,32x8:64:2:r2bm80,"
                           "32x8:64:1:m72,32x8:64:2:n")
    assert v == [((32, 8), 64, None, 2, 1, False, True), ((32, 8), 64, None, 2, 2, False, True),
                 ((32, 8), 64, None, 1, 1, True, True), ((32, 4), 32, None, 2, 2, True, True),
                 ((32, 8), 64, 80, 2, 2, True, True), ((32, 8), 64, 72, 1, 1, False, True),
                 ((32, 8), 64, None, 2, 1, False, False)]
    for bad in ("32x8:64", "32x8:64:2:x", "32x8:64:2:r2b:1", "32x8:64:2:br2", "32x8:64:2:m80r2"):
        with pytest.raises(ValueError):
            bench.parse_smarch(bad)
    old = list(bench.SMARCH_VARIANTS)
    try:
        bench.SMARCH_VARIANTS[:] = v
        tags = [blk for *_, blk in bench.variants("smarch")]
    finally:
        bench.SMARCH_VARIANTS[:] = old
    assert tags[0] == ("ref",) and tags[-1] == ("default",)
    assert tags[1:-1] == [("smarch",) + x[:1] + x[2:] for x in v]
    s3 = (6, 10, 12)
    dt_ = np.dtype(np.float64)
    scal = ck.stage_scalars(bench.MODEL, Grid(s3), Boundary("periodic"), dt_)
    ref_out = bench.rk2_check(None, None, s3, dt_, scal, steps=1)
    p = ck.StageLaunch("texture", 3, s3, 0, dt_, block=(8, 8), march=4, smarch=True, unroll=1,
                     smarch_rows=2, smarch_ring_base=True)
    assert bench.smarch_name(p) == "-rows2-ringbase"
    diff = bench.rk2_check(p, ref_out, s3, dt_, scal, steps=1)
    assert diff == 0.0 if SIM else diff <= 1e-12
    assert bench.rk2_check(p, ref_out * 1.001, s3, dt_, scal, steps=1) > 1e-4
    # numba's indexing of the shared rings (the benchmark's comparison form): the same field
    p = ck.StageLaunch("texture", 3, s3, 0, dt_, block=(8, 8), march=4, smarch=True, unroll=2,
                     smarch_flat=False)
    assert p.flat is False and bench.smarch_name(p) == "-numbaidx"
    diff = bench.rk2_check(p, ref_out, s3, dt_, scal, steps=1)
    assert diff == 0.0 if SIM else diff <= 1e-12


def test_default_march_length_fills_the_waves():
    """The default launch's planes per block (smarch_planes): the length whose blocks fill the
    last wave best for the halo planes they load — the H100 (132 SMs) measurements: 256³ fp64
    with 2 rows takes 48 planes (64 left 1.3 waves), 512³ keeps 64; a grid too small to fill
    one wave keeps the first choice."""
    from simengine.field.cuda.smarch import smarch_planes

    h100 = 132
    assert smarch_planes((256, 256, 256), (32, 16), "float64", 2, h100) == 48
    assert smarch_planes((512, 512, 512), (32, 16), "float64", 2, h100) == 64
    assert smarch_planes((256, 256, 256), (32, 8), "float64", 1, h100) == 64
    assert smarch_planes((256, 256, 256), (32, 16), "float32", 2, h100) == 64
    assert smarch_planes((9, 8, 7), (32, 16), "float64", 2, h100, choices=(64, 48, 32)) == 64
    assert smarch_planes((9, 8, 7), (32, 16), "float64", 2, h100, choices=(32, 64)) == 32
    # the score: a full last wave beats fewer halo planes
    assert smarch_planes((256, 256, 512), (32, 16), "float64", 2, 128, choices=(64, 128)) == 64
