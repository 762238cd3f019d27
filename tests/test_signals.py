"""SIGINT/SIGTERM: in start-up (graph generation, compilation, file reading) one line and exit 130
at once; in the run loop a checkpoint first, then exit 130."""
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from simengine import signals
from simengine.cli import main

SLOW_NETWORK = """\
kind: network
name: slow
graph:
  generator: {{type: watts_strogatz, n: {n}, k: 10, p: 0.1, seed: 1}}
metrics: {{sources: {{sample: 4, seed: 1}}}}
solver: {{backend: cpu}}
"""

FIELD = """\
kind: field
name: f
grid: {shape: [64, 64], spacing: 1.0}
initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}
time: {dt: 0.02, steps: 400000}
solver: {integrator: rk2, kernel: global, backend: cpu, precision: float64}
output: {checkpoint_every: 200}
"""


def test_outside_a_loop_a_signal_stops_at_once():
    with signals.stop_on_signals():
        with pytest.raises(signals.Stopped) as ei:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(10**6):  # the handler runs between bytecodes
                pass
    assert ei.value.signum == signal.SIGTERM and "SIGTERM during start-up" in str(ei.value)
    assert signal.getsignal(signal.SIGTERM) is not signals._handler  # restored


def test_inside_a_loop_the_first_signal_is_a_flag_and_a_second_ctrl_c_stops():
    with signals.stop_on_signals():
        with signals.checkpointable() as state:
            os.kill(os.getpid(), signal.SIGTERM)
            for _ in range(1000):
                pass
            assert state.caught == signal.SIGTERM
            os.kill(os.getpid(), signal.SIGTERM)  # a second SIGTERM changes nothing
            for _ in range(1000):
                pass
            with pytest.raises(signals.Stopped):
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(10**6):
                    pass
        os.kill(os.getpid(), signal.SIGINT)  # the command is stopping: absorbed
        for _ in range(1000):
            pass
    with signals.stop_on_signals():
        with signals.checkpointable():
            pass
        with pytest.raises(signals.Stopped) as ei:  # after a loop that ended: stop at once
            os.kill(os.getpid(), signal.SIGINT)
            for _ in range(10**6):
                pass
        assert ei.value.phase == "run" and str(ei.value) == "interrupted by SIGINT"


def test_checkpointable_alone_installs_and_restores_its_handler():
    before = signal.getsignal(signal.SIGTERM)
    with signals.checkpointable() as state:
        os.kill(os.getpid(), signal.SIGTERM)
        for _ in range(1000):
            pass
        assert state.caught == signal.SIGTERM
    assert signal.getsignal(signal.SIGTERM) is before


@pytest.mark.parametrize("where", ["generation", "compilation"])
def test_signal_during_start_up_work_in_process(tmp_path, capsys, monkeypatch, where):
    """The signal arrives from inside the start-up step itself, so the test does not race."""
    if where == "generation":
        from simengine.network import generators

        real = generators.generate

        def generate_then_signal(spec):
            os.kill(os.getpid(), signal.SIGTERM)
            return real(spec)

        monkeypatch.setattr(generators, "generate", generate_then_signal)
        scen = tmp_path / "s.yaml"
        scen.write_text(SLOW_NETWORK.format(n=200))
    else:
        from simengine.field import backends as solver

        real = solver.make_solver

        def compile_then_signal(*a, **k):
            os.kill(os.getpid(), signal.SIGINT)
            return real(*a, **k)

        monkeypatch.setattr(solver, "make_solver", compile_then_signal)
        scen = tmp_path / "s.yaml"
        scen.write_text(FIELD)
    out = tmp_path / "o.h5"
    rc = main(["run", str(scen), "-o", str(out), "-q"])
    err = capsys.readouterr().err
    assert rc == 130 and err.count("\n") == 1 and "during start-up" in err, err
    assert not out.exists()


def _catches_sigterm(pid) -> bool:
    """Whether process ``pid`` has installed a SIGTERM handler (Linux /proc)."""
    try:
        status = Path(f"/proc/{pid}/status").read_text()
    except OSError:
        return False
    mask = int(next(line.split()[1] for line in status.splitlines() if line.startswith("SigCgt")), 16)
    return bool(mask & (1 << (signal.SIGTERM - 1)))


def _wait_for_handler(proc):
    t0 = time.time()
    proc_dir = Path(f"/proc/{proc.pid}")
    while proc_dir.exists() and not _catches_sigterm(proc.pid) and time.time() - t0 < 60:
        if proc.poll() is not None:
            break
        time.sleep(0.002)
    if not proc_dir.exists():  # no /proc: give the interpreter time to reach main()
        time.sleep(3)


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGINT])
def test_signal_during_start_up_exits_130_with_one_line(tmp_path, sig):
    scen = tmp_path / "s.yaml"
    scen.write_text(SLOW_NETWORK.format(n=3_000_000))  # generating it takes far longer than this
    out = tmp_path / "o.h5"
    proc = subprocess.Popen([sys.executable, "-m", "simengine", "run", str(scen), "-o", str(out),
                             "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _wait_for_handler(proc)
    assert proc.poll() is None, proc.communicate()
    proc.send_signal(sig)
    time.sleep(0.05)
    proc.send_signal(sig)  # a second one 50 ms later is absorbed (formerly two tracebacks)
    _, err = proc.communicate(timeout=120)
    name = signal.Signals(sig).name
    assert proc.returncode == 130, err
    assert err == f"simengine: interrupted by {name} during start-up, before the run began; " \
                  f"no output was written\n"
    assert not out.exists()


def test_sigterm_in_the_run_loop_still_checkpoints(tmp_path):
    import h5py

    scen = tmp_path / "s.yaml"
    scen.write_text(FIELD)
    out = tmp_path / "o.h5"
    proc = subprocess.Popen([sys.executable, "-m", "simengine", "run", str(scen), "-o", str(out),
                             "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)

    def checkpoint_step():
        try:
            with h5py.File(out, "r") as f:
                return int(f["checkpoint/phi"].attrs["step"])
        except (OSError, KeyError):
            return -1

    t0 = time.time()
    while checkpoint_step() < 200 and proc.poll() is None and time.time() - t0 < 300:
        time.sleep(0.01)
    assert proc.poll() is None, "the run ended before it could be interrupted"
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130 and "checkpoint written" in err, err
    assert 200 <= checkpoint_step() < 400000


def test_a_second_signal_while_stopping_or_reporting_is_absorbed():
    from simengine import signals

    with signals.stop_on_signals():
        with pytest.raises(signals.Stopped):
            os.kill(os.getpid(), signal.SIGINT)
            time.sleep(1)
        os.kill(os.getpid(), signal.SIGINT)   # while the first one is being handled
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.01)
    with signals.stop_on_signals():
        signals.absorb()                       # the CLI reporting its outcome
        os.kill(os.getpid(), signal.SIGTERM)
        time.sleep(0.01)
    assert signal.getsignal(signal.SIGINT) is not signals._handler  # handlers given back


def _busy():
    os.kill(os.getpid(), signal.SIGINT)
    for _ in range(10000):   # the handler runs between these bytecodes, inside the callback
        pass


class _Finalised:
    def __del__(self):
        _busy()


@pytest.mark.parametrize("where", ["__del__", "weakref.finalize"])
def test_a_second_ctrl_c_inside_a_finaliser_is_delivered_not_lost(monkeypatch, where):
    """Issue 37 class 11: a second Ctrl-C landing in a weakref callback (a WeakValueDictionary's
    remove) or a finaliser raised there, was printed as 'Exception ignored in ... Stopped' and lost.
    Now it is delivered again right after the callback and stops the command."""
    import weakref

    lost = []
    monkeypatch.setattr(sys, "unraisablehook", lambda u: lost.append(u))
    with signals.stop_on_signals():
        with pytest.raises(signals.Stopped):
            with signals.checkpointable() as st:
                os.kill(os.getpid(), signal.SIGINT)
                for _ in range(10000):
                    pass
                assert st.caught == signal.SIGINT          # the first: a flag
                if where == "__del__":
                    obj = _Finalised()
                else:
                    class Obj:
                        pass
                    obj = Obj()
                    weakref.finalize(obj, _busy)
                del obj                                    # the second, inside the callback
                deadline = time.monotonic() + 5
                while time.monotonic() < deadline:
                    time.sleep(0.01)
    assert lost == [], [repr(u.exc_value) for u in lost]
    assert signals.in_callback(None) is False
