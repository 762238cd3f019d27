"""SIGTERM / Ctrl-C during Floyd–Warshall (issue 48, item 4): the k-loop stops between rounds,
the run checkpoints the sources done before it, says in one line that the matrix is computed
again, exits 130, and ``--resume`` gives the uninterrupted result."""
import os
import signal
import subprocess
import sys
import threading
import time

import h5py
import numpy as np
import pytest

import simengine
from simengine.cli import main
from simengine.network import interrupt

SCENARIO = """\
kind: network
name: fw
graph:
  generator: {{type: watts_strogatz, n: {n}, k: 10, p: 0.1, seed: 1}}
  weights: {{type: uniform_int, low: 1, high: 9, seed: 2}}
metrics: {{sources: all, algorithm: fw}}
solver: {{backend: cpu}}
"""


def test_between_rounds_raises_only_with_a_check_that_says_stop():
    interrupt.between_rounds("x", 1, 4)                     # no check installed: nothing
    with interrupt.stop_check(lambda: False):
        interrupt.between_rounds("x", 1, 4)
    with interrupt.stop_check(lambda: True):
        interrupt.between_rounds("x", 4, 4)                 # the last round: nothing left
        with pytest.raises(interrupt.RoundsStopped) as ei:
            interrupt.between_rounds("Floyd–Warshall", 2, 4)
    assert "after round 2 of 4" in str(ei.value) and "--resume computes it again" in str(ei.value)
    assert not interrupt.active()


def test_sigterm_during_a_long_cpu_floyd_warshall(tmp_path):
    """n = 3072 on 2 threads: the closure takes well over 10 s (n = 2048 took 16 s on the
    shared 2-core machine; 3.4× the work here, 48 rounds)."""
    scen = tmp_path / "s.yaml"
    scen.write_text(SCENARIO.format(n=3072))
    out = tmp_path / "o.h5"
    proc = subprocess.Popen([sys.executable, "-m", "simengine", "run", str(scen), "-o", str(out),
                             "--threads", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    lines, started = [], threading.Event()

    def read():
        for line in proc.stderr:
            lines.append(line)
            if "start-up:" in line and "->" in line:     # the job began its work
                started.set()
    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    assert started.wait(120), "".join(lines)
    time.sleep(1.5)                               # inside the closure by now
    assert proc.poll() is None, "".join(lines)
    proc.send_signal(signal.SIGTERM)
    t0 = time.monotonic()
    proc.wait(timeout=60)
    waited = time.monotonic() - t0
    reader.join(10)
    err = "".join(lines)
    assert proc.returncode == 130, err
    assert waited < 10, (waited, err)             # a round, not the whole matrix
    assert "Floyd–Warshall stopped after round" in err and "of 48" in err, err
    assert "checkpoint written" in err and "--resume" in err, err
    with h5py.File(out, "r") as f:                # a resumable output: the checkpoint is there
        assert "checkpoint" in f
    assert main(["info", str(out), "--verify"]) == 0


def test_an_interrupted_closure_resumes_to_the_uninterrupted_result(tmp_path, monkeypatch):
    from simengine.network.cpu import floyd_warshall as fw

    real = fw.between_rounds

    def signal_at_round_2(what, done, total):
        if done == 2:
            os.kill(os.getpid(), signal.SIGTERM)
        real(what, done, total)

    scen = tmp_path / "s.yaml"
    scen.write_text(SCENARIO.format(n=300))
    monkeypatch.setattr(fw, "between_rounds", signal_at_round_2)
    assert main(["run", str(scen), "-o", str(tmp_path / "a.h5"), "-q"]) == 130
    monkeypatch.setattr(fw, "between_rounds", real)
    assert main(["run", str(scen), "-o", str(tmp_path / "a.h5"), "-q", "--resume"]) == 0
    assert main(["run", str(scen), "-o", str(tmp_path / "b.h5"), "-q"]) == 0
    with simengine.open(tmp_path / "a.h5") as a, simengine.open(tmp_path / "b.h5") as b:
        assert a.statistics["mean_distance"] == b.statistics["mean_distance"]
        for key in b.vertex:
            np.testing.assert_array_equal(a.vertex[key], b.vertex[key])
