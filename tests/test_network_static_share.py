"""The static share of run_sources_ranks and its stop rule, on one process posing as rank 0 of 2
(the real 2- and 3-rank runs are in test_mpi_network.py)."""
from __future__ import annotations

import numpy as np

from simengine.network.distributed import run_sources_ranks
from simengine.network.graph import CSRGraph
from simengine.network.statistics import PathStatistics
from simengine.parallel.comm import SerialComm, _LocalCounter


class HalfOfTwo(SerialComm):
    """Rank 0 of a pretend 2-rank run: collectives see only this rank; ``counter`` is kept so a
    test can move it as the other rank would."""

    size = 2

    def __init__(self):
        super().__init__()
        self.made = None

    def counter(self, start=0):
        self.made = _LocalCounter(start)
        return self.made


def _graph():
    n = 60
    return CSRGraph.from_edges(n, np.arange(n - 1), np.arange(1, n))


def test_static_blocks_then_claims_and_a_stop_ends_the_static_share():
    g = _graph()
    src = np.arange(g.n)
    # no stop: rank 0's static blocks (0, 2 of size k) and every claim from the counter
    comm = HalfOfTwo()
    st = PathStatistics.for_graph(g)
    run_sources_ranks(g, src, st, comm, batch=4, static_share=0.5)
    k = 3                                   # claim_size(60, 2, 4, 1, 8) = 60 // 16
    static = 30                             # 0.5·60 → 5 rounds of 2 blocks of 3
    mine = [p for j in range(0, static // k, 2) for p in range(j * k, (j + 1) * k)]
    assert st.done[mine].all() and not st.done[[3, 4, 5, 9]].any()   # rank 1's blocks left
    assert st.done[static:].all()           # the dynamic rest: all claimed by this rank
    # a stop on this rank after its first static block: nothing more, the counter drained
    calls = []
    comm = HalfOfTwo()
    st = PathStatistics.for_graph(g)
    run_sources_ranks(g, src, st, comm, batch=4, static_share=0.5,
                      stop_requested=lambda: calls.append(1) or len(calls) > 1)
    assert st.done.sum() == k and comm.made.value >= 2 * g.n
    # a stop on the other rank (the counter pushed past the end) ends this rank's static share
    comm = HalfOfTwo()
    st = PathStatistics.for_graph(g)

    seen = []

    def other_rank_stops():                 # asked before each block: after the first one,
        seen.append(1)                      # the other rank has drained the counter
        if len(seen) > 1:
            comm.made.value = 2 * g.n + 5
        return False
    run_sources_ranks(g, src, st, comm, batch=4, static_share=0.5,
                      stop_requested=other_rank_stops)
    assert st.done.sum() == k
