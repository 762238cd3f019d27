"""Diagnostic: where the time of a CLI field run goes (cProfile of ``simengine run`` in-process):
a 200² fp64 CUDA run with the benchmark's output cadence (observables every 1000 steps, snapshot
and checkpoint every 20 000). ``--steps`` sets the run length."""
import argparse
import cProfile
import os
import pstats
import sys
import tempfile

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=220000)
p.add_argument("--top", type=int, default=25)
args = p.parse_args()
scen = ("kind: field\nname: small\ngrid: {shape: [200, 200]}\nboundary: {type: periodic}\n"
        "model: {mobility: 1.0, kappa: 1.0, potential: {b: 1.0, u: 1.0}}\n"
        "initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}\n"
        f"time: {{dt: 0.001, steps: {args.steps}}}\n"
        "solver: {backend: cuda, precision: float64}\n"
        "output: {snapshot_every: 20000, checkpoint_every: 20000, observables_every: 1000}\n")
from simengine.cli import main

with tempfile.TemporaryDirectory() as wd:
    path = os.path.join(wd, "s.yaml")
    with open(path, "w") as f:
        f.write(scen)
    prof = cProfile.Profile()
    prof.enable()
    rc = main(["run", path, "-o", os.path.join(wd, "s.h5"), "-q", "--overwrite"])
    prof.disable()
st = pstats.Stats(prof, stream=sys.stdout)
st.sort_stats("tottime").print_stats(args.top)
st.sort_stats("cumulative").print_stats(args.top)
st.print_callees("characteristic_length")
st.print_callees("job.py.*observe")
import time

import numpy as np

from simengine.field.observables import characteristic_length

phi = np.random.default_rng(0).uniform(-1, 1, (200, 200))
characteristic_length(phi)
t = time.perf_counter()
for _ in range(100):
    characteristic_length(phi)
print(f"characteristic_length alone: {(time.perf_counter() - t) / 100 * 1e3:.3f} ms")
