"""A field spread over MPI ranks: one slab of axis 0 per rank, halos exchanged between stages.

The distributed twin of building a solver with :func:`simengine.field.backends.make_solver`:
:func:`make_rank_solver` builds this rank's slab solver (``field/decomposition.py``: halo depth 2,
no halo on a non-periodic global face, so each cell sees exactly the arithmetic of the
one-process run and the field is bit-identical for any number of ranks) with an
:class:`MPIHaloExchange` as its ``exchange`` hook, and :func:`rank_observables` reduces the
observables of all slabs (mass, free energy, min, max, the S(k) length scale) in float64.

Halos travel through host buffers (the CUDA solver copies its boundary rows to pinned host
memory): the GPU host's MPI is not CUDA-aware, and a device buffer handed to it crashes it.
"""
from __future__ import annotations

import time

import numpy as np

from .decomposition import make_slabs


class MPIHaloExchange:
    """The ``exchange(array)`` hook of one rank's slab solver: sends its two top owned rows to the
    upper neighbour while receiving the lower neighbour's into its low halo, then the mirror
    image (``MPI_Sendrecv``; a missing neighbour at a non-periodic face is skipped). Collective
    between neighbours. ``seconds`` accumulates the time spent, for the benchmarks."""

    def __init__(self, comm, slab):
        self.comm = comm
        self.slab = slab
        self.solver = None
        self.seconds = 0.0
        self.calls = 0
        self._recv = None

    def bind(self, solver):
        self.solver = solver
        shp = solver.halo_shape()
        self._recv = (np.empty(shp, solver.dtype), np.empty(shp, solver.dtype))

    def __call__(self, array):
        t = time.perf_counter()
        s, sol = self.slab, self.solver
        low_rows, high_rows = sol.boundary_rows(array)
        recv_low, recv_high = self._recv
        # phase 1: my top rows go up; the lower neighbour's top rows fill my low halo
        self.comm.sendrecv(high_rows, s.upper, recv_low, s.lower, tag=11)
        # phase 2: my bottom rows go down; the upper neighbour's bottom rows fill my high halo
        self.comm.sendrecv(low_rows, s.lower, recv_high, s.upper, tag=12)
        sol.set_halo(array, recv_low if s.lower is not None else None,
                     recv_high if s.upper is not None else None)
        self.seconds += time.perf_counter() - t
        self.calls += 1


def rank_slabs(comm, n0: int, boundary_kind: str):
    """Balanced slabs of axis 0 (``n0`` rows), one per rank."""
    return make_slabs(int(n0), comm.size, boundary_kind)


def make_rank_solver(comm, model, grid, boundary, *, backend="auto", **kwargs):
    """This rank's slab solver, exchanging halos through ``comm``. Returns (solver, slab, slabs)."""
    from .backends import make_solver

    slabs = rank_slabs(comm, grid.shape[0], boundary.kind)
    slab = slabs[comm.rank]
    ex = MPIHaloExchange(comm, slab)
    solver = make_solver(model, grid, boundary, backend=backend, slab=slab, exchange=ex,
                         **kwargs)
    ex.bind(solver)
    return solver, slab, slabs


def rank_observables(comm, solver, slabs, model, grid, length=True) -> dict:
    """Mass, free energy, min, max (and the S(k) length scale) of the whole field from the slabs
    of all ranks, on every rank (collective). Returns also ``phi``: this rank's owned rows."""
    from .observables import (FieldPartials, length_from_partials, merge_partials,
                              structure_factor_partials)

    part = solver.partials().to_array()
    parts = comm.allgather(part)
    red = merge_partials([FieldPartials.from_array(p) for p in parts], model, grid)
    phi = solver.state()
    if length:
        rows = [(s.start, s.stop) for s in slabs]
        sk = structure_factor_partials(phi, rows, comm.rank, grid.shape, float(grid.spacing),
                                       red["mass"], comm.alltoall)
        red["length"] = length_from_partials(comm.allgather(sk), int(np.prod(grid.shape)))
    red["phi"] = phi
    return red
