"""Progress reporting: a tqdm bar on a terminal, plain periodic log lines otherwise.

Field runs also report their physics: the runner passes each observables row to
:meth:`Progress.observe`, and the bar's postfix / every log line then shows the latest t, F, L and
the mass drift since the first row this process observed, e.g.::

    step 4000/10000 (40%), 812 steps/s, ETA 7 s | t = 80, F = -5.312e+04, L = 17.4, Δmass = 3.1e-16
"""
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
        self.physics = ""
        self.printed = (self.n, "")
        self.mass0 = None
        self.obs_step = None  # the step of the observables in ``physics``
        self._due = False     # a log line waits for the observation of the step it names
        self.measuring = False          # set by the first update (after compilation)
        if enabled and hasattr(self.stream, "isatty") and self.stream.isatty():
            from tqdm import tqdm

            self.bar = tqdm(total=self.total, initial=self.n, unit=unit, desc=desc,
                            file=self.stream, dynamic_ncols=True, smoothing=0.1)

    def rate(self):
        dt = time.perf_counter() - self.t0
        return (self.n - self.start_n) / dt if dt > 0 else 0.0

    def _start_measuring(self):
        """The first piece of work holds compilation and tuning: the rate and the ETA count the
        steps after it only."""
        self.measuring = True
        self.t0 = time.perf_counter()
        self.start_n = self.n
        if self.bar is not None:
            self.bar.reset(total=self.total)       # tqdm's elapsed time and rate start here
            self.bar.n = self.bar.last_print_n = self.bar.initial = self.n
            self.bar.refresh()

    def update(self, n_now):
        delta = int(n_now) - self.n
        self.n = int(n_now)
        if not self.enabled:
            return
        first = not self.measuring
        if first and delta > 0:
            self._start_measuring()
        if self.bar is not None:
            if not first:
                self.bar.update(delta)
            return
        if self.n >= self.total and self.physics:
            return  # close() prints the last line, with the observables of the last step
        now = time.perf_counter()
        if now - self.last_log >= self.log_every or self.n >= self.total:
            stale = self.physics and self.n != self.obs_step
            if stale and now - self.last_log < 3 * self.log_every:
                # the observables are of an earlier step: print the line at the next
                # observation, so that t, F and L are those of the step it names (a line that
                # waited 3 periods is printed anyway, its observables marked "at step S")
                self._due = True
                return
            self.last_log = now
            self._line()

    def _line(self):
        self.printed = (self.n, self.physics)
        physics = self.physics
        if physics and self.obs_step is not None and self.obs_step != self.n:
            physics = f"at step {self.obs_step}: {physics}"
        r = self.rate()
        pct = 100.0 * self.n / self.total if self.total else 100.0
        if self.n > self.start_n and r > 0:
            speed = f"{r:.3g} {self.unit}s/s, ETA {(self.total - self.n) / r:.0f} s"
        else:                   # nothing measured yet after the first (compiling) piece
            speed = "rate and ETA from the next piece on"
        print(f"{self.unit} {self.n}/{self.total} ({pct:.0f}%), {speed}"
              + (f" | {physics}" if physics else ""), file=self.stream, flush=True)

    def observe(self, row):
        """Remember the latest observables row (keys time, free_energy, length, mass; None: no-op)."""
        if not row:
            return
        if self.mass0 is None and "mass" in row:
            self.mass0 = float(row["mass"])
        parts = []
        self.obs_step = row.get("step")
        if "time" in row:
            parts.append(f"t = {row['time']:.6g}")
        if "free_energy" in row:
            parts.append(f"F = {row['free_energy']:.6g}")
        if "length" in row:
            parts.append(f"L = {row['length']:.4g}")
        if "mass" in row:
            parts.append(f"Δmass = {float(row['mass']) - self.mass0:.2g}")
        self.physics = ", ".join(parts)
        if self.bar is None and self.enabled and self._due and self.obs_step == self.n:
            self._due = False  # the line held back for this observation (see update)
            self.last_log = time.perf_counter()
            self._line()
        if self.bar is not None:
            self.bar.set_postfix_str(self.physics, refresh=False)

    def close(self):
        """Close the bar; in log mode, print a last line unless the last one is still current."""
        if self.bar is not None:
            self.bar.refresh()
            self.bar.close()
        elif self.enabled and (self.n, self.physics) != self.printed:
            self._line()
