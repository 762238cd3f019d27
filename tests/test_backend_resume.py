"""Checkpoint/resume through the CUDA backend: interrupted CUDA runs resume identically, and a
checkpoint written by one backend resumes on the other. Under the CUDA simulator (CI) the grids
are tiny; on a GPU machine the same tests run at real sizes."""
import signal
import subprocess
import sys
import time

import h5py
import numpy as np
import pytest
from numba import config, cuda

from conftest import run_cli

pytestmark = pytest.mark.skipif(not cuda.is_available(), reason="numba.cuda unavailable")
REAL_GPU = not config.ENABLE_CUDASIM

SCENARIO = """\
kind: field
name: backend-resume
grid: {shape: SHAPE, spacing: 1.0}
boundary: {type: BOUNDARY}
model: {mobility: 1.0, kappa: 1.0, potential: {b: 1.0, u: 1.0}}
initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 5}
time: {dt: 0.01, steps: STEPS}
solver: {integrator: rk2, kernel: KERNEL, backend: cuda, precision: float64, block: BLOCK}
output: {snapshot_every: EVERY, checkpoint_every: EVERY, observables_every: EVERY}
"""


def scenario(tmp_path, steps, every, kernel="global", boundary="mirror"):
    shape, block = ("[192, 160]", "[16, 16]") if REAL_GPU else ("[12, 10]", "[8, 8]")
    p = tmp_path / "b.yaml"
    p.write_text(SCENARIO.replace("SHAPE", shape).replace("BLOCK", block)
                 .replace("STEPS", str(steps)).replace("EVERY", str(every))
                 .replace("KERNEL", kernel).replace("BOUNDARY", boundary))
    return p


def final(out):
    with h5py.File(out, "r") as f:
        return (f["checkpoint/phi"][()], int(f["checkpoint/phi"].attrs["step"]),
                f["observables/step"][()], f["fields/step"][()])


@pytest.mark.parametrize("kernel", ["global", "combined"])
def test_checkpoint_moves_between_backends(tmp_path, kernel):
    scen = scenario(tmp_path, 4, 2, kernel=kernel)
    both = tmp_path / "both.h5"
    r = run_cli("run", scen, "-o", both, "-q", "--set", "time.steps=2")          # CUDA: steps 0..2
    assert r.returncode == 0, r.stderr
    r = run_cli("run", scen, "-o", both, "-q", "--resume", "--set", "solver.backend=cpu")  # CPU: 2..4
    assert r.returncode == 0, r.stderr
    cpu = tmp_path / "cpu.h5"
    r = run_cli("run", scen, "-o", cpu, "-q", "--set", "solver.backend=cpu")
    assert r.returncode == 0, r.stderr
    a, b = final(both), final(cpu)
    assert a[1] == b[1] == 4
    np.testing.assert_allclose(a[0], b[0], rtol=0, atol=1e-12)
    np.testing.assert_array_equal(a[2], b[2])
    np.testing.assert_array_equal(a[3], b[3])


def test_interrupted_cuda_run_resumes_identically(tmp_path):
    steps, every = (20000, 1000) if REAL_GPU else (24, 4)
    scen = scenario(tmp_path, steps, every)
    ref = tmp_path / "ref.h5"
    r = run_cli("run", scen, "-o", ref, "-q")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "run.h5"
    proc = subprocess.Popen([sys.executable, "-m", "simengine", "run", str(scen), "-o", str(out),
                             "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while time.time() - t0 < 600 and proc.poll() is None:
        try:
            with h5py.File(out, "r") as f:
                if int(f["checkpoint/phi"].attrs["step"]) >= every:
                    break
        except (OSError, KeyError):
            pass
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be interrupted"
    proc.send_signal(signal.SIGKILL if REAL_GPU else signal.SIGINT)
    proc.communicate(timeout=600)
    r = run_cli("run", scen, "-o", out, "-q", "--resume")
    assert r.returncode == 0, r.stderr
    a, b = final(out), final(ref)
    np.testing.assert_array_equal(a[0], b[0])  # bit for bit on the same backend
    for x, y in zip(a[1:], b[1:]):
        np.testing.assert_array_equal(x, y)
