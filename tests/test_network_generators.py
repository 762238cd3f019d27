"""Generators: reproducibility, sizes, degrees; components and spanning forests."""
import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simengine.network import generators as gen
from simengine.network.components import connected_components, strongly_connected_components
from simengine.network.graph import CSRGraph
from simengine.network.mst import mst_kruskal, mst_prim


@pytest.mark.parametrize("spec", [
    {"type": "watts_alpha", "n": 400, "k": 10, "seed": 1},
    {"type": "watts_alpha_free", "n": 400, "k": 10, "seed": 1},
    {"type": "barabasi_albert", "n": 300, "m": 4, "seed": 1},
    {"type": "gnp", "n": 200, "p": 0.05, "seed": 1},
    {"type": "gnm", "n": 200, "m": 500, "seed": 1, "directed": True},
    {"type": "watts_strogatz", "n": 100, "k": 6, "p": 0.2, "seed": 1},
    {"type": "rmat", "scale": 8, "seed": 1},
    {"type": "random_weighted", "n": 300, "avg_degree": 6, "seed": 1},
    {"type": "barabasi_albert", "n": 300, "m": 2, "seed": 5,
     "weights": {"type": "uniform_int", "low": 1, "high": 10, "seed": 3}},
])
def test_reproducible(spec):
    a, b = gen.generate(spec), gen.generate(spec)
    assert a.content_hash() == b.content_hash()
    c = gen.generate({**spec, "seed": 99})
    assert c.content_hash() != a.content_hash()


def test_sizes_and_degrees():
    g = gen.barabasi_albert(1000, 50, seed=2)
    assert g.num_edges == 50 + (1000 - 51) * 50
    assert connected_components(g)[0] == 1
    assert g.degree().min() >= 50 and abs(g.degree().mean() - 2 * 50 * (1 - 51 / 1000)) < 0.5
    for ring in (True, False):
        g = gen.watts_alpha(2000, 10, ring=ring, seed=3)
        assert g.num_edges >= 10000 and g.num_edges <= 10000 + 50
        assert connected_components(g)[0] == 1
        assert abs(g.degree().mean() - 10) < 0.1
    # ring-substrate alpha graphs are strongly clustered; the free variant is more random
    C_ring = nx.transitivity(gen.watts_alpha(2000, 10, ring=True, seed=3).to_networkx())
    C_rand = nx.transitivity(gen.erdos_renyi_gnm(2000, 10000, seed=3).to_networkx())
    assert C_ring > 10 * C_rand
    assert gen.erdos_renyi_gnm(100, 321, seed=1).num_edges == 321
    assert gen.erdos_renyi_gnm(50, 321, seed=1, directed=True).num_arcs == 321
    g = gen.erdos_renyi_gnp(400, 0.05, seed=4)
    assert abs(g.num_edges - 0.05 * 400 * 399 / 2) < 5 * np.sqrt(0.05 * 400 * 399 / 2)
    assert gen.ring_lattice(20, 4).degree().tolist() == [4] * 20
    ws = gen.watts_strogatz(200, 6, 0.3, seed=1)
    assert ws.num_edges == 600
    assert gen.grid((3, 4)).num_edges == 3 * 3 + 2 * 4
    assert gen.torus((3, 4)).num_edges == 24
    assert gen.grid((2, 3, 4)).num_edges == 1 * 12 + 2 * 2 * 4 + 3 * 2 * 3
    assert gen.torus((4, 4, 4)).degree().tolist() == [6] * 64
    r = gen.rmat(10, seed=2)
    assert r.n == 1024 and r.num_edges > 5000
    hi = np.sort(r.degree())[-10:].mean()
    assert hi > 10 * r.degree().mean()      # skewed (Graph500 parameters)


def test_random_weights_symmetric_in_range():
    g = gen.random_weights(gen.erdos_renyi_gnm(300, 1500, seed=1), 1, 10, seed=2)
    assert g.weights.min() >= 1 and g.weights.max() <= 10
    assert set(np.unique(g.weights)) == set(range(1, 11))
    A = g.to_scipy()
    assert (A != A.T).nnz == 0
    gd = gen.random_weights(gen.erdos_renyi_gnm(50, 300, seed=1, directed=True), 2, 3, seed=2)
    assert set(np.unique(gd.weights)) <= {2.0, 3.0}


@pytest.mark.parametrize("spec,msg", [
    ({"type": "nope", "n": 3}, "unknown generator"),
    ({"type": "barabasi_albert", "n": 10}, "missing"),
    ({"type": "barabasi_albert", "n": 10, "m": 2, "q": 1}, "unknown parameter"),
    ({"type": "barabasi_albert", "n": 2, "m": 5}, "n >= m"),
    ({"type": "gnm", "n": 3, "m": 2, "weights": {"type": "normal"}}, "uniform_int"),
    ({"n": 3}, "type"),
])
def test_generate_errors(spec, msg):
    with pytest.raises(ValueError, match=msg):
        gen.generate(spec)


@st.composite
def undirected(draw):
    n = draw(st.integers(1, 20))
    pairs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1)), max_size=40))
    w = draw(st.lists(st.integers(1, 9), min_size=len(pairs), max_size=len(pairs)))
    return n, pairs, w


@settings(max_examples=60, deadline=None, suppress_health_check=list(HealthCheck))
@given(undirected(), st.booleans())
def test_components_and_msf_vs_networkx(data, directed):
    n, pairs, w = data
    g = CSRGraph.from_edges(n, [a for a, _ in pairs], [b for _, b in pairs], w, directed)
    G = g.to_networkx()
    if directed:
        assert connected_components(g)[0] == nx.number_weakly_connected_components(G)
        cnt, lab = strongly_connected_components(g)
        assert cnt == nx.number_strongly_connected_components(G)
        for comp in nx.strongly_connected_components(G):
            assert len({lab[v] for v in comp}) == 1
    else:
        cnt, lab = connected_components(g)
        assert cnt == nx.number_connected_components(G)
        assert lab[0] == 0 if n else True
        want = nx.minimum_spanning_tree(G).size(weight="weight")
        tk, ek = mst_kruskal(g)
        tp, ep = mst_prim(g)
        assert tk == tp == want and ek == ep == n - cnt
