"""Run under ``mpiexec -n N``: the coarsening measures of slab solvers (each rank's crossings
with the next slab's first row, the shells of the slab S(k)) equal the one-process values of the
gathered field (1e-12 relative; the energy length bit for bit from F and the mean).

Usage: mpiexec -n N python tests/mpi/field_measures.py [--backend cpu|cuda]
With ``--backend cuda`` (a GPU machine with CuPy) the slabs stay on the GPUs: the crossings
are summed there and the S(k) is the device slab spectrum. Prints one line per failing case
and "checked K cases" on rank 0; exit 1 on any failure.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--backend", default="cpu")
    a = ap.parse_args()

    from simengine.field.distributed import make_rank_solver, rank_observables
    from simengine.field.initial import noise_rows
    from simengine.field.measuring import Measurer
    from simengine.field.model import Boundary, CahnHilliard, Grid
    from simengine.field.observables import length_and_radial, reductions
    from simengine.parallel import world

    comm = world()
    assert comm.size > 1, "run me under mpiexec -n 2 or more"
    if a.backend == "cuda":
        from simengine.parallel import bind_gpu

        bind_gpu(comm)
    cases = [((23,), "periodic"), ((13, 9), "periodic"), ((14, 11), "mirror"),
             ((7, 6, 5), "periodic"), ((8, 5, 6), "mirror")]
    if a.backend == "cuda":
        cases = [((300, 256), "periodic"), ((64, 48, 40), "mirror")]
    failures = 0
    for shape, bkind in cases:
        model, grid = CahnHilliard(mobility=1.0, kappa=0.5), Grid(shape, 0.8)
        boundary = Boundary(bkind, 0.0)
        solver, slab, slabs = make_rank_solver(comm, model, grid, boundary, backend=a.backend,
                                               kernel="global", precision="float64",
                                               integrator="rk2", dt=0.01)
        solver.load(noise_rows(shape, slab.start, slab.stop, 0.05, 0.5, 11, np.dtype("float64")))
        solver.advance(5)
        ms = Measurer(model, grid, boundary)
        spectrum = None
        if a.backend == "cuda":
            from simengine.field.spectrum_cuda import device_spectrum_for

            spectrum, note = device_spectrum_for(solver, grid, boundary, comm.size, comm=comm,
                                                 slabs=slabs, radial=True)
            if spectrum is None:
                failures += 1
                if comm.rank == 0:
                    print(f"NOT ON THE DEVICE {shape}: {note}", flush=True)
                continue
        red = rank_observables(comm, solver, slabs, model, grid, spectrum=spectrum,
                               radial=True, level=ms.area_level)
        row = {"free_energy": red["free_energy"], "mass": red["mass"]}
        ms.complete(row, red["interface_area"], (red["structure_factor_k"],
                                                 red["structure_factor"]))
        blocks = comm.gather(solver.state(), root=0)
        if comm.rank == 0:
            whole = np.concatenate(blocks, axis=0)
            want = reductions(whole, model, grid, boundary)
            _, radial = length_and_radial(whole, grid.spacing, bkind, radial=True)
            ref = {"free_energy": want["free_energy"], "mass": want["mass"]}
            Measurer(model, grid, boundary).complete(ref, ms.host_area(whole), radial)
            tag = f"{shape} {bkind} on {comm.size} ranks ({a.backend})"
            if not np.isclose(red["interface_area"], ms.host_area(whole), rtol=1e-12, atol=0):
                failures += 1
                print(f"AREA DIFFERS: {tag}: {red['interface_area']!r} vs "
                      f"{ms.host_area(whole)!r}", flush=True)
            for k, v in ref.items():
                if not np.isclose(row[k], v, rtol=1e-10, atol=0, equal_nan=True):
                    failures += 1
                    print(f"{k} DIFFERS: {tag}: {row[k]!r} vs {v!r}", flush=True)
    failures = comm.bcast(failures, root=0)
    if comm.rank == 0:
        print(f"checked {len(cases)} cases on {comm.size} ranks ({a.backend}), {failures} failed",
              flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
