"""The first progress line after compilation counts only measured steps."""
import io

from simengine import progress
from simengine.progress import Progress


def test_rate_and_eta_start_after_the_first_piece(monkeypatch):
    clock = [100.0]
    monkeypatch.setattr(progress.time, "perf_counter", lambda: clock[0])
    buf = io.StringIO()
    p = Progress(600, unit="step", stream=buf, log_every=0.0)
    clock[0] += 13.0                        # compilation inside the first piece
    p.update(1)
    assert buf.getvalue().splitlines()[-1] == "step 1/600 (0%), rate and ETA from the next piece on"
    clock[0] += 2.0
    p.update(101)                           # 100 measured steps in 2 s
    assert buf.getvalue().splitlines()[-1] == "step 101/600 (17%), 50 steps/s, ETA 10 s"


def test_field_run_says_its_stepping_rate_after_the_first_stop(tmp_path):
    """The last log line of a field run: the stepping rate of the pieces after the first stop past
    step 0 (compilation and the first graphs done), not the start-up."""
    from conftest import run_cli

    scen = tmp_path / "s.yaml"
    scen.write_text("kind: field\nname: t\ngrid: {shape: [16, 8]}\ntime: {dt: 0.001, steps: 40}\n"
                    "solver: {backend: cpu}\noutput: {observables_every: 10}\n")
    r = run_cli("run", scen, "-o", tmp_path / "t.h5")
    assert r.returncode == 0, r.stderr
    done = r.stderr.strip().splitlines()[-1]
    assert done.startswith("done: 40 steps in ")
    assert " ms/step over the 30 steps after the first stop)" in done
