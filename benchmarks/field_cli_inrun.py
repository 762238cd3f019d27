"""The CLI's in-run steady state of a field grid, for the benchmarks to print beside their own.

``simengine run`` (optionally under an MPI launcher) on a generated scenario with the default
solver settings (``kernel: texture``, ``fused: auto``, no launch hints: what a user runs), an
observation every ``every`` steps and no other output between the start and the end; the time
per step is the slope of the run's own ``observables/wall_time`` column from the row at
``every`` to the last row (start-up, compilation, graph recording, the initial and the final
writes excluded; the observations in between included). The start-up line naming the plan is
returned too, so a reader sees what the CLI ran.
"""
from __future__ import annotations

import os
import shlex
import signal
import subprocess
import sys
import tempfile
import time

SCENARIO = """kind: field
name: cli_inrun
grid: {{shape: {shape}}}
boundary: {{type: periodic}}
model: {{mobility: 1.0, kappa: 1.0, potential: {{b: 1.0, u: 1.0}}}}
initial: {{type: noise, mean: 0.0, amplitude: 0.05, seed: 1}}
time: {{dt: {dt}, steps: {steps}}}
solver: {{backend: {backend}, precision: {precision}}}
output: {{observables_every: {every}}}
"""


def scenario_text(shape, precision, steps, every, dt=1e-3, backend="cuda") -> str:
    return SCENARIO.format(shape=list(shape), precision=precision, steps=int(steps),
                           every=int(every), dt=dt, backend=backend)


def inrun_seconds(path, first):
    """Seconds per step from the wall-time column of a finished run's observables, from the row
    at step ``first`` to the last row."""
    import h5py
    import numpy as np

    with h5py.File(path, "r") as f:
        step = f["observables/step"][()]
        wall = f["observables/wall_time"][()]
    i = int(np.searchsorted(step, first))
    if i >= len(step) - 1:
        raise ValueError(f"{path}: no observables rows after step {first}")
    return float((wall[-1] - wall[i]) / (step[-1] - step[i]))


def failure_text(rc, stdout, stderr, lines=6) -> str:
    """What a failed process said: its exit status (the signal's name where a signal ended
    it) and the last lines of its stderr, else of its stdout — never empty."""
    if rc is None:
        status = "timed out"
    elif rc < 0:
        try:
            status = f"killed by {signal.Signals(-rc).name}"
        except ValueError:
            status = f"killed by signal {-rc}"
    elif rc > 128 and rc - 128 in {s.value for s in signal.Signals}:
        status = f"exit code {rc} (signal {signal.Signals(rc - 128).name}?)"
    else:
        status = f"exit code {rc}"
    tail = [ln for ln in (stderr or "").strip().splitlines() if ln.strip()][-lines:]
    if not tail:
        tail = [ln for ln in (stdout or "").strip().splitlines() if ln.strip()][-lines:]
    return status + (": " + " | ".join(tail) if tail else ": no output")


def cli_inrun(shape, precision, steps, every, launcher=None, ranks=1, env=None,
              timeout=900, backend="cuda", first=None) -> dict:
    """Run the CLI once; returns ``{"ms": ms per step in-run (the wall-time slope from the row
    at step ``first``, default ``every``), "stepping_ms": the CLI's own stepping rate (its last
    log line: the pieces of steps after the first stop past step 0; observations enqueued behind
    the steps of a piece count, the host's part of them and the output do not), "plan": the
    start-up line, "wall": seconds of the whole process}`` or ``{"error": what failed}``."""
    with tempfile.TemporaryDirectory() as wd:
        scen = os.path.join(wd, "s.yaml")
        out = os.path.join(wd, "s.h5")
        with open(scen, "w") as f:
            f.write(scenario_text(shape, precision, steps, every, backend=backend))
        cmd = [sys.executable, "-m", "simengine", "run", scen, "-o", out, "--overwrite"]
        if ranks > 1 or launcher:
            cmd = shlex.split(launcher or "mpiexec") + ["-n", str(int(ranks))] + cmd
        t = time.perf_counter()
        try:
            r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
        except subprocess.TimeoutExpired as exc:
            return {"error": failure_text(None, exc.stdout or "", exc.stderr or "")}
        wall = time.perf_counter() - t
        if r.returncode:
            return {"error": failure_text(r.returncode, r.stdout, r.stderr)}
        plan = next((ln.strip() for ln in (r.stderr + r.stdout).splitlines()
                     if " steps of " in ln and " -> " in ln), "")
        ranks_line = next((ln.strip() for ln in r.stderr.splitlines() if " MPI ranks" in ln), "")
        plan = (ranks_line + "; " if ranks_line else "") + plan
        try:
            sec = inrun_seconds(out, first if first is not None else every)
        except Exception as exc:
            return {"error": f"{type(exc).__name__}: {exc}"}
        progress = [ln.strip() for ln in r.stderr.splitlines() if ln.startswith("step ")][:3]
        import re

        m = re.search(r"stepping ([0-9.eE+-]+) ms/step", r.stderr + r.stdout)
        return {"ms": sec * 1e3, "plan": plan, "wall": wall, "progress": progress,
                "stepping_ms": float(m.group(1)) if m else None}


def default_plan(shape, precision):
    """The stage plan of the 'default' row: ``StageLaunch`` with no hints (what ``simengine run``
    runs with the default settings, tests/test_field_cli_plan.py)."""
    import numpy as np

    from simengine.field import cuda as ck

    return ck.StageLaunch("texture", len(shape), ck.view3(shape), 0, np.dtype(precision))


def cli_row(shape, prec, rows, bw, solver_ms):
    """``--cli``: the CLI's in-run ms per step for this grid beside this run's best row, the
    default plan's row and the solver loop (``solver_ms(shape, dtype, fused, seconds=)``)."""
    import numpy as np

    cells = int(np.prod(shape))
    steps, every = (2000, 400) if cells >= 1 << 27 else (8000, 1000)
    got = cli_inrun(shape, prec, steps, every, first=2 * every)
    mine = [r for r in rows if r["shape"] == list(shape) and r["precision"] == prec]
    best = min(mine, key=lambda r: r["ms_per_step"], default=None)
    if best is None:
        return None
    dflt = next((r for r in mine if r["layout"].startswith("default:")), None)
    loop, _name = solver_ms(shape, np.dtype(prec), None, seconds=1.0)
    if "error" in got:
        print(f"{'x'.join(map(str, shape))} {prec} CLI: FAILED {got['error']}", flush=True)
        return None
    ms = got["ms"]
    roof = 5 * cells * np.dtype(prec).itemsize / (ms / 1e3) / bw
    print(f"{'x'.join(map(str, shape))} {prec} CLI in-run {ms:.3f} ms/step ({100 * roof:.1f}% of "
          f"the 5-word roofline) | best row {best['layout']} {best['ms_per_step']:.3f} ms: CLI "
          f"{ms / best['ms_per_step']:.3f}x its time"
          + (f" | default row {dflt['ms_per_step']:.3f} ms" if dflt else "")
          + f" | solver loop (graphs) {loop:.3f} ms: CLI {ms / loop:.3f}x"
          + (f" | CLI stepping alone {got['stepping_ms']:.4g} ms" if got.get("stepping_ms")
             else "") + f" | {got['plan']}",
          flush=True)
    return dict(shape=list(shape), precision=prec, cli_ms=ms, cli_roofline_frac=roof,
                best=best["layout"], best_ms=best["ms_per_step"], solver_loop_ms=loop,
                default_ms=dflt["ms_per_step"] if dflt else None, plan=got["plan"],
                cli_stepping_ms=got.get("stepping_ms"))
