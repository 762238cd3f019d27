"""Progress reporting: a tqdm bar on a terminal, plain periodic log lines otherwise."""
from __future__ import annotations

import sys
import time


class Progress:
    def __init__(self, total, initial=0, unit="step", desc="", enabled=True, stream=None,
                 log_every=10.0):
        self.total = int(total)
        self.n = int(initial)
        self.unit = unit
        self.stream = stream or sys.stderr
        self.enabled = enabled
        self.start_n = self.n
        self.t0 = time.perf_counter()
        self.last_log = self.t0
        self.log_every = log_every
        self.bar = None
        if enabled and hasattr(self.stream, "isatty") and self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, initial=self.n, unit=unit, desc=desc,
                            file=self.stream, dynamic_ncols=True, smoothing=0.1)

    def rate(self):
        dt = time.perf_counter() - self.t0
        return (self.n - self.start_n) / dt if dt > 0 else 0.0

    def update(self, n_now):
        delta = int(n_now) - self.n
        self.n = int(n_now)
        if not self.enabled:
            return
        if self.bar is not None:
            self.bar.update(delta)
            return
        now = time.perf_counter()
        if now - self.last_log >= self.log_every or self.n >= self.total:
            self.last_log = now
            r = self.rate()
            eta = (self.total - self.n) / r if r > 0 else float("nan")
            pct = 100.0 * self.n / self.total if self.total else 100.0
            print(f"{self.unit} {self.n}/{self.total} ({pct:.0f}%), {r:.3g} {self.unit}s/s, "
                  f"ETA {eta:.0f} s", file=self.stream, flush=True)

    def close(self):
        if self.bar is not None:
            self.bar.close()
