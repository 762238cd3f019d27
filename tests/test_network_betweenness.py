"""Betweenness centrality (Brandes) against networkx: CPU and CUDA engines (the simulator where
there is no GPU), exact, listed and sampled sources, merge and checkpoint state."""
import random

import networkx as nx
import numpy as np
import pytest

from simengine.network.apsp import apsp_statistics, run_sources
from simengine.network.centrality import betweenness
from simengine.network.graph import CSRGraph
from simengine.network.statistics import PathStatistics


def _nx_graph(n, p, directed, weighted, seed, isolated=3):
    """G(n, p) plus isolated vertices (disconnected), integer weights 1..3 when weighted."""
    G = nx.gnp_random_graph(n, p, seed=seed, directed=directed)
    G.add_nodes_from(range(n, n + isolated))
    rng = np.random.default_rng(seed)
    for u, v in G.edges:
        G[u][v]["weight"] = int(rng.integers(1, 4)) if weighted else 1
    return G


def _csr(G, weighted):
    return CSRGraph.from_networkx(G, weight="weight" if weighted else None)


def _arr(d, n):
    return np.array([d[v] for v in range(n)])


CASES = [(d, w) for d in (False, True) for w in (False, True)]


@pytest.mark.parametrize("directed,weighted", CASES)
def test_cpu_exact_matches_networkx(directed, weighted):
    G = _nx_graph(60, 0.06, directed, weighted, seed=5)
    g = _csr(G, weighted)
    wt = "weight" if weighted else None
    r = betweenness(g)
    ref = _arr(nx.betweenness_centrality(G, normalized=False, weight=wt), g.n)
    assert ref.max() > 10                     # a graph with long paths through hubs
    np.testing.assert_allclose(r["betweenness"], ref, rtol=1e-12, atol=1e-9)
    rn = betweenness(g, normalized=True)
    refn = _arr(nx.betweenness_centrality(G, normalized=True, weight=wt), g.n)
    np.testing.assert_allclose(rn["betweenness"], refn, rtol=1e-12, atol=1e-12)
    assert rn["betweenness_normalized"] and not r["betweenness_normalized"]
    # the path statistics of the same traversals equal the path engines'
    a = apsp_statistics(g)
    for k in ("mean_distance", "diameter", "radius", "efficiency", "reachable_pairs"):
        assert r[k] == pytest.approx(a[k], rel=1e-12), k
    np.testing.assert_array_equal(r["distance_histogram"], a["distance_histogram"])
    np.testing.assert_allclose(r["closeness"], a["closeness"], rtol=1e-12)
    np.testing.assert_allclose(r["harmonic"], a["harmonic"], rtol=1e-12)


def test_long_paths_and_byte_level_marks():
    # undirected graphs keep levels in a byte modulo 255: a path of 700 vertices has 699 levels
    G = nx.path_graph(700)
    G.add_edges_from([(3, 5), (400, 402), (100, 650)])
    g = _csr(G, False)
    ref = _arr(nx.betweenness_centrality(G, normalized=False), g.n)
    np.testing.assert_allclose(betweenness(g)["betweenness"], ref, rtol=1e-12)


def _level_modes(g, s):
    """The way each BFS level of the CPU Brandes engine was expanded from s: T (top-down) or
    B (bottom-up)."""
    from simengine.network.cpu.brandes import _forward_bfs

    n, r = g.n, (g.transpose() if g.directed else g)
    bottom = np.zeros(n + 1, np.bool_)
    deg, rdeg = np.diff(g.indptr).astype(np.int32), np.diff(r.indptr).astype(np.int32)
    _, levels = _forward_bfs(g.indptr, g.indices, r.indptr, r.indices, deg, rdeg, s,
                             np.zeros(n, np.int32 if g.directed else np.uint8),
                             2 ** 31 - 2 if g.directed else 255, np.zeros(n),
                             np.empty(n, np.int32), np.empty(n + 2, np.int64),
                             np.empty(len(g.indices) + 1, np.int32), np.empty(n + 1, np.int64),
                             np.empty(n + 1, np.int64), bottom, np.empty(n, np.int32))
    return "".join("B" if b else "T" for b in bottom[:levels])


@pytest.mark.parametrize("directed", [False, True])
def test_direction_optimizing_levels_match_networkx(directed):
    # small-world graphs mix the two ways, also bottom-up, top-down, bottom-up again (a vertex
    # left for bottom-up may be reached top-down in between)
    G = nx.watts_strogatz_graph(120, 4, 0.1, seed=1)
    if directed:
        rng = np.random.default_rng(4)
        D = nx.DiGraph()
        D.add_nodes_from(range(G.number_of_nodes()))
        D.add_edges_from([(u, v) if rng.random() < 0.5 else (v, u) for u, v in G.edges]
                         + [(v, u) for u, v in G.edges if rng.random() < 0.5])
        G = D
    g = _csr(G, False)
    modes = {_level_modes(g, s) for s in range(g.n)}
    assert any("B" in m and "T" in m.split("B", 1)[1] and "B" in m.rsplit("T", 1)[1]
               for m in modes), modes
    ref = _arr(nx.betweenness_centrality(G, normalized=False), g.n)
    np.testing.assert_allclose(betweenness(g)["betweenness"], ref, rtol=1e-12)


def test_listed_sources_match_networkx_subset():
    G = _nx_graph(40, 0.1, True, False, seed=2)
    g = _csr(G, False)
    src = [0, 3, 7, 11, 20]
    r = betweenness(g, sources=src)
    ref = _arr(nx.betweenness_centrality_subset(G, src, list(G), normalized=False), g.n)
    np.testing.assert_allclose(r["betweenness"], ref, rtol=1e-12, atol=1e-12)
    assert r["listed"] and "betweenness_stderr" not in r


def _sampled(g, src, normalized=False):
    st = PathStatistics.for_graph(g, sampled=True, planned_sources=len(src),
                                  betweenness=2 if normalized else 1)
    run_sources(g, np.asarray(src), st)
    return st.results()


@pytest.mark.parametrize("directed", [False, True])
def test_sampled_estimate_matches_networkx_k(directed):
    # networkx k=: the same scales ((n-1)/m_v, m_v = sampled sources other than v), same sample
    G = _nx_graph(50, 0.08, directed, True, seed=9)
    g = _csr(G, True)
    k = 12
    nodes = random.Random(4).sample(list(G.nodes()), k)
    for normalized in (False, True):
        ref = _arr(nx.betweenness_centrality(G, k=k, seed=4, normalized=normalized,
                                             weight="weight"), g.n)
        r = _sampled(g, nodes, normalized)
        np.testing.assert_allclose(r["betweenness"], ref, rtol=1e-12, atol=1e-12)
        assert r["estimate"] and np.all(np.isfinite(r["betweenness_stderr"]))


def test_sample_of_every_source_is_exact():
    G = _nx_graph(30, 0.12, False, False, seed=1)
    g = _csr(G, False)
    exact = betweenness(g)["betweenness"]
    r = betweenness(g, sources={"sample": g.n, "seed": 3})
    np.testing.assert_allclose(r["betweenness"], exact, rtol=1e-13)
    assert "betweenness_stderr" not in r


def test_sampled_estimator_is_unbiased_and_its_stderr_is_sane():
    """Over many samples of K sources the mean estimate is the exact value, and the mean
    reported variance matches the spread of the estimates."""
    from simengine.network import betweenness as bt

    G = _nx_graph(30, 0.15, False, False, seed=3, isolated=1)
    g = _csr(G, False)
    n, K, reps = g.n, 8, 400
    exact = _arr(nx.betweenness_centrality(G, normalized=False), n)
    delta = np.zeros((n, n))                       # delta[s, v] = δ_s(v), one source per run
    for s in range(n):
        st = PathStatistics.for_graph(g, betweenness=1)
        run_sources(g, np.array([s]), st)
        delta[s] = st.btw
    rng = np.random.default_rng(0)
    est, var = [], []
    for _ in range(reps):
        S = np.sort(rng.choice(n, K, replace=False))
        acc = PathStatistics.for_graph(g, sampled=True, planned_sources=K, betweenness=1)
        acc.done[S] = True
        acc.btw, acc.btw_sq = delta[S].sum(axis=0), (delta[S] ** 2).sum(axis=0)
        r = bt.results(acc, S)
        est.append(r["betweenness"])
        var.append(r["betweenness_stderr"] ** 2)
    est, var = np.array(est), np.array(var)
    hub = np.argsort(exact)[-5:]                     # the vertices with most betweenness
    se_mean = est[:, hub].std(axis=0) / np.sqrt(reps)
    assert np.all(np.abs(est[:, hub].mean(axis=0) - exact[hub]) < 4 * se_mean + 1e-9)
    ratio = np.nanmean(var[:, hub], axis=0) / est[:, hub].var(axis=0)
    # 0.90-1.16 here; without the finite-population correction (1 - m/(n-1)) it would be 1.36x
    assert np.all((ratio > 0.8) & (ratio < 1.25)), ratio


def test_merge_and_state_give_the_one_run_result():
    G = _nx_graph(45, 0.08, True, True, seed=7)
    g = _csr(G, True)
    whole = PathStatistics.for_graph(g, betweenness=1)
    run_sources(g, np.arange(g.n), whole)
    parts = []
    for chunk in np.array_split(np.random.default_rng(1).permutation(g.n), 3):
        st = PathStatistics.for_graph(g, betweenness=1)
        run_sources(g, chunk, st)
        parts.append(PathStatistics.from_state(st.state()))   # through a checkpoint
    merged = PathStatistics.for_graph(g, betweenness=1)
    for p in parts:
        merged.merge(p)
    np.testing.assert_allclose(merged.results()["betweenness"], whole.results()["betweenness"],
                               rtol=1e-13)
    with pytest.raises(ValueError):
        merged.merge(PathStatistics.for_graph(g))            # different settings
    st = whole.state()
    assert {"btw", "btw_lo", "btw_sq", "btw_sq_lo"} <= set(st) and st["meta"][5] == 1
    # consecutive partials concatenate with their dependency sums
    from simengine.network.cpu.brandes import brandes_partials
    from simengine.network.statistics import ChunkPartial

    parts = list(brandes_partials(g, np.arange(g.n), batch=7, threads=1))
    cat = ChunkPartial.concat(parts, g.n)
    np.testing.assert_allclose(cat.btw, whole.btw, rtol=1e-13)
    np.testing.assert_allclose(cat.btw_sq, whole.btw_sq, rtol=1e-13)
    assert "btw" not in PathStatistics.for_graph(g).state()   # off: checkpoints unchanged


@pytest.mark.parametrize("directed,engine,pull", [
    (False, "levels", False), (True, "levels", False), (False, "levels", True),
    (True, "levels", True), (False, "blocks", None), (True, "blocks", None)])
def test_cuda_matches_networkx(directed, engine, pull, monkeypatch):
    from simengine.network.cuda import brandes as cuda_brandes

    # both GPU engines: the batched level sweeps (every level top-down and pulled back, or
    # every level after the sources bottom-up and pushed back) and a thread block per source
    monkeypatch.setattr(cuda_brandes, "engine_for", lambda graph, dg: engine)
    monkeypatch.setattr(cuda_brandes, "bottom_up", lambda out, unreached: bool(pull))
    monkeypatch.setattr(cuda_brandes, "push_back", lambda out, nxt: bool(pull))
    G = _nx_graph(24, 0.12, directed, False, seed=11, isolated=2)
    g = _csr(G, False)
    ref = _arr(nx.betweenness_centrality(G, normalized=False), g.n)
    st = PathStatistics.for_graph(g, betweenness=1)
    store = np.empty((g.n, g.n), np.uint8)
    run_sources(g, np.arange(g.n), st, backend="cuda", batch=5, store=store)
    r = st.results()
    np.testing.assert_allclose(r["betweenness"], ref, rtol=1e-12, atol=1e-12)
    cpu = betweenness(g)
    for k in ("mean_distance", "diameter", "efficiency"):
        assert r[k] == pytest.approx(cpu[k], rel=1e-12)
    np.testing.assert_array_equal(r["distance_histogram"], cpu["distance_histogram"])
    d = nx.single_source_shortest_path_length(G, 3)
    assert all(store[3, t] == d.get(t, 255) for t in range(g.n))
    for k in ("closeness", "harmonic", "eccentricity"):
        np.testing.assert_allclose(r[k], cpu[k], rtol=1e-12, err_msg=k)
    assert r["connected"] == cpu["connected"] and r["reachable_pairs"] == cpu["reachable_pairs"]


@pytest.mark.parametrize("engine,sampled", [("levels", False), ("levels", True),
                                            ("blocks", False), ("blocks", True)])
def test_cuda_betweenness_alone(engine, sampled, monkeypatch):
    """A run that wants betweenness alone (paths=False): the GPU engines skip the path
    statistics; the betweenness (and its standard error) equals the CPU engine's, the results
    have no path statistic, and the setting survives state/merge."""
    from simengine.network.cuda import brandes as cuda_brandes

    monkeypatch.setattr(cuda_brandes, "engine_for", lambda graph, dg: engine)
    G = _nx_graph(20, 0.15, True, False, seed=7, isolated=1)
    g = _csr(G, False)
    src = np.array([0, 2, 3, 7, 11, 12, 19]) if sampled else np.arange(g.n)
    out = []
    for backend, paths in (("cpu", True), ("cuda", False)):
        st = PathStatistics.for_graph(g, sampled=sampled, planned_sources=len(src),
                                      betweenness=1, paths=paths)
        run_sources(g, src, st, backend=backend, batch=3)
        out.append(st)
    full, alone = out[0].results(graph=g), out[1].results(graph=g)
    keys = ("betweenness", "betweenness_stderr") if sampled else ("betweenness",)
    for k in keys:
        np.testing.assert_allclose(alone[k], full[k], rtol=1e-12, atol=1e-12, err_msg=k)
    for k in ("mean_distance", "closeness", "distance_histogram", "diameter", "eccentricity"):
        assert k not in alone
    assert alone["connected"] is False and alone["scope"] == full["scope"]
    back = PathStatistics.from_state(out[1].state())
    assert not back.paths and back.betweenness == 1
    half = back.like()
    with pytest.raises(ValueError, match="different"):
        half.merge(out[0])
    with pytest.raises(ValueError, match="betweenness"):
        PathStatistics.for_graph(g, paths=False)


def test_cuda_levels_wider_type_when_a_batch_is_deeper(monkeypatch):
    """A batch whose levels pass the level type's range (here int8 made to hold 8 levels) is
    rerun with the next wider type: the same betweenness and distances as networkx."""
    from simengine.network.cuda import brandes as cuda_brandes

    real = cuda_brandes.unreached_of
    monkeypatch.setattr(cuda_brandes, "unreached_of",
                        lambda dt: 9 if np.dtype(dt) == np.int8 else real(dt))
    monkeypatch.setattr(cuda_brandes, "engine_for", lambda graph, dg: "levels")
    G = nx.path_graph(14)
    g = _csr(G, False)
    assert cuda_brandes.level_type(g, __import__("simengine.network.cuda",
                                                 fromlist=["x"]).device_graph(g)) == np.int8
    st = PathStatistics.for_graph(g, betweenness=1)
    store = np.empty((g.n, g.n), np.uint8)
    run_sources(g, np.arange(g.n), st, backend="cuda", batch=7, store=store)
    ref = _arr(nx.betweenness_centrality(G, normalized=False), g.n)
    np.testing.assert_allclose(st.results()["betweenness"], ref, rtol=1e-12, atol=1e-12)
    assert st.results()["diameter"] == 13
    assert np.array_equal(store, np.abs(np.subtract.outer(np.arange(14), np.arange(14))))


@pytest.mark.parametrize("engine", ["levels", "blocks"])
def test_cuda_sampled_stderr_matches_cpu(engine, monkeypatch):
    # a sampled run needs Σ δ² (the standard error); an exact run skips it on the GPU
    from simengine.network.cuda import brandes as cuda_brandes

    monkeypatch.setattr(cuda_brandes, "engine_for", lambda graph, dg: engine)
    g = _csr(_nx_graph(16, 0.2, False, False, seed=5, isolated=1), False)
    src = np.array([0, 3, 4, 9, 12, 15])
    out = []
    for backend in ("cpu", "cuda"):
        st = PathStatistics.for_graph(g, sampled=True, planned_sources=len(src), betweenness=1)
        run_sources(g, src, st, backend=backend, batch=4)
        out.append(st.results())
    for k in ("betweenness", "betweenness_stderr"):
        np.testing.assert_allclose(out[1][k], out[0][k], rtol=1e-12, atol=1e-12)
    assert np.any(out[0]["betweenness_stderr"] > 0)


@pytest.mark.parametrize("pull", [False, True])
def test_cuda_batch_phases_name_every_step(pull, monkeypatch):
    # the profiler's hook (bench_betweenness.py --gpu --profile): one call per launched step
    from simengine.network.cpu.brandes import brandes_partials
    from simengine.network.cuda import brandes as cuda_brandes, device_graph
    from simengine.network.cuda.brandes import BrandesBuffers, brandes_batch

    monkeypatch.setattr(cuda_brandes, "bottom_up", lambda out, unreached: pull)
    monkeypatch.setattr(cuda_brandes, "push_back", lambda out, nxt: pull)
    g = _csr(nx.path_graph(5), False)
    buf, names = BrandesBuffers(g.n, 2), []
    deepest = brandes_batch(device_graph(g), np.array([0, 2]), buf, squares=False,
                            phase=names.append)
    assert deepest == 4 and names[:3] == ["init", "count", "forward 0 top-down"]
    # level 4 leaves no unreached entry with an in-arc: no sweep from it, no further count
    assert names.count("count") == 5 and names[-1] == "dependencies"
    fwd, back = ("bottom-up", "push") if pull else ("top-down", "pull")
    assert names[4:10:2] == [f"forward {L} {fwd}" for L in range(1, 4)]
    assert names[-5:-1] == [f"backward {L} {back}" for L in range(4, 0, -1)]
    cpu = next(brandes_partials(g, np.array([0, 2]), batch=2, threads=1))
    np.testing.assert_allclose(buf.btw.copy_to_host(), cpu.btw, rtol=1e-12)
    assert not buf.btw_sq.copy_to_host().any()


def test_cuda_engine_for_deep_graphs():
    from simengine.network.cuda import device_graph
    from simengine.network.cuda.brandes import DEEP_LEVELS, engine_for

    path = _csr(nx.path_graph(DEEP_LEVELS + 3), False)        # a middle vertex has degree 2
    star = _csr(nx.star_graph(DEEP_LEVELS + 3), False)
    assert engine_for(path, device_graph(path)) == "blocks"
    assert engine_for(star, device_graph(star)) == "levels"
    from simengine.network.cuda.brandes import engine_note       # the start-up log's words

    assert "thread block per source" in engine_note(path)
    assert "batched BFS levels" in engine_note(star)


@pytest.mark.parametrize("directed", [False, True])
def test_cuda_weighted_integer_matches_networkx(directed):
    """Integer weights >= 1 run the GPU engine (distance values, brandes_weighted): equal to
    networkx exactly and sampled (standard errors against the CPU engine), the path statistics
    and stored distances equal the CPU engine's; betweenness alone too."""
    from simengine.network.cuda.brandes_weighted import can_run

    G = _nx_graph(22, 0.15, directed, True, seed=3)
    for u, v in list(G.edges)[::4]:
        G[u][v]["weight"] = 7                 # long arcs: distance values that are skipped
    g = _csr(G, True)
    assert can_run(g)[0]
    lines = []
    r = betweenness(g, backend="cuda", log=lines.append)
    ref = _arr(nx.betweenness_centrality(G, normalized=False, weight="weight"), g.n)
    np.testing.assert_allclose(r["betweenness"], ref, rtol=1e-12, atol=1e-12)
    assert len(lines) == 1 and "on cuda" in lines[0]
    cpu = betweenness(g)
    for k in ("mean_distance", "diameter", "efficiency", "reachable_pairs"):
        assert r[k] == pytest.approx(cpu[k], rel=1e-12), k
    for k in ("closeness", "harmonic", "eccentricity"):
        np.testing.assert_allclose(r[k], cpu[k], rtol=1e-12, err_msg=k)
    np.testing.assert_array_equal(r["distance_histogram"], cpu["distance_histogram"])
    src = np.array([0, 3, 4, 9, 12, 15, 21])
    out = []
    for backend, paths in (("cpu", True), ("cuda", False), ("cuda", True)):
        st = PathStatistics.for_graph(g, sampled=True, planned_sources=len(src), betweenness=1,
                                      paths=paths)
        store = np.empty((len(src), g.n))
        run_sources(g, src, st, backend=backend, batch=3, store=store)
        out.append((st.results(), store))
    for res, store in out[1:]:
        for k in ("betweenness", "betweenness_stderr"):
            np.testing.assert_allclose(res[k], out[0][0][k], rtol=1e-12, atol=1e-12)
        np.testing.assert_array_equal(store, out[0][1])
    assert np.any(out[0][0]["betweenness_stderr"] > 0)


@pytest.mark.parametrize("directed", [False, True])
def test_cuda_weighted_real_matches_networkx(directed):
    """Real weights run the GPU engine too (float64 distances, buckets of half the smallest
    weight, networkx's rule: d(u) + w == d(v) in float64): equal to networkx; stored distances
    equal the CPU engine's bit for bit."""
    G = _nx_graph(22, 0.15, directed, True, seed=9)
    rng = np.random.default_rng(1)
    for u, v in G.edges:
        G[u][v]["weight"] = float(rng.choice([0.3, 0.7, 1.1, 0.4]))  # ties: 0.3 + 0.4 = 0.7
    g = _csr(G, True)
    lines = []
    r = betweenness(g, backend="cuda", log=lines.append)
    ref = _arr(nx.betweenness_centrality(G, normalized=False, weight="weight"), g.n)
    np.testing.assert_allclose(r["betweenness"], ref, rtol=1e-12, atol=1e-12)
    assert len(lines) == 1 and "on cuda" in lines[0]
    src = np.arange(0, g.n, 3)
    stores = []
    for backend in ("cpu", "cuda"):
        st = PathStatistics.for_graph(g, planned_sources=len(src), betweenness=1)
        stores.append(np.empty((len(src), g.n)))
        run_sources(g, src, st, backend=backend, batch=4, store=stores[-1])
    np.testing.assert_array_equal(stores[0], stores[1])


def test_cuda_weighted_other_weights_run_the_cpu_engine_and_say_so():
    from simengine.network.backends import brandes_backend

    G = _nx_graph(20, 0.15, False, True, seed=2)
    g = _csr(G, True)
    g.weights[0] = 0.0                        # a zero-weight arc: the CPU engine, said
    lines = []
    r = betweenness(g, backend="cuda", log=lines.append)
    np.testing.assert_allclose(r["betweenness"], betweenness(g)["betweenness"], rtol=1e-12,
                               atol=1e-12)           # the CPU engine's (zero weights: no order)
    assert len(lines) == 1 and "weights > 0" in lines[0] and "CPU engine" in lines[0]
    g.weights[:] = 1.5
    g.weights[1] = 1e-4                       # real weights spanning 1.5e4: too many buckets
    where, note = brandes_backend(g, "cuda")
    assert where == "cpu" and "within a factor" in note


SCENARIO = {
    "kind": "network", "name": "btw",
    "graph": {"generator": {"type": "gnm", "n": 90, "m": 260, "seed": 4, "directed": True},
              "weights": {"type": "uniform_int", "low": 1, "high": 3, "seed": 2}},
    "metrics": {"sources": {"sample": 60, "seed": 1},
                "statistics": ["mean_distance", "closeness", "betweenness"]},
    "solver": {"backend": "cpu", "batch": 8},
    "output": {"checkpoint_every": 16},
}


def _vertex(path):
    import h5py

    with h5py.File(path, "r") as f:
        return ({k: f["vertex"][k][()] for k in f["vertex"]},
                {k: f["statistics"][k][()] for k in f["statistics"]})


def test_scenario_output_and_resume_mid_run(tmp_path, monkeypatch):
    import os
    import signal

    import simengine
    from simengine.network import generators
    from simengine.control.network_job import NetworkJob
    from simengine.control.runner import Interrupted

    lines = []
    ref = simengine.run(SCENARIO, tmp_path / "ref.h5", log=lines.append)
    assert any("Brandes (Dijkstra order) on cpu" in ln for ln in lines), lines
    v, s = _vertex(ref)
    assert s["estimate"] and not s["betweenness_normalized"]
    assert v["betweenness"].shape == v["betweenness_stderr"].shape == (90,)
    # the same sample through networkx's scales (betweenness_subset over the sampled sources)
    g = generators.generate({**SCENARIO["graph"]["generator"],
                             "weights": {"type": "uniform_int", "low": 1, "high": 3, "seed": 2}})
    G = g.to_networkx()
    with __import__("h5py").File(ref, "r") as f:
        src = f["sources"][()]
    sub = _arr(nx.betweenness_centrality_subset(G, src.tolist(), list(G), normalized=False,
                                                weight="weight"), g.n)
    m = np.where(np.isin(np.arange(g.n), src), len(src) - 1, len(src))
    np.testing.assert_allclose(v["betweenness"], sub * (g.n - 1) / m, rtol=1e-12, atol=1e-12)

    # figures: the distribution and betweenness against degree, log-log, labelled
    import matplotlib.pyplot as plt

    from simengine import plot

    with simengine.open(ref) as res:
        fig = plot.betweenness_figure(res, g.degree())
        axes = [ax for ax in fig.axes if ax.get_visible()]
        assert len(axes) == 2 and all(ax.get_xscale() == ax.get_yscale() == "log" for ax in axes)
        assert all(ax.get_xlabel() and ax.get_ylabel() for ax in axes)
        assert "60 of 90 sources" in fig.get_suptitle()
        plt.close(fig)
        assert len(plot.betweenness_figure(res).axes) == 1       # no degrees: one panel

    calls = []
    work = NetworkJob.work

    def interrupting(self, sources):      # Ctrl-C after the third batch
        work(self, sources)
        calls.append(len(sources))
        if len(calls) == 3:
            os.kill(os.getpid(), signal.SIGINT)

    monkeypatch.setattr(NetworkJob, "work", interrupting)
    out = tmp_path / "run.h5"
    with pytest.raises(Interrupted):
        simengine.run(SCENARIO, out)
    monkeypatch.setattr(NetworkJob, "work", work)
    with __import__("h5py").File(out, "r") as f:
        assert 0 < int(f["checkpoint"].attrs["done"]) < 60
    simengine.run(SCENARIO, out, resume=True)
    a, b = _vertex(ref)[0], _vertex(out)[0]
    for k in ("betweenness", "betweenness_stderr", "closeness"):
        np.testing.assert_allclose(b[k], a[k], rtol=1e-12, atol=0, err_msg=k)


def test_scenario_betweenness_alone(tmp_path):
    """statistics: [betweenness] alone: the run keeps no path statistics (the accumulator has
    paths off), and its betweenness equals that of the run that also asked for them."""
    import h5py

    import simengine

    both = simengine.run(SCENARIO, tmp_path / "both.h5")
    alone_sc = {**SCENARIO, "metrics": {**SCENARIO["metrics"], "statistics": ["betweenness"]}}
    lines = []
    alone = simengine.run(alone_sc, tmp_path / "alone.h5", log=lines.append)
    va, sa = _vertex(alone)
    vb, _ = _vertex(both)
    for k in ("betweenness", "betweenness_stderr"):
        np.testing.assert_allclose(va[k], vb[k], rtol=1e-12, atol=0, err_msg=k)
    assert "mean_distance" not in sa and "closeness" not in va
    assert any("betweenness alone" in ln for ln in lines), lines
    with h5py.File(alone, "r") as f:
        assert "distance_histogram" not in f
        meta = f["checkpoint"]["meta"][()]
    assert len(meta) == 7 and meta[6] == 0                  # paths off, kept for --resume
