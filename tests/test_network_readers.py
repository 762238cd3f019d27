"""Graph file readers: formats, id mapping, gzip, duplicate/self-loop rule, errors with FILE:LINE."""
import gzip

import numpy as np
import pytest

from simengine.errors import UserError
from simengine.network.readers import read_graph


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
        read_graph(write(tmp_path, "a.txt", "0 1\n"), format="gml")
