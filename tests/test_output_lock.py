"""One run per output: a second run on a locked output is refused (exit 2, one line naming the file
and the holder); a lock left by a SIGKILLed run does not block --resume."""
import os
import signal
import socket
import subprocess
import sys
import time

import h5py
import pytest

from conftest import run_cli
from simengine.errors import UserError
from simengine.io.lock import OutputLock, lock_path

SCENARIO = """\
kind: field
name: lock-test
grid: {shape: [64, 64], spacing: 1.0}
time: {dt: 0.02, steps: STEPS}
solver: {backend: cpu}
output: {snapshot_every: 500, checkpoint_every: 250, observables_every: 250}
"""


def scenario(tmp_path, steps):
    p = tmp_path / "lock.yaml"
    p.write_text(SCENARIO.replace("STEPS", str(steps)))
    return p


@pytest.mark.parametrize("mode", [[], ["--resume"], ["--overwrite"]])
def test_second_run_on_a_locked_output_is_refused(tmp_path, mode):
    scen = scenario(tmp_path, 20)
    out = tmp_path / "run.h5"
    assert run_cli("run", scen, "-o", out, "-q").returncode == 0
    before = out.stat().st_mtime_ns
    with OutputLock(out):  # this test process holds the output
        r = run_cli("run", scen, "-o", out, "-q", *mode)
    assert r.returncode == 2, r.stderr
    line = r.stderr.strip()
    assert "\n" not in line and "Traceback" not in line
    assert str(out) in line and "in use by another run" in line
    assert f"host {socket.gethostname()}" in line and f"pid {os.getpid()}" in line
    assert out.stat().st_mtime_ns == before  # nothing was written
    assert not lock_path(out).exists()  # released and removed by its holder
    assert run_cli("run", scen, "-o", out, "-q", "--overwrite").returncode == 0


def test_lock_in_one_process_is_exclusive(tmp_path):
    out = tmp_path / "x.h5"
    with OutputLock(out):
        with pytest.raises(UserError, match="in use by another run"):
            OutputLock(out).acquire()
    OutputLock(out).acquire().release()


def test_concurrent_resume_refused_and_stale_lock_after_sigkill(tmp_path):
    scen = scenario(tmp_path, 100000)
    out = tmp_path / "run.h5"
    proc = subprocess.Popen([sys.executable, "-m", "simengine", "run", str(scen), "-o", str(out),
                             "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        t0 = time.time()
        while not out.exists() and time.time() - t0 < 120:  # the first commit (step 0)
            assert proc.poll() is None, proc.communicate()
            time.sleep(0.02)
        # the same scenario with --resume while the first run is alive (a requeued job)
        r = run_cli("run", scen, "-o", out, "-q", "--resume")
        assert r.returncode == 2, r.stderr
        assert f"pid {proc.pid}" in r.stderr and str(out) in r.stderr
        assert proc.poll() is None  # the first run goes on undisturbed
    finally:
        proc.send_signal(signal.SIGKILL)
        proc.communicate()
    assert lock_path(out).exists()  # left behind by the killed run, with its holder line
    assert f"pid {proc.pid}" in lock_path(out).read_text()
    with h5py.File(out, "r") as f:
        step = int(f["checkpoint/phi"].attrs["step"])
    r = run_cli("run", scen, "-o", out, "-q", "--resume", "--set", f"time.steps={step + 250}")
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r") as f:
        assert f.attrs["complete"] and int(f["checkpoint/phi"].attrs["step"]) == step + 250
        steps = f["observables/step"][()]
        assert len(set(steps)) == len(steps)  # no step written twice
    assert not lock_path(out).exists()
