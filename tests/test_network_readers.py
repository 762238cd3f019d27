"""Graph file readers: formats, id mapping, gzip, duplicate/self-loop rule, errors with FILE:LINE."""
import gzip
import os

import networkx as nx
import pytest

from simengine.errors import UserError
from simengine.network.apsp import apsp_statistics
from simengine.network.graph import CSRGraph
from simengine.network.readers import guess_format, read_graph, read_graph_file


def write(tmp_path, name, text):
    p = tmp_path / name
    if name.endswith(".gz"):
        with gzip.open(p, "wt") as f:
            f.write(text)
    else:
        p.write_text(text)
    return p


def edges(g):
    s, d = g.arcs()
    w = g.weights.tolist() if g.weights is not None else [None] * len(s)
    return sorted(zip(s.tolist(), d.tolist(), w))


def test_edgelist_mapping_weights_gzip(tmp_path):
    p = write(tmp_path, "a.txt.gz", "# SNAP\n% other\n10 30 2.5\n30 20 1\n10 30 0.5\n20 20 7\n")
    g = read_graph(p)
    assert g.n == 3 and not g.directed
    # ids 10,20,30 -> 0,1,2 ; duplicate 10-30 keeps the smaller weight; self-loop dropped
    assert edges(g) == [(0, 2, 0.5), (1, 2, 1.0), (2, 0, 0.5), (2, 1, 1.0)]
    g = read_graph(write(tmp_path, "b.txt", "0 1\n1 2\n"), directed=True)
    assert g.n == 3 and edges(g) == [(0, 1, None), (1, 2, None)]
    g = read_graph(p, weights=False, directed=True)
    assert g.weights is None and g.num_arcs == 2


def test_dimacs(tmp_path):
    p = write(tmp_path, "x.gr", "c hi\np sp 3 3\na 1 2 5\na 2 3 7\na 1 2 4\n")
    g = read_graph(p)
    assert g.directed and edges(g) == [(0, 1, 4.0), (1, 2, 7.0)]


def test_mtx(tmp_path):
    p = write(tmp_path, "m.mtx", "%%MatrixMarket matrix coordinate integer symmetric\n% c\n"
              "3 3 2\n2 1 4\n3 2 6\n")
    g = read_graph(p)
    assert not g.directed and edges(g) == [(0, 1, 4.0), (1, 0, 4.0), (1, 2, 6.0), (2, 1, 6.0)]
    p = write(tmp_path, "p.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 3\n")
    g = read_graph(p)
    assert g.directed and g.weights is None and edges(g) == [(0, 2, None)]


def test_metis(tmp_path):
    g = read_graph(write(tmp_path, "g.metis", "% c\n3 2\n2\n1 3\n2\n"))
    assert edges(g) == [(0, 1, None), (1, 0, None), (1, 2, None), (2, 1, None)]
    g = read_graph(write(tmp_path, "w.graph", "3 2 1\n2 5\n1 5 3 9\n2 9\n"))
    assert edges(g) == [(0, 1, 5.0), (1, 0, 5.0), (1, 2, 9.0), (2, 1, 9.0)]
    g = read_graph(write(tmp_path, "v.graph", "2 1 11\n7 2 3\n8 1 3\n"))
    assert edges(g) == [(0, 1, 3.0), (1, 0, 3.0)]


@pytest.mark.parametrize("name,text,line,what", [
    ("e.txt", "0 1\n1 x\n", 2, "integer vertex id"),
    ("e2.txt", "0 1\n1 2 3 4\n", 2, "'u v'"),
    ("d.gr", "p sp 3 1\na 1 9 1\n", 2, "1..3"),
    ("d2.gr", "c\na 1 2 1\n", 2, "p sp"),
    ("d3.gr", "p sp 3 1\nq 1 2\n", 2, "'c', 'p' or 'a'"),
    ("m.mtx", "%%MatrixMarket matrix array real general\n", 1, "coordinate"),
    ("m2.mtx", "%%MatrixMarket matrix coordinate real general\n2 2 1\n1 2\n", 3, "3 values"),
    ("g.metis", "2 1\n2\n1 z\n", 3, "neighbour id"),
    ("g2.metis", "2 1 1\n2 5\n1\n", 3, "pairs"),
])
def test_errors_have_file_and_line(tmp_path, name, text, line, what):
    p = write(tmp_path, name, text)
    with pytest.raises(UserError) as e:
        read_graph(p)
    assert f"{p}:{line}:" in str(e.value) and what in str(e.value)


def test_missing_file_and_format(tmp_path):
    with pytest.raises(UserError, match="no such file"):
        read_graph(tmp_path / "nope.txt")
    with pytest.raises(UserError, match="unknown graph format"):
        read_graph(write(tmp_path, "a.txt", "0 1\n"), format="gexf")


# ----------------------------------------------------------------------------- format and direction
@pytest.mark.parametrize("name,fmt", [
    ("g.gr", "dimacs"), ("g.gr.gz", "dimacs"), ("g.mtx", "mtx"), ("g.MTX.gz", "mtx"),
    ("g.graph", "metis"), ("g.metis.gz", "metis"), ("g.txt", "edgelist"), ("g.edges.gz", "edgelist"),
    ("g.tsv", "edgelist"), ("g.csv.gz", "edgelist"), ("g.dat", "edgelist"),
])
def test_format_from_suffix(name, fmt):
    assert guess_format(name) == fmt


def test_mtx_without_format_is_read_as_mtx_not_as_an_edge_list(tmp_path):
    # the case from the issue: 10 vertices, 3 arcs; as an edge list the size line became an edge
    p = write(tmp_path, "m.mtx", "%%MatrixMarket matrix coordinate pattern general\n"
              "10 10 3\n1 2\n2 3\n3 4\n")
    g = read_graph(p)
    assert g.n == 10 and g.directed and edges(g) == [(0, 1, None), (1, 2, None), (2, 3, None)]
    eff = apsp_statistics(g)["efficiency"]
    G = nx.DiGraph([(1, 2), (2, 3), (3, 4)])
    G.add_nodes_from(range(1, 11))
    assert eff == pytest.approx(_efficiency(G), rel=1e-12)


def _efficiency(G):
    n = G.number_of_nodes()
    tot = sum(1 / d for s, row in nx.shortest_path_length(G) for t, d in row.items() if t != s)
    return tot / (n * (n - 1))


@pytest.mark.parametrize("name,text,likely", [
    ("a.txt", "%%MatrixMarket matrix coordinate pattern general\n10 10 3\n1 2\n", "mtx"),
    ("a.txt", "p sp 3 1\na 1 2 1\n", "dimacs"),
    ("a.gr", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n", "mtx"),
    ("a.graph", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n", "mtx"),
    ("a.graph", "c DIMACS\np sp 3 1\na 1 2 1\n", "dimacs"),
    ("a.graph", "# SNAP edge list\n0 1\n", "edgelist"),
    ("a.mtx", "0 1\n1 2\n", "edgelist"),
    ("a.mtx", "p sp 3 1\na 1 2 1\n", "dimacs"),
    ("a.gr", "0 1\n1 2\n", "edgelist"),
    ("a.txt", "3 2\n2\n1 3\n2\n", "metis"),
])
def test_another_formats_header_is_an_error_naming_the_format(tmp_path, name, text, likely):
    p = write(tmp_path, name, text)
    with pytest.raises(UserError) as e:
        read_graph(p)
    msg = str(e.value)
    assert f"format: {likely}" in msg and str(p) in msg and "\n" not in msg


def test_direction_comes_from_the_file_and_an_explicit_setting_wins_with_a_note(tmp_path):
    p = write(tmp_path, "d.gr", "c x\np sp 4 3\na 1 2 1\na 2 3 1\na 3 4 1\n")
    r = read_graph_file(p)
    assert r.graph.directed and r.file_directed and r.notes == []
    r = read_graph_file(p, directed=False)
    assert not r.graph.directed and r.graph.num_arcs == 6
    assert r.notes == [f"{p}: treating the 3 directed arcs of this DIMACS file as undirected "
                       "edges (directed: false)"]
    gen = write(tmp_path, "g.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 2\n1 2 4\n"
                "2 3 5\n")
    assert read_graph(gen).directed
    r = read_graph_file(gen, directed=False)
    assert not r.graph.directed and "undirected" in r.notes[0]
    sym = write(tmp_path, "s.mtx", "%%MatrixMarket matrix coordinate real symmetric\n3 3 2\n2 1 4\n"
                "3 2 5\n")
    assert not read_graph(sym).directed
    r = read_graph_file(sym, directed=True)   # a symmetric matrix holds both directions
    assert r.graph.directed and edges(r.graph) == [(0, 1, 4.0), (1, 0, 4.0), (1, 2, 5.0),
                                                   (2, 1, 5.0)]
    assert "directed" in r.notes[0]
    met = write(tmp_path, "m.graph", "3 2\n2\n1 3\n2\n")
    assert not read_graph(met).directed
    assert read_graph_file(met, directed=True).graph.num_arcs == 4
    el = write(tmp_path, "e.txt", "0 1\n1 2\n")
    assert not read_graph(el).directed and read_graph_file(el, directed=True).notes == []


# ----------------------------------------------------------------------------- vertex ids
def test_edge_list_ids_are_kept(tmp_path):
    g = read_graph(write(tmp_path, "snap.txt", "# SNAP\n10 30\n30 70\n20 10\n"))
    assert g.ids.tolist() == [10, 20, 30, 70]
    assert read_graph(write(tmp_path, "c.txt", "0 1\n1 2\n")).ids is None
    g = read_graph(write(tmp_path, "lab.csv", "bob,alice,2\ncarol,bob,1\n"))
    assert g.ids.tolist() == ["alice", "bob", "carol"] and g.weighted
    assert edges(g) == [(0, 1, 2.0), (1, 0, 2.0), (1, 2, 1.0), (2, 1, 1.0)]
    assert g.index_of(["carol", "alice"]).tolist() == [2, 0]
    for name in ("d.gr", "m.mtx", "m.graph"):
        text = {"d.gr": "p sp 3 1\na 1 3 1\n",
                "m.mtx": "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 3\n",
                "m.graph": "3 1\n3\n\n1\n"}[name]
        assert read_graph(write(tmp_path, name, text)).ids.tolist() == [1, 2, 3]


def test_column_header_is_skipped_never_read_as_an_edge(tmp_path):
    p = write(tmp_path, "h.csv", "source,target\n10,20\n20,30\n")
    r = read_graph_file(p)
    assert r.graph.ids.tolist() == [10, 20, 30] and r.graph.num_edges == 2
    assert "skipped a column header" in r.notes[0] and f"{p}:1" in r.notes[0]


def test_from_networkx_keeps_labels():
    G = nx.Graph([("a", "b"), ("b", (1, 2))])
    g = CSRGraph.from_networkx(G)
    assert g.ids.tolist() == ["a", "b", (1, 2)]
    assert g.output_ids().tolist() == ["a", "b", "(1, 2)"]
    assert CSRGraph.from_networkx(nx.path_graph(4)).ids is None
    H = nx.relabel_nodes(nx.path_graph(3), {0: 5, 1: 7, 2: 9})
    g = CSRGraph.from_networkx(H)
    assert g.output_ids().tolist() == [5, 7, 9] and g.index_of([9]).tolist() == [2]
    back = g.to_networkx(labels=True)
    assert sorted(back.edges()) == sorted(H.edges())


# ----------------------------------------------------------------------------- header counts
@pytest.mark.parametrize("name,text,line,what", [
    ("t.gr", "p sp 3 3\na 1 2 1\na 2 3 1\n", 1, "m = 3 arcs but the file has 2"),
    ("t2.gr", "p sp 3 1\na 1 2 1\na 2 3 1\n", 3, "more 'a' lines"),
    ("t.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 3\n1 2\n2 3\n", 2,
     "promises 3 entries but the file has 2"),
    ("t2.mtx", "%%MatrixMarket matrix coordinate pattern general\n3 3 1\n1 2\n2 3\n", 4,
     "more entries"),
    ("t.graph", "3 2\n2\n1 3\n", 1, "n = 3 vertex lines but the file has 2"),
    ("t2.graph", "3 3\n2\n1 3\n2\n", 1, "m = 3 edges"),
    ("t3.graph", "3 1\n2\n1 3\n2\n", 3, "more adjacency entries"),
])
def test_header_counts_are_checked_against_the_lines(tmp_path, name, text, line, what):
    p = write(tmp_path, name, text)
    with pytest.raises(UserError) as e:
        read_graph(p)
    assert f"{p}:{line}:" in str(e.value) and what in str(e.value)


@pytest.mark.parametrize("name,text,what", [
    ("big.gr", "p sp 10000000000 1\na 1 2 1\n", "n = 10000000000 vertices (about 1.2 TiB"),
    ("big2.gr", "p sp 3 1000000000\na 1 2 1\n", "1000000000 arcs, but a file of"),
    ("big.mtx", "%%MatrixMarket matrix coordinate pattern general\n99999999999 99999999999 1\n1 2\n",
     "n = 99999999999 vertices"),
    ("big.graph", "5000000000 1\n2\n1\n", "5000000000 vertex lines"),
    ("big2.graph", "2 80000000000\n2\n1\n", "adjacency entries"),
])
def test_absurd_headers_are_refused_before_allocation(tmp_path, name, text, what):
    p = write(tmp_path, name, text)
    with pytest.raises(UserError) as e:
        read_graph(p)
    assert f"{p}:" in str(e.value) and what in str(e.value)


def test_huge_vertex_count_within_limits_but_beyond_memory(tmp_path, monkeypatch):
    from simengine.network.readers import common as readers   # where the guards ask

    monkeypatch.setattr(readers, "available_memory", lambda: 1 << 30)
    p = write(tmp_path, "m.gr", "p sp 100000000 1\na 1 2 1\n")
    with pytest.raises(UserError, match=r"m.gr:1: .*n = 100000000 vertices: about 11.9 GiB .* "
                       r"more than the 1.0 GiB .*check_memory=False"):
        read_graph(p)
    # the same refusal for the arcs, and check_memory=False reads the file anyway
    monkeypatch.setattr(readers, "available_memory", lambda: 3000)
    q = write(tmp_path, "q.gr", "p sp 20 60\n" + "".join(f"a {i % 20 + 1} {(i * 7) % 20 + 1} 1\n"
                                                           for i in range(60)))
    with pytest.raises(UserError, match=r"q.gr:1: the header promises 60 arcs: about 3.8 KiB"):
        read_graph(q)
    assert read_graph(q, check_memory=False).n == 20


# ----------------------------------------------------------------------------- hostile files
def test_gzip_damage_is_one_line(tmp_path):
    data = "".join(f"{i} {i + 1}\n" for i in range(3000)).encode()
    z = gzip.compress(data)
    (tmp_path / "t.txt.gz").write_bytes(z[:len(z) // 2])
    with pytest.raises(UserError, match=r"t.txt.gz:\d+: the gzip data ends early"):
        read_graph(tmp_path / "t.txt.gz")
    bad = bytearray(z)
    bad[-6] ^= 0xFF                                    # CRC
    (tmp_path / "c.txt.gz").write_bytes(bytes(bad))
    with pytest.raises(UserError, match=r"c.txt.gz:\d+: damaged gzip data"):
        read_graph(tmp_path / "c.txt.gz")
    (tmp_path / "p.txt.gz").write_text("0 1\n")
    with pytest.raises(UserError, match="not gzip-compressed although the name ends in .gz"):
        read_graph(tmp_path / "p.txt.gz")


def test_directories_fifos_and_system_files_are_refused(tmp_path):
    (tmp_path / "d.txt").mkdir()
    with pytest.raises(UserError, match="is a directory"):
        read_graph(tmp_path / "d.txt")
    os.mkfifo(tmp_path / "f.txt")
    with pytest.raises(UserError, match="FIFO"):
        read_graph(tmp_path / "f.txt")                  # must not block on open
    with pytest.raises(UserError, match="character device"):
        read_graph("/dev/zero")
    os.environ["SIMENGINE_TEST_SECRET"] = "s3cr3t-value"
    try:
        with pytest.raises(UserError) as e:
            read_graph("/proc/self/environ")
    finally:
        del os.environ["SIMENGINE_TEST_SECRET"]
    assert "s3cr3t" not in str(e.value) and "/proc" in str(e.value)


def test_out_of_range_ids_and_long_lines_are_quoted_briefly(tmp_path):
    p = write(tmp_path, "big.txt", "0 1\n1 9223372036854775808\n")
    with pytest.raises(UserError, match=r"big.txt:2: expected an integer vertex id in 0..2\^63-1"):
        read_graph(p)
    assert read_graph(write(tmp_path, "ok.txt", "0 9223372036854775807\n")).ids.tolist() == \
        [0, 9223372036854775807]
    p = write(tmp_path, "long.txt", "0 1\n1 " + "x" * 100000 + "\n")
    with pytest.raises(UserError) as e:
        read_graph(p)
    assert len(str(e.value)) < 200 and "long.txt:2" in str(e.value)
    p = write(tmp_path, "w.txt", "0 1 nan\n")
    with pytest.raises(UserError, match="w.txt:1: expected a finite weight"):
        read_graph(p)


def test_negative_weight_is_reported_with_its_line(tmp_path):
    p = write(tmp_path, "n.txt", "0 1 2\n1 2 -3\n2 3 -4\n")
    r = read_graph_file(p)
    assert r.negative_weight == (2, -3.0)
    assert read_graph_file(p, weights=False).negative_weight is None


def test_max_lines_stops_early_and_says_so(tmp_path):
    p = write(tmp_path, "l.txt", "".join(f"{i} {i + 1}\n" for i in range(100)))
    r = read_graph_file(p, max_lines=10)
    assert not r.complete and r.graph is None and r.entries == 10
    assert read_graph_file(p, max_lines=1000).graph.n == 101
