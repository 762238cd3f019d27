"""Run under ``mpiexec -n N``: the fused RK2 forms (fused-frame, fused-warp) on one slab per rank
(4-row halo, exchanged once per step by the rank exchanger: host-staged under the simulator,
peer copies or CUDA-aware MPI on GPUs) give the whole-grid fused step's field bit for bit.

Usage: mpiexec -n N python tests/mpi/field_fused_slabs.py [--cases a,b,...] [--steps S]
A case is ``form:boundary:precision`` (e.g. ``warp:fixed:float32``); default: every form ×
boundary × precision. Rank 0 prints one line per failing case, the plan line of every case
(``plan ...``) and "checked K cases"; exit 1 on any failure.
"""
from __future__ import annotations

import argparse
import itertools
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--cases", default="")
    ap.add_argument("--steps", type=int, default=0)
    a = ap.parse_args()

    from simengine.field import plans
    from simengine.field.backends import make_solver
    from simengine.field.cuda.config import SIMULATOR
    from simengine.field.distributed import make_rank_solver
    from simengine.field.initial import noise, noise_rows
    from simengine.field.model import Boundary, CahnHilliard, Grid
    from simengine.parallel import bind_gpu, world

    comm = world()
    assert comm.size > 1, "run me under mpiexec -n 2 or more"
    bind_gpu(comm)
    if a.cases:
        cases = [tuple(c.split(":")) for c in a.cases.split(",")]
    else:
        cases = list(itertools.product(("frame", "warp"), ("periodic", "mirror", "fixed"),
                                       ("float64", "float32")))
    steps = a.steps or (2 if SIMULATOR else 50)
    failures = 0
    for form, bkind, prec in cases:
        # simulator: tiny grids (a warp writes 56 columns; 8-row chunks); GPU: grids no tile or
        # chunk divides, the warp form above the size cap as auto would run it
        if SIMULATOR:
            shape = ((16, 16) if comm.size == 2 else (20, 16)) if form == "warp" else (12, 8)
            kw = dict(march=8) if form == "warp" else {}
            plans.FUSED_SMALL_CELLS = 16 if form == "warp" else 1 << 18
        else:
            shape = (1003, 1001) if form == "warp" else (203, 131)
            kw = {}
        model = CahnHilliard(mobility=0.7, kappa=1.3)
        grid = Grid(shape, 0.9)
        boundary = Boundary(bkind, 0.3 if bkind == "fixed" else 0.0)
        kw.update(kernel="texture", precision=prec, integrator="rk2", dt=1e-3, fused=True)
        solver, slab, _slabs = make_rank_solver(comm, model, grid, boundary, backend="cuda",
                                                **kw)
        solver.load(noise_rows(shape, slab.start, slab.stop, 0.1, 0.5, 7, np.dtype(prec)))
        solver.advance(steps)
        blocks = comm.gather(solver.state(), root=0)
        summaries = comm.gather(solver.plan_summary, root=0)
        if comm.rank == 0:
            ref = make_solver(model, grid, boundary, backend="cuda", **kw)
            ref.load(noise(shape, 0.1, 0.5, 7, np.dtype(prec)))
            ref.advance(steps)
            whole = ref.state()
            got = np.concatenate(blocks, axis=0)
            tag = f"{form} {bkind} {prec} {shape} on {comm.size} ranks"
            want = "fused-" + form
            if not all(s.startswith(want) and "halo 4" in s for s in summaries):
                failures += 1
                print(f"PLAN DIFFERS: {tag}: {summaries}", flush=True)
            if not np.array_equal(got, whole):
                failures += 1
                bad = np.argwhere(got != whole)
                print(f"FIELD DIFFERS: {tag}: {len(bad)} cells, first {bad[:3].tolist()}, "
                      f"max |diff| {np.abs(got - whole).max():.3g}", flush=True)
            print(f"plan {tag}: " + " | ".join(summaries), flush=True)
    failures = comm.bcast(failures, root=0)
    if comm.rank == 0:
        print(f"checked {len(cases)} cases on {comm.size} ranks, {failures} failed", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
