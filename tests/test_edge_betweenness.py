"""Edge betweenness (statistics: [edge_betweenness]) = networkx edge_betweenness_centrality, on
the CPU (network/cpu/edge_brandes.py) and the GPU (network/cuda/brandes.py, the simulator here),
through the Python API and a run's /edge datasets."""
import h5py
import networkx as nx
import numpy as np
import pytest

import simengine
from simengine.network.edge_betweenness import edge_betweenness
from simengine.network.graph import CSRGraph


def graphs():
    rng = np.random.default_rng(3)
    und = nx.gnm_random_graph(24, 50, seed=1)
    und.add_edges_from([(30, 31), (31, 32)])                  # a second component
    di = nx.gnm_random_graph(22, 60, seed=2, directed=True)
    ring = nx.cycle_graph(17)                                 # deep: many levels, ties
    for G in (und, di):
        for u, v in G.edges:
            G.edges[u, v]["w"] = float(rng.integers(1, 4))    # integer weights: many ties
    return {"undirected": und, "directed": di, "ring": ring}


def by_label(G, weight, normalized=False, sources="all", backend="cpu"):
    res = simengine.path_statistics(G, weight=weight, statistics=["edge_betweenness"],
                                    betweenness_normalized=normalized, sources=sources,
                                    backend=backend)
    return res.edge_betweenness


def same(got, want, G):
    if not G.is_directed():
        got = {frozenset(k): v for k, v in got.items()}
        want = {frozenset(k): v for k, v in want.items()}
    assert set(got) == set(want)
    for k in want:
        assert got[k] == pytest.approx(want[k], rel=1e-12, abs=1e-12), k


@pytest.mark.parametrize("name", ["undirected", "directed", "ring"])
@pytest.mark.parametrize("weight", [None, "w"])
@pytest.mark.parametrize("normalized", [False, True])
def test_cpu_equals_networkx(name, weight, normalized):
    G = graphs()[name]
    if weight and name == "ring":
        return
    want = nx.edge_betweenness_centrality(G, normalized=normalized, weight=weight)
    same(by_label(G, weight, normalized), want, G)


@pytest.mark.parametrize("name", ["undirected", "directed", "ring"])
def test_gpu_equals_networkx(name):
    G = graphs()[name]
    want = nx.edge_betweenness_centrality(G, normalized=False)
    same(by_label(G, None, backend="cuda"), want, G)
    g = CSRGraph.from_networkx(G, weight=None)
    from simengine.network.cpu.edge_brandes import edge_dependencies as cpu
    from simengine.network.cuda.brandes import edge_dependencies as gpu

    src = np.arange(g.n)
    np.testing.assert_allclose(gpu(g, src, batch=5), cpu(g, src), rtol=1e-12, atol=1e-12)


def test_sampled_sources_scale_by_n_over_k():
    G = graphs()["undirected"]
    g = CSRGraph.from_networkx(G, weight=None)
    res = simengine.path_statistics(G, statistics=["edge_betweenness", "betweenness"],
                                    sources={"sample": 9, "seed": 4})
    picked = list(res.sources)
    assert len(picked) == 9 and res.betweenness_stderr is not None        # the node version
    part = nx.edge_betweenness_centrality_subset(G, picked, list(G), normalized=False)
    n = g.n
    want = {k: v * n / 9 for k, v in part.items()}
    same(res.edge_betweenness, want, G)
    listed = simengine.path_statistics(G, statistics=["edge_betweenness"], sources=picked[:3])
    same(listed.edge_betweenness,
         nx.edge_betweenness_centrality_subset(G, picked[:3], list(G), normalized=False), G)


def test_per_arc_arrays():
    G = graphs()["directed"]
    g = CSRGraph.from_networkx(G, weight="w")
    r = edge_betweenness(g, np.arange(g.n))
    want = nx.edge_betweenness_centrality(G, normalized=False, weight="w")
    assert len(r["edge_betweenness"]) == g.num_arcs
    for u, v, x in zip(r["edge_source"], r["edge_target"], r["edge_betweenness"]):
        assert x == pytest.approx(want[(u, v)], rel=1e-12, abs=1e-12)


def test_run_stores_edge_betweenness_per_arc_with_its_endpoints(tmp_path):
    G = nx.les_miserables_graph()
    p = tmp_path / "lm.txt"
    p.write_text("".join(f"{u.replace(' ', '_')} {v.replace(' ', '_')}\n" for u, v in G.edges))
    H = nx.relabel_nodes(G, {v: v.replace(" ", "_") for v in G})
    sc = {"kind": "network", "name": "lm", "graph": {"file": {"path": str(p)}},
          "metrics": {"sources": "all", "statistics": ["mean_distance", "edge_betweenness"]},
          "solver": {"backend": "cpu"}}
    out = simengine.run(sc, tmp_path / "lm.h5", log=lambda m: None)
    want = nx.edge_betweenness_centrality(H, normalized=False)
    with h5py.File(out) as f:
        val = f["edge/betweenness"][()]
        src = [x.decode() for x in f["edge/source"][()]]
        dst = [x.decode() for x in f["edge/target"][()]]
        assert len(val) == 2 * H.number_of_edges()                          # both arcs
        assert f["edge/betweenness"].attrs["units"] in ("1", b"1")
    for u, v, x in zip(src, dst, val):
        key = (u, v) if (u, v) in want else (v, u)
        assert x == pytest.approx(want[key], rel=1e-12, abs=1e-12)
