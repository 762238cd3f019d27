"""PathStatistics: the done work is a set of sources; accumulators of disjoint sets merge exactly.

Reference: one accumulator that ran every source in one call.  Integer data (done mask, counts,
histogram, hop sums) must be bitwise equal; per-source values are computed per source, so they are
bitwise equal too; floating column sums within 1e-12 relative (in practice bitwise, see
``test_column_sums_do_not_depend_on_order``).
"""
import numpy as np
import pytest

from simengine.network import generators as gen
from simengine.network.apsp import run_sources
from simengine.network.graph import CSRGraph
from simengine.network.statistics import PathStatistics

INTS = ("done", "row_reach", "col_reach", "hist")
ROWS = ("row_sum", "row_max", "row_harm")


def _graphs():
    g = gen.barabasi_albert(300, 3, seed=5)
    rng = np.random.default_rng(2)
    gf = CSRGraph(g.n, g.indptr, g.indices, None, False)
    s, d = gf.arcs()
    keep = s < d
    w = rng.uniform(0.1, 5.0, keep.sum())
    return {
        "msbfs": (g, "msbfs"),
        "dial": (gen.random_weights(g, 1, 10, seed=4), "dial"),
        "dijkstra_float": (CSRGraph.from_edges(g.n, s[keep], d[keep], w), "dijkstra"),
        "directed_bfs": (gen.erdos_renyi_gnm(200, 700, seed=3, directed=True), "bfs"),
    }


def _run(g, alg, sources, batch=None, stats=None):
    st = PathStatistics.for_graph(g, bin_width=0.5) if stats is None else stats
    run_sources(g, np.asarray(sources), st, alg, batch=batch)
    return st


def _assert_same(a: PathStatistics, b: PathStatistics):
    sa, sb = a.state(), b.state()
    for k in INTS + ROWS:
        assert np.array_equal(sa[k], sb[k]), k
    for x, y in zip(a.column_sums, b.column_sums):
        np.testing.assert_allclose(x, y, rtol=1e-12, atol=0)
    ra, rb = a.results(), b.results()
    for k in ("mean_distance", "reachable_pairs", "unreachable_pairs", "diameter", "radius",
              "efficiency", "connected", "sources_done"):
        assert ra[k] == rb[k], k
    for k in ("eccentricity", "distance_histogram"):
        np.testing.assert_array_equal(ra[k], rb[k])
    for k in ("closeness", "harmonic"):
        np.testing.assert_allclose(ra[k], rb[k], rtol=1e-12, atol=0)


@pytest.mark.parametrize("case", list(_graphs()))
def test_two_halves_merged_equal_one_run(case):
    g, alg = _graphs()[case]
    full = _run(g, alg, np.arange(g.n))
    a = _run(g, alg, np.arange(g.n // 2), batch=7 if alg != "msbfs" else 64)
    b = _run(g, alg, np.arange(g.n // 2, g.n), batch=13 if alg != "msbfs" else 128)
    a.merge(b)
    _assert_same(a, full)
    if not g.weighted:       # hop sums are integers: exact whatever the split
        assert np.array_equal(a.column_sums[0], full.column_sums[0])


@pytest.mark.parametrize("case", ["msbfs", "dijkstra_float"])
def test_three_uneven_interleaved_parts(case):
    g, alg = _graphs()[case]
    full = _run(g, alg, np.arange(g.n))
    owner = np.random.default_rng(7).choice(3, size=g.n, p=[0.05, 0.25, 0.7])
    parts = []
    for r, batch in zip(range(3), (1, 64, 5)):
        mine = np.flatnonzero(owner == r)
        np.random.default_rng(r).shuffle(mine)           # each part in its own order
        parts.append(_run(g, alg, mine, batch=batch if alg != "msbfs" else None))
    acc = parts[2]
    acc.merge(parts[0])
    acc.merge(parts[1])
    _assert_same(acc, full)


def test_merge_of_empty_parts_and_state_round_trip():
    g, alg = _graphs()["dial"]
    full = _run(g, alg, np.arange(g.n))
    empty = PathStatistics.for_graph(g, bin_width=0.5)
    a = _run(g, alg, np.arange(0, g.n, 2))
    a.merge(PathStatistics.for_graph(g, bin_width=0.5))
    b = _run(g, alg, np.arange(1, g.n, 2))
    empty.merge(b)
    empty.merge(a)
    _assert_same(empty, full)
    back = PathStatistics.from_state(empty.state())
    _assert_same(back, full)
    for k, v in empty.state().items():
        assert np.array_equal(back.state()[k], v), k


def test_resume_with_a_different_split():
    """The checkpoint records the done *set*: a resumed run takes the pending sources in any
    split (here: what two other parts did not do, in reverse order, in small batches)."""
    g, alg = _graphs()["msbfs"]
    sources = np.random.default_rng(1).permutation(g.n)
    full = _run(g, alg, sources)
    part = _run(g, alg, sources[::3])
    part.merge(_run(g, alg, sources[1::7][~np.isin(sources[1::7], sources[::3])]))
    ck = PathStatistics.from_state(part.state())
    todo = ck.pending(sources)
    assert len(todo) + ck.sources_done == g.n
    assert set(todo).isdisjoint(ck.done_sources())
    assert list(todo) == [s for s in sources if not part.done[s]]     # order kept
    _run(g, alg, todo[::-1], stats=ck)
    _assert_same(ck, full)


def test_column_sums_do_not_depend_on_order():
    """The compensated column sums give the same bits whatever order the partials arrive in."""
    g, alg = _graphs()["dijkstra_float"]
    from simengine.network.backends import get_backend

    parts = list(get_backend("cpu").iter_partials(g, np.arange(g.n), alg, batch=3))
    assert len(parts) > 50
    sums = []
    for seed in range(4):
        st = PathStatistics.for_graph(g)
        for i in np.random.default_rng(seed).permutation(len(parts)):
            st.add(parts[i])
        sums.append(st.column_sums)
    for cs, ch in sums[1:]:
        assert np.array_equal(cs, sums[0][0]) and np.array_equal(ch, sums[0][1])


def test_merge_rejects_overlap_and_other_settings():
    g, alg = _graphs()["msbfs"]
    a = _run(g, alg, [0, 1, 2])
    with pytest.raises(ValueError, match="both"):
        a.merge(_run(g, alg, [2, 3]))
    with pytest.raises(ValueError, match="settings"):
        a.merge(PathStatistics.for_graph(g, bin_width=2.0))
    with pytest.raises(ValueError, match="settings"):
        a.merge(PathStatistics(g.n + 1))


def test_checkpoint_without_compensation_terms_loads():
    """A checkpoint written before the compensated sums existed restores with zero terms."""
    g, alg = _graphs()["dial"]
    a = _run(g, alg, np.arange(50))
    st = {k: v for k, v in a.state().items() if not k.endswith("_lo")}
    b = PathStatistics.from_state(st)
    assert np.array_equal(b.col_harm_lo, np.zeros(g.n))
    np.testing.assert_allclose(b.column_sums[1], a.column_sums[1], rtol=1e-15)
