"""Fuzzed graph files never crash a reader: random bytes and mutated valid files in every format
(plain and gzip) give a graph or a one-line UserError naming the file, never another exception.
Each test prints how many cases it ran."""
import gzip
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simengine.errors import UserError
from simengine.network.readers import FORMATS, read_graph_file

VALID = {
    "edgelist": "# SNAP\n10 20 1.5\n20 30 2\n30 10 0.5\n",
    "dimacs": "c road\np sp 4 4\na 1 2 7\na 2 3 1\na 3 4 2\na 4 1 9\n",
    "mtx": "%%MatrixMarket matrix coordinate real symmetric\n% c\n4 4 3\n2 1 1.5\n3 2 2\n4 1 7\n",
    "metis": "% c\n4 4 1\n2 1 4 3\n1 1 3 2\n2 2 4 5\n3 5 1 3\n",
    "konect": "% asym posweighted\n% 3 4 4\n1 2 1.5\n2 3 2\n3 4 0.5\n",
    "graphml": ("<?xml version='1.0' encoding='utf-8'?>\n<graphml xmlns="
                "'http://graphml.graphdrawing.org/xmlns'>\n<key id='d0' for='edge' "
                "attr.name='weight' attr.type='double'/>\n<graph edgedefault='undirected'>\n"
                "<node id='a'/><node id='b'/><node id='c'/>\n<edge source='a' target='b'><data "
                "key='d0'>1.5</data></edge>\n<edge source='b' target='c'><data key='d0'>2</data>"
                "</edge>\n</graph></graphml>\n"),
    "gml": ('graph [\n  directed 1\n  node [ id 0 label "a" ]\n  node [ id 1 label "b" ]\n'
            '  node [ id 2 label "c" ]\n  edge [ source 0 target 1 weight 1.5 ]\n'
            '  edge [ source 1 target 2 weight 2 ]\n]\n'),
    "pajek": '*Vertices 3\n1 "a"\n2 "b"\n3 "c"\n*Edges\n1 2 1.5\n2 3 2\n',
}
SUFFIX = {"edgelist": ".txt", "dimacs": ".gr", "mtx": ".mtx", "metis": ".graph",
          "konect": ".konect", "graphml": ".graphml", "gml": ".gml", "pajek": ".net"}
NASTY = ["-1", "0", "1", "4", "99999999999999999999", "9223372036854775808", "1" * 5000, "nan",
         "inf", "-inf", "1e400", "%%MatrixMarket", "p", "sp", "a", "c", "#", "%", "\x00", "é",
         "\ufffd", "1.5", ",", "", " ", "\n", "\r", "\t", "general", "symmetric", "pattern",
         "array", "complex", "coordinate", "p sp 3000000000 1", "p sp 10 999999999999",
         "111", "011", "2 1 111 5"]
COUNTS = {}


@pytest.fixture(autouse=True)
def small_memory(monkeypatch):
    """A fuzzed header may promise any vertex count up to the memory limit, and a reader may
    legitimately allocate that much (isolated vertices are a valid graph): with the machine's
    memory as the limit, a lucky mutation allocates gigabytes. The test hook caps it."""
    from simengine.resources import HOST_LIMIT_ENV

    monkeypatch.setenv(HOST_LIMIT_ENV, str(256 << 20))


def parse(path, fmt, directed, weights):
    """Read ``path``; anything but a graph or a one-line UserError naming the file fails."""
    try:
        r = read_graph_file(path, fmt, directed=directed, weights=weights)
    except UserError as exc:
        msg = str(exc)
        assert "\n" not in msg and len(msg) < 400 + len(str(path)), msg
        assert msg.startswith(str(path)) or msg.startswith("unknown graph format"), msg
        return
    g = r.graph
    assert g is not None and g.indptr[-1] == len(g.indices) and len(g.indptr) == g.n + 1
    if len(g.indices):
        assert 0 <= g.indices.min() and g.indices.max() < g.n


def mutate(text, ops):
    for kind, pos, token in ops:
        i = pos % (len(text) + 1)
        if kind == 0:        # insert a nasty token
            text = text[:i] + token + text[i:]
        elif kind == 1:      # delete a span
            text = text[:i] + text[i + 1 + len(token) % 7:]
        elif kind == 2:      # replace a whitespace-separated token
            parts = text.split(" ")
            parts[pos % len(parts)] = token
            text = " ".join(parts)
        elif kind == 3:      # duplicate or drop a line
            lines = text.split("\n")
            j = pos % len(lines)
            lines = lines[:j] + ([lines[j]] * 2 if len(token) % 2 else []) + lines[j + 1:]
            text = "\n".join(lines)
        else:                # truncate
            text = text[:i]
    return text


def count(name):
    COUNTS[name] = COUNTS.get(name, 0) + 1


@pytest.mark.parametrize("fmt", FORMATS)
def test_random_bytes(fmt, capsys):
    name = f"random bytes as {fmt}"

    @settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(data=st.binary(max_size=400), gz=st.sampled_from(["plain", "gzip", "fake-gz", "cut-gz"]),
           directed=st.sampled_from([None, True, False]), weights=st.sampled_from([None, True, False]))
    def check(data, gz, directed, weights):
        count(name)
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / ("g" + SUFFIX[fmt] + ("" if gz == "plain" else ".gz"))
            if gz == "gzip":
                data = gzip.compress(data)
            elif gz == "cut-gz":
                data = gzip.compress(data)[: max(1, len(data) // 2)]
            p.write_bytes(data)
            parse(p, fmt, directed, weights)
            parse(p, None, directed, weights)

    check()
    with capsys.disabled():
        print(f"\n[fuzz] {name}: {COUNTS[name]} cases")
    assert COUNTS[name] >= 50


@pytest.mark.parametrize("fmt", FORMATS)
def test_mutated_valid_files(fmt, capsys):
    name = f"mutated {fmt} files"
    ops = st.lists(st.tuples(st.integers(0, 4), st.integers(0, 10 ** 6), st.sampled_from(NASTY)),
                   min_size=1, max_size=4)

    @settings(max_examples=250, deadline=None, suppress_health_check=[HealthCheck.too_slow])
    @given(ops=ops, gz=st.booleans(), as_fmt=st.sampled_from([fmt, None, *FORMATS]),
           directed=st.sampled_from([None, True, False]), weights=st.sampled_from([None, True, False]))
    def check(ops, gz, as_fmt, directed, weights):
        count(name)
        text = mutate(VALID[fmt], ops)
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / ("g" + SUFFIX[fmt] + (".gz" if gz else ""))
            data = text.encode("utf-8", "surrogatepass")
            p.write_bytes(gzip.compress(data) if gz else data)
            parse(p, as_fmt, directed, weights)

    check()
    with capsys.disabled():
        print(f"\n[fuzz] {name}: {COUNTS[name]} cases")
    assert COUNTS[name] >= 100


def test_valid_files_parse():
    """The seeds of the mutations are themselves valid (so mutations start from real files)."""
    with tempfile.TemporaryDirectory() as d:
        for fmt, text in VALID.items():
            p = Path(d) / ("g" + SUFFIX[fmt])
            p.write_text(text)
            want = 3 if fmt in ("edgelist", "graphml", "gml", "pajek") else 4
            assert read_graph_file(p).graph.n == want, fmt
