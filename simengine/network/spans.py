"""Where a network run's time goes: named spans of wall time per process (rank).

A :class:`Spans` adds up the seconds spent in named sections (``with spans("merge"): ...``) and
counts (``spans.count("claimed", 1024)``: sources). The network job fills one per rank — start-up
(compilation, graph upload), static and claimed work, waits for claims, the wait for the slowest
rank and the merge, output writes — and, when the environment variable ``SIMENGINE_PROFILE`` is
set, logs one line per rank at the end (``1``) and also writes them as JSON to the file it names
(any other value), for ``benchmarks/bench_network_mpi.py --profile``.
"""
from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager

#: the environment variable that asks for the per-rank profile
ENV = "SIMENGINE_PROFILE"


class Spans:
    def __init__(self):
        self.seconds: dict[str, float] = {}
        self.counts: dict[str, int] = {}

    @contextmanager
    def __call__(self, name: str):
        t = time.perf_counter()
        try:
            yield
        finally:
            self.add(name, time.perf_counter() - t)

    def add(self, name: str, seconds: float) -> None:
        self.seconds[name] = self.seconds.get(name, 0.0) + float(seconds)

    def count(self, name: str, k: int) -> None:
        self.counts[name] = self.counts.get(name, 0) + int(k)

    def as_dict(self) -> dict:
        return {"seconds": dict(self.seconds), "counts": dict(self.counts)}

    def line(self) -> str:
        """``static 30.12 s (491520 sources), claim wait 0.00 s, merge 0.05 s, …``"""
        parts = []
        for k, v in self.seconds.items():
            c = self.counts.get(k)
            parts.append(f"{k} {v:.3f} s" + (f" ({c} sources)" if c else ""))
        return ", ".join(parts) or "nothing timed"


def requested() -> str | None:
    """The value of ``SIMENGINE_PROFILE`` (None when unset or empty)."""
    return os.environ.get(ENV) or None


def report(per_rank: list, log) -> None:
    """Log one line per rank (``per_rank``: :meth:`Spans.as_dict` of each) and, when
    ``SIMENGINE_PROFILE`` names a file, write them there as JSON."""
    for r, d in enumerate(per_rank):
        s = Spans()
        s.seconds, s.counts = d["seconds"], d["counts"]
        log(f"profile, rank {r} of {len(per_rank)}: {s.line()}")
    where = requested()
    if where and where != "1":
        with open(where, "w") as f:
            json.dump(per_rank, f, indent=1)
