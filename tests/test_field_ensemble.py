"""Ensembles (simengine.field.ensemble, simengine.field.cuda.ensemble, simengine.control.ensemble_run,
simengine.sweep_ensemble): every member bit for bit equal to its one-member run of the same kernel
(CPU, and CUDA under the simulator or on a GPU), members independent, per-member reductions equal
to the single solver's, and `simengine sweep --ensemble` writing the same output files as single
runs, including after a SIGKILL and after a crash between the members' checkpoint writes."""
from __future__ import annotations

import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest

from simengine.cli import main
from simengine.field.ensemble import EnsembleSolver
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.backends import make_solver

MODEL = CahnHilliard(0.7, 1.3, (0.1, -1.0, 0.2, 1.0))
DT = 1e-3
BOUNDARIES = ("periodic", "mirror", "fixed")


def _fields(members, shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, (members,) + tuple(shape))


def _compare_with_singles(backend, shape, bnd, precision, members=2, steps=2, block=None,
                          reductions=True, **hints):
    """Ensemble vs one single solver per member (the options the ensemble names): equal bits."""
    grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
    phis = _fields(members, shape).astype(precision)
    ens = EnsembleSolver(MODEL, grid, boundary, members, backend=backend, precision=precision,
                         dt=DT, block=block, **hints)
    ens.load(phis)
    ens.advance(steps)
    got = ens.state()
    red = ens.reductions() if reductions else None
    for m in range(members):
        single = make_solver(MODEL, grid, boundary, precision=precision, dt=DT,
                             **ens.single_options)
        assert single.name == ens.member_name
        single.load(phis[m])
        single.advance(steps)
        np.testing.assert_array_equal(got[m], single.state())
        np.testing.assert_array_equal(ens.state_member(m), single.state())
        if reductions:
            assert red[m] == single.reductions()
            assert ens.member(m).reductions() == red[m]
    return ens


# ----------------------------------------------------------------------------- CPU
@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("bnd", BOUNDARIES)
@pytest.mark.parametrize("shape", [(23,), (11, 9), (6, 7, 5)])
def test_cpu_members_equal_single_runs(shape, bnd, precision):
    _compare_with_singles("cpu", shape, bnd, precision, members=3, steps=3)


@pytest.mark.parametrize("kernel", ["global"])
def test_cpu_other_kernels(kernel):
    _compare_with_singles("cpu", (10, 12), "mirror", "float64", members=2, kernel=kernel)


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_members_are_independent(backend):
    shape = (12, 10)
    grid, boundary = Grid(shape, 1.0), Boundary("periodic", 0.0)
    phis = _fields(3, shape)
    kw = dict(backend=backend, dt=DT, block=[8, 8] if backend == "cuda" else None)
    a = EnsembleSolver(MODEL, grid, boundary, 3, **kw)
    a.load(phis)
    a.advance(2)
    changed = phis.copy()
    changed[1] = _fields(1, shape, seed=7)[0]
    b = EnsembleSolver(MODEL, grid, boundary, 3, **kw)
    b.load(changed)
    b.advance(2)
    sa, sb = a.state(), b.state()
    np.testing.assert_array_equal(sa[0], sb[0])
    np.testing.assert_array_equal(sa[2], sb[2])
    assert not np.array_equal(sa[1], sb[1])
    # a member loaded alone after the others were loaded: same as loading all at once
    c = EnsembleSolver(MODEL, grid, boundary, 3, **kw)
    c.load(phis)
    c.load_member(1, changed[1])
    c.advance(2)
    np.testing.assert_array_equal(c.state(), sb)


def test_rejected_options():
    grid, boundary = Grid((8, 8), 1.0), Boundary("periodic", 0.0)
    with pytest.raises(ValueError, match="at least one member"):
        EnsembleSolver(MODEL, grid, boundary, 0, backend="cpu", dt=DT)
    ens = EnsembleSolver(MODEL, grid, boundary, 2, backend="cpu", dt=DT)
    with pytest.raises(ValueError, match="expected"):
        ens.load(np.zeros((3, 8, 8)))
    with pytest.raises(IndexError):
        ens.state_member(2)
    with pytest.raises(RuntimeError, match="together"):
        ens.member(0).advance(1)
    with pytest.raises(ValueError, match="direct kernels"):
        EnsembleSolver(MODEL, grid, boundary, 2, backend="cuda", kernel="shared", dt=DT)
    with pytest.raises(ValueError, match="marching"):
        EnsembleSolver(MODEL, grid, boundary, 2, backend="cuda", dt=DT, march=8)


# ----------------------------------------------------------------------------- CUDA
cuda = pytest.importorskip("numba.cuda")
CUDA_OK = cuda.is_available()
needs_cuda = pytest.mark.skipif(not CUDA_OK, reason="no CUDA device and not the simulator")


@needs_cuda
@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("bnd", BOUNDARIES)
def test_cuda_2d_members_equal_single_runs(bnd, precision):
    # float64: the direct kernel, 4 cells per thread; float32: the pair kernel (the defaults)
    ens = _compare_with_singles("cuda", (12, 10), bnd, precision, steps=1, block=[8, 8],
                                reductions=bnd == "fixed")
    assert ens.single_options["vec"] == (2 if precision == "float32" else 0)


@needs_cuda
@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("bnd", BOUNDARIES)
def test_cuda_1d_members_equal_single_runs(bnd, precision):
    _compare_with_singles("cuda", (21,), bnd, precision, steps=2, block=[8],
                          reductions=precision == "float64")


@needs_cuda
@pytest.mark.parametrize("bnd,precision", [("fixed", "float64"), ("periodic", "float32")])
def test_cuda_3d_members_equal_direct_single_runs(bnd, precision):
    ens = _compare_with_singles("cuda", (6, 7, 5), bnd, precision, steps=1, block=[8, 4, 2],
                                reductions=bnd == "fixed")
    assert ens.single_options["march"] == 0 and ens.single_options["cells_per_thread"] == 1


@needs_cuda
def test_cuda_2d_scalar_form_and_odd_rows():
    # explicit cells per thread (scalar direct kernel) in fp32; odd rows -> scalar fallback
    _compare_with_singles("cuda", (10, 12), "mirror", "float32", steps=1, block=[8, 8],
                          reductions=False, cells_per_thread=2)
    ens = _compare_with_singles("cuda", (8, 9), "periodic", "float32", steps=1, block=[8, 8],
                                reductions=False)
    assert ens.single_options["vec"] == 0


# ----------------------------------------------------------------------------- sweeps
FIELD = """\
kind: field
name: ens-sweep
grid: {shape: SHAPE}
boundary: {type: BND}
model: {mobility: 1.0, kappa: 1.0}
initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}
time: {dt: 0.02, steps: STEPS}
solver: {kernel: texture, backend: BACKEND, precision: float64BLOCK}
output: {checkpoint_every: EVERY, observables_every: EVERY, snapshot_every: SNAP}
sweep:
  initial.mean: [0.0, -0.3]
  initial.seed: [1, 2]
"""


def scenario(tmp_path, steps=40, every=10, snap=20, backend="cpu", shape="[16, 12]",
             bnd="mirror", block="", extra=""):
    p = tmp_path / "ens.yaml"
    p.write_text(FIELD.replace("STEPS", str(steps)).replace("EVERY", str(every))
                 .replace("SNAP", str(snap)).replace("BACKEND", backend).replace("SHAPE", shape)
                 .replace("BND", bnd).replace("BLOCK", block) + extra)
    return p


NAMES = ["mean=0.0_seed=1", "mean=0.0_seed=2", "mean=-0.3_seed=1", "mean=-0.3_seed=2"]


def assert_same_outputs(a_dir, b_dir, names=NAMES):
    """Same datasets, same values (all but wall times), same root attributes but 'created'."""
    for name in names:
        with h5py.File(a_dir / f"{name}.h5", "r") as a, h5py.File(b_dir / f"{name}.h5", "r") as b:
            na, nb = [], []
            a.visit(na.append)
            b.visit(nb.append)
            assert na == nb
            assert "fields/phi" in na and "observables/free_energy" in na
            # run-specific: wall times, the run id and the part digests (each part carries its
            # run's id, so two runs of the same numbers hash differently)
            for k in na:
                if isinstance(a[k], h5py.Dataset) and not k.endswith("wall_time") \
                        and k != "integrity/sha256":
                    np.testing.assert_array_equal(a[k][()], b[k][()], err_msg=f"{name}: {k}")
            for k in set(a.attrs) | set(b.attrs):
                if k not in ("created", "run_id"):
                    assert np.array_equal(np.asarray(a.attrs[k]), np.asarray(b.attrs[k])), k
            assert a.attrs["complete"]


def sweep(capsys, *args):
    rc = main(["sweep", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


def test_sweep_ensemble_equals_single_runs_and_skips_when_done(tmp_path, capsys):
    p = scenario(tmp_path)
    ens, single = tmp_path / "ens", tmp_path / "single"
    rc, _, err = sweep(capsys, p, "-d", ens, "--ensemble")
    assert rc == 0, err
    assert "4 tasks in 1 ensemble(s), 0 run singly" in err
    assert sweep(capsys, p, "-d", single, "-q")[0] == 0
    assert_same_outputs(ens, single)
    rc, _, err = sweep(capsys, p, "-d", ens, "--ensemble")
    assert rc == 0 and "4 already done" in err
    # the summary reads the ensemble outputs like any others
    assert sweep(capsys, p, "-d", ens, "--collect")[0] == 0
    rows = (ens / "ens-sweep-summary.csv").read_text().splitlines()
    assert len(rows) == 5 and all(",done," in r for r in rows[1:])


def test_sweep_block_key_caps_members_and_other_tasks_run_singly(tmp_path, capsys):
    # two grid sizes x 3 seeds: each size is its own group; at most 2 members per ensemble
    p = scenario(tmp_path, steps=20, shape="[24]")
    text = p.read_text().split("sweep:")[0]
    p.write_text(text + "sweep:\n  grid.shape: [[24], [20]]\n  initial.seed: [1, 2, 3]\n"
                 "  ensemble: 2\n")
    ens = tmp_path / "ens"
    rc, _, err = sweep(capsys, p, "-d", ens)
    assert rc == 0, err
    assert "4 tasks in 2 ensemble(s), 2 run singly" in err
    single = tmp_path / "single"
    assert sweep(capsys, p, "-d", single, "-q", "--ensemble", "false")[0] == 0
    names = [f"shape={n}_seed={s}" for n in (24, 20) for s in (1, 2, 3)]
    assert_same_outputs(ens, single, names)
    bad = tmp_path / "bad.yaml"
    bad.write_text(p.read_text().replace("ensemble: 2", "ensemble: 1"))
    rc, _, err = sweep(capsys, bad, "-d", tmp_path / "x")
    assert rc == 2 and "sweep.ensemble: expected true, false or a number of members >= 2" in err


def _checkpoint_step(path):
    try:
        with h5py.File(path, "r") as f:
            return int(f["checkpoint/phi"].attrs["step"])
    except (OSError, KeyError):
        return -1


def test_sigkilled_ensemble_sweep_resumes_to_the_single_runs_result(tmp_path, capsys):
    p = scenario(tmp_path, steps=1000, every=20, snap=500)
    d = tmp_path / "ens"
    proc = subprocess.Popen([sys.executable, "-m", "simengine", "sweep", str(p), "-d", str(d),
                             "-q", "--ensemble"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.time()
    first = d / f"{NAMES[0]}.h5"
    while _checkpoint_step(first) < 50:
        assert proc.poll() is None, "the sweep finished before it could be killed"
        assert time.time() - t0 < 300
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    steps = [_checkpoint_step(d / f"{n}.h5") for n in NAMES]
    assert 50 <= max(steps) < 1000
    rc, _, err = sweep(capsys, p, "-d", d, "--ensemble")
    assert rc == 0, err
    assert "resuming" in err
    single = tmp_path / "single"
    assert sweep(capsys, p, "-d", single, "-q")[0] == 0
    assert_same_outputs(d, single)


class Crash(BaseException):
    """Stands for the process dying at an exact point (no handler runs)."""


def test_members_with_checkpoints_at_different_steps_resume_in_sub_ensembles(tmp_path, capsys,
                                                                            monkeypatch):
    from simengine.io.field_output import FieldOutput

    p = scenario(tmp_path, steps=40, every=10)
    d = tmp_path / "ens"
    real = FieldOutput.write
    calls = {"n": 0}

    def write(self, complete=False):
        # the 4 members write at steps 0, 10, 20, ...: die after 2 of the 4 writes of step 20
        if self.ckpt is not None and self.ckpt[0] == 20:
            calls["n"] += 1
            if calls["n"] == 3:
                raise Crash()
        return real(self, complete)

    monkeypatch.setattr(FieldOutput, "write", write)
    with pytest.raises(Crash):
        main(["sweep", str(p), "-d", str(d), "-q", "--ensemble"])
    monkeypatch.setattr(FieldOutput, "write", real)
    capsys.readouterr()
    assert [_checkpoint_step(d / f"{n}.h5") for n in NAMES] == [20, 20, 10, 10]
    rc, _, err = sweep(capsys, p, "-d", d, "--ensemble")
    assert rc == 0, err
    assert "members resume from 2 different checkpoint steps (10, 20)" in err
    single = tmp_path / "single"
    assert sweep(capsys, p, "-d", single, "-q")[0] == 0
    assert_same_outputs(d, single)


@needs_cuda
def test_cuda_sweep_ensemble_equals_single_runs(tmp_path, capsys):
    p = scenario(tmp_path, steps=2, every=2, snap=2, backend="cuda", shape="[12, 10]",
                 bnd="fixed", block=", block: [8, 8]")
    text = p.read_text().replace("initial.mean: [0.0, -0.3]\n", "")
    p.write_text(text)
    ens, single = tmp_path / "ens", tmp_path / "single"
    rc, _, err = sweep(capsys, p, "-d", ens, "--ensemble")
    assert rc == 0, err
    assert "2 tasks in 1 ensemble(s)" in err
    assert sweep(capsys, p, "-d", single, "-q")[0] == 0
    assert_same_outputs(ens, single, ["seed=1", "seed=2"])


def test_python_api_run_ensemble(tmp_path):
    import simengine

    body = {"kind": "field", "name": "api-ens", "grid": {"shape": [10, 12]},
            "time": {"dt": 0.02, "steps": 6}, "solver": {"backend": "cpu"},
            "output": {"observables_every": 3}}
    scs = [dict(body, initial={"type": "noise", "seed": s}) for s in (1, 2)]
    outs = simengine.run_ensemble(scs, [tmp_path / "a.h5", tmp_path / "b.h5"])
    for sc, out in zip(scs, outs):
        single = simengine.run(sc, tmp_path / "single.h5", overwrite=True)
        a, b = simengine.open(out), simengine.open(single)
        np.testing.assert_array_equal(a.final_field, b.final_field)
        np.testing.assert_array_equal(a.observables["free_energy"], b.observables["free_energy"])
    with pytest.raises(simengine.errors.UserError, match="cannot share an ensemble"):
        simengine.run_ensemble([body, dict(body, time={"dt": 0.01, "steps": 6})],
                               [tmp_path / "c.h5", tmp_path / "d.h5"])


def _graph_cases():
    from simengine.field.cuda.config import SIMULATOR

    cases = [((12, 10), "float64"), ((12, 10), "float32"), ((6, 7, 5), "float64")]
    return cases[:1] if SIMULATOR else cases


@needs_cuda
@pytest.mark.parametrize("shape,precision", _graph_cases())
def test_cuda_many_steps_per_call(shape, precision):
    # on a GPU: CUDA Graphs of GRAPH_STEPS steps plus a remainder, against single runs stepping
    # stage by stage; under the simulator graphs are not used (a few steps)
    from simengine.field.cuda import graph as cgraph
    from simengine.field.cuda.config import SIMULATOR

    steps = 1 if SIMULATOR else 2 * cgraph.GRAPH_STEPS + 3
    block = [8, 8] if len(shape) == 2 else [8, 4, 2]
    grid, boundary = Grid(shape, 0.9), Boundary("periodic", 0.0)
    phis = _fields(2, shape).astype(precision) * 0.1
    ens = EnsembleSolver(MODEL, grid, boundary, 2, backend="cuda", precision=precision, dt=DT,
                         block=block)
    ens.load(phis)
    ens.advance(steps)
    assert ens._impl._graph_error is None
    assert bool(ens._impl._graphs) == (not SIMULATOR)
    got = ens.state()
    for m in range(2):
        single = make_solver(MODEL, grid, boundary, precision=precision, dt=DT,
                             **ens.single_options)
        single.use_graphs = False
        single.load(phis[m])
        single.advance(steps)
        np.testing.assert_array_equal(got[m], single.state())
