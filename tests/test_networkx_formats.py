"""GraphML, GML and Pajek files through networkx's readers (network/readers/via_networkx.py):
ids, direction, weights and one-line errors as the other readers; statistics = networkx."""
import networkx as nx
import numpy as np
import pytest

import simengine
from simengine.errors import UserError
from simengine.network.readers import read_graph_file

WRITERS = {"graphml": (nx.write_graphml, "g.graphml"), "gml": (nx.write_gml, "g.gml"),
           "pajek": (nx.write_pajek, "g.net")}


def sample(directed):
    rng = np.random.default_rng(2)
    G = nx.gnm_random_graph(15, 30, seed=3, directed=directed)
    G = nx.relabel_nodes(G, {i: f"v{i:02d}" for i in G})
    for u, v in G.edges:
        G.edges[u, v]["weight"] = float(rng.integers(1, 5)) + 0.5
    return G


def arcs(graph):
    ids = np.asarray(graph.ids)
    src = np.repeat(np.arange(graph.n), np.diff(graph.indptr))
    return sorted(zip(ids[src].tolist(), ids[graph.indices].tolist(), graph.weights.tolist()))


@pytest.mark.parametrize("fmt", sorted(WRITERS))
@pytest.mark.parametrize("directed", [False, True])
def test_round_trip_ids_direction_weights(tmp_path, fmt, directed):
    G = sample(directed)
    write, name = WRITERS[fmt]
    p = tmp_path / name
    write(G, p)
    res = read_graph_file(p)                             # format from the suffix
    assert res.format == fmt and res.graph.directed is directed and res.has_weights
    want = G if directed else G.to_directed()
    assert arcs(res.graph) == sorted((u, v, d["weight"]) for u, v, d in want.edges(data=True))
    assert list(res.graph.ids) == sorted(G.nodes)
    sc = {"kind": "network", "name": "nxf", "graph": {"file": {"path": str(p)}},
          "metrics": {"sources": "all", "statistics": ["mean_distance", "closeness"]},
          "solver": {"backend": "cpu"}}
    out = simengine.run(sc, tmp_path / "o.h5", log=lambda m: None)
    d = [x for s, row in nx.shortest_path_length(G, weight="weight") for t, x in row.items()
         if t != s]
    with simengine.open(out) as r:
        assert r.statistics["mean_distance"] == pytest.approx(np.mean(d), rel=1e-12)
        assert [str(x) for x in r.vertex_ids] == sorted(G.nodes)


def test_integer_names_are_integer_ids_and_a_contradicting_setting_is_logged(tmp_path):
    G = nx.Graph([(3, 10), (10, 7)])
    p = tmp_path / "i.graphml"
    nx.write_graphml(G, p)
    res = read_graph_file(p, directed=True)
    assert list(res.graph.ids) == [3, 7, 10] and res.graph.ids.dtype.kind == "i"
    assert res.graph.directed and res.graph.num_arcs == 4 and not res.has_weights
    assert res.notes == [f"{p}: treating the undirected graph this GraphML file describes (the "
                         "file says so) as directed, with arcs both ways (directed: true)"]


def test_partial_weights_bad_files_and_required_weights_are_one_line(tmp_path):
    G = nx.Graph()
    G.add_edge("a", "b", weight=2.0)
    G.add_edge("b", "c")
    p = tmp_path / "p.gml"
    nx.write_gml(G, p)
    with pytest.raises(UserError, match=r"p.gml: 1 of 2 edges have a 'weight'"):
        read_graph_file(p)
    assert read_graph_file(p, weights=False).graph.weights is None
    q = tmp_path / "q.graphml"
    q.write_text("<?xml version='1.0'?>\n<graphml><graph edgedefault='undirected'><node id='a'/>"
                 "<edge source='a' target=\n")
    with pytest.raises(UserError, match=r"q.graphml:\d+: not well-formed GraphML \(XML: "):
        read_graph_file(q)
    secret = tmp_path / "passwd.gml"
    secret.write_text("root:x:0:0:root:/root:/bin/bash\n")
    with pytest.raises(UserError) as e:
        read_graph_file(secret)
    assert "root:x" not in str(e.value) and "cannot read as GML" in str(e.value)
    u = tmp_path / "u.net"
    u.write_text("*Vertices 3\n1 \"a\"\n2 \"b\"\n3 \"c\"\n*Edges\n1 2\n2 3\n")
    with pytest.raises(UserError, match=r"u.net: weights required but the Pajek file has none"):
        read_graph_file(u, weights=True)
