"""What a source list, a sample and ``metrics.statistics`` mean (docs/network.md), against networkx."""
import networkx as nx
import numpy as np
import pytest

from simengine.network.apsp import apsp_statistics, run_sources
from simengine.network.graph import CSRGraph
from simengine.network.statistics import PathStatistics, select_statistics


def listed_reference(G, sources, weight=None):
    """Statistics over the ordered pairs (s, t), s in ``sources``, straight from networkx."""
    n = G.number_of_nodes()
    d = {s: nx.single_source_dijkstra_path_length(G, s, weight=weight) if weight else
         nx.single_source_shortest_path_length(G, s) for s in sources}
    pairs = [(s, t, dist) for s in sources for t, dist in d[s].items() if t != s]
    return {"mean_distance": sum(x for *_, x in pairs) / len(pairs),
            "reachable_pairs": len(pairs),
            "unreachable_pairs": len(sources) * (n - 1) - len(pairs),
            "efficiency": sum(1 / x for *_, x in pairs) / (len(sources) * (n - 1)),
            "eccentricity": {s: max(d[s].values()) for s in sources}}


@pytest.mark.parametrize("weighted", [False, True])
def test_listed_sources_are_statistics_over_their_pairs(weighted):
    G = nx.path_graph(4)            # the case: connected, sources [0, 3]
    G.add_edges_from([(3, 4), (4, 5), (1, 5)])
    if weighted:
        for i, (u, v) in enumerate(G.edges()):
            G[u][v]["weight"] = 1 + (3 * i) % 5
    g = CSRGraph.from_networkx(G)
    res = apsp_statistics(g, sources=[0, 3])
    ref = listed_reference(G, [0, 3], "weight" if weighted else None)
    assert res["scope"] == "over 2 listed sources" and res["listed"] and not res["estimate"]
    assert res["connected"] is True                       # a whole-graph fact, from components
    for k in ("mean_distance", "efficiency"):
        assert res[k] == pytest.approx(ref[k], rel=1e-12)
    assert res["reachable_pairs"] == ref["reachable_pairs"] and res["unreachable_pairs"] == 0
    ecc = nx.eccentricity(G, weight="weight" if weighted else None)
    assert res["eccentricity"][0] == ecc[0] and res["eccentricity"][3] == ecc[3]
    assert np.isnan(res["eccentricity"][[1, 2, 4, 5]]).all()
    # whole-graph diameter and radius: bounds, and true bounds
    assert res["diameter_is_lower_bound"] and res["radius_is_upper_bound"]
    assert res["diameter"] <= max(ecc.values()) and res["radius"] >= min(ecc.values())
    # closeness/harmonic exact for listed vertices of an undirected graph, NaN elsewhere
    clo = nx.closeness_centrality(G, distance="weight" if weighted else None)
    har = nx.harmonic_centrality(G, distance="weight" if weighted else None)
    for v in (0, 3):
        assert res["closeness"][v] == pytest.approx(clo[v], rel=1e-12)
        assert res["harmonic"][v] == pytest.approx(har[v], rel=1e-12)
    assert np.isnan(res["closeness"][[1, 2, 4, 5]]).all()


def test_listed_sources_on_directed_graphs():
    G = nx.DiGraph([(0, 1), (1, 2), (2, 3), (3, 0), (1, 3)])        # strongly connected
    res = apsp_statistics(CSRGraph.from_networkx(G), sources=[1])
    assert res["connected"] is True and "closeness" not in res and "harmonic" not in res
    ref = listed_reference(G, [1])
    assert res["mean_distance"] == pytest.approx(ref["mean_distance"])
    G.remove_edge(3, 0)                                              # 1 still reaches 2 and 3
    res = apsp_statistics(CSRGraph.from_networkx(G), sources=[2, 3])
    assert res["connected"] is False
    assert res["unreachable_pairs"] == listed_reference(G, [2, 3])["unreachable_pairs"]


def test_sampled_runs_state_connected_for_the_whole_graph():
    # every vertex reaches the sink 9 and each other, but 9 reaches nothing: a sample without 9
    # sees no unreachable pair, yet the graph is not strongly connected
    G = nx.DiGraph([(i, (i + 1) % 9) for i in range(9)] + [(0, 9)])
    g = CSRGraph.from_networkx(G)
    src = np.array([1, 4, 7])
    st = PathStatistics.for_graph(g, sampled=True, planned_sources=len(src))
    run_sources(g, src, st)
    assert st.results(graph=g)["connected"] is False
    assert "connected" not in st.results()             # without the graph: left out, not guessed
    assert st.results()["scope"] == "estimated from a sample of 3 of 10 sources"
    H = nx.cycle_graph(10, create_using=nx.DiGraph)
    h = CSRGraph.from_networkx(H)
    st = PathStatistics.for_graph(h, sampled=True, planned_sources=3)
    run_sources(h, src, st)
    assert st.results(graph=h)["connected"] is True


def test_all_sources_unchanged_and_complete_key_renamed():
    G = nx.karate_club_graph()
    res = apsp_statistics(CSRGraph.from_networkx(G, weight=None))
    assert res["scope"] == "all sources" and res["all_sources"] and "complete" not in res
    assert res["connected"] and res["radius"] == nx.radius(G) and "radius_is_upper_bound" not in res
    assert res["efficiency"] == pytest.approx(nx.global_efficiency(G), rel=1e-12)


def test_select_statistics_keeps_what_is_asked():
    res = apsp_statistics(CSRGraph.from_networkx(nx.path_graph(5)), sources={"sample": 3, "seed": 1})
    sel = select_statistics(res, ["mean_distance", "closeness"])
    assert {"mean_distance", "mean_distance_se", "closeness", "connected", "scope"} <= set(sel)
    assert not {"diameter", "diameter_is_lower_bound", "radius", "eccentricity", "harmonic",
                "efficiency", "efficiency_se", "distance_histogram"} & set(sel)
