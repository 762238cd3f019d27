"""Sources spread over MPI ranks: the distributed twin of :func:`simengine.network.apsp.run_sources`.

``run_sources_ranks(graph, sources, stats, comm, ...)`` processes ``sources`` on all ranks of
``comm`` and leaves the same merged statistics in ``stats`` on every rank.

Load balance: sources are claimed in small batches from one shared counter (an MPI-3 one-sided
``Fetch_and_op`` on rank 0's window, see :class:`simengine.parallel.comm.MPIComm.counter`), so a
rank that drew cheap sources simply claims more; every rank computes, rank 0 included. Rank 0
works through its claims in pieces and pokes MPI's progress engine in between, because without an
asynchronous progress thread (MPICH's default) a remote claim is served only then. When
``stop_requested()`` becomes true on any rank (SIGTERM/SIGINT), that rank pushes the counter past
the end, so the other ranks stop claiming after their current batch.

Each rank claims its next batch before it computes the current one (the request completes while
it computes), and claims shrink as the sources run out (guided self-scheduling), so ranks finish
within about one small batch of each other.

Static share (``static_share``, GPU runs: :data:`STATIC_SHARE_GPU`): the first part of the
sources is split without the counter — blocks of one claim, dealt round-robin to the ranks, so a
skew along the source order (hubs first) spreads evenly — and only the rest is claimed; the
dynamic rest absorbs the static part's imbalance. GPU claims run whole (no pieces): every rank
lets MPI serve the counter after each engine batch (``progress`` of ``run_sources``).

Where the time goes: ``spans`` (a :class:`~simengine.network.spans.Spans`) records per rank the
static and claimed work, the waits for claims, the wait for the slowest rank at the merge and the
merge itself (``SIMENGINE_PROFILE``, docs/cluster.md).

Merging: each rank accumulates its batches in its own :class:`PathStatistics`; the per-source
arrays are disjoint between ranks (a source is claimed once), so summing them across ranks is
exact, and per-target column sums are summed in float64 with their compensation terms (integer
counts exactly). The union is merged into ``stats`` on every rank
(:meth:`PathStatistics.merge`), so every rank knows which sources are done.
"""
from __future__ import annotations

import numpy as np

from .statistics import PathStatistics

#: a rank claims about this many batches' worth per rank and round, for balance (CPU); a GPU
#: call has a fixed cost (buffers, reductions, transfers), so GPU ranks take fewer, larger claims
CLAIMS_PER_RANK = 8
CLAIMS_PER_RANK_GPU = 3
#: the rank hosting the claim counter splits each claim into this many pieces, so that a claim
#: from another rank waits at most one piece (MPI libraries without asynchronous progress serve
#: one-sided requests only when the host enters MPI)
PIECES_PER_CLAIM = 16
#: a GPU call has a fixed cost: the host of the counter splits its claims in two only
PIECES_PER_CLAIM_GPU = 2
#: guided self-scheduling: a claim takes at most 1/(ranks·GUIDED_SHARE) of the sources left
GUIDED_SHARE = 4
#: the part of a GPU run's sources split statically (round-robin blocks of one claim); the
#: rest is claimed dynamically. CPU runs claim everything (measured 1.8–2.0× on 2 ranks)
STATIC_SHARE_GPU = 0.5


def static_sources(total: int, ranks: int, block: int, share: float) -> int:
    """How many of the first sources are split statically: ``share`` of ``total``, rounded down
    to whole rounds of ``ranks`` blocks (0 when that is less than one round)."""
    if share <= 0 or ranks < 2 or block < 1:
        return 0
    rounds = int(share * total) // (ranks * block)
    return rounds * ranks * block


def static_positions(static: int, ranks: int, rank: int, block: int) -> list:
    """This rank's blocks of the static part: positions ``[j·block, (j+1)·block)`` for
    j = rank, rank + ranks, …"""
    return [np.arange(j * block, (j + 1) * block, dtype=np.int64)
            for j in range(rank, static // block, ranks)]


def claim_size(num_sources: int, ranks: int, batch: int, align: int = 1,
               claims_per_rank: int = CLAIMS_PER_RANK) -> int:
    """Sources per claim: small enough that ≈CLAIMS_PER_RANK claims fall to each rank, at most
    ``batch``, rounded down to a multiple of ``align`` (64 for bit-parallel multi-source BFS)."""
    k = max(1, num_sources // max(1, ranks * claims_per_rank))
    k = min(k, max(1, batch))
    if align > 1:
        k = max(align, k - k % align)
    return max(1, k)


def guided_size(remaining: int, ranks: int, largest: int, align: int = 1,
                tail: int | None = None) -> int:
    """The next claim's size: a share of what is left (``remaining / (ranks·GUIDED_SHARE)``),
    at most ``largest``, a multiple of ``align`` — claims shrink towards the end so that ranks
    finish together. ``tail`` (a power of two dividing ``align``; default ``align``): once the
    share is below ``align`` the claim is the largest power of two ≤ the share, at least
    ``tail`` — narrower bit-parallel sweeps at the very end, so that the ranks' finishing times
    differ by at most a ``tail``-wide batch instead of a full-width one."""
    k = min(int(largest), max(1, int(remaining) // max(1, ranks * GUIDED_SHARE)))
    if align > 1:
        tail = align if tail is None else int(tail)
        if k >= align or tail >= align:
            k = max(align, k - k % align)
        else:
            k = max(tail, 1 << (k.bit_length() - 1))
    return max(1, k)


def run_sources_ranks(graph, sources, stats: PathStatistics, comm, algorithm="auto",
                      backend="cpu", store_dtype=None, batch=2048, stop_requested=None,
                      align=1, tail=None, predecessors=False, static_share=0.0, spans=None):
    """Process ``sources`` over the ranks of ``comm`` (collective: every rank calls it with the
    same ``sources``). Returns ``(rows, positions)`` on rank 0 when ``store_dtype`` is given —
    the distance rows computed by all ranks and their indices into ``sources`` — else ``None``;
    with ``predecessors`` (needs ``store_dtype``) ``(rows, predecessor_rows, positions)``.

    ``static_share``: the part of the sources split statically before the rest is claimed
    (:func:`static_sources`). ``spans``: where this rank's time goes.

    After the call, ``stats`` holds the same merged statistics on every rank, including the sources
    done by other ranks; if a stop was requested, only part of ``sources`` is done
    (``stats.done`` says which).
    """
    from .apsp import run_sources
    from .spans import Spans

    sources = np.asarray(sources, dtype=np.int64)
    stop_requested = stop_requested or (lambda: False)
    spans = spans if spans is not None else Spans()
    local = stats.like()
    gpu = backend == "cuda"
    k = claim_size(len(sources), comm.size, batch, align,
                   CLAIMS_PER_RANK_GPU if gpu else CLAIMS_PER_RANK)
    # the counter's host works in pieces and lets MPI serve the other ranks' claims in between
    # (CPU; a GPU claim runs whole and every rank pokes MPI after each engine batch)
    piece = k // (PIECES_PER_CLAIM_GPU if gpu else PIECES_PER_CLAIM)
    piece = max(align, piece - piece % align)
    total = len(sources)
    static = static_sources(total, comm.size, k, static_share)
    counter = comm.counter(static)
    rows, preds, positions = [], [], []

    def poke(_done):
        counter.poke()

    def compute(pos, what):
        part = sources[pos]
        store = None if store_dtype is None else np.empty((len(part), graph.n), store_dtype)
        pred = np.empty((len(part), graph.n), np.int32) if predecessors else None
        step = piece if counter.hosted_here and comm.size > 1 and not gpu else len(part)
        with spans(what):
            for j in range(0, len(part), step):
                run_sources(graph, part[j:j + step], local, algorithm=algorithm,
                            backend=backend, store=None if store is None else store[j:j + step],
                            predecessors=None if pred is None else pred[j:j + step],
                            progress=poke)
                counter.poke()
        spans.count(what, len(part))
        if store is not None:
            rows.append(store)
            preds.append(pred)
            positions.append(pos)

    drain = 2 * total   # a stop pushes the counter this far: past any value claims leave
    try:
        nxt = counter.fetch_add_async(k)   # the first claim completes during the static work
        stopped = False
        for j, pos in enumerate(static_positions(static, comm.size, comm.rank, k)):
            # a stop on any rank (it drains the counter) ends the static share too
            if stop_requested() or (j and counter.fetch_add(0) >= drain):
                counter.fetch_add(drain)   # drain: nobody claims another batch
                stopped = True
                break
            compute(pos, "static")
        while not stopped:
            with spans("claim wait"):
                i = nxt.wait()
            if i >= total:
                break
            if stop_requested():
                counter.fetch_add(drain)  # drain: nobody claims another batch
                break
            # claim the next batch before computing this one: the claim completes meanwhile
            nxt = counter.fetch_add_async(guided_size(total - i - k, comm.size, k, align, tail))
            compute(np.arange(i, min(i + k, total), dtype=np.int64), "claimed")
            k = nxt.size
    finally:
        counter.free()
    merge_into(stats, local, comm, spans)
    if store_dtype is None:
        return None
    gathered = comm.gather((rows, preds, positions), root=0)
    if comm.rank != 0:
        return None
    all_rows = [r for rs, _, _ in gathered for r in rs]
    all_preds = [r for _, rs, _ in gathered for r in rs]
    all_pos = [p for _, _, ps in gathered for p in ps]
    if not all_rows:
        R, Q, P = (np.empty((0, graph.n), store_dtype), np.empty((0, graph.n), np.int32),
                   np.empty(0, np.int64))
    else:
        P = np.concatenate(all_pos)
        order = np.argsort(P, kind="stable")
        R, P = np.concatenate(all_rows)[order], P[order]
        Q = np.concatenate(all_preds)[order] if predecessors else None
    return (R, Q, P) if predecessors else (R, P)


def merge_into(stats: PathStatistics, local: PathStatistics, comm, spans=None) -> None:
    """Add the union of every rank's ``local`` accumulator to ``stats`` on every rank
    (collective). Sources must be disjoint between ranks.

    Three collectives, whatever the statistics: the per-source values of each rank's own sources
    travel as one small all-gather (they are disjoint, so they are placed, not summed); the
    per-target column sums as one ``Allreduce`` of a packed float64 block (each compensation term
    only when some rank has a non-zero one — integer distance sums never do) and one of a packed
    int64 block (reach counts and histogram). Before, eleven ``n``-long arrays were all-reduced
    one by one, the per-source ones mostly zeros. Column sums a GPU still holds
    (:meth:`PathStatistics.flush`) are downloaded first, once per rank and round."""
    from .spans import Spans

    spans = spans if spans is not None else Spans()
    n = stats.n
    with spans("merge"):
        local.flush()
    own = np.flatnonzero(local.done)
    with spans("wait for ranks"):   # the first collective: the slowest rank's lag
        comm.barrier()
    with spans("merge"):
        _merge(stats, local, comm, n, own)


def _merge(stats, local, comm, n, own):
    rows = comm.allgather((own, local.row_sum[own], local.row_reach[own], local.row_max[own],
                           local.row_harm[own]))
    union = stats.like()
    for idx, rsum, rreach, rmax, rharm in rows:
        if union.done[idx].any():
            raise RuntimeError("a source was processed on two ranks")
        union.done[idx] = True
        union.row_sum[idx] = rsum
        union.row_reach[idx] = rreach
        union.row_max[idx] = rmax
        union.row_harm[idx] = rharm
    # each compensation term travels only when some rank has a non-zero one (integer distance
    # sums never do; harmonic sums usually do)
    has = comm.allreduce_array(np.array([local.col_sum_lo.any(), local.col_harm_lo.any()],
                                        np.int64), "max")
    names = ["col_sum", "col_harm"] + [k for k, h in zip(("col_sum_lo", "col_harm_lo"), has) if h]
    f = comm.allreduce_array(np.stack([getattr(local, k) for k in names]), "sum")
    for k, row in zip(names, f):
        setattr(union, k, row)
    nb = comm.allreduce(len(local.hist), "max")
    ints = np.zeros(n + nb, np.int64)
    ints[:n] = local.col_reach
    ints[n:n + len(local.hist)] = local.hist
    ints = comm.allreduce_array(ints, "sum")
    union.col_reach, union.hist = ints[:n], ints[n:]
    if stats.betweenness:      # Brandes dependencies: float sums with their compensation terms
        b = comm.allreduce_array(np.stack([local.btw, local.btw_lo, local.btw_sq,
                                            local.btw_sq_lo]), "sum")
        union.btw, union.btw_lo, union.btw_sq, union.btw_sq_lo = b[0], b[1], b[2], b[3]
    if stats.is_empty():  # the first round of a run: the union is the result (no copies)
        stats.take(union)
    else:
        stats.merge(union)
