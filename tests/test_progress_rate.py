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
