"""Benchmark of field ensembles on a GPU: M small runs in one launch per stage against M single
runs one after another and against one run of the same total size.

Default case: 64 members of 200² fp64 (the PFHub benchmark-1 size), periodic, RK2, the texture
kernel, against 64 sequential single runs of 200² (what a sweep without ``--ensemble`` does on
one GPU) and one 1600² run (64 · 200² cells). Steady-state time per step is the difference of two
run lengths (``--steps`` and 11× ``--steps``), so start-up and the first launches cancel out;
µs per member-step = µs per step / members.

    python benchmarks/bench_field_ensemble.py [--members 64] [--size 200] [--precision float64]
        [--steps 200] [--kernel texture] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
from numba import cuda

from simengine.field.cuda_solver import CudaFieldSolver
from simengine.field.cuda_tuning import gpu_name
from simengine.field.ensemble import EnsembleSolver
from simengine.field.model import Boundary, CahnHilliard, Grid

MODEL = CahnHilliard.classic()
DT = 1e-3


def steady(advance, n):
    """Seconds per step from runs of n and 11·n steps (host wall clock, synchronised)."""
    times = []
    for steps in (n, 11 * n):
        cuda.synchronize()
        t = time.perf_counter()
        advance(steps)
        cuda.synchronize()
        times.append(time.perf_counter() - t)
    return (times[1] - times[0]) / (10 * n)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--members", type=int, default=64)
    ap.add_argument("--size", type=int, default=200, help="edge of one member's 2-D grid")
    ap.add_argument("--precision", default="float64", choices=("float64", "float32"))
    ap.add_argument("--kernel", default="texture", choices=("texture", "global"))
    ap.add_argument("--boundary", default="periodic", choices=("periodic", "mirror", "fixed"))
    ap.add_argument("--steps", type=int, default=200, help="short run; the long one is 11x")
    ap.add_argument("--json", help="also write the rows to this JSON file")
    a = ap.parse_args(argv)
    if not cuda.is_available():
        sys.exit("needs a CUDA GPU (under NUMBA_ENABLE_CUDASIM=1 only as a smoke test)")
    M, n = a.members, a.size
    big = int(round(n * math.sqrt(M)))
    boundary = Boundary(a.boundary, 0.0)
    kw = dict(kernel=a.kernel, precision=a.precision, dt=DT)
    rng = np.random.default_rng(1)
    phis = rng.uniform(-0.05, 0.05, (M, n, n))
    rows = []

    # one ensemble of M members
    ens = EnsembleSolver(MODEL, Grid((n, n), 1.0), boundary, M, backend="cuda", **kw)
    ens.load(phis)
    ens.advance(2)
    t_ens = steady(ens.advance, a.steps)
    t0 = time.perf_counter()
    ens.reductions()
    t_red = time.perf_counter() - t0
    rows.append(dict(case=f"ensemble {M} x {n}^2", solver=ens.member_name, members=M,
                     cells=M * n * n, s_per_step=t_ens))

    # M single runs, one after another (each to its steady state)
    singles = []
    for m in range(M):
        s = CudaFieldSolver(MODEL, Grid((n, n), 1.0), boundary, **kw)
        s.load(phis[m])
        s.advance(2)
        singles.append(s)
    per = [steady(s.advance, a.steps) for s in singles]
    rows.append(dict(case=f"{M} sequential single {n}^2", solver=singles[0].name, members=M,
                     cells=M * n * n, s_per_step=float(sum(per))))

    # one run of the same total number of cells
    s = CudaFieldSolver(MODEL, Grid((big, big), 1.0), boundary, **kw)
    s.load(rng.uniform(-0.05, 0.05, (big, big)))
    s.advance(2)
    rows.append(dict(case=f"one single {big}^2", solver=s.name, members=1, cells=big * big,
                     s_per_step=steady(s.advance, a.steps)))

    dev = gpu_name()
    print(f"# {dev}, {time.strftime('%Y-%m-%d')}, {a.precision}, {a.kernel}, {a.boundary}, "
          f"RK2, steady state from {a.steps} and {11 * a.steps} steps")
    print(f"# member reductions (mass, free energy, min, max of all {M} members, one launch): "
          f"{t_red * 1e6:.0f} us")
    print("| case | solver | µs per step (all members) | µs per member-step | Gcell-steps/s | "
          "× ensemble time |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        r["us_per_step"] = r["s_per_step"] * 1e6
        r["us_per_member_step"] = r["us_per_step"] / r["members"] if r["members"] > 1 else None
        r["gcells_per_s"] = r["cells"] / r["s_per_step"] / 1e9
        r["ratio"] = r["s_per_step"] / t_ens
        pm = f"{r['us_per_member_step']:.3f}" if r["us_per_member_step"] else "—"
        print(f"| {r['case']} | {r['solver']} | {r['us_per_step']:.1f} | {pm} | "
              f"{r['gcells_per_s']:.2f} | {r['ratio']:.2f} |")
    if a.json:
        with open(a.json, "w") as fh:
            json.dump(dict(gpu=dev, date=time.strftime("%Y-%m-%d"), args=vars(a), rows=rows), fh,
                      indent=1)


if __name__ == "__main__":
    main()
