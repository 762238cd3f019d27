"""Hostile graph inputs of the integrity round: absurd weights, a gzip cut in its header, a file
that is not a graph, a header that hides the per-source cost, an output larger than the disk."""
import gzip

import numpy as np
import pytest

from simengine.cli import main
from simengine.errors import UserError
from simengine.network.graph import CSRGraph
from simengine.network.readers import read_graph_file
from simengine.network.statistics import HIST_MAX_BINS, reduce_block
from simengine.network.weights import check_weights


@pytest.mark.parametrize("name,text,line", [
    ("g.gr", "p sp 3 2\na 1 2 1\na 2 3 9223372036854775808\n", 3),   # 2^63
    ("g.txt", "0 1 1.0\n1 2 1e18\n", 2),
    ("g.mtx", "%%MatrixMarket matrix coordinate real general\n3 3 1\n1 2 -1e300\n", 3),
])
def test_absurd_weights_are_refused_with_file_and_line(tmp_path, name, text, line):
    p = tmp_path / name
    p.write_text(text)
    with pytest.raises(UserError, match=rf"{name}:{line}: expected a weight of magnitude at most "
                                        r"2\^53"):
        read_graph_file(p)


def test_absurd_weights_in_any_graph_and_the_histogram_bound():
    g = CSRGraph.from_edges(3, np.array([0, 1]), np.array([1, 2]), np.array([1.0, 1e300]))
    with pytest.raises(UserError, match="beyond the largest accepted, 2\\^53"):
        check_weights(g)
    # distances of 2^53 with bins of 1: the histogram stays at the engines' cap
    d = np.array([[0.0, 2.0 ** 53, 1.0]])
    part = reduce_block(d, np.array([0]), True, 1.0)
    assert len(part.hist) == HIST_MAX_BINS and part.hist.sum() == 2


def test_not_a_graph_is_never_quoted(tmp_path):
    secret = tmp_path / "passwd"
    secret.write_text("alice:S3CRET:0:0:alice:/home:/bin/bash\ndaemon:x:1:1::/usr/sbin:/bin/sh\n")
    for fmt in ("edgelist", "dimacs", "mtx", "metis"):
        with pytest.raises(UserError) as ei:
            read_graph_file(secret, format=fmt)
        assert "S3CRET" not in str(ei.value) and "bash" not in str(ei.value), str(ei.value)
    ok = tmp_path / "g.txt"   # after real edge lines, the bad one is quoted (short, sanitised)
    ok.write_text("0 1\n1 2\nroot:x:0:0\x1b[31m\n")
    with pytest.raises(UserError, match=r"g.txt:3: .*'root:x:0:0\?\[31m'"):
        read_graph_file(ok)


def scenario(tmp_path, graph, metrics="", output=""):
    p = tmp_path / "s.yaml"
    p.write_text(f"kind: network\nname: s\ngraph:\n{graph}\nmetrics: {{sources: all{metrics}}}\n"
                 f"solver: {{backend: cpu}}\n{output}")
    return str(p)


def test_gzip_cut_inside_its_header_is_one_line(tmp_path, capsys):
    data = gzip.compress(b"p sp 3 2\na 1 2 1\na 2 3 1\n")
    (tmp_path / "g.gr.gz").write_bytes(data[:6])
    assert main(["validate", scenario(tmp_path, "  file: {path: g.gr.gz}")]) == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "gzip" in err and "Traceback" not in err, err


def test_work_estimate_counts_vertices_visited_per_source(tmp_path, capsys):
    (tmp_path / "g.gr").write_text("p sp 10000000 3\na 1 2 1\na 2 3 1\na 3 1 1\n")
    main(["validate", "--force", scenario(tmp_path, "  file: {path: g.gr}")])
    out = capsys.readouterr().out
    assert "10,000,000 sources × (10,000,000 vertices + 3 arcs)" in out, out
    assert "traversal work 1e+14" in out, out


def test_output_larger_than_the_free_disk_is_refused_like_memory(tmp_path, capsys):
    s = scenario(tmp_path, "  generator: {type: barabasi_albert, n: 1000000, m: 1, seed: 1}",
                 ", store_distances: true", "output: {checkpoint_every: 1}\n")
    assert main(["validate", s]) == 2
    err = capsys.readouterr().err
    assert "metrics.store_distances: the output needs up to about" in err and "free in" in err
    assert "--force" in err and len(err.strip().splitlines()) == 1, err
    assert main(["validate", "--force", s]) == 0
    assert "on disk before compression (stored distances" in capsys.readouterr().out
