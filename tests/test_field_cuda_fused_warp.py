"""The warp-marching fused RK2 step (``simengine/field/cuda/fused_warp.py``) against two unfused
stages and the shared-memory fused step.

Under the CUDA simulator (CI): grids ≤ 32 columns wide per warp pair (a warp is 32 lanes there
too), chunks of a few rows (ragged last chunk), 1–2 steps, bit-identical. On a GPU: grids whose
width is no multiple of the warp's output width, the default chunking, 1000 steps against the
unfused path (≤ 1e-12 relative in fp64, ≤ 1e-5 in fp32).
"""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():  # pragma: no cover
    pytest.skip("no CUDA device and not the simulator", allow_module_level=True)

from field_cuda_common import BOUNDARIES, close as _close, DT, MODEL, SIM  # noqa: E402

from simengine.field import cuda as ck  # noqa: E402
from simengine.field.cuda import fused_warp as fw  # noqa: E402
from simengine.field import plans  # noqa: E402
from simengine.field.cuda_solver import CudaFieldSolver  # noqa: E402
from simengine.field.model import Boundary, Grid  # noqa: E402


if SIM:
    # 56 output columns per warp; L=8 rows per chunk (the last chunk ragged)
    SHAPES = {2: (11, 62)}
    LENGTH, WARPS, STEPS = 8, 2, 2
else:
    SHAPES = {2: (300, 1003)}
    LENGTH, WARPS, STEPS = None, None, 1000


def _setup(shape, bnd, dtype, seed=0):
    grid = Grid(shape, 0.9)
    boundary = Boundary(bnd, 0.3)
    scal = ck.stage_scalars(MODEL, grid, boundary, dtype)
    host = np.random.default_rng(seed).uniform(-1, 1, shape).astype(dtype).ravel()
    return grid, boundary, scal, host


def _warp_steps(plan, host, scal, steps):
    f = [cuda.to_device(host), cuda.device_array(host.size, host.dtype)]
    for _ in range(steps):
        plan(f[0], f[1], 0.5 * DT, DT, scal)
        f.reverse()
    return f[0].copy_to_host()


def _unfused_steps(shape, boundary, dtype, host, scal, steps, kernel="texture"):
    unf = ck.StageLaunch(kernel, 2, ck.view3(shape), boundary.code, dtype, cpt=1, march=0, vec=0,
                       block=(8, 8) if SIM else None)
    u = [cuda.to_device(host), cuda.device_array(host.size, dtype),
         cuda.device_array(host.size, dtype)]
    for _ in range(steps):
        unf(u[0], u[0], u[1], 0.5 * DT, scal)
        unf(u[1], u[0], u[2], DT, scal)
        u[0], u[2] = u[2], u[0]
    return u[0].copy_to_host()


CASES = [(2, b, p) for b in BOUNDARIES for p in ("float64", "float32")]


@pytest.mark.parametrize("cols,bnd,prec", CASES, ids=lambda v: str(v))
def test_warp_matches_unfused(cols, bnd, prec):
    dtype = np.dtype(prec)
    shape = SHAPES[cols]
    grid, boundary, scal, host = _setup(shape, bnd, dtype, seed=cols)
    plan = fw.WarpFusedPlan("texture", 2, ck.view3(shape), boundary.code, dtype, cols=cols,
                            length=LENGTH, warps=WARPS)
    # several warps across x, several chunks along y, a ragged last chunk and warp
    assert plan.griddim[1] >= 2 and shape[0] % plan.length
    assert shape[1] > fw.out_width(cols) and shape[1] % fw.out_width(cols)
    got = _warp_steps(plan, host, scal, STEPS)
    _close(got, _unfused_steps(shape, boundary, dtype, host, scal, STEPS), dtype)


@pytest.mark.parametrize("bnd", BOUNDARIES)
def test_warp_plain_loads_and_shapes(bnd):
    """Against two unfused stages: plain loads (``global``); several warps of one block writing
    (W=2 covers both warps' columns), chunk length 4, an odd width (no pair stores) with C=2."""
    shape = (13, 31) if SIM else (257, 999)
    dtype = np.dtype(np.float64)
    grid, boundary, scal, host = _setup(shape, bnd, dtype, seed=3)
    s3 = ck.view3(shape)
    want = _unfused_steps(shape, boundary, dtype, host, scal, 1, kernel="global")
    for cols, ahead in ((2, 1), (2, 0)):
        plan = fw.WarpFusedPlan("global", 2, s3, boundary.code, dtype, cols=cols,
                                length=4 if SIM else 16, warps=2, ahead=ahead)
        _close(_warp_steps(plan, host, scal, 1), want, dtype)


def test_warp_small_grids():
    """Grids narrower than the halo and shorter than a chunk: the folded loads wrap / reflect
    deeper than the grid."""
    dtype = np.dtype(np.float64)
    for shape, bnd, cols in [((3, 5), "periodic", 2), ((5, 3), "mirror", 2),
                             ((2, 6), "fixed", 2), ((6, 2), "mirror", 2)]:
        grid, boundary, scal, host = _setup(shape, bnd, dtype, seed=4)
        plan = fw.WarpFusedPlan("texture", 2, ck.view3(shape), boundary.code, dtype, cols=cols,
                                length=2, warps=1)
        _close(_warp_steps(plan, host, scal, 1),
               _unfused_steps(shape, boundary, dtype, host, scal, 1), dtype)


def test_chunk_length_changes_nothing():
    """The chunk length (explicit, or fitted to the GPU after the first launch) changes only the
    launch geometry: bit-identical results on the simulator and on a GPU."""
    shape = (13, 20) if SIM else (700, 900)
    dtype = np.dtype(np.float64)
    grid, boundary, scal, host = _setup(shape, "periodic", dtype, seed=9)
    s3 = ck.view3(shape)
    auto = fw.WarpFusedPlan("texture", 2, s3, boundary.code, dtype, cols=2, warps=1)
    fixed = fw.WarpFusedPlan("texture", 2, s3, boundary.code, dtype, cols=2, warps=1, length=3)
    a = _warp_steps(auto, host, scal, 2)
    assert auto.auto_length and not fixed.auto_length
    if not SIM:
        assert auto.length >= fw.WARP_MIN_LENGTH and "(auto)" in auto.description
    np.testing.assert_array_equal(a, _warp_steps(fixed, host, scal, 2))


def test_fit_length(monkeypatch):
    """The fitted chunk length from the registers (H100 figures, fp32 C=2 at 46 registers:
    40 resident warps per SM by the sub-partition rule, 20 blocks of 2 warps): one wave at
    WARP_FILL of the block slots; explicit lengths are kept; at least WARP_MIN_LENGTH rows."""
    from types import SimpleNamespace

    dev = SimpleNamespace(MAX_REGISTERS_PER_MULTIPROCESSOR=65536,
                          MAX_THREADS_PER_MULTI_PROCESSOR=2048, MAX_BLOCKS_PER_MULTIPROCESSOR=32)
    monkeypatch.setattr(fw.cuda, "get_current_device", lambda: dev)
    monkeypatch.setattr(fw, "occupancy_report",
                        lambda plan: {"registers_per_thread": 46, "sm_count": 132})
    p = fw.WarpFusedPlan("texture", 2, (1, 4096, 4096), 0, np.float32, cols=2, warps=2)
    p._fit_length()
    assert p.griddim[0] == 37 and p.length == 62 and p.griddim[1] == 67
    assert p.griddim[0] * p.griddim[1] <= fw.WARP_FILL * 20 * 132
    small = fw.WarpFusedPlan("texture", 2, (1, 600, 600), 0, np.float32, cols=2, warps=2)
    small._fit_length()
    assert small.length == fw.WARP_MIN_LENGTH


def test_plan_checks():
    with pytest.raises(ValueError, match="2-D"):
        fw.WarpFusedPlan("texture", 3, (4, 4, 4), 0, np.float64)
    with pytest.raises(ValueError, match="0 or 1"):
        fw.WarpFusedPlan("texture", 2, (1, 4, 4), 0, np.float64, ahead=2)
    for cols in (1, 3):  # one column per lane was measured slower and removed
        with pytest.raises(ValueError, match="must be 2"):
            fw.WarpFusedPlan("texture", 2, (1, 4, 4), 0, np.float64, cols=cols)
    p = fw.WarpFusedPlan("texture", 2, (1, 100, 1000), 0, np.float32, cols=2, length=32,
                         warps=4)
    assert p.griddim == (5, 4, 1) and p.blockdim == (128, 1, 1) and p.tile == (32, 224)
    assert p.shared_bytes == 0 and "warp-marching" in p.description
    assert fw.out_width(1) == 24 and fw.out_width(2) == 56


def test_solver_picks_warp_above_the_cap(monkeypatch):
    """The registry's large-grid rule (field/plans.py): a 2-D grid above FUSED_SMALL_CELLS runs
    the warp-marching step (``fused: true`` here; ``auto`` only on a GPU), named in the solver's
    name, and matches the unfused solver; an explicit block runs the frame form."""
    shape = (20, 30) if SIM else (300, 1001)
    monkeypatch.setattr(plans, "FUSED_SMALL_CELLS", 16)
    if not any(plans.WARP_AUTO.values()):
        pytest.skip("the warp-marching step is not chosen for any precision")
    prec = next(p for p, on in plans.WARP_AUTO.items() if on)
    g, b = Grid(shape, 0.9), Boundary("mirror")
    kw = dict(march=LENGTH) if SIM else {}
    s = CudaFieldSolver(MODEL, g, b, dt=DT, precision=prec, fused=True, **kw)
    assert isinstance(s.fused_plan, fw.WarpFusedPlan) and "warp-marching" in s.name
    if SIM:
        assert s.fused_plan.length == LENGTH
    u = CudaFieldSolver(MODEL, g, b, dt=DT, precision=prec, fused=False,
                        **(dict(block=(8, 8)) if SIM else {}))
    phi = np.random.default_rng(6).uniform(-1, 1, shape)
    for solver in (s, u):
        solver.load(phi)
        solver.advance(STEPS if not SIM else 1)
    _close(s.state(), u.state(), prec)
    occ = s.occupancy()
    assert occ["layout"] == "fused" and occ["block"] == list(s.fused_plan.blockdim)
    if not SIM:
        assert occ["shared_mem_per_block"] == 0 and occ["local_mem_per_thread"] == 0
        if s.kernel in ("texture", "combined"):
            assert occ["ptx_ld_global_nc"] > 0
    t = CudaFieldSolver(MODEL, g, b, dt=DT, precision=prec, fused=True, block=(16, 16))
    assert t.plan_choice.form.name == "fused-frame"
    case = plans.Case(ndim=2, shape3=(1, 1, 17), dtype=prec, boundary=0)
    assert plans.choose(case, None).form.name == "fused-warp"
    case3 = plans.Case(ndim=3, shape3=(1, 1, 17), dtype=prec, boundary=0)
    assert plans.choose(case3, None).form.name != "fused-warp"  # a 2-D form only
