"""A SNAP edge list's "# Directed graph" / "# Undirected graph" header decides its direction;
a scenario's ``graph.directed`` that contradicts it wins with one logged line (as for DIMACS)."""
import networkx as nx
import numpy as np
import pytest

import simengine
from simengine.network.readers import read_graph_file

EDGES = [(1, 2), (2, 3), (3, 1), (3, 4), (4, 5)]


def snap_file(tmp_path, header, edges=EDGES, name="g.txt"):
    p = tmp_path / name
    p.write_text(header + "# Nodes: 5 Edges: 5\n# FromNodeId\tToNodeId\n"
                 + "".join(f"{u}\t{v}\n" for u, v in edges))
    return p


def arcs(graph):
    ids = np.asarray(graph.ids) if graph.ids is not None else np.arange(graph.n)
    src = np.repeat(np.arange(graph.n), np.diff(graph.indptr))
    return sorted(zip(ids[src].tolist(), ids[graph.indices].tolist()))


@pytest.mark.parametrize("header, directed", [
    ("# Directed graph (each unordered pair of nodes is saved once): g.txt\n", True),
    ("# Undirected graph: ../../data/output/g.txt\n", False),
    ("#   directed GRAPH\n", True),
    ("# SNAP\n", False),                                  # no statement: undirected, as before
])
def test_header_direction_round_trips(tmp_path, header, directed):
    res = read_graph_file(snap_file(tmp_path, header))
    want = nx.DiGraph(EDGES) if directed else nx.Graph(EDGES).to_directed()
    assert res.graph.directed is directed and res.file_directed is directed
    assert arcs(res.graph) == sorted(want.edges())
    assert res.notes == []


def test_scenario_setting_that_contradicts_the_header_is_logged(tmp_path):
    p = snap_file(tmp_path, "# Directed graph: g.txt\n")
    res = read_graph_file(p, directed=False)
    assert not res.graph.directed and arcs(res.graph) == sorted(nx.Graph(EDGES).to_directed().edges())
    assert res.notes == [f"{p}: treating the 5 directed edge lines of this edge list file (its "
                         "header says so) as undirected edges (directed: false)"]
    q = snap_file(tmp_path, "# Undirected graph: g.txt\n", name="u.txt")
    assert read_graph_file(q, directed=True).notes == [
        f"{q}: treating the undirected graph this edge list file describes (its header says so) "
        "as directed, with arcs both ways (directed: true)"]
    both = read_graph_file(q, directed=True).graph             # arcs both ways, as it says
    assert both.directed and arcs(both) == sorted(nx.Graph(EDGES).to_directed().edges())
    assert read_graph_file(q, directed=False).notes == []
    plain = snap_file(tmp_path, "", name="plain.txt")       # no header: no note either way
    assert read_graph_file(plain, directed=True).notes == []


def test_directed_header_gives_the_directed_statistics(tmp_path):
    snap_file(tmp_path, "# Directed graph (each unordered pair of nodes is saved once)\n")
    sc = {"kind": "network", "name": "snap", "graph": {"file": {"path": str(tmp_path / "g.txt")}},
          "metrics": {"sources": "all"}, "solver": {"backend": "cpu"}}
    out = simengine.run(sc, tmp_path / "g.h5", log=lambda m: None)
    G = nx.DiGraph(EDGES)
    d = [x for s, row in nx.shortest_path_length(G) for t, x in row.items() if t != s]
    with simengine.open(out) as r:
        st = r.statistics
        assert r.graph["directed"]
        assert st["mean_distance"] == pytest.approx(sum(d) / len(d), rel=1e-12)
        assert not st["connected"]
