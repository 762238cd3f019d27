"""Clustering, transitivity, degree assortativity and core numbers against networkx (random graphs:
directed, weighted, with isolated vertices; real graphs), the CUDA triangle kernel against the CPU
one (simulator), and the statistics in a scenario run."""
import math

import networkx as nx
import numpy as np
import pytest

from simengine.network.clustering import clustering_results, triangle_counts
from simengine.network.degree_structure import core_numbers, degree_assortativity
from simengine.network.graph import CSRGraph


def graphs():
    out = []
    for directed in (False, True):
        for seed in range(3):
            G = nx.gnp_random_graph(40, 0.12, seed=seed, directed=directed)
            G.add_nodes_from(range(40, 43))                    # isolated vertices
            rng = np.random.default_rng(seed)
            for u, v in G.edges:
                G[u][v]["weight"] = float(rng.integers(1, 9))  # ignored (networkx weight=None)
            out.append((f"gnp-{'d' if directed else 'u'}{seed}", G))
    out.append(("karate", nx.karate_club_graph()))
    out.append(("lesmis", nx.les_miserables_graph()))
    out.append(("florentine", nx.florentine_families_graph()))
    return out


def check_against_networkx(G):
    g = CSRGraph.from_networkx(G)
    nodes = list(G)
    r = clustering_results(g)
    ref = nx.clustering(G)
    np.testing.assert_allclose(r["clustering"], [ref[v] for v in nodes], rtol=1e-14, atol=0)
    assert r["average_clustering"] == pytest.approx(nx.average_clustering(G), rel=1e-14, abs=0)
    assert r["transitivity"] == pytest.approx(nx.transitivity(G), rel=1e-14, abs=0)
    a, ra = degree_assortativity(g), nx.degree_assortativity_coefficient(G)
    assert a == pytest.approx(ra, rel=1e-10, abs=1e-14)
    cn = nx.core_number(G)
    assert core_numbers(g).tolist() == [cn[v] for v in nodes]


@pytest.mark.parametrize("name,G", graphs(), ids=[n for n, _ in graphs()])
def test_structure_statistics_equal_networkx(name, G):
    check_against_networkx(G)


def test_degenerate_graphs():
    g = CSRGraph.from_edges(5, [], [])                      # no arcs
    r = clustering_results(g)
    assert r["transitivity"] == 0 and not r["clustering"].any()
    assert math.isnan(degree_assortativity(g))
    assert core_numbers(g).tolist() == [0] * 5
    ring = CSRGraph.from_edges(6, np.arange(6), (np.arange(6) + 1) % 6)
    assert math.isnan(degree_assortativity(ring))           # every end has degree 2
    K4 = nx.complete_graph(4)
    assert clustering_results(CSRGraph.from_networkx(K4))["transitivity"] == 1.0


@pytest.mark.parametrize("directed", [False, True])
def test_cuda_triangle_counts_equal_cpu(directed):
    G = nx.gnp_random_graph(18, 0.3, seed=5, directed=directed)
    g = CSRGraph.from_networkx(G)
    cpu, gpu = triangle_counts(g, "cpu"), triangle_counts(g, "cuda")
    np.testing.assert_array_equal(cpu[0], gpu[0])
    assert (cpu[1] is None) == (gpu[1] is None) == (not directed)
    if directed:
        np.testing.assert_array_equal(cpu[1], gpu[1])
    r = clustering_results(g, backend="cuda")
    ref = nx.clustering(G)
    np.testing.assert_allclose(r["clustering"], [ref[v] for v in G], rtol=1e-14, atol=0)


def test_structure_statistics_in_a_run(tmp_path):
    import h5py
    import matplotlib

    matplotlib.use("Agg")
    import simengine
    from simengine import plot

    scen = {"kind": "network", "name": "st",
            "graph": {"generator": {"type": "gnm", "n": 60, "m": 150, "seed": 2,
                                    "directed": True}},
            "metrics": {"sources": {"sample": 3, "seed": 1},
                        "statistics": ["mean_distance", "clustering", "assortativity", "kcore"]},
            "solver": {"backend": "cpu"}}
    out = simengine.run(scen, tmp_path / "st.h5")
    from simengine.network import generators

    G = generators.generate(scen["graph"]["generator"]).to_networkx()
    with h5py.File(out) as f:
        ref = nx.clustering(G)
        np.testing.assert_allclose(f["vertex/clustering"][()], [ref[v] for v in range(60)],
                                   rtol=1e-14, atol=0)
        st = f["statistics"]
        assert st["average_clustering"][()] == pytest.approx(nx.average_clustering(G), rel=1e-14)
        assert st["transitivity"][()] == pytest.approx(nx.transitivity(G), rel=1e-14)
        assert st["degree_assortativity"][()] == pytest.approx(
            nx.degree_assortativity_coefficient(G), rel=1e-10)
        core = nx.core_number(G)
        assert f["vertex/core_number"].dtype.kind == "i"
        assert f["vertex/core_number"][()].tolist() == [core[v] for v in range(60)]
        assert st["degeneracy"][()] == max(core.values())
        assert "description" in f["vertex/clustering"].attrs
    with simengine.open(out) as r:
        fig = plot.clustering_vs_degree_figure(r, plot.graph_degrees(r)[0])
        assert fig is not None and fig.axes[0].get_xscale() == "log"


def test_cpu_only_statistics_on_a_cuda_run_say_so():
    from simengine.network.structure import structure_results

    g = CSRGraph.from_networkx(nx.karate_club_graph())
    said = []
    s, v = structure_results(g, ["clustering", "kcore", "assortativity"], "cuda", said.append)
    assert len(said) == 1 and "assortativity and kcore computed on the CPU" in said[0]
    assert set(s) == {"average_clustering", "transitivity", "degree_assortativity", "degeneracy"}
    assert set(v) == {"clustering", "core_number"}
    assert structure_results(g, ["clustering"], "cuda", said.append) and len(said) == 1
