"""Run under ``mpiexec -n N``: each rank accumulates float partials of its own (disjoint) sources,
:func:`simengine.network.distributed.merge_into` unites them on every rank, and every rank compares
the union with one accumulator that added every partial in one process: integer arrays and the
per-source values equal, column sums within 1e-12 relative. Float partials make the compensation
terms non-zero on some ranks and zero on others (the packed all-reduce must carry them then).

Usage: mpiexec -n N python tests/mpi/network_merge.py
Prints "merge ok on N ranks" on rank 0; exit 1 (one line per failure) otherwise.
"""
from __future__ import annotations

import sys

import numpy as np


def partials(n, seed):
    """Eight partials of disjoint sources with float distances of very different magnitudes
    (rounding errors in the column sums), and one integer-valued partial (no rounding)."""
    from simengine.network.statistics import ChunkPartial

    rng = np.random.default_rng(seed)
    order = rng.permutation(n)
    out = []
    for b in range(9):
        s = order[b * 5:(b + 1) * 5]
        D = rng.random((len(s), n)) * 10.0 ** rng.integers(-6, 4)
        if b == 8:
            D = np.floor(D)
        D[np.arange(len(s)), s] = 0.0
        D[:, rng.random(n) < 0.1] = np.inf
        out.append((b, D, s))
    return out


def main():
    from simengine.network.distributed import merge_into
    from simengine.network.statistics import PathStatistics, reduce_block
    from simengine.parallel import world

    comm = world()
    assert comm.size > 1, "run me under mpiexec -n 2 or more"
    n = 61
    parts = partials(n, 7)
    # rank r takes the batches b with b % size == r; with 3 ranks rank 2 gets only float
    # batches, with 2 ranks rank 0 gets the integer one too
    ref = PathStatistics(n, weighted=True, bin_width=0.5, sampled=True, planned_sources=45)
    local = PathStatistics(n, weighted=True, bin_width=0.5, sampled=True, planned_sources=45)
    for b, D, s in parts:
        p = reduce_block(D, s, True, 0.5)
        ref.add(p)
        if b % comm.size == comm.rank:
            local.add(p)
    merged = PathStatistics(n, weighted=True, bin_width=0.5, sampled=True, planned_sources=45)
    merge_into(merged, local, comm)
    bad = []
    for k in ("done", "row_reach", "col_reach", "row_sum", "row_max", "row_harm"):
        if not np.array_equal(getattr(merged, k), getattr(ref, k)):
            bad.append(k)
    if not np.array_equal(np.trim_zeros(merged.hist, "b"), np.trim_zeros(ref.hist, "b")):
        bad.append("hist")
    for a, b, name in zip(merged.column_sums, ref.column_sums, ("col_sum", "col_harm")):
        if not np.allclose(a, b, rtol=1e-12, atol=0):
            bad.append(name)
    # the compensation terms travel: the union's are the ranks' summed (some ranks have none)
    for name in ("col_sum_lo", "col_harm_lo"):
        if not np.array_equal(getattr(merged, name),
                              comm.allreduce_array(getattr(local, name), "sum")):
            bad.append(name)
    if not comm.allreduce(int(bool(local.col_sum_lo.any())), "max"):
        bad.append("no rank has compensation terms: the test lost its point")
    bad = comm.allgather(bad)
    if comm.rank == 0:
        fails = [f"rank {r}: {k} differs" for r, ks in enumerate(bad) for k in ks]
        for line in fails:
            print(line)
        if fails:
            sys.exit(1)
        print(f"merge ok on {comm.size} ranks")


if __name__ == "__main__":
    main()
