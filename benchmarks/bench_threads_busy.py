"""Threads on a busy node: the default thread setting against ``--threads 1`` with one busy
process per core (and without), for a 2-D field run and a betweenness run.

    python benchmarks/bench_threads_busy.py [--steps 500] [--n 3000] [--rounds 2] [--busy 2]

Prints the work time (the run's own ``done: … in X s``, compilation excluded) of each command per
round and the ratio default / --threads 1 (the target: ≤ 1.10 with a busy process per core).
``--old`` adds runs with ``OMP_WAIT_POLICY`` forced to ``active`` (spinning threads, what the
default did before simengine set the passive policy). Busy processes are started and stopped by
this script (by their pid).
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]

BUSY = "while True:\n    pass\n"

NET = """\
kind: network
name: btw
graph:
  generator: {{type: barabasi_albert, n: {n}, m: 4, seed: 1}}
metrics:
  sources: all
  statistics: [mean_distance, betweenness]
solver: {{backend: cpu}}
"""


def work_seconds(text: str) -> float:
    m = re.findall(r"in ([0-9.]+) s", text.split("done:")[-1])
    return float(m[0]) if m else float("nan")


def run(args, env_extra, tmp):
    env = dict(os.environ)
    env.update(env_extra)
    env["PYTHONPATH"] = str(ROOT) + os.pathsep + env.get("PYTHONPATH", "")
    out = Path(tmp) / "o.h5"
    t = time.perf_counter()
    r = subprocess.run([sys.executable, "-m", "simengine", "run", *args, "-o", str(out),
                        "--overwrite"], capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if r.returncode:
        raise SystemExit(r.stderr[-2000:])
    return work_seconds(r.stderr + r.stdout), wall


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=500)
    ap.add_argument("--n", type=int, default=3000)
    ap.add_argument("--rounds", type=int, default=2)
    ap.add_argument("--busy", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--old", action="store_true")
    a = ap.parse_args(argv)
    tmp = tempfile.mkdtemp(prefix="bench_threads_")
    net = Path(tmp) / "btw.yaml"
    net.write_text(NET.format(n=a.n))
    field = [str(ROOT / "scenarios" / "spinodal-2d.yaml"), "--set", f"time.steps={a.steps}",
             "--set", "solver.backend=cpu", "--set", "output.snapshot_every=100000",
             "--set", "output.checkpoint_every=100000"]
    cases = {"field 2-D": field, "betweenness": [str(net)]}
    variants = {"default": ([], {}), "--threads 1": (["--threads", "1"], {})}
    if a.old:
        variants["default, spinning (OMP_WAIT_POLICY=active)"] = ([], {"OMP_WAIT_POLICY":
                                                                       "active"})
    for case, args in cases.items():          # compile once, untimed
        run(args, {}, tmp)
    for busy in (0, a.busy):
        procs = [subprocess.Popen([sys.executable, "-c", BUSY]) for _ in range(busy)]
        try:
            print(f"## {busy} busy process(es); load average {os.getloadavg()[0]:.1f}")
            for case, args in cases.items():
                times = {v: [] for v in variants}
                for _ in range(a.rounds):
                    for v, (extra, env) in variants.items():
                        times[v].append(run(args + extra, env, tmp)[0])
                ref = min(times["--threads 1"])
                for v, ts in times.items():
                    print(f"{case:12s} {v:45s} work {', '.join(f'{x:.2f}' for x in ts)} s; "
                          f"best / best(--threads 1) = {min(ts) / ref:.2f}")
        finally:
            for p in procs:
                p.kill()
                p.wait()


if __name__ == "__main__":
    main()
