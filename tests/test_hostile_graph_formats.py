"""Issue 54, hostile graph files through the GraphML (ours), GML and Pajek (networkx) readers: a
seeded fuzzer of generated files — node ids of every kind (small, negative, ≥ 2⁶³, 10²³,
names), weights of every kind (int, double, string, missing on some edges, not numbers),
direction, duplicate edges, self-loops, GML without labels — and mutations of them (cut at a
random byte, garbage inserted, an undeclared key, a hyperedge, a nested or second graph).

Every case: the reader returns a graph or refuses in one line (bounded, naming the file, no
other exception); an accepted unmutated file equals networkx's reading of it (ids, edges,
weights). A share of the cases also goes through ``simengine validate`` and ``run``
in-process: both exit 0, or both exit 2 with the same one line, and a refusal leaves nothing
behind.
"""
import contextlib
import io
import random

import networkx as nx
import numpy as np
import pytest

from simengine.cli import main
from simengine.errors import UserError
from simengine.network.readers import read_graph_file

SEED = 54
CASES = 90
IDS = [lambda r, i: str(i), lambda r, i: str(i - 3), lambda r, i: str(2 ** 63 + i),
       lambda r, i: str(10 ** 23 + i), lambda r, i: f"n{i}", lambda r, i: f"é{i}",
       lambda r, i: str(r.choice([i, 2 ** 64 + i]))]


def graph_data(r):
    n = r.randint(1, 9)
    idf = r.choice(IDS)
    names = list(dict.fromkeys(idf(r, i) for i in range(n)))
    m = r.randint(0, 14)
    edges = [(r.choice(names), r.choice(names)) for _ in range(m)]
    kind = r.choice(["none", "int", "double", "string", "some", "bad"])
    ws = []
    for _ in edges:
        ws.append(None if kind == "none" or (kind == "some" and r.random() < 0.5) else
                  str(r.randint(0, 9)) if kind in ("int", "some") else
                  f"{r.uniform(0, 5):.3f}" if kind in ("double", "string") else
                  r.choice(["x", "1e999", "nan", "-1", "99999999999999999999"]))
    return names, edges, ws, kind, r.random() < 0.5


def graphml(names, edges, ws, kind, directed):
    t = {"int": "int", "some": "int", "double": "double", "string": "string",
         "bad": "double"}.get(kind)
    out = ['<?xml version="1.0" encoding="UTF-8"?>',
           '<graphml xmlns="http://graphml.graphdrawing.org/xmlns">']
    if t:
        out.append(f'<key id="w" for="edge" attr.name="weight" attr.type="{t}"/>')
    out.append(f'<graph id="G" edgedefault="{"directed" if directed else "undirected"}">')
    out += [f'<node id="{x}"/>' for x in names]
    for (a, b), w in zip(edges, ws):
        data = f'<data key="w">{w}</data>' if w is not None else ""
        out.append(f'<edge source="{a}" target="{b}">{data}</edge>')
    out += ["</graph>", "</graphml>", ""]
    return "\n".join(out)


def gml(names, edges, ws, kind, directed, labels=True):
    out = ["graph [", f"  directed {int(directed)}"]
    num = {x: i for i, x in enumerate(names)}
    for x in names:
        lab = (x if x.lstrip("-").isdigit() else f'"{x}"') if labels else None
        out.append(f"  node [ id {num[x]}" + (f" label {lab}" if labels else "") + " ]")
    for (a, b), w in zip(edges, ws):
        wt = "" if w is None else f" weight {w}" if kind != "bad" else f' weight "{w}"'
        out.append(f"  edge [ source {num[a]} target {num[b]}{wt} ]")
    out += ["]", ""]
    return "\n".join(out)


def pajek(names, edges, ws, kind, directed):
    num = {x: i + 1 for i, x in enumerate(names)}
    out = [f"*Vertices {len(names)}"] + [f'{num[x]} "{x}"' for x in names]
    out.append("*Arcs" if directed else "*Edges")
    for (a, b), w in zip(edges, ws):
        out.append(f"{num[a]} {num[b]}" + ("" if w is None else f" {w}"))
    return "\n".join(out + [""])


MUTATIONS = {
    "graphml": ['<hyperedge><endpoint node="x"/></hyperedge>', '<data key="nokey">1</data>',
                '<graph edgedefault="directed"></graph>', '<node id="q"><graph/></node>',
                '<edge source="a"/>', '<edge source="a" target="b" directed="true"/>', "<<",
                "&bogus;", "\x00"],
    "gml": ["node [ id 0 ]", "edge [ source 0 ]", "]", "[", "label", "\x00", "node [ label 3 ]"],
    "pajek": ["*Arcs", "1 99", "x y z", "*Vertices -1", "\x00", "1 2 nan"],
}


def cases():
    r = random.Random(SEED)
    out = []
    for i in range(CASES):
        fmt = ("graphml", "gml", "pajek")[i % 3]
        data = graph_data(r)
        names, edges, ws, kind, directed = data
        if fmt == "gml":
            text = gml(*data, labels=r.random() < 0.7)
        else:
            text = {"graphml": graphml, "pajek": pajek}[fmt](*data)
        mutation = None
        if r.random() < 0.4:
            how = r.choice(["cut", "insert"])
            at = r.randrange(len(text))
            if how == "cut":
                text, mutation = text[:at], f"cut at {at}"
            else:
                piece = r.choice(MUTATIONS[fmt])
                line = text.rfind("\n", 0, at) + 1
                text, mutation = text[:line] + piece + "\n" + text[line:], f"insert {piece!r}"
        out.append((fmt, text, mutation, i % 5 == 0))
    return out


def nx_read(path, fmt):
    if fmt == "graphml":
        return nx.read_graphml(path)
    if fmt == "gml":
        try:
            return nx.read_gml(path, label="label")
        except nx.NetworkXError:
            return nx.read_gml(path, label="id")
    return nx.read_pajek(path)


def edge_multiset(g, directed):
    """Our graph's edges as sorted (id, id, weight) triples."""
    ids = g.ids if g.ids is not None else np.arange(g.n)
    out = []
    for a in range(g.n):
        for k in range(g.indptr[a], g.indptr[a + 1]):
            b = int(g.indices[k])
            if directed or a < b:
                w = None if g.weights is None else float(g.weights[k])
                x, y = str(ids[a]), str(ids[b])
                out.append((x, y, w) if directed else (min(x, y), max(x, y), w))
    return sorted(out)


def nx_edges(G, weighted):
    """networkx's graph reduced as our reader builds a graph: self-loops dropped, the smallest
    weight of duplicates kept."""
    best = {}
    for a, b, d in G.edges(data=True):
        a, b = str(a), str(b)
        if a == b:
            continue
        if not G.is_directed():
            a, b = min(a, b), max(a, b)
        w = float(d["weight"]) if weighted else None
        best[a, b] = w if (a, b) not in best or w is None else min(best[a, b], w)
    return best


@pytest.mark.parametrize("fmt,text,mutation,through_cli", cases(),
                         ids=[f"{c[0]}-{k}" for k, c in enumerate(cases())])
def test_hostile_graph_files(tmp_path, fmt, text, mutation, through_cli):
    path = tmp_path / f"g.{ {'graphml': 'graphml', 'gml': 'gml', 'pajek': 'net'}[fmt] }"
    path.write_text(text, encoding="utf-8")
    try:
        res = read_graph_file(path)
    except UserError as exc:
        msg = str(exc)
        assert "\n" not in msg and len(msg) <= 300 and str(path) in msg, msg
        res = None
    if res is not None and mutation is None:
        G = nx_read(str(path), fmt)
        g = res.graph
        assert g.n == G.number_of_nodes()
        assert res.file_directed == G.is_directed()
        got = edge_multiset(g, g.directed)
        want = nx_edges(G, g.weights is not None)
        ids = g.ids if g.ids is not None else np.arange(g.n)
        assert got == sorted((a, b, w) for (a, b), w in want.items()), (got, want)
        assert sorted(map(str, ids)) == sorted(map(str, G.nodes))
    if through_cli:
        cli_agrees(tmp_path, path, res is not None)


def cli_agrees(tmp_path, path, readable):
    s = tmp_path / "s.yaml"
    s.write_text(f"kind: network\nname: s\ngraph: {{file: {{path: {path.name}}}}}\n"
                 "metrics: {sources: {sample: 2}}\nsolver: {backend: cpu}\n")
    out = tmp_path / "o.h5"
    got = []
    for argv in (["validate", str(s)], ["run", str(s), "-o", str(out)]):
        err = io.StringIO()
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(err):
            rc = main(argv)
        got.append((rc, err.getvalue().splitlines()))
        assert "Traceback" not in err.getvalue()
    (rv, ev), (rr, er) = got
    assert rv in (0, 2) and rr == rv, got
    if rv == 2:       # the whole of stderr is the one line
        assert len(ev) == 1 and ev == er and len(ev[0]) <= 300, got
        assert ev[0].startswith("simengine: error: ") and path.name in ev[0], got
        assert not out.exists() and not (tmp_path / "o.h5.parts").exists()
    else:
        assert readable and out.exists(), got


def test_gml_with_ids_and_no_labels_reads_by_id(tmp_path):
    """NetworKit's input/jazz2_directed.gml: ``id`` but no ``label`` — read as networkx's
    ``label='id'`` (refused before); some labelled and some not stays one line."""
    p = tmp_path / "jazz2_directed.gml"
    p.write_text("graph [\n  directed 1\n  node [ id 1 ]\n  node [ id 2 ]\n  node [ id 5 ]\n"
                 "  edge [ source 1 target 2 ]\n  edge [ source 2 target 5 ]\n"
                 "  edge [ source 5 target 1 ]\n]\n")
    res = read_graph_file(p)
    G = nx.read_gml(p, label="id")
    assert res.file_directed and res.graph.n == 3 and list(res.graph.ids) == [1, 2, 5]
    assert edge_multiset(res.graph, True) == sorted((str(a), str(b), None) for a, b in G.edges)
    q = tmp_path / "mixed.gml"
    q.write_text("graph [\n  node [ id 1 label \"a\" ]\n  node [ id 2 ]\n"
                 "  edge [ source 1 target 2 ]\n]\n")
    with pytest.raises(UserError, match=r"mixed.gml: 1 of 2 nodes have a label and node id '2' "
                                        r"has none"):
        read_graph_file(q)


@pytest.mark.parametrize("big", [str(2 ** 63), str(10 ** 23), str(-2 ** 63 - 1)])
def test_ids_beyond_int64_are_names(tmp_path, big):
    """GraphML ids and GML labels beyond int64 (an OverflowError traceback before)."""
    p = tmp_path / "g.graphml"
    p.write_text(graphml(["1", big], [("1", big)], [None], "none", False))
    q = tmp_path / "g.gml"
    q.write_text(f"graph [\n  node [ id 0 label {big} ]\n  node [ id 1 label 1 ]\n"
                 "  edge [ source 0 target 1 ]\n]\n")
    for path in (p, q):
        g = read_graph_file(path).graph
        assert sorted(g.ids) == sorted(["1", big]) and g.num_edges == 1
