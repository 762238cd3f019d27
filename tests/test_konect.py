"""KONECT files: the first line's '% sym|asym|bip WEIGHTS' decides direction, sides and weights;
a scenario setting that contradicts it is logged (network/readers/konect.py)."""
import gzip

import networkx as nx
import numpy as np
import pytest

import simengine
from simengine.errors import UserError
from simengine.network.readers import read_graph_file

ARCS = [(1, 2, 3.0), (2, 1, 1.0), (2, 3, 2.0), (3, 4, 5.0), (4, 1, 1.5), (3, 1, 4.0)]


def konect(tmp_path, head, lines, name="out.food", counts=True):
    p = tmp_path / name
    body = "".join(" ".join(str(x) for x in ln) + "\n" for ln in lines)
    p.write_text(head + "\n" + (f"% {len(lines)} 4 4\n" if counts else "") + body)
    return p


def arcs(graph):
    ids = np.asarray(graph.ids)
    src = np.repeat(np.arange(graph.n), np.diff(graph.indptr))
    w = graph.weights if graph.weights is not None else [None] * len(src)
    return sorted(zip(ids[src].tolist(), ids[graph.indices].tolist(), list(w)))


def test_asym_weighted_is_directed_with_every_arc_and_its_weight(tmp_path):
    p = konect(tmp_path, "% asym posweighted", ARCS)       # no suffix: line 1 says KONECT
    res = read_graph_file(p)
    assert res.format == "konect" and res.graph.directed and res.file_directed
    G = nx.DiGraph()
    G.add_weighted_edges_from(ARCS)
    assert arcs(res.graph) == sorted((u, v, d["weight"]) for u, v, d in G.edges(data=True))
    assert res.notes == []
    # the statistics of a run = networkx on the directed weighted graph
    sc = {"kind": "network", "name": "kon", "graph": {"file": {"path": str(p)}},
          "metrics": {"sources": "all", "statistics": ["mean_distance", "closeness"]},
          "solver": {"backend": "cpu"}}
    out = simengine.run(sc, tmp_path / "k.h5", log=lambda m: None)
    d = [x for s, row in nx.shortest_path_length(G, weight="weight") for t, x in row.items()
         if t != s]
    with simengine.open(out) as r:
        assert r.graph["directed"]
        assert r.statistics["mean_distance"] == pytest.approx(np.mean(d), rel=1e-12)


def test_sym_reciprocal_pairs_and_a_contradicting_setting_is_logged(tmp_path):
    p = konect(tmp_path, "% sym unweighted", [(u, v) for u, v, _ in ARCS], name="g.konect")
    res = read_graph_file(p)
    assert not res.graph.directed and res.graph.weights is None
    assert arcs(res.graph) == sorted((u, v, None) for u, v in
                                     nx.Graph([(u, v) for u, v, _ in ARCS]).to_directed().edges())
    res = read_graph_file(p, directed=True)
    assert res.notes == [f"{p}: treating the undirected graph this KONECT file describes (its "
                         "header says so) as directed, with arcs both ways (directed: true)"]
    assert res.graph.num_arcs == nx.Graph([(u, v) for u, v, _ in ARCS]).to_directed() \
        .number_of_edges()
    q = konect(tmp_path, "% asym unweighted", [(u, v) for u, v, _ in ARCS], name="a.konect")
    said = read_graph_file(q, directed=False).notes
    assert said == [f"{q}: treating the {len(ARCS)} directed arc lines of this KONECT file (its "
                    "header says so) as undirected edges (directed: false)"]


def test_bip_keeps_two_id_spaces(tmp_path):
    edges = [(1, 1), (1, 2), (2, 2), (3, 1)]
    p = tmp_path / "out.bip.gz"
    with gzip.open(p, "wt") as f:
        f.write("% bip unweighted\n% 4 3 2\n" + "".join(f"{u} {v}\n" for u, v in edges))
    res = read_graph_file(p, format="konect")
    B = nx.Graph([(f"L{u}", f"R{v}") for u, v in edges])
    assert res.graph.n == 5 and not res.graph.directed
    assert arcs(res.graph) == sorted((u, v, None) for u, v in B.to_directed().edges())


def test_non_length_weights_are_ignored_with_a_note_and_refused_when_required(tmp_path):
    p = konect(tmp_path, "% asym positive", [(1, 2, 1), (1, 2, 1), (2, 3, 1)])
    res = read_graph_file(p)
    assert res.graph.weights is None and not res.has_weights
    assert res.notes == [f"{p}: the third column is ignored: the KONECT header says positive "
                         "(its third column counts multiple edges)"]
    with pytest.raises(UserError, match=r"out.food:1: graph.weights: file, but this KONECT "
                                        r"file's header says 'positive'"):
        read_graph_file(p, weights=True)


def test_timestamps_are_ignored_and_bad_lines_are_one_line_errors(tmp_path):
    p = konect(tmp_path, "% sym weighted", [(1, 2, 2.5, 1e9), (2, 3, 1.0, 1e9)], counts=False)
    res = read_graph_file(p)
    assert sorted(res.graph.weights.tolist()) == [1.0, 1.0, 2.5, 2.5]
    bad = konect(tmp_path, "% sym unweighted", [(1, 9)], name="b.konect")
    with pytest.raises(UserError, match=r"b.konect:3: vertex id 9 beyond the header's 4"):
        read_graph_file(bad)
    head = tmp_path / "h.konect"
    head.write_text("% nonsense\n1 2\n")
    with pytest.raises(UserError, match=r"h.konect:1: expected KONECT's first line"):
        read_graph_file(head)
