"""Network scenarios on 1 vs N MPI ranks: seconds, speed-up and parallel efficiency.

Each case is run through the real CLI (``[launcher -n N] python -m simengine run``), once per
rank count, in the same invocation of this script; the time reported is the run's own work time
(``/statistics/elapsed``: sources processed, merges and checkpoints included; graph generation and
start-up excluded, they are printed separately as wall time). Results of every N are checked
against N = 1 (integer statistics equal, floats within 1e-12 relative).

CPU (the issue's target: 2 ranks × 1 thread ≥ 1.7× one process × 1 thread):
    python benchmarks/bench_network_mpi.py --backend cpu --ranks 1,2 --cases ba_cpu,ring_cpu
GPU host with two GPUs (one GPU per rank, Open MPI):
    python benchmarks/bench_network_mpi.py --backend cuda --ranks 1,2 \\
        --launcher "mpirun --allow-run-as-root --oversubscribe" --cases ring,free,ba,rw6,rw6w
All 10⁶ sources of the 10⁶-vertex graph, with each rank's profile (SIMENGINE_PROFILE):
    ... --cases rw6all --profile
The CLI's overhead: the same case run by the CLI and, in this process, by the engine alone
(``NetworkJob.work`` over all sources after the same start-up, no output):
    python benchmarks/bench_network_mpi.py --backend cuda --ranks 1 --cases rw7w8 --reference

Columns: "run s" is /statistics/elapsed (the work; output writes before the last excluded), "CLI
s" the "done: ... in X s" the CLI prints (the final output write included), "start-up" what the
log says was compiled and uploaded before the timer.
"""
from __future__ import annotations

import argparse
import json
import os
import re
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py
import numpy as np

CASES = {
    # seed families at n = 30 000, all sources (GPU)
    "ring": ("watts ring α-model n=30000 k=10, all sources",
             "{type: watts_alpha, n: 30000, k: 10, ring: true, seed: 1}",
             "none", "all"),
    "free": ("watts α-model no substrate n=30000 k=10, all sources",
             "{type: watts_alpha, n: 30000, k: 10, ring: false, seed: 1}",
             "none", "all"),
    "ba": ("Barabási–Albert n=30000 m=50, all sources",
           "{type: barabasi_albert, n: 30000, m: 50, seed: 1}", "none", "all"),
    # 10^6-vertex degree-6 graphs, 16 384 sampled sources (GPU)
    "rw6": ("G(n,m) n=1e6 degree 6 unweighted, 16384 sources",
            "{type: gnm, n: 1000000, m: 3000000, seed: 1}", "none",
            "{sample: 16384, seed: 1}"),
    "rw6w": ("G(n,m) n=1e6 degree 6 weights 1-10, 16384 sources",
             "{type: gnm, n: 1000000, m: 3000000, seed: 1}",
             "{type: uniform_int, low: 1, high: 10, seed: 1}", "{sample: 16384, seed: 1}"),
    # the all-sources job: every vertex of the 10^6-vertex graph a source (msbfs)
    "rw6all": ("G(n,m) n=1e6 degree 6 unweighted, all 1e6 sources",
               "{type: gnm, n: 1000000, m: 3000000, seed: 1}", "none",
               "all, statistics: [mean_distance, diameter, distance_histogram, closeness, "
               "harmonic]"),
    # few sources on a big weighted graph (auto -> nearfar): the CLI's fixed costs
    "rw7w8": ("random_weighted n=1e7 degree 6, 8 sources (nearfar)",
              "{type: random_weighted, n: 10000000, avg_degree: 6, seed: 1}", "null",
              "[0, 1, 2, 3, 4, 5, 6, 7], statistics: [mean_distance, diameter]"),
    # CPU-sized cases (2 ranks × 1 thread vs 1 × 1 thread)
    "ba_cpu": ("Barabási–Albert n=20000 m=5, all sources",
               "{type: barabasi_albert, n: 20000, m: 5, seed: 1}", "none", "all"),
    "ring_cpu": ("watts ring α-model n=10000 k=10, all sources",
                 "{type: watts_alpha, n: 10000, k: 10, ring: true, seed: 1}", "none", "all"),
    "w_cpu": ("G(n,m) n=20000 degree 6 weights 1-10, 2000 sources",
              "{type: gnm, n: 20000, m: 60000, seed: 1}",
              "{type: uniform_int, low: 1, high: 10, seed: 1}", "{sample: 2000, seed: 1}"),
}

SCENARIO = """kind: network
name: {name}
graph: {{generator: {gen}, weights: {weights}}}
metrics: {{sources: {sources}, algorithm: auto}}
solver: {{backend: {backend}}}
output: {{checkpoint_every: 1000000000}}
"""


def scenario(key, backend, workdir):
    title, gen, weights, sources = CASES[key]
    scen = Path(workdir) / f"{key}.yaml"
    scen.write_text(SCENARIO.format(name=key, gen=gen, weights=weights, sources=sources,
                                    backend=backend))
    return title, scen


def run_case(key, ranks, backend, launcher, workdir, threads, profile=False):
    title, scen = scenario(key, backend, workdir)
    out = Path(workdir) / f"{key}-{ranks}.h5"
    env = dict(os.environ)
    if threads:
        env["NUMBA_NUM_THREADS"] = str(threads)
    prof = Path(workdir) / f"{key}-{ranks}-profile.json"
    if profile:
        env["SIMENGINE_PROFILE"] = str(prof)
    cmd = [sys.executable, "-m", "simengine", "run", str(scen), "-o", str(out),
           "--overwrite"]
    if ranks > 1 or launcher != "mpiexec":
        cmd = shlex.split(launcher) + ["-n", str(ranks)] + cmd
    t = time.perf_counter()
    r = subprocess.run(cmd, capture_output=True, text=True, env=env)
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{key} on {ranks} ranks failed:\n{r.stderr[-3000:]}")
    with h5py.File(out) as f:
        stats = {k: f["statistics"][k][()] for k in f["statistics"]}
        vertex = {k: f["vertex"][k][()] for k in f.get("vertex", {})}
    cli = re.search(r"done: .*, in ([0-9.]+) s", r.stderr)
    start = re.search(r"start-up: ([^>]*) ->", r.stderr)
    ranks_profile = json.loads(prof.read_text()) if profile and prof.exists() else None
    return dict(title=title, elapsed=float(stats["elapsed"]), wall=wall, stats=stats,
                vertex=vertex, cli=float(cli.group(1)) if cli else float("nan"),
                startup=start.group(1).strip().rstrip(",") if start else "",
                profile=ranks_profile, log=r.stderr)


def engine_alone(key, backend, workdir):
    """The same case in this process: the job's start-up, then its work over all sources
    (``NetworkJob.work``, the accumulator read once) — no output, no controller."""
    from simengine.config import load_scenario
    from simengine.control.network_job import NetworkJob

    _, scen = scenario(key, backend, workdir)
    job = NetworkJob(load_scenario(str(scen)))
    t = time.perf_counter()
    job.work(job.sources)
    job.stats.results()
    return time.perf_counter() - t


def profile_lines(profile):
    """One line per rank: the spans the run recorded (SIMENGINE_PROFILE)."""
    out = []
    for r, d in enumerate(profile or []):
        spans = ", ".join(f"{k} {v:.3f} s" + (f" ({d['counts'][k]} sources)"
                                               if d["counts"].get(k) else "")
                          for k, v in d["seconds"].items())
        out.append(f"#   rank {r}: {spans}")
    return out


def check(a, b):
    sa, va = a
    sb, vb = b
    for k, x in sa.items():
        if k in ("elapsed", "normalized_time"):
            continue
        y = sb[k]
        if isinstance(x, (float, np.floating)) and not float(x).is_integer():
            assert abs(y - x) <= 1e-12 * abs(x), (k, x, y)
        else:
            assert x == y, (k, x, y)
    for k in va:
        np.testing.assert_allclose(vb[k], va[k], rtol=1e-12, atol=1e-300)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="ba_cpu,ring_cpu,w_cpu")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--launcher", default="mpiexec")
    ap.add_argument("--threads", type=int, default=None,
                    help="NUMBA_NUM_THREADS per rank (default: 1 on cpu, unset on cuda)")
    ap.add_argument("--profile", action="store_true",
                    help="print each rank's time spans (SIMENGINE_PROFILE) under each row")
    ap.add_argument("--reference", action="store_true",
                    help="also time each case's engine alone in this process (one GPU/process)")
    a = ap.parse_args(argv)
    threads = a.threads if a.threads is not None else (1 if a.backend == "cpu" else 0)
    ranks = [int(x) for x in a.ranks.split(",")]
    try:
        import numba
        from numba import cuda
        dev = (lambda n: n.decode() if isinstance(n, bytes) else n)(cuda.get_current_device().name) if a.backend == "cuda" else "cpu"
    except Exception:
        dev = "?"
    print(f"# bench_network_mpi {time.strftime('%Y-%m-%d')} backend={a.backend} device={dev} "
          f"launcher='{a.launcher}' threads/rank={threads or 'all'} numba {numba.__version__}")
    print("| case | ranks | run s | CLI s | start-up (log) | wall s | speed-up | efficiency |")
    print("|---|---|---|---|---|---|---|---|")
    with tempfile.TemporaryDirectory() as wd:
        for key in a.cases.split(","):
            base = None
            for n in ranks:
                r = run_case(key, n, a.backend, a.launcher, wd, threads, a.profile)
                el = r["elapsed"]
                if base is None:
                    base = (el, (r["stats"], r["vertex"]))
                    first = r
                    sp = 1.0
                else:
                    check(base[1], (r["stats"], r["vertex"]))
                    sp = base[0] / el
                print(f"| {r['title']} | {n} | {el:.3f} | {r['cli']:.2f} | {r['startup']} | "
                      f"{r['wall']:.1f} | {sp:.2f}× | {100 * sp / (n / ranks[0]):.0f}% |",
                      flush=True)
                for line in profile_lines(r["profile"]):
                    print(line, flush=True)
                plan = re.search(r"plan: .*", r["log"])      # what ran: the run's plan line
                if plan and n == ranks[0]:
                    print(f"#   {plan.group(0)}", flush=True)
                split = re.search(r"sources split over .*", r["log"])
                if split and a.profile:
                    print(f"#   {split.group(0)}", flush=True)
            if a.reference:
                t = engine_alone(key, a.backend, wd)
                print(f"# {CASES[key][0]}: engine alone in this process {t:.3f} s; the CLI on "
                      f"{ranks[0]} rank(s): run {first['elapsed']:.3f} s, 'done ... in' "
                      f"{first['cli']:.2f} s (+{first['cli'] - t:.2f} s)", flush=True)


if __name__ == "__main__":
    main()
