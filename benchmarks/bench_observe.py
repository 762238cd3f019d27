"""What observing a GPU field run costs through `simengine run` (issue: observation off the
critical path). Run on a GPU machine:

    python benchmarks/bench_observe.py [--cases 4096x4096:float64:1000,...] [--json out.json]

A case is ``SHAPE:PRECISION:OBS_EVERY[:SNAP_EVERY]``. For each case, in this one process and its
subprocesses on the same GPU:

* **solver**: µs per RK2 step of the solver loop alone (the default plan, CUDA Graphs, no
  observation): the reference;
* **CLI, S(k) on the GPU** (the default for grids of 2^16 cells and more) and **CLI, S(k) on the
  host** (``SIMENGINE_SPECTRUM=host``, the form before S(k) moved to the device): µs per step of
  `simengine run` with the case's output cadence, in steady state — the slope of the run's own
  ``observables/wall_time`` column over its later rows (no start-up, no compilation);
* the ratio of each CLI figure to the solver's (the observation's cost; the target is ≤ 1.10× at
  4096² fp64 every 1 000 steps, ≤ 1.20× with a snapshot every 10 000, ≤ 1.25× at 256³/512³ fp64
  every 100).
"""
from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time

import numpy as np

DEFAULT_CASES = ("4096x4096:float64:1000,4096x4096:float64:1000:10000,4096x4096:float32:1000,"
                 "256x256x256:float64:100,512x512x512:float64:100,200x200:float64:1000")
DT = 1e-3


def parse_case(text):
    parts = text.split(":")
    shape = tuple(int(n) for n in parts[0].split("x"))
    snap = int(parts[3]) if len(parts) > 3 else 0
    return shape, parts[1], int(parts[2]), snap


def solver_us(shape, precision, steps):
    """µs per step of the default solver loop (no observation)."""
    from simengine.field.backends import make_solver
    from simengine.field.model import Boundary, CahnHilliard, Grid

    s = make_solver(CahnHilliard.classic(), Grid(shape), Boundary("periodic"), backend="cuda",
                    kernel="texture", precision=precision, dt=DT)
    s.load(np.random.default_rng(0).uniform(-0.05, 0.05, shape))
    s.advance(min(steps, 256))
    s.synchronize()
    best = float("inf")
    for _ in range(3):
        t = time.perf_counter()
        s.advance(steps)
        s.synchronize()
        best = min(best, (time.perf_counter() - t) / steps)
    return best * 1e6, s.name


def inrun_us(path, skip_rows=2):
    """µs per step from the run's own wall-time column, after its first ``skip_rows`` rows."""
    import h5py

    with h5py.File(path, "r") as f:
        step = f["observables/step"][()]
        wall = f["observables/wall_time"][()]
    i = min(skip_rows, len(step) - 2)
    return float((wall[-1] - wall[i]) / (step[-1] - step[i]) * 1e6)


def cli_us(shape, precision, every, snap, steps, spectrum, workdir):
    scen = (f"kind: field\nname: obs\ngrid: {{shape: {list(shape)}}}\nboundary: {{type: periodic}}\n"
            f"model: {{mobility: 1.0, kappa: 1.0, potential: {{b: 1.0, u: 1.0}}}}\n"
            f"initial: {{type: noise, mean: 0.0, amplitude: 0.05, seed: 1}}\n"
            f"time: {{dt: {DT}, steps: {steps}}}\n"
            f"solver: {{backend: cuda, precision: {precision}}}\n"
            f"output: {{observables_every: {every}, snapshot_every: {snap}, "
            f"checkpoint_every: {snap}}}\n")
    path = os.path.join(workdir, "obs.yaml")
    with open(path, "w") as f:
        f.write(scen)
    out = os.path.join(workdir, "obs.h5")
    env = dict(os.environ, SIMENGINE_SPECTRUM=spectrum)
    r = subprocess.run([sys.executable, "-m", "simengine", "run", path, "-o", out, "-q",
                        "--overwrite"], capture_output=True, text=True, env=env)
    if r.returncode:
        raise RuntimeError(r.stderr[-1500:])
    log = [ln for ln in r.stderr.splitlines() if "S(k)" in ln]
    return inrun_us(out, skip_rows=max(2, 3 * (snap // every) if snap else 2)), \
        (log[0] if log else "")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=DEFAULT_CASES)
    p.add_argument("--seconds", type=float, default=4.0,
                   help="steps per CLI run: about this many seconds of solver time")
    p.add_argument("--host-max-cells", type=int, default=1 << 24,
                   help="host-S(k) CLI rows only for grids up to this many cells (the host FFT "
                        "of a 512³ field takes seconds per observation)")
    p.add_argument("--json", default=None)
    a = p.parse_args(argv)
    rows = []
    for text in a.cases.split(","):
        shape, precision, every, snap = parse_case(text)
        us, name = solver_us(shape, precision, steps=max(every, 200))
        steps = int(max(20 * every, min(2_000_000, a.seconds / (us * 1e-6))))
        steps = (steps // max(every, snap or 1) + 1) * max(every, snap or 1)
        row = {"case": text, "solver_us": us, "plan": name, "steps": steps}
        with tempfile.TemporaryDirectory() as wd:
            cells = int(np.prod(shape))
            for spectrum in (("device", "host") if cells <= a.host_max_cells else ("device",)):
                try:
                    got, log = cli_us(shape, precision, every, snap, steps,
                                      "auto" if spectrum == "device" else "host", wd)
                except RuntimeError as exc:
                    print(f"{text}: CLI ({spectrum}) failed: {exc}", flush=True)
                    continue
                row[f"cli_{spectrum}_us"] = got
                row[f"cli_{spectrum}_log"] = log
        rows.append(row)
        parts = [f"{text}: solver {us:.2f} us/step ({name})"]
        for spectrum in ("device", "host"):
            if f"cli_{spectrum}_us" in row:
                v = row[f"cli_{spectrum}_us"]
                parts.append(f"CLI S(k) {spectrum}: {v:.2f} us/step = {v / us:.2f}x the solver")
        print("; ".join(parts), flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
