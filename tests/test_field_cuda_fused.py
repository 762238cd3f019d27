"""The fused RK2 step through the solver (``fused: auto | true | false``, field/plans.py): what
runs, what is refused, the stage API beside it, mass, a scenario with checkpoint and resume, and
CUDA Graphs of fused steps. The forms themselves are tested in test_field_cuda_fused_frame.py and
test_field_cuda_fused_warp.py.

Runs under whatever ``numba.cuda`` is: the CUDA simulator in CI (small grids, the frame form with
one 15×17 block = tile 9×7 = the grid, a few steps, bit-identical to the unfused stages) or a real GPU
(non-tile-multiple grids, the default plans, ≤ 1e-12 relative in fp64 against the unfused path).
"""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():  # pragma: no cover
    pytest.skip("no CUDA device and not the simulator", allow_module_level=True)

from field_cuda_common import DT, MODEL, SIM, close, field as _field, run  # noqa: E402

from simengine import api  # noqa: E402
from simengine.errors import UserError  # noqa: E402
from simengine.field import reference as ref  # noqa: E402
from simengine.field.cuda import fused_launch  # noqa: E402
from simengine.field.cuda_solver import CudaFieldSolver  # noqa: E402
from simengine.field.decomposition import make_slabs  # noqa: E402
from simengine.field.model import Boundary, Grid  # noqa: E402

SMALL2 = (9, 7) if SIM else (96, 130)
FRAME = (15, 17) if SIM else None  # the frame form's block under the simulator: tile 9×7
STEPS = 2 if SIM else 1000


def _solver(shape, bnd, dtype, fused, kernel="texture", **kw):
    if fused:
        kw.setdefault("block", FRAME)
    elif SIM:
        kw.setdefault("block", (8, 8))
    return CudaFieldSolver(MODEL, Grid(shape, 0.9), Boundary(bnd, 0.3), kernel=kernel,
                           precision=dtype, dt=DT, fused=fused, **kw)


def _close(got, expect, dtype, exact=SIM):
    close(got, expect, dtype, exact)


def _advance(s, phi, steps):
    return run(s, phi, steps)


def test_fused_matches_unfused_and_reference():
    phi = _field(SMALL2)
    f = _solver(SMALL2, "mirror", np.float64, True)
    assert f.plan_choice.form.name == "fused-frame" and "fused RK2" in f.name
    got = _advance(f, phi, STEPS)
    _close(got, _advance(_solver(SMALL2, "mirror", np.float64, False), phi, STEPS), np.float64)
    want = ref.run(phi, STEPS, DT, MODEL, f.grid, f.boundary)
    assert np.max(np.abs(got - want)) <= 1e-12 * max(1.0, np.max(np.abs(want)))


def test_fused_kernels_and_small_grids():
    """All four kernel names run the fused step (plain or ld.global.nc loads); grids smaller
    than the 4-cell halo (wrap / reflection deeper than the grid)."""
    for kernel, shape, bnd in [("global", SMALL2, "periodic"), ("shared", SMALL2, "fixed"),
                               ("combined", SMALL2, "mirror"), ("texture", (3, 2), "mirror"),
                               ("texture", (2, 3), "periodic")]:
        phi = _field(shape, 1)
        f = _solver(shape, bnd, np.float64, True, kernel=kernel, layout="modern")
        u = _solver(shape, bnd, np.float64, False, kernel=kernel, layout="modern")
        _close(_advance(f, phi, STEPS), _advance(u, phi, STEPS), np.float64)


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
    u = _solver(SMALL2, "fixed", np.float64, False)
    f.load(phi)
    f.advance(1)
    f.run_stage(0)
    f.run_stage(1)
    f.end_step()
    f.advance(1)
    assert f.steps == 3
    _close(f.state(), _advance(u, phi, 3), np.float64)


def test_solver_option():
    g, b = Grid(SMALL2, 0.9), Boundary("mirror")
    auto = CudaFieldSolver(MODEL, g, b, dt=DT)
    assert (auto.fused_plan is not None) == (not SIM)
    assert auto.plan_summary  # the start-up log says which form runs and why
    off = CudaFieldSolver(MODEL, g, b, dt=DT, fused=False)
    assert "fused" not in off.name and off.plan_summary.startswith("stages/")
    with pytest.raises(ValueError, match="rk2"):
        CudaFieldSolver(MODEL, g, b, dt=DT, fused=True, integrator="euler")
    # no fused form runs 1-D or 3-D fields, a slab of a decomposed grid, cells_per_thread
    for grid, kw, why in ((Grid((40,), 0.9), {}, "1-D"), (Grid((6, 5, 7), 0.9), {}, "3-D"),
                          (g, dict(slab=make_slabs(SMALL2[0], 2, "mirror")[0]), "slab"),
                          (g, dict(cells_per_thread=2), "cells_per_thread")):
        with pytest.raises(UserError, match=why):
            CudaFieldSolver(MODEL, grid, b, dt=DT, fused=True, **kw)
    # a slab: auto runs the unfused stages (halo 2)
    slab = make_slabs(SMALL2[0], 2, "mirror")[0]
    s = CudaFieldSolver(MODEL, g, b, dt=DT, slab=slab)
    assert s.fused_plan is None and "slab" in s.plan_choice.reason


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
    text = (SCENARIO.replace("SHAPE", "[9, 7]" if SIM else "[200, 200]")
            .replace("STEPS", str(steps)).replace("EVERY", str(every))
            .replace("BLOCK", "block: [15, 17], fused: true" if SIM else "fused: true"))
    msgs = []
    fused = api.run(text, tmp_path / "fused.h5", log=msgs.append)
    assert any("fused RK2" in m for m in msgs), msgs
    plain = api.run(text, tmp_path / "plain.h5", overrides=["solver.fused=false"])
    a, b = _final(fused), _final(plain)
    assert a[1] == b[1] == steps
    _close(a[0], b[0], np.float64)
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
    sch, coefs, rec = fused_launch.graph_recording(plan, (0.5, 1.0), "scal")
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
