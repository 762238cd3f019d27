"""Diagnostic: where the host time of a field output write goes (snapshot + checkpoint parts,
the index rebuilt and committed, its annotation, the XDMF file) — cProfile of
``FieldOutput._write`` over the writes of a small run (the writes after the first three, so
imports and compilation are not counted). All of it holds the GIL except the fsyncs and
``os.write``: a write-behind thread therefore competes with the thread that launches the GPU's
steps (docs/field-gpu.md, 2026-11-25).

    python benchmarks/diag_write_profile.py [--n 200] [--writes 30] [--backend cuda]
"""
from __future__ import annotations

import argparse
import cProfile
import os
import pstats
import tempfile
import time

p = argparse.ArgumentParser()
p.add_argument("--n", type=int, default=200)
p.add_argument("--writes", type=int, default=30)
p.add_argument("--backend", default="cuda")
p.add_argument("--top", type=int, default=30)
args = p.parse_args()

from simengine import api  # noqa: E402
from simengine.io.field_output import FieldOutput  # noqa: E402

prof = cProfile.Profile()
orig = FieldOutput._write
seen, spent = [0], [0.0]


def timed(self, *a, **k):
    seen[0] += 1
    on = seen[0] > 3
    t = time.perf_counter()
    if on:
        prof.enable()
    try:
        return orig(self, *a, **k)
    finally:
        if on:
            prof.disable()
            spent[0] += time.perf_counter() - t


FieldOutput._write = timed
every = 10
scen = (f"kind: field\nname: w\ngrid: {{shape: [{args.n}, {args.n}]}}\n"
        "boundary: {type: periodic}\nmodel: {mobility: 1.0, kappa: 1.0, potential: {b: 1.0, u: 1.0}}\n"
        "initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}\n"
        f"time: {{dt: 0.001, steps: {every * (args.writes + 3)}}}\n"
        f"solver: {{backend: {args.backend}, precision: float64}}\n"
        f"output: {{snapshot_every: {every}, checkpoint_every: {every}, observables_every: 1}}\n")
with tempfile.TemporaryDirectory(dir=os.environ.get("TMPDIR")) as wd:
    FieldOutput.write_behind = lambda self: self.write()  # every write in this thread
    api.run(scen, os.path.join(wd, "w.h5"))
n = max(seen[0] - 3, 1)
print(f"{n} writes of {args.n}² fp64 (snapshot + checkpoint + index): "
      f"{spent[0] / n * 1e3:.2f} ms per write")
pstats.Stats(prof).sort_stats("cumulative").print_stats(args.top)
