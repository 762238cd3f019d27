"""Field strong scaling over MPI ranks: 1 process vs N ranks (one slab of axis 0 each).

Driver (prints the table): it launches itself once per rank count, in the same run:
    CPU (target: 2 ranks × 1 thread ≥ 1.7× one process × 1 thread on 2D 1024² fp64):
        python benchmarks/bench_field_mpi.py --backend cpu --ranks 1,2 --cases 2d1024
    GPU host with 2 GPUs (one GPU per rank; Open MPI, host-staged halos):
        python benchmarks/bench_field_mpi.py --backend cuda --ranks 1,2 \\
            --launcher "mpirun --allow-run-as-root" --cases 2d16384,3d512,3d1024
The one-process run is the plain solver (no halo); N ranks run slab solvers of the same plan
exchanging its halo (2 rows per stage for the unfused stages, 4 rows per step for a fused step):
device to device from the neighbour's buffer where the GPUs share a node ("halo" = peer, CUDA
IPC), else through host buffers (host; ``SIMENGINE_HALO=host`` forces it). "halo %" is the share
of the step spent in the exchange (waiting for the GPU, barrier and copies); a fused step on
peer slabs overlaps the exchange with its interior, so there the wait is the interior's compute
and the share is not exposed time. GPU runs measure the honest roofline (best device
copy, benchmarks/roofline.py) first.
Bandwidth per GPU counts the words a step must move per cell: 2 for a fused RK2 step (φⁿ read,
φⁿ⁺¹ written), 5 for the unfused stages. ``--fused false`` runs the unfused stages (2 halo rows
before each stage) where ``auto`` runs a fused form (4 halo rows once per step).
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import time

import numpy as np

CASES = {
    "2d1024": ((1024, 1024), 400, "texture"),
    "2d4096": ((4096, 4096), 200, "texture"),
    "2d16384": ((16384, 16384), 100, "texture"),
    "3d256": ((256, 256, 256), 100, "texture"),
    "3d512": ((512, 512, 512), 40, "texture"),
    "3d1024": ((1024, 1024, 1024), 10, "texture"),
}


def worker(a):
    from simengine.field.backends import make_solver
    from simengine.field.distributed import make_rank_solver
    from simengine.field.initial import noise_rows
    from simengine.field.model import Boundary, CahnHilliard, Grid
    from simengine.parallel import bind_gpu, world

    comm = world()
    dev = bind_gpu(comm) if a.backend == "cuda" else None
    shape, steps, kernel = CASES[a.case]
    steps = a.steps or steps
    model = CahnHilliard(mobility=1.0, kappa=1.0)
    grid = Grid(shape, 1.0)
    boundary = Boundary("periodic", 0.0)
    kw = dict(kernel=kernel, precision=a.precision, integrator="rk2", dt=0.01,
              fused={"auto": None, "true": True, "false": False}[a.fused])
    if comm.size > 1:
        solver, slab, _ = make_rank_solver(comm, model, grid, boundary, backend=a.backend, **kw)
        start, stop = slab.start, slab.stop
        ex = solver.exchange
    else:
        solver = make_solver(model, grid, boundary, backend=a.backend, **kw)
        start, stop, ex = 0, shape[0], None
    solver.load(noise_rows(shape, start, stop, 0.0, 0.05, 1, np.dtype(a.precision)))

    def sync():
        if a.backend == "cuda":
            from numba import cuda
            cuda.synchronize()
        comm.barrier()

    solver.advance(3)  # compile, tune, first touch
    sync()
    if ex is not None:
        ex.seconds = 0.0
        if hasattr(ex, "parts"):
            ex.parts[:] = 0
    t = time.perf_counter()
    solver.advance(steps)
    sync()
    el = time.perf_counter() - t
    halo = ex.seconds if ex is not None else 0.0
    parts = (ex.parts / max(1, steps)).tolist() if hasattr(ex, "parts") else None
    res = comm.gather({"el": el, "halo": halo, "rows": stop - start, "dev": dev,
                       "parts": parts}, root=0)
    if comm.rank == 0:
        cells_local = max(r["rows"] for r in res) * int(np.prod(shape[1:]))
        el = max(r["el"] for r in res)
        words = 2 if getattr(solver, "fused_plan", None) is not None else 5
        bw = words * cells_local * np.dtype(a.precision).itemsize * steps / el
        print("RESULT " + json.dumps({"ms": 1e3 * el / steps, "bw": bw,
                                      "halo": max(r["halo"] for r in res) / el,
                                      "exchange": {"PeerHaloExchange": "peer",
                                                   "MPIHaloExchange": "host"}.get(
                                          type(ex).__name__, "–")
                                      + (" + overlap" if getattr(ex, "overlap", False)
                                         else "")
                                      + (" (no overlap: " + ex.stream_note + ")"
                                         if getattr(ex, "stream_note", None) else ""),
                                      "parts": [r["parts"] for r in res],
                                      "name": solver.name,
                                      "plan": getattr(solver, "plan_summary", "")}),
              flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="2d1024")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--precision", default="float64")
    ap.add_argument("--launcher", default="mpiexec")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--fused", default="auto", choices=["auto", "true", "false"])
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--case")
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a)
    threads = a.threads if a.threads is not None else (1 if a.backend == "cpu" else 0)
    env = dict(os.environ)
    if threads:
        env["NUMBA_NUM_THREADS"] = str(threads)
    dev = "cpu"
    roof = None
    if a.backend == "cuda":
        from numba import cuda
        dev = (lambda n: n.decode() if isinstance(n, bytes) else n)(cuda.get_current_device().name)
        sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
        from roofline import copy_roofline

        roof = copy_roofline()[0]
        cuda.close()
    print(f"# bench_field_mpi {time.strftime('%Y-%m-%d')} backend={a.backend} device={dev} "
          f"{a.precision} launcher='{a.launcher}' threads/rank={threads or 'all'}"
          + (f" honest roofline {roof / 1e9:.0f} GB/s" if roof else ""))
    print("| case | ranks | solver | ms/step | speed-up | efficiency | GB/s per rank "
          "| % of roofline | halo | halo % |")
    print("|---|---|---|---|---|---|---|---|---|---|")
    ranks = [int(x) for x in a.ranks.split(",")]
    for case in a.cases.split(","):
        base = None
        for n in ranks:
            cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--case", case,
                   "--backend", a.backend, "--precision", a.precision, "--steps", str(a.steps),
                   "--fused", a.fused]
            if n > 1:
                cmd = shlex.split(a.launcher) + ["-n", str(n)] + cmd
            r = subprocess.run(cmd, capture_output=True, text=True, env=env)
            line = [ln for ln in r.stdout.splitlines() if ln.startswith("RESULT ")]
            if r.returncode != 0 or not line:
                print(f"| {case} | {n} | failed: {r.stderr.strip().splitlines()[-1:]} |||||||")
                continue
            res = json.loads(line[0][7:])
            base = base or res["ms"] * n / ranks[0] if base is None else base
            if n == ranks[0]:
                base = res["ms"]
            sp = base / res["ms"]
            frac = f"{100 * res['bw'] / roof:.0f}%" if roof else "–"
            if res.get("plan"):
                print(f"# {case} on {n}: plan {res['plan']}", flush=True)
            if res.get("parts") and res["parts"][0]:
                print("# per step and rank, ms waiting for the GPU / in the barrier / copying: "
                      + "; ".join(" / ".join(f"{1e3 * x:.3f}" for x in p)
                                  for p in res["parts"]), flush=True)
            print(f"| {case} {CASES[case][0]} | {n} | {res['name']} | {res['ms']:.3f} | "
                  f"{sp:.2f}× | {100 * sp * ranks[0] / n:.0f}% | {res['bw'] / 1e9:.0f} | "
                  f"{frac} | {res.get('exchange', '–')} | {100 * res['halo']:.1f} |", flush=True)


if __name__ == "__main__":
    main()
