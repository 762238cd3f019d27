"""The fused RK2 step of 3-D fields (``simengine/field/cuda/fused_3d.py``, form ``fused-3d``)
against the unfused stages and the NumPy reference; on 1, 2 and 3 slabs and on 2 and 3 MPI ranks
bit-identical to the whole grid; its rules in the plan registry.

Under the CUDA simulator (CI): grids of a few hundred cells (odd extents, a tile in the interior
of the plane and ragged ones at its faces, chunks of 3 planes so a grid has several marches and a
ragged last one), one step, bit-identical to the stages. On a GPU: ragged grids, the default frame
and the fitted chunk length, 20 steps (≤ 1e-12 relative in fp64, ≤ 1e-5 in fp32), graph replay
equal to launches, slabs bit-identical (the same compiled kernel)."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():  # pragma: no cover
    pytest.skip("no CUDA device and not the simulator", allow_module_level=True)

from field_cuda_common import DT, MODEL, SIM, close, field, run, solver  # noqa: E402

from simengine.field import plans, reference  # noqa: E402
from simengine.field.cuda import fused_3d as f3  # noqa: E402
from simengine.field.cuda_solver import CudaFieldSolver  # noqa: E402
from simengine.field.decomposition import FUSED_HALO, SlabGroup  # noqa: E402
from simengine.field.model import Boundary, Grid  # noqa: E402

HERE = Path(__file__).resolve().parent
if SIM:  # (axis 0, y, x): the 12×12 frame has a 4×4 tile
    SHAPE, STEPS, MARCH = (5, 9, 7), 1, 3
    SLAB_SHAPE, PIPE_SHAPE = (12, 4, 5), (16, 3, 5)
else:
    SHAPE, STEPS, MARCH = (37, 131, 203), 20, None
    SLAB_SHAPE = PIPE_SHAPE = (45, 67, 83)


def _fused(shape, bnd, dtype, **kw):
    s = solver(shape, bnd, dtype, fused=True, **kw)
    assert isinstance(s.fused_plan, f3.Fused3DPlan) and s.plan_choice.form.name == "fused-3d"
    return s


def _reference(phi, shape, bnd, steps):
    g, b = Grid(shape, 0.9), Boundary(bnd, 0.3)
    return reference.run(phi.astype(np.float64), steps, DT, MODEL, g, b)


@pytest.mark.parametrize("prec", ["float64", "float32"])
@pytest.mark.parametrize("bnd", ["periodic", "mirror", "fixed"])
def test_fused_3d_matches_the_stages_and_the_reference(bnd, prec):
    dtype = np.dtype(prec)
    phi = field(SHAPE, 5).astype(dtype)
    f = _fused(SHAPE, bnd, dtype, **({} if MARCH is None else dict(march=MARCH)))
    if SIM:
        assert f.fused_plan.griddim == (2, 3, 2) and f.fused_plan.length == MARCH
    got = run(f, phi, STEPS)
    close(got, run(solver(SHAPE, bnd, dtype, fused=False), phi, STEPS), dtype)
    ref = _reference(phi, SHAPE, bnd, STEPS)
    tol = 1e-10 if dtype == np.float64 else 2e-5
    assert np.max(np.abs(got - ref)) <= tol * max(1.0, np.max(np.abs(ref)))


@pytest.mark.parametrize("shape,bnd,prec,kw", [
    ((3, 5, 6), "mirror", "float64", {}),               # every extent under the 4-cell halo
    ((5, 13, 12), "periodic", "float32", {}),          # a tile in the plane's interior
    ((4, 3, 9), "periodic", "float64", dict(march=2, ahead=1)),  # 2-plane marches, plain
    # loads (global), the loads issued 1 plane ahead
    ((6, 5, 4), "fixed", "float64", dict(block=(10, 11, 1), march=4)),  # a 2×3 tile
])
def test_small_and_odd_grids(shape, bnd, prec, kw, monkeypatch):
    dtype = np.dtype(prec)
    phi = field(shape, 2).astype(dtype)
    kw = dict(kw)
    if kw.pop("ahead", None):
        monkeypatch.setattr(f3, "DEFAULT_AHEAD_3D", 1)
        kw["kernel"] = "global"
    f = _fused(shape, bnd, dtype, **kw)
    assert f.fused_plan.ahead == f3.DEFAULT_AHEAD_3D
    if "block" in kw:
        assert f.fused_plan.frame == (10, 11) and f.fused_plan.tile == (3, 2)  # x first
    steps = 2 if min(shape) <= 3 else STEPS
    unfused = solver(shape, bnd, dtype, fused=False, kernel=kw.get("kernel", "texture"))
    close(run(f, phi, steps), run(unfused, phi, steps), dtype)


@pytest.mark.parametrize("bnd,prec,ahead", [
    ("periodic", "float32", 1), ("mirror", "float64", 2), ("fixed", "float64", 2)])
def test_long_marches_run_the_steady_loop(bnd, prec, ahead, monkeypatch):
    """Two marches of 17 planes: the steady loop (every phase, no range tests) runs 12 planes
    unrolled (:data:`.fused_3d.DEFAULT_UNROLL_3D`) and 1–2 single ones, meets the wrap /
    reflection / walls of axis 0 in its loads, and hands over to the ramp at both ends."""
    shape, dtype = (34, 6, 5), np.dtype(prec)
    assert f3.DEFAULT_UNROLL_3D == 12
    monkeypatch.setattr(f3, "DEFAULT_AHEAD_3D", ahead)
    phi = field(shape, 4).astype(dtype)
    f = _fused(shape, bnd, dtype, march=17)
    assert f.fused_plan.length == 17 and f.fused_plan.griddim[2] == 2
    close(run(f, phi, 2), run(solver(shape, bnd, dtype, fused=False), phi, 2), dtype)


@pytest.mark.parametrize("bc", [0, 1, 2])
def test_division_free_fold_is_the_fold_within_the_halo(bc):
    """fold4 (no int64 division in the kernel) maps every index within 4 cells of an array of
    any extent as physics.fold_fn does, and keeps the others inside the array."""
    from simengine.field.cuda.physics import fold_fn

    fold, ref = f3.fold4(bc), fold_fn(bc)

    @cuda.jit
    def both(idx, ext, got, want):
        k = cuda.grid(1)
        if k < idx.size:
            got[k] = fold(idx[k], ext[k])
            want[k] = ref(idx[k], ext[k])

    pairs = [(i, n) for n in range(1, 7) for i in range(-4, n + 12)]
    idx = np.array([i for i, _ in pairs], np.int64)
    ext = np.array([n for _, n in pairs], np.int64)
    got, want = np.zeros_like(idx), np.zeros_like(idx)
    both[(len(pairs) + 63) // 64, 64](idx, ext, got, want)
    near = idx < ext + 4
    np.testing.assert_array_equal(got[near], want[near])
    assert np.all((got >= 0) & (got < ext))


def test_limits_and_lengths():
    with pytest.raises(ValueError, match="3-D"):
        f3.Fused3DPlan("texture", 2, (1, 64, 64), 0, np.float64)
    with pytest.raises(ValueError, match="smaller frame"):
        f3.Fused3DPlan("texture", 3, (8, 64, 64), 0, np.float64, frame=(48, 32))
    with pytest.raises(ValueError, match="above 8"):
        f3.Fused3DPlan("texture", 3, (8, 64, 64), 0, np.float64, frame=(8, 32))
    with pytest.raises(ValueError, match="halo side needs 4"):
        f3.Fused3DPlan("texture", 3, (10, 8, 8), 0, np.float64, rows=(2, 8))
    p = f3.Fused3DPlan("global", 3, (512, 512, 512), 1, np.float32, frame=(32, 32))
    assert p.tile == (24, 24) and p.griddim == (22, 22, 8) and p.shared_bytes == 16384
    # a slab's planes 4:36 of 40 stored, 64 planes per block: one march
    s = f3.Fused3DPlan("texture", 3, (40, 16, 16), 0, np.float64, rows=(4, 36))
    assert (s.lo, s.hi) == (4, 36) and s.griddim[2] == 1
    # the chunk length: full last waves and few extra planes
    assert f3.planes_for(512, 484, 132) == 171   # 3 marches: 1452 blocks = 11 full waves
    assert f3.planes_for(256, 121, 132) == 256   # one wave of whole-axis marches
    assert f3.planes_for(512, 100, 132) == 103   # 5 marches: 500 blocks, 3.8 waves
    assert f3.planes_for(10, 4, 132) == 10
    assert f3.planes_for(64, 9, 132) == 16      # a small grid: short marches fill more SMs


def test_registry_rules(monkeypatch):
    """fused: true runs it on 3-D grids (any strategy, a block = the frame, march = planes per
    block); auto picks it on a GPU for RK2 with global/texture and no launch hint where
    ``MARCH3D_AUTO`` says so for the precision (off since the H200 measurement: the stages);
    the stages stay auto's pick under the simulator; slabs of a 3-D grid get the halo of the
    form their grid runs."""
    base = dict(ndim=3, shape3=(64, 64, 64), dtype="float64", boundary=0)
    off = plans.choose(plans.Case(**base), None)
    assert off.form is plans.STAGES and off.reason == "auto: unfused for float64 3-D"
    assert plans.slab_depth((256, 256, 256), 0, simulator=False) == 2
    monkeypatch.setattr(plans, "MARCH3D_AUTO", {"float64": True, "float32": True})
    gpu = plans.choose(plans.Case(**base), None)
    assert gpu.form.name == "fused-3d" and gpu.reason == ("auto: fused, 3-D plane march "
                                                          "(2.5-D blocking)")
    for kw, why in ((dict(simulator=True), "simulator"), (dict(kernel="shared"), "shared 3-D"),
                    (dict(hints=True), "hints"), (dict(integrator="euler"), "euler")):
        c = plans.choose(plans.Case(**base, **kw), None)
        assert c.form is plans.STAGES and why in c.reason, (kw, c.reason)
    for kernel in plans.KERNELS:
        assert plans.choose(plans.Case(**base, kernel=kernel, simulator=True),
                            True).form.name == "fused-3d"
    with pytest.raises(plans.PlanError, match="rk2"):
        plans.choose(plans.Case(**base, integrator="euler"), True)
    with pytest.raises(plans.PlanError, match="cells_per_thread"):
        plans.choose(plans.Case(**base, rows=2), True)
    with pytest.raises(plans.PlanError, match="halo of 4"):
        plans.choose(plans.Case(**base, whole=False, slab_halo=2), True)
    assert plans.choose(plans.Case(**base, whole=False, slab_halo=2)).reason == (
        "slab (halo 2): unfused")
    framed = plans.Case(**base, block=(16, 12, 1), march=16)
    p = plans.choose(framed, True).build(framed)
    assert p.frame == (16, 12) and p.tile == (4, 8) and p.length == 16
    with pytest.raises(plans.PlanError, match="above 8"):
        plans.choose(plans.Case(**base, block=(32, 4, 4)), True).build(
            plans.Case(**base, block=(32, 4, 4)))
    assert plans.slab_depth((256, 256, 256), 0, simulator=False) == 4
    assert plans.slab_depth((256, 256, 256), 0, simulator=True) == 2
    assert plans.slab_depth((256, 256, 256), 0, fused=True, simulator=True) == 4
    assert plans.slab_depth((256, 256, 256), 0, kernel="shared", simulator=False) == 2
    with pytest.raises(plans.PlanError, match="1-D fields"):
        plans.choose(plans.Case(ndim=1, shape3=(1, 1, 8), dtype="float32", boundary=1), True)


#: (boundary, precision, split): every (boundary, precision) pair once over the slab cases;
#: 1 slab = a periodic slab exchanging with itself; "pipelined" = the exchange behind the
#: edge strips (cuda/fused_slab.py) on the slab owning enough planes
if SIM:  # uneven splits of the 12 planes, a slab of exactly the halo depth
    SLAB_CASES = [("periodic", np.float64, [(0, 4), (4, 8), (8, 12)]),
                  ("mirror", np.float32, [(0, 5), (5, 12)]),
                  ("periodic", np.float32, [(0, 12)]),
                  ("fixed", np.float64, "pipelined")]
else:  # balanced splits of 45 planes
    SLAB_CASES = [("periodic", np.float64, 3), ("mirror", np.float32, 2),
                  ("periodic", np.float32, 1), ("fixed", np.float64, "pipelined"),
                  ("mirror", np.float64, 3), ("fixed", np.float32, 2)]


class _Pipelining:
    """An in-process exchange offering ``start(array, ready)`` / ``finish`` (as the peer
    exchange does): the slab's step runs as edge strips + interior."""

    pipelines = True

    def __init__(self, exchange):
        self.exchange, self.starts = exchange, 0

    def __call__(self, array):
        self.exchange(array)

    def start(self, array, ready=None):
        self.starts += 1
        self.exchange(array)

    def finish(self, array):
        pass


@pytest.mark.parametrize("bnd,dtype,split", SLAB_CASES, ids=str)
def test_slabs_equal_the_whole_grid(bnd, dtype, split):
    shape = PIPE_SHAPE if split == "pipelined" else SLAB_SHAPE
    grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
    kw = {}

    def factory(slab=None, exchange=None):
        return CudaFieldSolver(MODEL, grid, boundary, precision=dtype, dt=DT, fused=True,
                               slab=slab, exchange=exchange, **kw)

    phi = field(shape, 1).astype(dtype)
    whole = factory()
    assert whole.plan_choice.form.name == "fused-3d"
    expect = run(whole, phi, STEPS + 1)
    pipelined = split == "pipelined"
    if pipelined:
        n = shape[0]
        split, build = [(0, n - 4), (n - 4, n)], factory
        factory = lambda slab, exchange: build(slab, _Pipelining(exchange))  # noqa: E731
    g = SlabGroup(factory, shape[0], split, bnd, FUSED_HALO)
    g.load(phi)
    g.advance(STEPS + 1)
    np.testing.assert_array_equal(g.state(), expect)
    for s in g.solvers:
        assert s.plan_choice.form.name == "fused-3d" and s.stages_per_step == 1
        assert f"on slab rows {s.slab.start}:{s.slab.stop}, halo 4, exchange " in s.plan_summary
    if pipelined:
        assert [s.exchange.starts for s in g.solvers] == [STEPS + 1, 0]
        assert g.solvers[0]._pipe[0] is not None and g.solvers[1]._pipe[0] is None


@pytest.mark.parametrize("ranks,cases", [(2, "3d:periodic:float64"), (3, "3d:fixed:float32")])
def test_fused_3d_on_mpi_ranks_equals_the_whole_grid(ranks, cases):
    from test_mpi_network import MPIEXEC

    env = dict(os.environ, NUMBA_NUM_THREADS="1", MPIR_CVAR_CH4_PROGRESS_THROTTLE="true",
               HYDRA_LAUNCHER="fork")
    if not SIM:  # every boundary and precision over the two rank counts
        cases = {2: "3d:periodic:float64,3d:mirror:float32,3d:fixed:float64",
                 3: "3d:fixed:float32,3d:mirror:float64,3d:periodic:float32"}[ranks]
    r = subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable,
                        str(HERE / "mpi" / "field_fused_slabs.py"), "--cases", cases],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    n = len(cases.split(","))
    assert f"checked {n} cases on {ranks} ranks, 0 failed" in r.stdout, r.stdout
    assert "plan 3d" in r.stdout and "fused-3d: fused: true on slab rows" in r.stdout


@pytest.mark.skipif(SIM, reason="the simulator records no CUDA Graphs")
def test_auto_runs_it_and_graph_replay_matches_launches():
    from simengine.field.cuda import graph as cgraph

    shape = (40, 50, 70)
    auto = solver(shape, "mirror", np.float64)
    assert auto.plan_choice.form.name == "stages"  # plans.MARCH3D_AUTO: off (measured)
    auto = _fused(shape, "mirror", np.float64)
    steps = 2 * cgraph.GRAPH_STEPS + 7
    phi = field(shape, 8)
    out = []
    for graphs in (False, True):
        s = _fused(shape, "mirror", np.float64)
        s.use_graphs = graphs
        out.append(run(s, phi, steps))
        assert s._graph_error is None
    np.testing.assert_array_equal(out[0], out[1])
    occ = auto.occupancy()
    assert occ["local_mem_per_thread"] == 0 and occ["blocks_per_sm"] >= 1, occ
