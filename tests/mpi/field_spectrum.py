"""Run under ``mpiexec -n N``: the slab spectrum's transpose between real ranks.

Every rank transforms its slab of small fields (1-D to 3-D, odd and even axes, periodic and
mirror), packs and exchanges the blocks, and checks its share of k-space against the whole
field's spectrum (host arrays, ``alltoall``: the host transport). With ``--gpu`` (a GPU machine
with CuPy) also :class:`DeviceSlabSpectrum` with the host transport and with the device-to-device
one (CUDA IPC; ``--require-peer``: fail if it cannot run): the length scale and the radial S(k)
summed over the ranks equal the one-process host values within 1e-12.

Usage: mpiexec -n N python tests/mpi/field_spectrum.py [--gpu [--require-peer]]
Prints one line per failing case and "checked K cases" on rank 0; exit 1 on any failure.
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

SHAPES = [(16,), (12, 10), (7, 9), (9, 2), (6, 5, 8), (5, 4, 3), (7, 3, 5)]
GPU_SHAPES = [(64,), (63, 50), (20, 17, 12), (17, 16, 9)]


def whole_spectrum(phi, kind):
    import scipy.fft

    from simengine.field.spectrum import COSINE

    x = phi - phi.mean()
    if kind == COSINE:
        y = scipy.fft.dctn(x, type=2, norm="ortho")
    else:
        y = np.fft.fft(x) if x.ndim == 1 else np.fft.rfftn(x)
    return y[:, None] if y.ndim == 1 else y


def host_cases(comm, rows_of):
    from simengine.field import slab_transpose as st
    from simengine.field.spectrum import COSINE, FOURIER

    failures, cases = 0, 0
    for shape in SHAPES:
        for kind in (FOURIER, COSINE):
            rows = rows_of(shape[0])
            a, b = rows[comm.rank]
            phi = np.random.default_rng(5).uniform(-1, 1, shape)
            layout, dtype = st.layout_for(shape, rows, kind)
            t = st.HostTransport(layout, comm.rank, dtype, comm.alltoall)
            flat, _, _ = st.slab_share(phi[a:b] - phi.mean(), shape, rows, comm.rank, kind, t)
            c0, c1 = layout.cols[comm.rank]
            want = whole_spectrum(phi, kind)[:, c0:c1]
            got = (np.zeros(0) if flat is None else
                   flat.view(np.complex128) if kind == FOURIER else flat)
            ok = got.size == want.size and np.allclose(
                got.reshape(want.shape), want, rtol=0, atol=1e-12 * np.abs(want).max(initial=1))
            cases += 1
            if not ok:
                failures += 1
                print(f"SHARE DIFFERS: {shape} {kind} rank {comm.rank}", flush=True)
    return cases, failures


def gpu_cases(comm, rows_of, require_peer):
    from numba import cuda

    from simengine.field import observables as obs
    from simengine.field.spectrum import radial_sums, shell_profile
    from simengine.field.spectrum_cuda import DeviceSlabSpectrum

    failures, cases, used = 0, 0, set()
    for shape in GPU_SHAPES:
        for boundary in ("periodic", "mirror"):
            rows = rows_of(shape[0])
            a, b = rows[comm.rank]
            phi = np.random.default_rng(9).uniform(-1, 1, shape)
            h = 0.7
            want = obs.characteristic_length(phi, h, boundary)
            want_k, want_s = shell_profile(*radial_sums(phi, h, boundary))
            for mode in ("host", "peer" if require_peer else "auto"):
                ds = DeviceSlabSpectrum(shape, h, boundary, rows, comm.rank).connect(comm, mode)
                used.add(ds.transport.name)
                field = cuda.to_device(np.ascontiguousarray(phi[a:b]).reshape(-1))
                for _ in range(2):  # a second observation reuses the buffers
                    sums, shells = ds.partials(field, float(phi.mean()), comm.alltoall,
                                               radial=True)
                    length = obs.length_from_partials(comm.allgather(sums), phi.size)
                    tot = np.sum(np.asarray(comm.allgather(shells)), axis=0)
                    k, s = shell_profile(*tot)
                    cases += 1
                    tag = f"{shape} {boundary} {ds.transport.name} rank {comm.rank}"
                    if not np.isclose(length, want, rtol=1e-12, atol=0):
                        failures += 1
                        print(f"LENGTH DIFFERS: {tag}: {length!r} vs {want!r}", flush=True)
                    if not (np.allclose(k, want_k, rtol=1e-12, equal_nan=True)
                            and np.allclose(s, want_s, rtol=1e-12, atol=0, equal_nan=True)):
                        failures += 1
                        print(f"RADIAL S(k) DIFFERS: {tag}", flush=True)
    return cases, failures, used


def solver_cases(comm, require_peer):
    """The run's path: slab solvers on the ranks, :func:`device_spectrum_for` (the transport
    chosen once, named in its note), :func:`rank_observables` with the device spectrum against
    the gathered field's one-process host values."""
    from simengine.field import observables as obs
    from simengine.field.distributed import make_rank_solver, rank_observables
    from simengine.field.initial import noise_rows
    from simengine.field.model import Boundary, CahnHilliard, Grid
    from simengine.field.spectrum import radial_sums, shell_profile
    from simengine.field.spectrum_cuda import device_spectrum_for

    failures, cases, notes = 0, 0, set()
    for shape, bkind in (((48, 48, 48), "periodic"), ((41, 36, 50), "mirror")):
        model, grid = CahnHilliard(mobility=1.0, kappa=0.5), Grid(shape, 1.0)
        boundary = Boundary(bkind, 0.0)
        solver, slab, slabs = make_rank_solver(comm, model, grid, boundary, backend="cuda",
                                               kernel="texture", precision="float64",
                                               integrator="rk2", dt=0.01)
        solver.load(noise_rows(shape, slab.start, slab.stop, 0.0, 0.3, 7, np.dtype("float64")))
        solver.advance(3)
        ds, note = device_spectrum_for(solver, grid, boundary, comm.size, comm=comm,
                                       slabs=slabs, radial=True)
        notes.add(note)
        cases += 1
        if ds is None or (require_peer and "device to device" not in note):
            failures += 1
            print(f"NOT ON THE DEVICE ({shape} {bkind}): {note}", flush=True)
            continue
        red = rank_observables(comm, solver, slabs, model, grid, spectrum=ds, radial=True)
        blocks = comm.gather(solver.state(), root=0)
        if comm.rank == 0:
            whole = np.concatenate(blocks, axis=0)
            want = obs.characteristic_length(whole, 1.0, bkind)
            k, s = shell_profile(*radial_sums(whole, 1.0, bkind))
            if not np.isclose(red["length"], want, rtol=1e-12, atol=0):
                failures += 1
                print(f"RUN LENGTH DIFFERS {shape} {bkind}: {red['length']!r} vs {want!r}",
                      flush=True)
            if not np.allclose(red["structure_factor"], s, rtol=1e-12, atol=0, equal_nan=True):
                failures += 1
                print(f"RUN RADIAL S(k) DIFFERS {shape} {bkind}", flush=True)
    if comm.rank == 0:
        for n in sorted(notes):
            print(f"note: {n}", flush=True)
    return cases, failures


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--require-peer", action="store_true")
    a = ap.parse_args()

    from simengine.field.decomposition import split_rows
    from simengine.parallel import world

    comm = world()
    assert comm.size > 1, "run me under mpiexec -n 2 or more"
    if a.gpu:
        from simengine.parallel import bind_gpu
        bind_gpu(comm)
    rows_of = lambda n: split_rows(n, comm.size)  # noqa: E731
    cases, failures = host_cases(comm, rows_of)
    used = set()
    if a.gpu:
        c, f, used = gpu_cases(comm, rows_of, a.require_peer)
        c2, f2 = solver_cases(comm, a.require_peer)
        cases, failures = cases + c + c2, failures + f + f2
    failures = comm.allreduce(failures)
    if comm.rank == 0:
        how = f" (device transports: {', '.join(sorted(used))})" if used else ""
        print(f"checked {cases} cases on {comm.size} ranks{how}, {failures} failed", flush=True)
    sys.exit(1 if failures else 0)


if __name__ == "__main__":
    main()
