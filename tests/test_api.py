"""The Python API (simengine.run / load / path_statistics / PathResults) and field progress lines."""
import io

import networkx as nx
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import shortest_path

import simengine
from simengine.errors import UserError
from simengine.progress import Progress
from simengine.control.runner import Runner


def random_digraph(n=30, p=0.12, seed=4):
    rng = np.random.default_rng(seed)
    G = nx.gnp_random_graph(n, p, seed=seed, directed=True)
    G = nx.relabel_nodes(G, {i: ("v", i * 7) for i in G})           # tuple labels, not positions
    for u, v in G.edges:
        G.edges[u, v]["length"] = float(rng.integers(1, 9)) + 0.25
    return G


def test_networkx_digraph_weighted_results_keyed_by_labels():
    G = random_digraph()
    res = simengine.path_statistics(G, weight="length")
    assert res.labels == tuple(G.nodes)
    clo = nx.closeness_centrality(G, distance="length")
    har = nx.harmonic_centrality(G, distance="length")
    for v in G:
        assert res.closeness[v] == pytest.approx(clo[v], rel=1e-12, abs=1e-15)
        assert res.harmonic[v] == pytest.approx(har[v], rel=1e-12, abs=1e-15)
        lengths = nx.single_source_dijkstra_path_length(G, v, weight="length")
        assert res.eccentricity[v] == pytest.approx(max(lengths.values()))
    with pytest.raises(KeyError):
        res.closeness[("v", 1)]
    assert dict(res.closeness) == {v: res.closeness[v] for v in G}
    np.testing.assert_array_equal(res.closeness.array, [res.closeness[v] for v in G])


def test_scipy_matrix_against_csgraph():
    G = random_digraph(seed=9)
    A = nx.to_scipy_sparse_array(G, weight="length", format="csr")
    res = simengine.path_statistics(A, labels=[f"n{i}" for i in range(A.shape[0])], weight=True)
    D = shortest_path(sp.csr_matrix(A), directed=True)
    off = ~np.eye(len(D), dtype=bool) & np.isfinite(D)
    assert res.mean_distance == pytest.approx(D[off].mean(), rel=1e-12)
    assert res.eccentricity["n3"] == pytest.approx(D[3][np.isfinite(D[3])].max())
    ones = (A > 0).astype(np.float64)                 # a matrix of ones is unweighted
    assert simengine.path_statistics(ones).diameter == shortest_path(ones, unweighted=True)[
        np.isfinite(shortest_path(ones, unweighted=True))].max()


def test_source_lists_sampling_and_bad_input():
    G = nx.path_graph(["a", "b", "c", "d"])
    res = simengine.path_statistics(G, sources=["d", "a"])
    assert res.sources == ("d", "a") and res.eccentricity["a"] == 3 and np.isnan(res.eccentricity["b"])
    with pytest.raises(UserError, match="'z' is not a vertex"):
        simengine.path_statistics(G, sources=["z"])
    with pytest.raises(ValueError, match="3 labels for a graph of 4"):
        simengine.path_statistics(nx.to_scipy_sparse_array(G), labels=[1, 2, 3])
    with pytest.raises(TypeError):
        simengine.path_statistics([[0, 1], [1, 0]])


def test_run_from_yaml_path_text_and_dict(tmp_path, root):
    sc = simengine.load(root / "scenarios" / "spinodal-2d.yaml", ["time.steps=4"])
    assert sc.spec.time.steps == 4 and sc.name == "spinodal-2d"
    text = (root / "scenarios" / "spinodal-2d.yaml").read_text()
    out = simengine.run(text, tmp_path / "a.h5", overrides=["time.steps=20", "grid.shape=[16,16]",
                                                          "solver.backend=cpu"])
    out2 = simengine.run(dict(sc.data, time={"dt": 0.02, "steps": 20}, grid={"shape": [16, 16]},
                              solver={"backend": "cpu"}), tmp_path / "b.h5")
    with simengine.open(out) as a, simengine.open(out2) as b:
        np.testing.assert_array_equal(a.final_field, b.final_field)
    with pytest.raises(UserError, match="output file exists"):
        simengine.run(text, out, overrides=["time.steps=20", "grid.shape=[16,16]"])
    with pytest.raises(UserError, match="<bad>: grid.shape"):
        simengine.load({"kind": "field", "name": "bad", "grid": {"shape": [2]},
                        "time": {"dt": 0.01, "steps": 1}})


def test_path_results_from_output(tmp_path):
    out = simengine.run({"kind": "network", "name": "g",
                         "graph": {"generator": {"type": "gnm", "n": 60, "m": 150, "seed": 3}},
                         "solver": {"backend": "cpu"}}, tmp_path / "g.h5")
    from_file = simengine.PathResults.from_output(out)
    with simengine.open(out) as r:
        from simengine.network import generators
        g = generators.generate({"type": "gnm", "n": 60, "m": 150, "seed": 3})
    direct = simengine.path_statistics(g)
    assert from_file.mean_distance == direct.mean_distance
    assert dict(from_file.closeness) == dict(direct.closeness)
    np.testing.assert_array_equal(from_file.distance_histogram, direct.distance_histogram)
    with pytest.raises(AttributeError):
        from_file.no_such_statistic


def test_progress_lines_show_time_free_energy_length_and_mass_drift():
    buf = io.StringIO()
    p = Progress(100, unit="step", stream=buf, log_every=0.0)
    p.observe({"time": 0.0, "free_energy": 10.0, "length": 3.0, "mass": -0.5})
    p.observe({"time": 1.5, "free_energy": -42.25, "length": 7.5, "mass": -0.5 + 2e-15})
    p.update(50)
    line = buf.getvalue().strip().splitlines()[-1]
    assert line.startswith("step 50/100 (50%)")
    assert "t = 1.5" in line and "F = -42.25" in line and "L = 7.5" in line and "Δmass = 2e-15" in line


def test_field_run_reports_physics_in_its_log_lines(tmp_path, capsys):
    sc = simengine.load({"kind": "field", "name": "p", "grid": {"shape": [16, 16]},
                         "time": {"dt": 0.01, "steps": 40}, "solver": {"backend": "cpu"},
                         "output": {"observables_every": 10}})
    Runner(sc, tmp_path / "p.h5", progress=True, log=lambda m: None).run()
    err = capsys.readouterr().err.strip().splitlines()
    assert err[-1].startswith("step 40/40 (100%)") and "t = 0.4" in err[-1] and "F = " in err[-1]


def test_unweighted_unless_weight_is_given_as_networkx():
    G = nx.karate_club_graph()                      # carries a 'weight' attribute
    assert simengine.path_statistics(G).mean_distance == pytest.approx(
        nx.average_shortest_path_length(G), rel=1e-12)
    assert simengine.path_statistics(G, weight="weight").mean_distance == pytest.approx(
        nx.average_shortest_path_length(G, weight="weight"), rel=1e-12)
    A = nx.to_scipy_sparse_array(G, weight="weight", format="csr")
    assert simengine.path_statistics(A).diameter == nx.diameter(G)          # hops
    from simengine.network.graph import CSRGraph

    g = CSRGraph.from_networkx(G, weight="weight")
    assert simengine.path_statistics(g).mean_distance == pytest.approx(
        nx.average_shortest_path_length(G), rel=1e-12)
    assert simengine.path_statistics(g, weight=True).mean_distance == pytest.approx(
        nx.average_shortest_path_length(G, weight="weight"), rel=1e-12)


@pytest.mark.parametrize("weight", [None, "length"])
def test_statistics_selector_computes_what_the_yaml_can(weight):
    G = random_digraph(seed=4)
    res = simengine.path_statistics(G, weight=weight, statistics=[
        "mean_distance", "betweenness", "components", "clustering", "kcore", "assortativity"])
    ref = nx.betweenness_centrality(G, weight=weight, normalized=False)
    for v in G:
        assert res.betweenness[v] == pytest.approx(ref[v], rel=1e-12, abs=1e-12)
    d = [x for s, row in nx.shortest_path_length(G, weight=weight) for t, x in row.items()
         if t != s]                                     # over the reachable ordered pairs
    assert res.mean_distance == pytest.approx(np.mean(d), rel=1e-12)
    assert res.components == nx.number_weakly_connected_components(G)
    cl = nx.clustering(G)
    assert all(res.clustering[v] == pytest.approx(cl[v], abs=1e-12) for v in G)
    cores = nx.core_number(G)
    assert dict(res.core_number) == {v: cores[v] for v in G}
    assert "degree_assortativity" in res.statistics
    assert "diameter" not in res.statistics and res.closeness is None      # not asked for
    norm = simengine.path_statistics(G, weight=weight, statistics=["betweenness"],
                                     betweenness_normalized=True)
    refn = nx.betweenness_centrality(G, weight=weight, normalized=True)
    assert all(norm.betweenness[v] == pytest.approx(refn[v], rel=1e-12, abs=1e-12) for v in G)
    with pytest.raises(UserError, match="statistics: 'pagerank' is not a statistic"):
        simengine.path_statistics(G, statistics=["pagerank"])
