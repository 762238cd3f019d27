"""One profiled step of each fused form for Nsight Compute: the warp-marching 2-D step at
4096² fp64 and fp32 and the fused 3-D step at 256³ fp64 (periodic, texture loads). Every
solver is built and stepped twice first (compilation, the fitted chunk lengths), then one step
each runs between ``cuda.profile_start()`` and ``profile_stop()``::

    ncu --clock-control none --profile-from-start off --section SpeedOfLight \\
        --section Occupancy --section SchedulerStats --section WarpStateStats \\
        python benchmarks/diag_ncu_fused.py [--cases 4096:float64,4096:float32,256x3:float64]
"""
from __future__ import annotations

import argparse

import numpy as np
from numba import cuda

from simengine.field.cuda_solver import CudaFieldSolver
from simengine.field.model import Boundary, CahnHilliard, Grid


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="4096:float64,4096:float32,256x3:float64")
    a = ap.parse_args(argv)
    solvers = []
    for case in a.cases.split(","):
        size, prec = case.split(":")
        n, _, nd = size.partition("x")
        shape = (int(n),) * int(nd or 2)
        s = CudaFieldSolver(CahnHilliard.classic(), Grid(shape), Boundary("periodic"),
                            kernel="texture", precision=prec, dt=1e-3, fused=True)
        s.use_graphs = False
        s.load(np.random.default_rng(0).uniform(-0.1, 0.1, shape))
        s.advance(2)
        print(f"{case}: {s.name} [{s.plan_summary}]", flush=True)
        solvers.append(s)
    cuda.synchronize()
    start = getattr(cuda, "profile_start", lambda: None)  # (the simulator has none)
    stop = getattr(cuda, "profile_stop", lambda: None)
    start()
    for s in solvers:
        s.advance(1)
    cuda.synchronize()
    stop()


if __name__ == "__main__":
    main()
