"""The fused RK2 step (``simengine/field/cuda/fused.py``) against the unfused stages and the NumPy
reference.

Runs under whatever ``numba.cuda`` is: the CUDA simulator in CI (small grids, 8×8 blocks, a few
steps; the fused step must be bit-identical to the unfused stages there, the arithmetic order
being the same and no FMA contraction) or a real GPU (larger, non-tile-multiple grids, the
default blocks, 1000 steps against the unfused path: ≤ 1e-12 relative in fp64, ≤ 1e-5 in fp32).
"""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():  # pragma: no cover
    pytest.skip("no CUDA device and not the simulator", allow_module_level=True)

from field_cuda_common import BOUNDARIES, DT, field as _field, MODEL, SIM  # noqa: E402

from simengine import api  # noqa: E402
from simengine.errors import UserError  # noqa: E402
from simengine.field import cuda as ck  # noqa: E402
from simengine.field import reference as ref  # noqa: E402
from simengine.field.cuda import fused as fz  # noqa: E402
from simengine.field.cuda_solver import CudaFieldSolver  # noqa: E402
from simengine.field.decomposition import make_slabs  # noqa: E402
from simengine.field.model import Boundary, Grid  # noqa: E402


if SIM:
    SHAPES = {1: (37,), 2: (27, 30), 3: (6, 5, 7)}
    SMALL2 = (13, 11)
    BLOCK = {1: (8,), 2: (8, 8), 3: (8, 8, 1)}
    ROWS = {1: 2, 2: 1, 3: None}
    MARCH3 = 4  # two chunks of planes, the last one ragged
    STEPS, LONG = 1, 2
    # 3-D with interior in-plane tiles (4-cell halo inside the grid): smaller blocks
    INTERIOR3 = dict(shape=(3, 12, 12), block=(4, 4, 1))
else:
    SHAPES = {1: (1001,), 2: (257, 300), 3: (50, 37, 41)}
    SMALL2 = (96, 130)
    BLOCK = {1: None, 2: None, 3: None}
    ROWS = {1: None, 2: None, 3: None}
    MARCH3 = 16
    STEPS, LONG = 5, 1000
    INTERIOR3 = dict(shape=(40, 70, 90), block=None)


def _solver(shape, bnd, dtype, fused, kernel="texture", **kw):
    nd = len(shape)
    if fused:
        kw.setdefault("block", BLOCK[nd])
        kw.setdefault("cells_per_thread", ROWS[nd])
        if nd == 3:
            kw.setdefault("march", MARCH3)
    return CudaFieldSolver(MODEL, Grid(shape, 0.9), Boundary(bnd, 0.3), kernel=kernel,
                           precision=dtype, dt=DT, fused=fused, **kw)


def _advance(s, phi, steps):
    s.load(phi)
    s.advance(steps)
    return s.state()


def _close(got, expect, dtype, exact):
    """Bit-identical where claimed (the simulator), else the issue's bar."""
    if exact:
        np.testing.assert_array_equal(got, expect)
        return
    tol = 1e-12 if np.dtype(dtype) == np.float64 else 1e-5
    assert np.max(np.abs(got - expect)) <= tol * np.max(np.abs(expect))


def _unfused_kw(nd):
    # 3-D: the non-marching direct kernel adds the stencil pairs in the fused kernel's order
    if nd == 3:
        return dict(cells_per_thread=1, march=0, block=(8, 8, 1) if SIM else None)
    return dict(block=BLOCK[nd]) if SIM else {}


# ---------------------------------------------------------------------------------------------
# fused vs unfused, fused vs reference
# ---------------------------------------------------------------------------------------------
CASES = ([(2, b, "float64") for b in BOUNDARIES] + [(2, b, "float32") for b in BOUNDARIES]
         + [(1, "mirror", "float64"), (1, "fixed", "float32")]
         + [(3, b, "float64") for b in BOUNDARIES] + [(3, "fixed", "float32")])


@pytest.mark.parametrize("nd,bnd,prec", CASES, ids=lambda v: str(v))
def test_fused_matches_unfused(nd, bnd, prec):
    dtype = np.dtype(prec)
    shape = SHAPES[nd]
    if SIM and nd == 2 and dtype == np.float32:
        shape = SMALL2
    phi = _field(shape).astype(dtype)
    f = _solver(shape, bnd, dtype, True)
    assert f.fused_plan is not None and "fused RK2" in f.name
    u = _solver(shape, bnd, dtype, False, **_unfused_kw(nd))
    assert u.fused_plan is None
    steps = LONG if not SIM or (nd == 2 and dtype == np.float32) or nd == 1 else STEPS
    got = _advance(f, phi, steps)
    expect = _advance(u, phi, steps)
    _close(got, expect, dtype, exact=SIM)
    # and against the NumPy reference (a few steps on a GPU: the reference is slow)
    rsteps = steps if SIM else STEPS
    if not SIM:
        got = _advance(f, phi, rsteps)
    want = ref.run(phi.astype(np.float64), rsteps, DT, MODEL, f.grid, f.boundary)
    tol = 1e-12 if dtype == np.float64 else 1e-5 * np.max(np.abs(want))
    assert np.max(np.abs(got - want)) <= tol


def test_fused_3d_interior_tiles():
    shape, block = INTERIOR3["shape"], INTERIOR3["block"]
    phi = _field(shape, 5)
    f = _solver(shape, "periodic", np.float64, True, block=block, march=8 if SIM else None)
    u = _solver(shape, "periodic", np.float64, False, cells_per_thread=1, march=0,
                block=(8, 8, 1) if SIM else None)
    _close(_advance(f, phi, STEPS), _advance(u, phi, STEPS), np.float64, exact=SIM)


@pytest.mark.parametrize("bnd", ["mirror"])
def test_fused_3d_vs_marching_default(bnd):
    """The default 3-D unfused kernel (marching) adds the in-plane pairs in another order:
    equal to round-off."""
    shape = SHAPES[3] if not SIM else (6, 5, 7)
    phi = _field(shape, 3)
    f = _solver(shape, bnd, np.float64, True)
    u = _solver(shape, bnd, np.float64, False, **({"block": (8, 8, 1), "march": 4} if SIM else {}))
    assert u.plan.march
    got, expect = _advance(f, phi, STEPS), _advance(u, phi, STEPS)
    assert np.max(np.abs(got - expect)) <= 1e-12 * np.max(np.abs(expect))


def test_fused_kernels_and_tiles():
    """All four kernel names run the fused step (plain or ld.global.nc loads); several rows per
    thread; a grid smaller than the 4-cell halo (wrap / reflection deeper than the grid)."""
    for kernel, shape, bnd, rows in [("global", SMALL2, "periodic", 2),
                                     ("shared", SMALL2, "fixed", 1),
                                     ("combined", SMALL2, "mirror", 2),
                                     ("texture", (3, 2), "mirror", 1),
                                     ("texture", (2, 3), "periodic", 1)]:
        phi = _field(shape, 1)
        f = _solver(shape, bnd, np.float64, True, kernel=kernel, block=(8, 4) if SIM else None,
                    cells_per_thread=rows, layout="modern")
        u = _solver(shape, bnd, np.float64, False, kernel=kernel, block=(8, 8) if SIM else None,
                    layout="modern")
        got, expect = _advance(f, phi, STEPS), _advance(u, phi, STEPS)
        _close(got, expect, np.float64, exact=SIM)


@pytest.mark.parametrize("bnd", ["periodic", "mirror"])
def test_fused_conserves_mass(bnd):
    phi = _field(SMALL2, 2) * 0.5 + 0.1
    s = _solver(SMALL2, bnd, np.float64, True)
    s.load(phi)
    m0 = s.reductions()["mass"]
    s.advance(3 if SIM else 200)
    assert abs(s.reductions()["mass"] - m0) <= 1e-14 * SMALL2[0] * SMALL2[1]


def test_stage_api_and_fused_advance_mix():
    """A fused solver still offers run_stage/end_step (the unfused stages on the same buffers):
    fused steps, a staged step and fused steps again equal the all-unfused run."""
    phi = _field(SMALL2, 4)
    f = _solver(SMALL2, "fixed", np.float64, True)
    u = _solver(SMALL2, "fixed", np.float64, False, **_unfused_kw(2))
    f.load(phi)
    f.advance(1)
    f.run_stage(0)
    f.run_stage(1)
    f.end_step()
    f.advance(1)
    assert f.steps == 3
    _close(f.state(), _advance(u, phi, 3), np.float64, exact=SIM)


def test_solver_option():
    g, b = Grid(SMALL2, 0.9), Boundary("mirror")
    auto = CudaFieldSolver(MODEL, g, b, dt=DT)
    assert (auto.fused_plan is not None) == (not SIM)
    assert auto.plan_choice.reason  # the start-up log says why
    assert "fused" not in CudaFieldSolver(MODEL, g, b, dt=DT, fused=False).name
    with pytest.raises(ValueError, match="rk2"):
        CudaFieldSolver(MODEL, g, b, dt=DT, fused=True, integrator="euler")
    # a slab of a decomposed grid: auto runs the unfused stages (halo 2), true is refused
    slab = make_slabs(SMALL2[0], 2, "mirror")[0]
    s = CudaFieldSolver(MODEL, g, b, dt=DT, slab=slab)
    assert s.fused_plan is None and "slab" in s.plan_choice.reason
    with pytest.raises(UserError, match="whole grid only"):
        CudaFieldSolver(MODEL, g, b, dt=DT, fused=True, slab=slab)
    with pytest.raises(ValueError, match="shared memory"):
        fz.FusedPlan("texture", 2, (1, 64, 64), 0, np.float64, block=(64, 16), rows=2)
    p = fz.FusedPlan("texture", 3, (8, 8, 8), 0, np.float64, block=(32, 8, 1))
    assert p.block == (32, 8) and p.shared_bytes == fz.shared_bytes(3, (32, 8), 1, "float64")
    assert p.shared_bytes <= fz.SHARED_LIMIT
    assert fz.shared_bytes(2, (32, 8), 2, "float64") == 8 * (24 * 40 + 22 * 38 + 20 * 36)


def test_occupancy_report():
    s = _solver(SMALL2, "periodic", np.float64, True)
    s.advance(1)
    occ = s.occupancy()
    p = s.fused_plan
    assert occ["layout"] == "fused" and occ["block"] == list(p.blockdim)
    assert occ["grid"] == list(p.griddim)
    assert np.prod(p.griddim[:2]) * p.tile[0] * p.tile[1] >= np.prod(SMALL2)
    if SIM:  # the simulator has no resource figures
        assert occ["registers_per_thread"] is None
        return
    assert occ["ptx_ld_global_nc"] > 0
    assert occ["shared_mem_per_block"] == s.fused_plan.shared_bytes
    assert occ["local_mem_per_thread"] == 0


# ---------------------------------------------------------------------------------------------
# through a scenario: solver.fused, checkpoint / resume
# ---------------------------------------------------------------------------------------------
SCENARIO = """\
kind: field
name: fused-run
grid: {shape: SHAPE, spacing: 1.0}
boundary: {type: mirror}
model: {mobility: 1.0, kappa: 1.0, potential: {b: 1.0, u: 1.0}}
initial: {type: noise, mean: 0.1, amplitude: 0.05, seed: 5}
time: {dt: 0.01, steps: STEPS}
solver: {integrator: rk2, kernel: texture, backend: cuda, precision: float64, BLOCK}
output: {checkpoint_every: EVERY, observables_every: EVERY}
"""


def _final(out):
    import h5py

    with h5py.File(out, "r") as f:
        return f["checkpoint/phi"][()], int(f["checkpoint/phi"].attrs["step"])


def test_scenario_fused_and_resume(tmp_path):
    steps, every = (4, 2) if SIM else (2000, 1000)
    text = (SCENARIO.replace("SHAPE", "[13, 11]" if SIM else "[200, 200]")
            .replace("STEPS", str(steps)).replace("EVERY", str(every))
            .replace("BLOCK", "block: [8, 4], fused: true" if SIM else "fused: true"))
    msgs = []
    fused = api.run(text, tmp_path / "fused.h5", log=msgs.append)
    assert any("fused RK2" in m for m in msgs), msgs
    plain = api.run(text, tmp_path / "plain.h5", overrides=["solver.fused=false"])
    a, b = _final(fused), _final(plain)
    assert a[1] == b[1] == steps
    _close(a[0], b[0], np.float64, exact=SIM)
    # interrupted at `every` (a checkpoint there), resumed: the same bits as uninterrupted
    part = tmp_path / "part.h5"
    api.run(text, part, overrides=[f"time.steps={every}"])
    api.run(text, part, resume=True)
    c = _final(part)
    assert c[1] == steps
    np.testing.assert_array_equal(c[0], a[0])


# ---------------------------------------------------------------------------------------------
# CUDA Graphs of fused steps (simengine.field.cuda.graph)
# ---------------------------------------------------------------------------------------------
def test_fused_graph_recording_order():
    """A step graph of the fused scheme records one fused step per step, φ from slot 0 to slot 2
    and back, with the solver's two coefficients; an odd step count is refused."""
    from types import SimpleNamespace

    from simengine.field.cuda import graph as cgraph

    recorded = []
    plan = SimpleNamespace(record=lambda t, s, o, c1, c2, scal: recorded.append((s, o, c1, c2)))
    sch, coefs, rec = fz.graph_recording(plan, (0.5, 1.0), "scal")
    b = [object(), object(), object()]
    cgraph.record_steps("builder", b, sch, coefs, rec, 4)
    assert recorded == [(b[0], b[2], 0.5, 1.0), (b[2], b[0], 0.5, 1.0)] * 2
    with pytest.raises(ValueError, match="back in their slots"):
        cgraph.record_steps("builder", b, sch, coefs, rec, 3)


def test_fused_graph_replay_matches_launches():
    from simengine.field.cuda import graph as cgraph

    K = cgraph.GRAPH_STEPS
    steps = 3 if SIM else 2 * K + 5
    phi = _field(SMALL2, 8)
    out = []
    for graphs in (False, True):
        s = _solver(SMALL2, "mirror", np.float64, True)
        s.use_graphs = graphs
        out.append(_advance(s, phi, steps))
        assert s.steps == steps
        if graphs:
            if SIM:  # the simulator never records graphs
                assert not s._graphs_usable() and not s._graphs
            else:
                assert s._graph_error is None and len(s._graphs) >= 1
    np.testing.assert_array_equal(out[0], out[1])
