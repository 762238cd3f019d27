"""The fused RK2 forms on slabs (4-row halo, one exchange per step): K slabs are bit-identical
to the whole-grid fused step — in one process (``SlabGroup``, and the CUDA-aware MPI exchanger's
device path through a stand-in communicator) and on 2 and 3 MPI ranks
(``tests/mpi/field_fused_slabs.py``); the registry gives slabs the form and halo depth of their
grid; the start-up summary names the slab, the halo and the exchange; the CUDA-aware query.

Simulator (CI): 16×16 grids, 2 steps, each (boundary, precision) pair once, spread over the
two forms. Real GPU: larger ragged grids, 50 steps (same kernel: bitwise)."""
from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():  # pragma: no cover
    pytest.skip("no CUDA device and not the simulator", allow_module_level=True)

from field_cuda_common import DT, MODEL, SIM  # noqa: E402

from simengine.field import plans  # noqa: E402
from simengine.field.cuda_solver import CudaFieldSolver  # noqa: E402
from simengine.field.decomposition import FUSED_HALO, SlabGroup, make_slabs  # noqa: E402
from simengine.field.distributed import MPIHaloExchange  # noqa: E402
from simengine.field.model import Boundary, Grid  # noqa: E402
from simengine.parallel import cuda_aware  # noqa: E402

HERE = Path(__file__).resolve().parent

if SIM:
    # frame: 8×8 tiles (2 blocks whole, one per slab); warp: 8-row chunks
    SHAPES, STEPS = {"frame": (12, 8), "warp": (16, 16)}, 2
    THREES = {"frame": [(0, 4), (4, 8), (8, 12)],
              "warp": [(0, 4), (4, 12), (12, 16)]}  # uneven, a slab of exactly the halo depth
else:  # ragged grids; the frame form's at most 2^18 cells (fused: true takes the warp above)
    SHAPES, STEPS = {"frame": (203, 131), "warp": (403, 1001)}, 50
    THREES = {"frame": 3, "warp": 3}
THREE = "three"

#: (form, boundary, precision, split): every (boundary, precision) pair once, each form every
#: boundary and both precisions; 1 slab = a periodic slab exchanging with itself; "device" = one
#: periodic slab through MPIHaloExchange's CUDA-aware path (a stand-in communicator);
#: "pipelined" = the exchange started behind the edge strips (cuda/fused_slab.py) on the slab
#: that owns enough rows, exchange-then-step on the other
CASES = [("frame", "periodic", np.float64, THREE), ("frame", "mirror", np.float32, 2),
         ("frame", "fixed", np.float64, THREE), ("warp", "periodic", np.float32, "device"),
         ("warp", "mirror", np.float64, THREE), ("warp", "fixed", np.float32, 2),
         ("warp", "fixed", np.float64, "pipelined")]
if not SIM:
    CASES += [("frame", "periodic", np.float32, 1), ("warp", "fixed", np.float64, THREE)]


def _factory(form, bnd, dtype, monkeypatch):
    if form == "warp":  # the warp form above the (lowered) size cap; 8-row chunks (simulator)
        monkeypatch.setattr(plans, "FUSED_SMALL_CELLS", 16)
    grid, boundary = Grid(SHAPES[form], 0.9), Boundary(bnd, 0.3)
    kw = dict(march=8) if (form == "warp" and SIM) else {}

    def factory(slab=None, exchange=None):
        return CudaFieldSolver(MODEL, grid, boundary, precision=dtype, dt=DT, fused=True,
                               slab=slab, exchange=exchange, **kw)

    return factory


class _Pipelining:
    """An in-process exchange offering ``start(array, ready)`` / ``finish``, as the peer
    exchange does: the slab's step runs as edge strips + interior (cuda/fused_slab.py)."""

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


class _SelfComm:
    """The part of an MPI communicator a one-rank periodic exchange uses: ``Sendrecv`` to and
    from rank 0 copies the sent device rows into the receive buffer (device to device)."""

    class MPI:
        PROC_NULL = -1

    def __init__(self):
        self.comm = self
        self.sent = 0

    def Sendrecv(self, sendbuf, dest, sendtag, recvbuf, source, recvtag):
        assert dest == source == 0 and sendtag == recvtag
        for buf in (sendbuf, recvbuf):  # device views, no host copy
            assert hasattr(buf, "copy_to_host") and not isinstance(buf, np.ndarray)
        recvbuf.copy_to_device(sendbuf)
        self.sent += 1


@pytest.mark.parametrize("form,bnd,dtype,split", CASES, ids=str)
def test_fused_slabs_equal_the_whole_grid(form, bnd, dtype, split, monkeypatch):
    factory = _factory(form, bnd, dtype, monkeypatch)
    shape = SHAPES[form]
    phi = np.random.default_rng(1).uniform(-1, 1, shape).astype(dtype)
    whole = factory()
    assert whole.plan_choice.form.name == "fused-" + form
    whole.load(phi)
    whole.advance(STEPS)
    expect = whole.state()
    if split == "device":
        slab = make_slabs(shape[0], 1, bnd, FUSED_HALO)[0]
        comm = _SelfComm()
        ex = MPIHaloExchange(comm, slab, device=True)
        s = factory(slab, ex)
        ex.bind(s)
        s.load(phi)
        s.advance(STEPS)
        got, solvers = s.state(), [s]
        assert comm.sent == 2 * STEPS  # one exchange (two Sendrecv) per step
    else:
        pipelined = split == "pipelined"
        if pipelined:
            n = shape[0]
            split, build = [(0, n - 4), (n - 4, n)], factory
            factory = lambda slab, exchange: build(slab, _Pipelining(exchange))  # noqa: E731
        split = THREES[form] if split == THREE else split
        g = SlabGroup(factory, shape[0], split, bnd, FUSED_HALO)
        g.load(phi)
        g.advance(STEPS)
        got, solvers = g.state(), g.solvers
        if pipelined:
            assert [s.exchange.starts for s in solvers] == [STEPS, 0]
            assert solvers[0]._pipe[0] is not None and solvers[1]._pipe[0] is None
            assert "overlapped with the interior" in solvers[0].plan_summary
    np.testing.assert_array_equal(got, expect)
    for s in solvers:
        assert s.plan_choice.form.name == "fused-" + form and s.stages_per_step == 1
        want = f"on slab rows {s.slab.start}:{s.slab.stop}, halo 4, exchange "
        assert want in s.plan_summary, s.plan_summary
    if split == "device":
        assert solvers[0].plan_summary.endswith("exchange mpi-device")


@pytest.mark.parametrize("ranks,cases", [
    (2, "frame:fixed:float64,warp:periodic:float32"),
    (3, "warp:mirror:float64,frame:mirror:float32")])
def test_fused_slabs_on_mpi_ranks_equal_the_whole_grid(ranks, cases):
    import os

    from test_mpi_network import MPIEXEC

    env = dict(os.environ, NUMBA_NUM_THREADS="1", MPIR_CVAR_CH4_PROGRESS_THROTTLE="true",
               HYDRA_LAUNCHER="fork")
    args = [] if not SIM else ["--cases", cases]
    r = subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable,
                        str(HERE / "mpi" / "field_fused_slabs.py"), *args],
                       capture_output=True, text=True, timeout=600, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    n = len(cases.split(",")) if SIM else 12
    assert f"checked {n} cases on {ranks} ranks, 0 failed" in r.stdout, r.stdout


def test_slabs_get_the_form_and_depth_of_their_grid():
    """Same grid → same form: a slab's size rule looks at the whole grid; the slab depth is the
    form's declared halo (4 fused, 2 stages); a slab built with 2 rows refuses fused: true."""
    big = dict(ndim=2, shape3=(1, 8196, 16384), dtype="float64", boundary=0)
    # 512² on 2 slabs: each slab has 2^17 cells, the grid 2^18: the frame form, as on one GPU
    small = dict(ndim=2, shape3=(1, 264, 512), dtype="float64", boundary=0,
                 grid_cells=512 * 512, write_rows=(4, 260))
    assert plans.choose(plans.Case(**big, whole=False, slab_halo=4,
                                   grid_cells=16384 ** 2)).form.name == "fused-warp"
    assert plans.choose(plans.Case(**small, whole=False, slab_halo=4)).form.name == "fused-frame"
    c = plans.choose(plans.Case(**small, whole=False, slab_halo=2))
    assert c.form is plans.STAGES and c.reason == "slab (halo 2): unfused"
    with pytest.raises(plans.PlanError, match="needs a slab halo of 4 rows"):
        plans.choose(plans.Case(**small, whole=False, slab_halo=2), True)
    for form in plans.FORMS:
        assert form.halo == (FUSED_HALO if form.fused else 2)
    gpu = dict(simulator=False)
    assert plans.slab_depth((16384, 16384), 0, **gpu) == 4            # fused-warp
    assert plans.slab_depth((200, 200), 1, precision="float32", **gpu) == 4  # fused-frame
    assert plans.slab_depth((512, 512, 512), 0, **gpu) == 2           # 3-D: stages
    assert plans.slab_depth((16384, 16384), 0, fused=False, **gpu) == 2
    assert plans.slab_depth((16384, 16384), 0, block=(32, 4), **gpu) == 2  # launch hints
    assert plans.slab_depth((16384, 16384), 0, kernel="shared", **gpu) == 2
    assert plans.slab_depth((64, 64), 0, fused=True, simulator=True) == 4
    assert plans.slab_depth((64, 64, 64), 0, fused=True, simulator=True) == 2  # refused later
    assert plans.slab_depth((200, 200), 0, simulator=True) == 2       # auto: unfused there


def test_fused_true_without_a_fused_form_is_one_line():
    """No silent downgrade: fused: true on slabs of a 3-D grid is refused with one line."""
    slab = make_slabs(8, 2, "periodic")[0]
    with pytest.raises(plans.PlanError, match="no fused form runs 3-D") as err:
        CudaFieldSolver(MODEL, Grid((8, 4, 4), 0.9), Boundary("periodic"), dt=DT, fused=True,
                        slab=slab)
    assert "\n" not in str(err.value)
    with pytest.raises(ValueError, match="every slab needs at least 4"):
        make_slabs(14, 4, "periodic", FUSED_HALO)  # 3-4 rows per slab, halo 4


def test_cuda_aware_query(monkeypatch):
    """The library's answer decides; SIMENGINE_CUDA_AWARE_MPI=0 turns it off; no answer = no."""
    class Yes:
        @staticmethod
        def Query_cuda_support():
            return True

    class Silent:
        pass

    monkeypatch.delenv(cuda_aware.ENV, raising=False)
    assert cuda_aware.query(Yes) == (True, "MPI.Query_cuda_support() = True")
    monkeypatch.setattr(cuda_aware, "_mpix_query", lambda: 0)
    assert cuda_aware.query(Silent) == (False, "MPIX_Query_cuda_support() = 0")
    monkeypatch.setattr(cuda_aware, "_mpix_query", lambda: None)
    ok, how = cuda_aware.query(Silent)
    assert not ok and "no answer" in how
    monkeypatch.setenv(cuda_aware.ENV, "1")
    assert cuda_aware.query(Silent)[0]
    monkeypatch.setenv(cuda_aware.ENV, "0")
    assert cuda_aware.query(Yes) == (False, f"{cuda_aware.ENV}=0")

    class TwoRanks:  # one rank says yes, the other no: every rank stays on the host path
        MPI = Yes

        @staticmethod
        def allreduce(value, op):
            assert op == "and"
            return False

    monkeypatch.delenv(cuda_aware.ENV)
    ok, how = cuda_aware.cuda_aware(TwoRanks)
    assert not ok and "not on every rank" in how
