"""The Python API follows networkx on direction (issue 48, item 9): ``directed=`` is honoured for
every input, and ``shortest_path`` on a PathResults is refused in one line."""
import networkx as nx
import numpy as np
import pytest

import simengine
from simengine.errors import UserError


def _digraph():
    G = nx.gnp_random_graph(40, 0.08, seed=3, directed=True)
    rng = np.random.default_rng(1)
    for u, v in G.edges:
        G[u][v]["weight"] = float(rng.integers(1, 9))
    return G


def _min_weight_undirected(G):
    H = nx.Graph()
    H.add_nodes_from(G)
    for u, v, w in G.edges(data="weight"):
        if not H.has_edge(u, v) or H[u][v]["weight"] > w:
            H.add_edge(u, v, weight=w)
    return H


def test_directed_false_on_a_digraph_is_its_undirected_graph():
    G = _digraph()
    res = simengine.path_statistics(G, directed=False)
    U = G.to_undirected()
    assert nx.is_connected(U)
    assert res.mean_distance == pytest.approx(nx.average_shortest_path_length(U), rel=1e-12)
    close = nx.closeness_centrality(U)
    assert all(res.closeness[v] == pytest.approx(close[v], rel=1e-12) for v in G)
    # the directed reading differs, so the argument was not ignored
    assert simengine.path_statistics(G).mean_distance != pytest.approx(res.mean_distance)


def test_directed_false_weighted_keeps_the_lighter_arc_of_a_pair():
    G = _digraph()
    res = simengine.path_statistics(G, directed=False, weight="weight",
                                    statistics=["mean_distance", "betweenness"])
    H = _min_weight_undirected(G)
    assert res.mean_distance == pytest.approx(
        nx.average_shortest_path_length(H, weight="weight"), rel=1e-12)
    btw = nx.betweenness_centrality(H, weight="weight", normalized=False)
    assert all(res.betweenness[v] == pytest.approx(btw[v], abs=1e-9) for v in G)


def test_directed_true_on_a_graph_is_its_directed_graph():
    G = nx.karate_club_graph()
    res = simengine.path_statistics(G, directed=True, statistics=["mean_distance", "betweenness"])
    D = G.to_directed()
    assert res.mean_distance == pytest.approx(nx.average_shortest_path_length(D), rel=1e-12)
    btw = nx.betweenness_centrality(D, normalized=False)
    assert all(res.betweenness[v] == pytest.approx(btw[v], abs=1e-9) for v in G)


def test_a_csr_graph_honours_directed_too():
    from simengine.network.graph import CSRGraph

    G = _digraph()
    g = CSRGraph.from_networkx(G, weight=None)
    res = simengine.path_statistics(g, directed=False)
    assert res.mean_distance == pytest.approx(
        nx.average_shortest_path_length(nx.Graph(nx.relabel_nodes(G, dict(zip(G, range(40)))))),
        rel=1e-12)


def test_shortest_path_on_path_results_is_one_line():
    res = simengine.path_statistics(nx.path_graph(4))
    with pytest.raises(UserError) as ei:
        simengine.shortest_path(res, 0, 3)
    msg = str(ei.value)
    assert "\n" not in msg and "PathResults" in msg and "store_predecessors" in msg
