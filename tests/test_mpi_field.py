"""Field runs on MPI ranks give the one-process result bit for bit (``mpiexec -n 2|3``).

Like tests/test_mpi_network.py these fail, not skip, when MPI is missing.
"""
from __future__ import annotations

import os
import signal
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import run_cli
from test_mpi_network import MPIEXEC, mpirun, mpirun_many, rank_pids

HERE = Path(__file__).resolve().parent


@pytest.mark.parametrize("ranks,precision", [(2, "float64"), (3, "float32")])
def test_slab_solvers_over_mpi_equal_one_process(ranks, precision):
    """1D/2D/3D × periodic/mirror/fixed × the four kernels, uneven slabs, bit for bit; the
    rank-reduced observables (mass, F, min, max, S(k) length) within 1e-12."""
    import subprocess

    env = dict(os.environ, NUMBA_NUM_THREADS="1", MPIR_CVAR_CH4_PROGRESS_THROTTLE="true")
    r = subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable,
                        str(HERE / "mpi" / "field_slabs.py"), "--precision", precision],
                       capture_output=True, text=True, timeout=900, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"checked 40 cases on {ranks} ranks (cpu), 0 failed" in r.stdout


@pytest.mark.parametrize("ranks", [2, 3])
def test_coarsening_measures_over_mpi_equal_one_process(ranks):
    """The interface crossings (each slab with the next slab's first row) and the shell
    measures of slab solvers equal the gathered field's one-process values (1-D to 3-D,
    periodic and mirror, uneven slabs); ``--backend cuda`` runs the device slabs."""
    import subprocess

    env = dict(os.environ, NUMBA_NUM_THREADS="1", MPIR_CVAR_CH4_PROGRESS_THROTTLE="true")
    r = subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable,
                        str(HERE / "mpi" / "field_measures.py")],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"checked 5 cases on {ranks} ranks (cpu), 0 failed" in r.stdout


@pytest.mark.parametrize("ranks", [2, 3])
def test_slab_spectrum_transpose_over_mpi_gives_the_whole_spectrum(ranks):
    """The slab S(k)'s transpose between real ranks (pack, host transport through alltoall,
    the transform of axis 0): each rank's share is its columns of the whole field's spectrum
    (1-D to 3-D, periodic and mirror, uneven slabs). tests/mpi/field_spectrum.py --gpu runs the
    device forms (host and CUDA IPC transports) on a GPU machine."""
    import subprocess

    env = dict(os.environ, NUMBA_NUM_THREADS="1", MPIR_CVAR_CH4_PROGRESS_THROTTLE="true")
    r = subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable,
                        str(HERE / "mpi" / "field_spectrum.py")],
                       capture_output=True, text=True, timeout=300, env=env)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"checked 14 cases on {ranks} ranks, 0 failed" in r.stdout


FIELD = """kind: field
name: f
grid: {{shape: {shape}, spacing: 1.0}}
boundary: {{type: {boundary}{value}}}
model: {{mobility: 1.0, kappa: 1.0, potential: {{b: 1.0, u: 1.0}}}}
initial: {{type: noise, mean: {mean}, amplitude: 0.05, seed: 3}}
time: {{dt: 0.01, steps: {steps}}}
solver: {{kernel: {kernel}, backend: cpu, precision: float64}}
output: {{snapshot_every: {snap}, checkpoint_every: {ckpt}, observables_every: 10}}
"""


def scenario(tmp_path, shape="[37, 24]", boundary="periodic", kernel="texture", steps=60,
             snap=20, ckpt=20, mean=0.0):
    value = ", value: -0.3" if boundary == "fixed" else ""
    p = tmp_path / "f.yaml"
    p.write_text(FIELD.format(shape=shape, boundary=boundary, value=value, kernel=kernel,
                              steps=steps, snap=snap, ckpt=ckpt, mean=mean))
    return p


def same_output(a, b):
    with h5py.File(a) as fa, h5py.File(b) as fb:
        np.testing.assert_array_equal(fa["fields/step"][()], fb["fields/step"][()])
        np.testing.assert_array_equal(fa["fields/phi"][()], fb["fields/phi"][()])  # bitwise
        np.testing.assert_array_equal(fa["checkpoint/phi"][()], fb["checkpoint/phi"][()])
        np.testing.assert_array_equal(fa["observables/step"][()], fb["observables/step"][()])
        for k in ("mass", "free_energy", "phi_min", "phi_max", "length", "length_energy",
                  "interface_density", "length_interface", "length_shell"):
            np.testing.assert_allclose(fb[f"observables/{k}"][()], fa[f"observables/{k}"][()],
                                       rtol=1e-12, atol=1e-15, err_msg=k)
        # a root found by Brent's method to 1e-10 of half the box
        np.testing.assert_allclose(fb["observables/length_correlation"][()],
                                   fa["observables/length_correlation"][()], rtol=1e-8)
        assert np.isfinite(fa["observables/length_interface"][1:]).all()


CASES = [("[37, 24]", "periodic", "texture"), ("[23, 10]", "fixed", "shared"),
         ("[41]", "mirror", "global"), ("[9, 6, 5]", "periodic", "combined")]


def test_field_run_on_ranks_equals_one_process(tmp_path):
    """Every case on 2 and 3 ranks (one mpiexec launch per rank count for all cases) equals
    the one-process run (in this process) bit for bit."""
    from simengine.cli import main

    scens = []
    for i, (shape, boundary, kernel) in enumerate(CASES):
        d = tmp_path / f"case{i}"
        d.mkdir()
        scens.append(scenario(d, shape, boundary, kernel))
        assert main(["run", str(scens[-1]), "-o", str(d / "one.h5"), "-q"]) == 0, CASES[i]
    for n in (2, 3):
        res = mpirun_many(n, [["run", s, "-o", s.parent / f"r{n}.h5"] for s in scens],
                          tmp_path / f"ranks{n}")
        for case, scen, (rc, err) in zip(CASES, scens, res):
            assert rc == 0, (case, err)
            assert f"{n} MPI ranks" in err and f"{n} slabs" in err, (case, err)
            same_output(scen.parent / "one.h5", scen.parent / f"r{n}.h5")


def test_kill_two_ranks_then_resume_on_three(tmp_path):
    scen = scenario(tmp_path, "[96, 64]", "periodic", "texture", steps=3000, snap=200, ckpt=100)
    ref = tmp_path / "ref.h5"
    r = run_cli("run", scen, "-o", ref, "-q")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out.h5"
    proc = mpirun(2, "run", scen, "-o", out, popen=True)
    t = time.time()
    while time.time() - t < 300 and proc.poll() is None:
        try:
            with h5py.File(out, "r") as f:
                if "checkpoint/phi" in f and f["fields/step"][-1] >= 200:
                    break
        except (OSError, KeyError):
            pass
        time.sleep(0.1)
    assert proc.poll() is None, "the run ended before it could be killed"
    pids = rank_pids(proc)
    assert len(pids) == 2
    for p in pids:
        os.kill(p, signal.SIGKILL)
    proc.communicate(timeout=60)
    assert proc.returncode != 0
    r = mpirun(3, "run", scen, "-o", out, "--resume")
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stderr
    same_output(ref, out)


def test_sigterm_on_ranks_checkpoints_and_resumes_in_one_process(tmp_path):
    scen = scenario(tmp_path, "[96, 64]", "mirror", "texture", steps=12000, snap=500, ckpt=500)
    ref = tmp_path / "ref.h5"
    assert run_cli("run", scen, "-o", ref, "-q").returncode == 0
    out = tmp_path / "out.h5"
    proc = mpirun(2, "run", scen, "-o", out, popen=True)
    t = time.time()
    while time.time() - t < 300 and proc.poll() is None:
        if out.exists():
            break
        time.sleep(0.1)
    time.sleep(1.0)
    pids = rank_pids(proc)
    assert proc.poll() is None and len(pids) == 2
    os.kill(pids[0], signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted after" in err and "Traceback" not in err
    r = run_cli("run", scen, "-o", out, "--resume", "-q")
    assert r.returncode == 0, r.stderr
    same_output(ref, out)


def test_blow_up_on_ranks_stops_every_rank(tmp_path):
    scen = scenario(tmp_path, "[32, 16]", "periodic", "texture", steps=400, snap=100, ckpt=100)
    text = scen.read_text().replace("dt: 0.01", "dt: 5.0") + "\n"
    text = text.replace("time: {dt: 5.0, steps: 400}", "time: {dt: 5.0, steps: 400, "
                        "allow_unstable: true}")
    scen.write_text(text)
    r = mpirun(2, "run", scen, "-o", tmp_path / "b.h5", timeout=300)
    assert r.returncode == 1, r.stderr
    assert r.stderr.count("blew up") == 1, r.stderr


def test_too_many_ranks_for_the_grid_is_one_line(tmp_path):
    scen = scenario(tmp_path, "[5, 8]", "mirror", "texture")
    r = mpirun(3, "run", scen, "-o", tmp_path / "x.h5")
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("simengine")]
    assert len(lines) == 1 and "slab" in lines[0], r.stderr
    assert not (tmp_path / "x.h5").exists()
