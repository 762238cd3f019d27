"""APSP engines and path statistics vs networkx / scipy, closed forms, batching invariance."""
import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from scipy.sparse.csgraph import shortest_path

from simengine.errors import UserError
from simengine.network import generators as gen
from simengine.network.apsp import apsp_statistics, run_sources, store_dtype
from simengine.network.backends import choose
from simengine.network.cpu.bfs import bfs
from simengine.network.cpu.msbfs import msbfs_partials
from simengine.network.cpu.sssp import dijkstra
from simengine.network.graph import CSRGraph
from simengine.network.sources import choose_sources
from simengine.network.statistics import ChunkPartial, PathStatistics, reduce_block

SETTINGS = dict(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))


@st.composite
def graphs(draw, max_n=14):
    n = draw(st.integers(1, max_n))
    directed = draw(st.booleans())
    weighted = draw(st.booleans())
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)),
                          max_size=3 * n))
    s = [a for a, _ in pairs]
    d = [b for _, b in pairs]
    w = draw(st.lists(st.integers(1, 6), min_size=len(pairs), max_size=len(pairs)))
    return CSRGraph.from_edges(n, s, d, w if weighted else None, directed)


def scipy_dist(g):
    if g.num_arcs == 0:
        D = np.full((g.n, g.n), np.inf)
        np.fill_diagonal(D, 0)
        return D
    return shortest_path(g.to_scipy(), directed=g.directed, unweighted=not g.weighted)


def algorithms_for(g):
    return ["dial", "dijkstra", "fw"] if g.weighted else ["msbfs", "bfs", "dial", "dijkstra", "fw"]


def run_stats(g, alg, batch=None, store=None, src=None):
    src = np.arange(g.n) if src is None else src
    stats = PathStatistics.for_graph(g)
    run_sources(g, src, stats, alg, store=store, batch=batch)
    return stats.results()


@settings(**SETTINGS)
@given(graphs())
def test_every_algorithm_exact_distances(g):
    D = scipy_dist(g)
    for alg in algorithms_for(g):
        store = np.zeros((g.n, g.n), store_dtype(g))
        run_stats(g, alg, store=store)
        got = store.astype(float)
        if store.dtype.kind != "f":
            got[store == np.iinfo(store.dtype).max] = np.inf
        np.testing.assert_array_equal(got, D, err_msg=alg)


@settings(**SETTINGS)
@given(graphs())
def test_statistics_match_networkx(g):
    G = g.to_networkx()
    wt = "weight" if g.weighted else None
    ref = PathStatistics.for_graph(g)
    ref.add(reduce_block(scipy_dist(g), np.arange(g.n), g.weighted))
    r0 = ref.results()
    clo = nx.closeness_centrality(G, distance=wt)
    har = nx.harmonic_centrality(G, distance=wt)
    for alg in algorithms_for(g):
        r = run_stats(g, alg)
        np.testing.assert_allclose(r["closeness"], [clo[i] for i in range(g.n)], rtol=1e-12)
        np.testing.assert_allclose(r["harmonic"], [har[i] for i in range(g.n)], rtol=1e-12)
        for k in ("mean_distance", "reachable_pairs", "unreachable_pairs", "diameter", "radius"):
            assert r[k] == r0[k], (alg, k)
        np.testing.assert_array_equal(r["eccentricity"], r0["eccentricity"])
        np.testing.assert_array_equal(r["distance_histogram"], r0["distance_histogram"])
        strongly = g.n > 0 and (nx.is_strongly_connected(G) if g.directed else
                                nx.is_connected(G))
        assert r["connected"] == strongly
        if strongly and g.n > 1:
            assert r["mean_distance"] == pytest.approx(
                nx.average_shortest_path_length(G, weight=wt), rel=1e-12)
            ecc = nx.eccentricity(G, weight=wt)
            np.testing.assert_array_equal(r["eccentricity"], [ecc[i] for i in range(g.n)])
            assert r["diameter"] == nx.diameter(G, weight=wt)
            assert r["radius"] == nx.radius(G, weight=wt)
        if not g.directed and not g.weighted:
            assert r["efficiency"] == pytest.approx(nx.global_efficiency(G), rel=1e-12, abs=0)


@settings(**SETTINGS)
@given(graphs(max_n=40), st.integers(1, 3), st.sampled_from([0, 6, 10**9]))
def test_msbfs_words_and_directions(g, words, pf):
    """Several words per batch, several batches, forced push / pull / mixed."""
    if g.weighted:
        g = CSRGraph(g.n, g.indptr, g.indices, None, g.directed)
    D = scipy_dist(g)
    src = np.arange(g.n)[::-1].copy()
    store = np.zeros((g.n, g.n), np.uint8)
    parts = list(msbfs_partials(g, src, words=words, store=store, push_factor=pf, threads=2))
    got = store.astype(float)
    got[store == 255] = np.inf
    np.testing.assert_array_equal(got, D[src])
    ref = reduce_block(D[src], src, False)
    p = ChunkPartial.concat(parts, g.n)
    for k in ("sources", "row_sum", "row_reach", "row_max", "col_sum", "col_reach"):
        np.testing.assert_array_equal(getattr(p, k), getattr(ref, k))
    np.testing.assert_allclose(p.row_harm, ref.row_harm, rtol=1e-13)
    np.testing.assert_allclose(p.col_harm, ref.col_harm, rtol=1e-13)
    n = max(len(p.hist), len(ref.hist))
    np.testing.assert_array_equal(np.pad(p.hist, (0, n - len(p.hist))),
                                  np.pad(ref.hist, (0, n - len(ref.hist))))


def test_batching_and_resume_invariance():
    g = gen.barabasi_albert(700, 3, seed=3)
    gw = gen.random_weights(g, 1, 10, seed=4)
    for graph, alg, batches in ((g, "msbfs", (64, 128, 512)), (g, "bfs", (1, 7, 100)),
                                (gw, "dijkstra", (1, 13, 64)), (gw, "dial", (5, 64))):
        res = []
        for b in batches:
            stats = PathStatistics.for_graph(graph)
            run_sources(graph, np.arange(300), stats, alg, batch=b)
            # resume: checkpoint the state, restore, continue with the rest
            stats = PathStatistics.from_state(stats.state())
            run_sources(graph, np.arange(300, graph.n), stats, alg, batch=b)
            res.append(stats.results())
        for r in res[1:]:
            for k in ("mean_distance", "reachable_pairs", "diameter", "radius", "efficiency"):
                assert r[k] == res[0][k], (alg, k)
            for k in ("eccentricity", "closeness", "distance_histogram"):
                np.testing.assert_array_equal(r[k], res[0][k])
            np.testing.assert_allclose(r["harmonic"], res[0]["harmonic"], rtol=1e-13)


def test_add_same_source_twice_rejected():
    g = gen.ring_lattice(10, 2)
    stats = PathStatistics.for_graph(g)
    run_sources(g, [0, 1], stats)
    with pytest.raises(ValueError):
        run_sources(g, [1, 2], stats)


@pytest.mark.parametrize("N", [2, 7, 30])
def test_closed_forms(N):
    path = gen.grid((N,))
    assert apsp_statistics(path)["mean_distance"] == pytest.approx((N + 1) / 3, rel=1e-14)
    if N >= 3:
        cyc = gen.torus((N,))
        want = N * N / (4 * (N - 1)) if N % 2 == 0 else (N + 1) / 4
        assert apsp_statistics(cyc)["mean_distance"] == pytest.approx(want, rel=1e-14)
        cyc8 = gen.torus((N + 1,))
        M = N + 1
        want = M * M / (4 * (M - 1)) if M % 2 == 0 else (M + 1) / 4
        assert apsp_statistics(cyc8)["mean_distance"] == pytest.approx(want, rel=1e-14)
    star = CSRGraph.from_edges(N, np.zeros(N - 1), np.arange(1, N))
    assert apsp_statistics(star)["mean_distance"] == pytest.approx(2 * (N - 1) / N, rel=1e-14)
    i, j = np.triu_indices(N, 1)
    K = CSRGraph.from_edges(N, i, j)
    r = apsp_statistics(K)
    assert r["mean_distance"] == 1.0 and r["diameter"] == 1 and r["efficiency"] == 1.0


@pytest.mark.parametrize("L", [4, 6])
def test_torus_closed_form(L):
    # L x L torus (2D, L even): mean distance L^3 / (2 (L^2 - 1))
    r = apsp_statistics(gen.torus((L, L)))
    assert r["mean_distance"] == pytest.approx(L ** 3 / (2 * (L * L - 1)), rel=1e-14)
    assert r["diameter"] == L and r["radius"] == L


def resolve_algorithm(g, algorithm="auto"):
    return choose(g, algorithm, "cpu").algorithm


def test_weighted_auto_and_negative_weights():
    g = gen.random_weighted(200, 6, seed=1)
    assert resolve_algorithm(g) == "dial"
    frac = CSRGraph(g.n, g.indptr, g.indices, g.weights + 0.5, False)
    assert resolve_algorithm(frac) == "dijkstra"
    with pytest.raises(UserError):
        resolve_algorithm(frac, "dial")
    i, j = np.triu_indices(50, 1)
    dense = gen.random_weights(CSRGraph.from_edges(50, i, j), 1, 10, seed=2)
    assert resolve_algorithm(dense) == "fw"
    assert resolve_algorithm(gen.ring_lattice(20, 4)) == "msbfs"
    with pytest.raises(UserError):
        resolve_algorithm(g, "msbfs")
    with pytest.raises(UserError):
        resolve_algorithm(g, "nonsense")
    neg = CSRGraph(g.n, g.indptr, g.indices, -g.weights, False)
    with pytest.raises(UserError, match="negative"):
        run_sources(neg, [0], PathStatistics.for_graph(neg))


def test_weighted_histogram_bin_width():
    g = gen.random_weighted(150, 5, seed=7)
    D = scipy_dist(g)
    stats = PathStatistics.for_graph(g, bin_width=2.5)
    run_sources(g, np.arange(g.n), stats)
    h = stats.results()["distance_histogram"]
    off = ~np.eye(g.n, dtype=bool) & np.isfinite(D)
    want = np.bincount(np.floor(D[off] / 2.5).astype(int))
    np.testing.assert_array_equal(h[:len(want)], want)
    assert h[len(want):].sum() == 0


def test_martin_counterexample_dijkstra_parallel():
    """Martín et al.'s counterexample: 0 → i (weight 1) and i → n-1 (weight i) for i = 1..n-2;
    d(0, n-1) = 2 (through vertex 1) on every run — the smallest candidate is never lost."""
    n = 1024
    s = np.r_[np.zeros(n - 2, int), np.arange(1, n - 1)]
    d = np.r_[np.arange(1, n - 1), np.full(n - 2, n - 1)]
    w = np.r_[np.ones(n - 2), np.arange(1, n - 1)].astype(float)
    for directed in (True, False):
        g = CSRGraph.from_edges(n, s, d, w, directed)
        assert dijkstra(g, 0)[n - 1] == 2
        store = np.zeros((8, n))
        for _ in range(5):
            run_sources(g, np.zeros(1, int).repeat(1), PathStatistics.for_graph(g),
                        "dijkstra", store=store[:1])
            assert store[0, n - 1] == 2
        gu = CSRGraph(n, g.indptr, g.indices, None, directed)
        assert bfs(gu, 0)[n - 1] == 2


def test_sampled_estimates_within_se():
    g = gen.barabasi_albert(3000, 3, seed=11)
    exact = apsp_statistics(g)
    hits = 0
    for seed in range(6):
        r = apsp_statistics(g, sources={"sample": 150, "seed": seed})
        assert r["estimate"] and r["sampled"] and r["diameter_is_lower_bound"]
        assert r["diameter"] <= exact["diameter"] and r["radius"] >= exact["radius"]
        z = abs(r["mean_distance"] - exact["mean_distance"]) / r["mean_distance_se"]
        assert z < 5
        hits += z < 2
        ze = abs(r["efficiency"] - exact["efficiency"]) / r["efficiency_se"]
        assert ze < 5
        # harmonic estimate is unbiased per vertex: compare the mean over vertices
        assert np.mean(r["harmonic"]) == pytest.approx(np.mean(exact["harmonic"]), rel=0.05)
        assert np.mean(r["closeness"]) == pytest.approx(np.mean(exact["closeness"]), rel=0.05)
    assert hits >= 3


def test_choose_sources():
    s, sampled = choose_sources(10, "all")
    assert list(s) == list(range(10)) and not sampled
    a, sampled = choose_sources(100, {"sample": 10, "seed": 1})
    b, _ = choose_sources(100, {"sample": 10, "seed": 1})
    assert sampled and len(set(a)) == 10 and list(a) == list(b)
    assert list(choose_sources(5, [4, 2])[0]) == [4, 2]
    for bad in ([1, 1], [7], {"sample": 0}, {"samples": 3}, "some"):
        with pytest.raises(UserError):
            choose_sources(5, bad)


def test_disconnected_rules():
    # two components: a path 0-1-2 and an edge 3-4, isolated 5
    g = CSRGraph.from_edges(6, [0, 1, 3], [1, 2, 4])
    r = apsp_statistics(g)
    assert r["reachable_pairs"] == 8 and r["unreachable_pairs"] == 30 - 8
    assert r["mean_distance"] == pytest.approx((2 * (1 + 1 + 2) + 2) / 8)
    assert r["diameter"] == 2 and r["radius"] == 1     # radius over vertices reaching something
    assert np.isnan(apsp_statistics(g, sources=[0])["eccentricity"][5])
    assert not r["connected"]
    one = apsp_statistics(CSRGraph.from_edges(1, [], []))
    assert one["mean_distance"] == 0.0 and one["efficiency"] == 0.0


def test_store_dtype_and_sentinel():
    g = CSRGraph.from_edges(4, [0], [1])
    assert store_dtype(g) == np.uint8
    store = np.zeros((2, 4), np.uint8)
    run_sources(g, [0, 2], PathStatistics.for_graph(g), store=store)
    assert store.tolist() == [[0, 1, 255, 255], [255, 255, 0, 255]]
    assert store_dtype(gen.ring_lattice(300, 2)) == np.uint16
    ring = gen.ring_lattice(300, 2)
    with pytest.raises(ValueError):
        run_sources(ring, [0], PathStatistics.for_graph(ring), store=np.zeros((1, 300), np.uint8))
