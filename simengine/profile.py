"""Where a run's time goes: ``SIMENGINE_PROFILE=1 simengine run ...`` prints a breakdown.

Code that does a measurable piece of a run wraps it in :func:`phase` (or calls :func:`add`),
naming it and the bytes it moved; the runner prints :func:`report` at the end (rank 0): one line
per phase with its seconds, calls, bytes and GB/s, in first-seen order, plus the time from the
process's start to the run's first step. Phases run in background threads (a write-behind, the
hashing threads of a part) are counted in their own line, so the lines may add up to more than the
wall time; the report says which phases ran in the background.

Off by default (one dictionary lookup per phase, no clock read).
"""
from __future__ import annotations

import os
import threading
import time
from contextlib import contextmanager

ENABLED = os.environ.get("SIMENGINE_PROFILE", "") not in ("", "0")

_lock = threading.Lock()
_phases: dict = {}   # name -> [seconds, bytes, calls, background]
_marks: dict = {}    # name -> seconds since the process started


def enable(on: bool = True) -> None:
    """Switch profiling on or off in process (tests, benchmarks); clears what was gathered."""
    global ENABLED
    ENABLED = bool(on)
    reset()


def reset() -> None:
    with _lock:
        _phases.clear()
        _marks.clear()


def process_seconds() -> float:
    """Seconds since this process started (Linux: /proc; elsewhere since this module's import)."""
    try:
        with open("/proc/self/stat", "rb") as f:
            fields = f.read().rsplit(b")", 1)[1].split()
        start = int(fields[19]) / os.sysconf("SC_CLK_TCK")
        with open("/proc/uptime", "rb") as f:
            up = float(f.read().split()[0])
        return up - start
    except (OSError, ValueError, IndexError):
        return time.perf_counter() - _IMPORTED


_IMPORTED = time.perf_counter()
GIB = float(1 << 30)


def add(name: str, seconds: float, nbytes: int = 0, background: bool = False) -> None:
    if not ENABLED:
        return
    with _lock:
        p = _phases.setdefault(name, [0.0, 0, 0, False])
        p[0] += seconds
        p[1] += int(nbytes)
        p[2] += 1
        p[3] = p[3] or background or threading.current_thread() is not threading.main_thread()


@contextmanager
def phase(name: str, nbytes: int = 0):
    """Time the block as ``name`` (``nbytes`` moved)."""
    if not ENABLED:
        yield
        return
    t = time.perf_counter()
    try:
        yield
    finally:
        add(name, time.perf_counter() - t, nbytes)


def memory() -> tuple:
    """(resident, peak resident) bytes of this process (Linux /proc; (0, 0) elsewhere)."""
    got = {}
    try:
        with open("/proc/self/status", "rb") as f:
            for line in f:
                if line.startswith((b"VmRSS:", b"VmHWM:")):
                    key, value = line.split(b":", 1)
                    got[key] = int(value.split()[0]) * 1024
    except (OSError, ValueError, IndexError):
        pass
    return got.get(b"VmRSS", 0), got.get(b"VmHWM", 0)


def mark(name: str) -> None:
    """Record the first time ``name`` happens (seconds since the process started) and the
    process's resident memory then (and its peak so far)."""
    if ENABLED and name not in _marks:
        _marks[name] = (process_seconds(), *memory())


def report() -> list:
    """The breakdown as lines (empty when profiling is off)."""
    if not ENABLED:
        return []
    with _lock:
        phases = list(_phases.items())
        marks = dict(_marks)
    lines = ["profile (SIMENGINE_PROFILE): seconds, calls, GB moved, GB/s; "
             "[bg]: in a background thread"]
    width = max([len(n) for n, _ in phases] + [10])
    for name, (sec, nbytes, calls, bg) in phases:
        rate = f"{nbytes / sec / 1e9:8.2f} GB/s" if nbytes and sec > 0 else " " * 13
        gb = f"{nbytes / 1e9:8.2f} GB" if nbytes else " " * 11
        lines.append(f"  {name:<{width}} {sec:9.3f} s {calls:6d}x {gb} {rate}"
                     f"{' [bg]' if bg else ''}")
    for name, (at, rss, peak) in marks.items():
        mem = (f"; resident {rss / GIB:.2f} GiB, peak so far {peak / GIB:.2f} GiB"
               if peak else "")
        lines.append(f"  {name:<{width}} at {at:8.3f} s after the process started{mem}")
    return lines
