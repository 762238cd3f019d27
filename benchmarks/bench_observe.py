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

With ``--ranks N`` (a multi-GPU machine) each of ``--rank-cases`` (``SHAPE:PRECISION:OBS_EVERY``)
runs through ``LAUNCHER -np N python -m simengine run`` instead (the S(k) of CUDA slabs, its
transpose device to device where the ranks share a node):

* **with observations**: µs per step from the run's own ``observables/wall_time`` slope;
* **without**: two runs with no observation between step 0 and the end, of two lengths at
  least ``--rank-seconds`` of steps apart; µs per step = the difference of their in-run elapsed
  times (last row's ``wall_time`` − first row's) over the difference of their steps (start-up,
  compilation and the writes at step 0 cancel; the final writes come after the last row);
* the ratio (the target: ≤ 1.3× at 1024³ fp64 on 2 ranks every 100 steps).
``--rank-transpose peer,host`` runs the observed case once per ``SIMENGINE_TRANSPOSE`` value.

With ``--measures`` each case's CLI run (S(k) on the GPU) runs with ``SIMENGINE_MEASURES=moment``
(only L = 2π/k₁, the coarsening measures' columns NaN) and with every measure, alternating,
twice each: the best of each and their ratio (the target: ≤ 1.05× at 4096² fp64 observed every
1 000 steps).
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


def cli_us(shape, precision, every, snap, steps, spectrum, workdir, measures="all"):
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
    env = dict(os.environ, SIMENGINE_SPECTRUM=spectrum, SIMENGINE_MEASURES=measures)
    r = subprocess.run([sys.executable, "-m", "simengine", "run", path, "-o", out, "-q",
                        "--overwrite"], capture_output=True, text=True, env=env)
    if r.returncode:
        raise RuntimeError(r.stderr[-1500:])
    log = [ln for ln in r.stderr.splitlines() if "S(k)" in ln]
    return inrun_us(out, skip_rows=max(2, 3 * (snap // every) if snap else 2)), \
        (log[0] if log else "")


def rank_scenario(shape, precision, every, steps, backend="cuda"):
    return (f"kind: field\nname: ranks\ngrid: {{shape: {list(shape)}}}\n"
            f"boundary: {{type: periodic}}\n"
            f"model: {{mobility: 1.0, kappa: 1.0, potential: {{b: 1.0, u: 1.0}}}}\n"
            f"initial: {{type: noise, mean: 0.0, amplitude: 0.05, seed: 1}}\n"
            f"time: {{dt: {DT}, steps: {steps}}}\n"
            f"solver: {{backend: {backend}, precision: {precision}}}\n"
            f"output: {{observables_every: {every}}}\n")


def rank_run(launcher, ranks, scenario, workdir, tag, env=None):
    """One ``simengine run`` on ``ranks`` ranks: ``(wall_time column, steps column, process
    seconds, the start-up log's S(k) line)``."""
    import shlex

    import h5py

    path = os.path.join(workdir, f"{tag}.yaml")
    with open(path, "w") as f:
        f.write(scenario)
    out = os.path.join(workdir, f"{tag}.h5")
    cmd = shlex.split(launcher) + ["-np", str(ranks), sys.executable, "-m", "simengine", "run",
                                   path, "-o", out, "--overwrite"]  # not -q: the S(k) line
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=dict(os.environ, **(env or {})))
    seconds = time.perf_counter() - t
    if r.returncode:
        raise RuntimeError(f"{tag}: exit {r.returncode}: {(r.stdout + r.stderr)[-1500:]}")
    with h5py.File(out, "r") as f:
        wall = f["observables/wall_time"][()]
        step = f["observables/step"][()]
    log = [ln for ln in (r.stdout + r.stderr).splitlines() if "S(k)" in ln]
    for name in os.listdir(workdir):  # a 1024³ run leaves GiBs of parts
        if name.startswith(tag):
            p = os.path.join(workdir, name)
            if os.path.isdir(p):
                import shutil
                shutil.rmtree(p, ignore_errors=True)
            else:
                os.unlink(p)
    return wall, step, seconds, (log[0] if log else "")


def rank_row(text, a):
    """One ``--ranks`` case: observed µs/step (in-run slope) against the step without
    observations (difference of two runs)."""
    shape, precision, every, _ = parse_case(text)
    cells = int(np.prod(shape))
    guess = a.step_ms_per_2e27 * 1e-3 * cells / 2 ** 27 / a.ranks  # rough s/step, for sizing
    span = max(every, int(a.rank_seconds / guess) // every * every + every)
    short = every
    obs_steps = max(8 * every, int(a.rank_obs_seconds / guess) // every * every)
    row = {"case": text, "ranks": a.ranks}
    with tempfile.TemporaryDirectory(dir=a.workdir) as wd:
        rs = {}
        for tag, steps in (("short", short), ("long", short + span)):
            wall, step, sec, _ = rank_run(a.launcher, a.ranks,
                                          rank_scenario(shape, precision, 0, steps, a.backend),
                                          wd, tag, env={"SIMENGINE_TRANSPOSE": "auto"})
            rs[tag] = (float(wall[-1] - wall[0]), int(step[-1]), sec)
            print(f"  {text} without observations, {steps} steps: in-run {rs[tag][0]:.2f} s, "
                  f"process {sec:.1f} s", flush=True)
        ref = (rs["long"][0] - rs["short"][0]) / (rs["long"][1] - rs["short"][1]) * 1e6
        if rs["long"][0] - rs["short"][0] < 8:
            print(f"  {text}: the runs without observations differ by "
                  f"{rs['long'][0] - rs['short'][0]:.1f} s of steps (< 8 s): raise "
                  f"--rank-seconds for a firmer reference", flush=True)
        row["no_obs_us"] = ref
        row["no_obs_process_us"] = (rs["long"][2] - rs["short"][2]) / span * 1e6
        row["no_obs_steps"] = [short, short + span]
        for mode in a.rank_transpose.split(","):
            wall, step, sec, log = rank_run(
                a.launcher, a.ranks, rank_scenario(shape, precision, every, obs_steps,
                                                   a.backend),
                wd, f"obs-{mode}", env={"SIMENGINE_TRANSPOSE": mode})
            i = min(2, len(step) - 2)
            us = float((wall[-1] - wall[i]) / (step[-1] - step[i]) * 1e6)
            row[f"obs_{mode}_us"], row[f"obs_{mode}_log"] = us, log
            row["obs_steps"] = obs_steps
            print(f"  {text} observed every {every} ({mode}), {obs_steps} steps: {us:.1f} "
                  f"us/step, process {sec:.1f} s; {log.strip()}", flush=True)
    parts = [f"{text} on {a.ranks} ranks: without observations {row['no_obs_us']:.1f} us/step"]
    for mode in a.rank_transpose.split(","):
        if f"obs_{mode}_us" in row:
            v = row[f"obs_{mode}_us"]
            parts.append(f"observed ({'transpose ' + mode}) {v:.1f} us/step = "
                         f"{v / row['no_obs_us']:.3f}x")
    print("; ".join(parts), flush=True)
    return row


def measures_row(text, a):
    """One ``--measures`` case: µs per step of the CLI run with only the moment length and
    with every coarsening measure (the best of two runs each, alternating)."""
    shape, precision, every, snap = parse_case(text)
    us, name = solver_us(shape, precision, steps=max(every, 200))
    steps = int(max(20 * every, min(2_000_000, a.seconds / (us * 1e-6))))
    steps = (steps // max(every, snap or 1) + 1) * max(every, snap or 1)
    row = {"case": text, "solver_us": us, "plan": name, "steps": steps}
    with tempfile.TemporaryDirectory() as wd:
        for mode in ("moment", "all", "moment", "all"):
            got, log = cli_us(shape, precision, every, snap, steps, "auto", wd, measures=mode)
            row[f"{mode}_us"] = min(row.get(f"{mode}_us", float("inf")), got)
            row[f"{mode}_log"] = log
    ratio = row["all_us"] / row["moment_us"]
    row["ratio"] = ratio
    print(f"{text}: solver {us:.2f} us/step; CLI with L = 2π/k₁ only {row['moment_us']:.2f} "
          f"us/step, with every coarsening measure {row['all_us']:.2f} us/step: "
          f"{ratio:.3f}x ({(ratio - 1) * 100:+.1f} %; target ≤ +5 %); {row['all_log'].strip()}",
          flush=True)
    return row


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--cases", default=DEFAULT_CASES)
    p.add_argument("--seconds", type=float, default=4.0,
                   help="steps per CLI run: about this many seconds of solver time")
    p.add_argument("--host-max-cells", type=int, default=1 << 24,
                   help="host-S(k) CLI rows only for grids up to this many cells (the host FFT "
                        "of a 512³ field takes seconds per observation)")
    p.add_argument("--json", default=None)
    p.add_argument("--ranks", type=int, default=0,
                   help="run --rank-cases on this many MPI ranks instead of the one-GPU cases")
    p.add_argument("--rank-cases", default="1024x1024x1024:float64:100,512x512x512:float64:100")
    p.add_argument("--launcher", default="mpirun --allow-run-as-root -x PYTHONPATH "
                                         "-x NCCL_NVLS_ENABLE=0 -x SIMENGINE_TRANSPOSE")
    p.add_argument("--rank-seconds", type=float, default=12.0,
                   help="steps between the two runs without observations (≥ 8 s of work)")
    p.add_argument("--rank-obs-seconds", type=float, default=5.0,
                   help="steps of the observed run, in seconds of steps")
    p.add_argument("--step-ms-per-2e27", type=float, default=2.6,
                   help="rough ms per step of 2^27 cells on one GPU (sizes the runs only)")
    p.add_argument("--rank-transpose", default="auto",
                   help="SIMENGINE_TRANSPOSE of the observed runs, comma-separated (auto, peer, "
                        "host: one observed run each)")
    p.add_argument("--backend", default="cuda", help="(--ranks) the scenario's backend")
    p.add_argument("--workdir", default=None, help="(--ranks) where the runs write")
    p.add_argument("--measures", action="store_true",
                   help="the cost of the coarsening measures: each case's CLI run (S(k) on the "
                        "GPU) with SIMENGINE_MEASURES=moment (L = 2π/k₁ only) and =all, "
                        "alternating, twice each (target: all ≤ 1.05× moment)")
    a = p.parse_args(argv)
    rows = []
    if a.ranks:
        for text in a.rank_cases.split(","):
            try:
                rows.append(rank_row(text, a))
            except RuntimeError as exc:
                print(f"{text} on {a.ranks} ranks failed: {exc}", flush=True)
            if a.json:  # after every row: a run cut short keeps what it measured
                with open(a.json, "w") as f:
                    json.dump(rows, f, indent=1)
        return 0
    if a.measures:
        for text in a.cases.split(","):
            rows.append(measures_row(text, a))
        if a.json:
            with open(a.json, "w") as f:
                json.dump(rows, f, indent=1)
        return 0
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
