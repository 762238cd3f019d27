"""Kill a running `simengine run` (SIGKILL, SIGINT) and resume: the result equals an uninterrupted run."""
import os
import signal
import subprocess
import sys
import textwrap
import time

import h5py
import numpy as np
import pytest

from conftest import run_cli
from simengine.errors import OutputError
from simengine.io.durable import tmp_name, write_atomic

SCENARIO = """\
kind: field
name: resume-test
grid: {shape: [96, 96], spacing: 1.0}
boundary: {type: mirror}
model: {mobility: 1.0, kappa: 1.0, potential: {b: 1.0, u: 1.0}}
initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 7}
time: {dt: 0.02, steps: STEPS}
solver: {integrator: rk2, kernel: texture, backend: cpu, precision: float64}
output: {snapshot_every: 1000, checkpoint_every: 500, observables_every: 250}
"""


def scenario(tmp_path, steps):
    p = tmp_path / "resume.yaml"
    p.write_text(SCENARIO.replace("STEPS", str(steps)))
    return p


def read_all(path):
    with h5py.File(path, "r") as f:
        out = {k: f[k][()] for k in ("fields/phi", "fields/step", "fields/time",
                                     "observables/step", "observables/time", "observables/mass",
                                     "observables/free_energy", "observables/length",
                                     "checkpoint/phi")}
        out["ckstep"] = int(f["checkpoint/phi"].attrs["step"])
        out["complete"] = bool(f.attrs["complete"])
    return out


def checkpoint_step(path):
    try:
        with h5py.File(path, "r") as f:
            return int(f["checkpoint/phi"].attrs["step"])
    except (OSError, KeyError):
        return -1


def assert_same_run(a, b):
    for k in ("fields/step", "observables/step"):
        np.testing.assert_array_equal(a[k], b[k])
        assert len(np.unique(a[k])) == len(a[k])  # no duplicated steps
    for k in a:
        if isinstance(a[k], np.ndarray):
            np.testing.assert_array_equal(a[k], b[k], err_msg=k)  # bit for bit
    assert a["ckstep"] == b["ckstep"] and a["complete"] and b["complete"]


def start_run(scen, out):
    return subprocess.Popen([sys.executable, "-m", "simengine", "run", str(scen), "-o", str(out),
                             "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)


def wait_for_checkpoint(proc, out, at_least, timeout=300):
    t0 = time.time()
    while time.time() - t0 < timeout:
        if checkpoint_step(out) >= at_least:
            return True
        if proc.poll() is not None:
            return False
        time.sleep(0.005)
    raise AssertionError("no checkpoint appeared in time")


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    scen = scenario(d, 12000)
    out = d / "ref.h5"
    r = run_cli("run", scen, "-o", out, "--quiet")
    assert r.returncode == 0, r.stderr
    return scen, read_all(out)


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_kill_and_resume_equals_uninterrupted(tmp_path, reference, sig):
    scen, ref = reference
    out = tmp_path / "run.h5"
    proc = start_run(scen, out)
    assert wait_for_checkpoint(proc, out, 1000), "the run finished before it could be interrupted"
    proc.send_signal(sig)
    _, err = proc.communicate(timeout=120)
    if sig == signal.SIGINT:
        assert proc.returncode == 130, err
        assert "checkpoint written" in err
    else:
        assert proc.returncode == -signal.SIGKILL
    partial = checkpoint_step(out)
    assert 1000 <= partial < 12000
    r = run_cli("run", scen, "-o", out, "--resume", "--quiet")
    assert r.returncode == 0, r.stderr
    assert_same_run(read_all(out), ref)
    # resuming a finished run says so and exits 0
    r = run_cli("run", scen, "-o", out, "--resume")
    assert r.returncode == 0 and "already complete" in r.stderr


def test_repeated_random_kills_never_corrupt(tmp_path, reference):
    scen, ref = reference
    out = tmp_path / "run.h5"
    rng = np.random.default_rng(3)
    for attempt in range(4):
        proc = start_run(scen, out) if attempt == 0 else subprocess.Popen(
            [sys.executable, "-m", "simengine", "run", str(scen), "-o", str(out), "--resume",
             "--quiet"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        time.sleep(rng.uniform(1.5, 3.0))
        proc.kill()
        proc.communicate()
        if out.exists():  # whatever the moment of the kill: a complete, readable file
            with h5py.File(out, "r") as f:
                assert "checkpoint/phi" in f
    r = run_cli("run", scen, "-o", out, "--resume", "--quiet")
    assert r.returncode == 0, r.stderr
    assert_same_run(read_all(out), ref)


def test_resume_without_output_starts_from_scratch(tmp_path):
    scen = scenario(tmp_path, 600)
    out = tmp_path / "fresh.h5"
    r = run_cli("run", scen, "-o", out, "--resume")
    assert r.returncode == 0, r.stderr
    assert "starting from the beginning" in r.stderr
    assert read_all(out)["ckstep"] == 600


def test_existing_output_needs_resume_or_overwrite(tmp_path):
    scen = scenario(tmp_path, 100)
    out = tmp_path / "x.h5"
    assert run_cli("run", scen, "-o", out, "-q").returncode == 0
    r = run_cli("run", scen, "-o", out)
    assert r.returncode == 2 and "--resume" in r.stderr and "Traceback" not in r.stderr
    assert run_cli("run", scen, "-o", out, "--overwrite", "-q").returncode == 0


def test_resume_with_changed_physics_is_refused(tmp_path):
    scen = scenario(tmp_path, 100)
    out = tmp_path / "x.h5"
    assert run_cli("run", scen, "-o", out, "-q").returncode == 0
    r = run_cli("run", scen, "-o", out, "--resume", "--set", "model.mobility=0.5")
    assert r.returncode == 2 and "model.mobility" in r.stderr


def test_resume_on_foreign_or_truncated_file(tmp_path):
    scen = scenario(tmp_path, 100)
    out = tmp_path / "x.h5"
    out.write_bytes(b"not an hdf5 file at all")
    r = run_cli("run", scen, "-o", out, "--resume")
    assert r.returncode == 2 and "not a readable HDF5 file" in r.stderr


def test_atomic_write_failure_keeps_previous_file(tmp_path, monkeypatch):
    p = tmp_path / "a.h5"
    write_atomic(p, b"old contents")

    def failing_fsync(fd):
        raise OSError(5, "Input/output error")
    monkeypatch.setattr(os, "fsync", failing_fsync)
    with pytest.raises(OutputError, match="Input/output error"):
        write_atomic(p, b"new contents that never commit")
    assert p.read_bytes() == b"old contents" and not tmp_name(p).exists()


def test_sigkill_inside_a_write_keeps_previous_file(tmp_path):
    p = tmp_path / "a.h5"
    write_atomic(p, b"old contents")
    code = textwrap.dedent(f"""
        import os, time
        from simengine.io import durable
        def stall(fd):  # the new bytes are written, not yet renamed over the old file
            print("inside", flush=True)
            time.sleep(60)
        durable.os.fsync = stall
        durable.write_atomic({str(p)!r}, b"x" * 10**6)
    """)
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout.readline().strip() == "inside"
    os.kill(proc.pid, signal.SIGKILL)
    proc.wait()
    assert p.read_bytes() == b"old contents"  # the old file, complete
    assert tmp_name(p).stat().st_size == 10**6  # the stale temporary is never read
