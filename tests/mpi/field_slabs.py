"""Run under ``mpiexec -n N``: every rank advances its slab of many small fields through the MPI
halo exchange; rank 0 gathers the slabs and compares them with a one-process solver, bit for bit,
and the rank-reduced observables with the whole-field definitions (1e-12 relative).

Usage: mpiexec -n N python tests/mpi/field_slabs.py [--backend cpu|cuda] [--quick]
Prints one line per failing case and "checked K cases" on rank 0; exit 1 on any failure.
"""
from __future__ import annotations

import argparse
import itertools
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cpu")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--precision", default="both", choices=["both", "float64", "float32"])
    ap.add_argument("--thick-only", action="store_true",
                    help="only the cases thick enough for the boundary-first order")
    a = ap.parse_args()

    from simengine.field import observables as obs
    from simengine.field.backends import make_solver
    from simengine.field.distributed import make_rank_solver, rank_observables
    from simengine.field.initial import noise, noise_rows
    from simengine.field.model import Boundary, CahnHilliard, Grid
    from simengine.parallel import world

    comm = world()
    assert comm.size > 1, "run me under mpiexec -n 2 or more"
    if a.backend == "cuda":
        from simengine.parallel import bind_gpu

        bind_gpu(comm)  # one GPU per rank where there are several (the peer exchange)
    shapes = {1: (23,), 2: (13, 9), 3: (7, 6, 5)}
    if a.backend == "cuda":
        shapes = {1: (16,), 2: (12, 8), 3: (7, 4, 4)}
    kernels = ("global", "shared", "texture", "combined")
    bounds = ("periodic", "mirror", "fixed")
    precisions = ("float64", "float32") if a.precision == "both" else (a.precision,)
    cases = list(itertools.product((1, 2, 3), bounds, kernels, precisions))
    if a.quick or a.backend == "cuda":
        cases = [c for i, c in enumerate(cases) if c[3] == "float64" or i % 4 == 0]
    # slabs thick enough for the boundary-first order (end rows first, their exchange while the
    # interior runs), with the default launch (no block: on a GPU the shared-memory march in 3-D)
    thick = {2: (26, 40), 3: (22, 12, 40)}
    cases += [(3, "periodic", "texture", "float64", "thick"), (3, "fixed", "texture", "float32",
                                                               "thick"),
              (3, "mirror", "global", "float64", "thick"), (2, "periodic", "texture", "float64",
                                                            "thick")]
    if a.thick_only:
        cases = cases[-4:]
    failures = 0
    for ndim, bkind, kernel, prec, *thick_case in cases:
        shape = thick[ndim] if thick_case else shapes[ndim]
        model = CahnHilliard(mobility=1.0, kappa=0.5)
        grid = Grid(shape, 1.0)
        boundary = Boundary(bkind, 0.2 if bkind == "fixed" else 0.0)
        kw = dict(kernel=kernel, precision=prec, integrator="rk2", dt=0.01)
        if a.backend == "cuda" and not thick_case:
            kw["block"] = {1: [32], 2: [8, 8], 3: [8, 4, 4]}[ndim]
        solver, slab, slabs = make_rank_solver(comm, model, grid, boundary, backend=a.backend,
                                               **kw)
        solver.load(noise_rows(shape, slab.start, slab.stop, 0.1, 0.3, 7, np.dtype(prec)))
        solver.advance(4)
        red = rank_observables(comm, solver, slabs, model, grid)
        blocks = comm.gather(red["phi"], root=0)
        if comm.rank == 0:
            ref = make_solver(model, grid, boundary, backend=a.backend, **kw)
            ref.load(noise(shape, 0.1, 0.3, 7, np.dtype(prec)))
            ref.advance(4)
            whole = ref.state()
            got = np.concatenate(blocks, axis=0)
            tag = f"{ndim}D {shape} {bkind} {kernel} {prec} on {comm.size} ranks"
            if not np.array_equal(got, whole):
                failures += 1
                print(f"FIELD DIFFERS: {tag}: max |diff| {np.abs(got - whole).max():.3g}",
                      flush=True)
            want = obs.reductions(whole, model, grid, boundary)
            want["length"] = obs.characteristic_length(whole, grid.spacing, boundary.kind)
            for k, v in want.items():
                if not np.isclose(red[k], v, rtol=1e-12, atol=1e-14 * abs(v) + 1e-300):
                    failures += 1
                    print(f"OBSERVABLE {k} DIFFERS: {tag}: {red[k]!r} vs {v!r}", flush=True)
    failures = comm.bcast(failures, root=0)
    if comm.rank == 0:
        print(f"checked {len(cases)} cases on {comm.size} ranks ({a.backend}), {failures} failed",
              flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
