"""Random small graphs written in all four formats: the statistics of what ``read_graph`` returns
equal networkx's for the graph the file describes (direction, ids, duplicates, self-loops)."""
import gzip
import tempfile
from pathlib import Path

import networkx as nx
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simengine.network.apsp import apsp_statistics
from simengine.network.readers import read_graph, read_graph_file

LETTERS = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ_.-"


@st.composite
def graphs(draw):
    n = draw(st.integers(1, 8))
    arcs = draw(st.lists(st.tuples(st.integers(0, n - 1), st.integers(0, n - 1),
                                   st.integers(1, 9)), min_size=1, max_size=16))
    ids = draw(st.sampled_from(["index", "ints", "labels"]))
    if ids == "ints":
        names = draw(st.lists(st.integers(0, 2 ** 63 - 1), min_size=n, max_size=n, unique=True))
    elif ids == "labels":
        names = draw(st.lists(st.text(LETTERS, min_size=1, max_size=6).filter(
            lambda s: not s.lstrip("+-").isdigit()), min_size=n, max_size=n, unique=True))
    else:
        names = list(range(n))
    return {"n": n, "arcs": arcs, "names": names, "weighted": draw(st.booleans()),
            "directed": draw(st.booleans()), "gz": draw(st.booleans())}


def nx_graph(nodes, arcs, directed, weighted):
    """The graph a file describes under the documented rule: self-loops dropped, duplicates
    (after symmetrising undirected input) merged keeping the smallest weight."""
    G = nx.DiGraph() if directed else nx.Graph()
    G.add_nodes_from(nodes)
    for u, v, w in arcs:
        if u == v:
            continue
        w = w if weighted else 1
        if G.has_edge(u, v):
            w = min(w, G[u][v]["weight"])
        G.add_edge(u, v, weight=w)
    return G


def reference(G, order, weighted):
    """Our statistics' definitions (docs/network.md) evaluated with networkx."""
    w = "weight" if weighted else None
    n = len(order)
    dist = dict(nx.shortest_path_length(G, weight=w))
    pairs = [d for s in order for t, d in dist[s].items() if t != s]
    ecc = [max([d for t, d in dist[s].items() if t != s], default=0) for s in order]
    reach = [len(dist[s]) - 1 for s in order]
    clo = nx.closeness_centrality(G, distance=w)
    har = nx.harmonic_centrality(G, distance=w)
    return {"mean_distance": sum(pairs) / len(pairs) if pairs else 0.0,
            "reachable_pairs": len(pairs),
            "eccentricity": ecc,
            "diameter": max(ecc),
            "radius": min([e for e, r in zip(ecc, reach) if r > 0], default=0),
            "efficiency": sum(1 / d for d in pairs) / (n * (n - 1)) if n > 1 else 0.0,
            "closeness": [clo[v] for v in order],
            "harmonic": [har[v] for v in order],
            "connected": n == 1 or (nx.is_strongly_connected(G) if G.is_directed()
                                    else nx.is_connected(G))}


def compare(g, G, weighted):
    order = [x.item() if hasattr(x, "item") else x for x in g.vertex_ids()]
    assert sorted(map(str, order)) == sorted(map(str, G.nodes))
    assert g.directed == G.is_directed() and g.weighted == weighted
    assert g.num_edges == G.number_of_edges()
    res = apsp_statistics(g)
    ref = reference(G, order, weighted)
    for k in ("mean_distance", "efficiency"):
        assert res[k] == pytest.approx(ref[k], rel=1e-12, abs=1e-15), k
    for k in ("reachable_pairs", "diameter", "radius", "connected"):
        assert res[k] == ref[k], k
    for k in ("eccentricity", "closeness", "harmonic"):
        np.testing.assert_allclose(res[k], ref[k], rtol=1e-12, atol=1e-15, err_msg=k)


def write(folder, name, text, gz):
    p = Path(folder) / (name + (".gz" if gz else ""))
    if gz:
        with gzip.open(p, "wt") as f:
            f.write(text)
    else:
        p.write_text(text)
    return p


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(graphs())
def test_four_formats_match_networkx(spec):
    n, arcs, names, weighted, gz = (spec[k] for k in ("n", "arcs", "names", "weighted", "gz"))
    directed = spec["directed"]
    with tempfile.TemporaryDirectory() as d:
        # edge list: undirected, the vertices named in it, ids/labels as written
        lines = "".join(f"{names[u]} {names[v]}" + (f" {w}" if weighted else "") + "\n"
                        for u, v, w in arcs)
        g = read_graph(write(d, "g.txt", "# random\n" + lines, gz))
        used = sorted({x for u, v, _ in arcs for x in (u, v)})
        G = nx_graph([names[x] for x in used], [(names[u], names[v], w) for u, v, w in arcs],
                     False, weighted)
        compare(g, G, weighted)
        # DIMACS: directed arcs on vertices 1..n; directed: false turns them into edges
        text = f"c random\np sp {n} {len(arcs)}\n" + "".join(f"a {u + 1} {v + 1} {w}\n"
                                                            for u, v, w in arcs)
        p = write(d, "g.gr", text, gz)
        one = [(u + 1, v + 1, w) for u, v, w in arcs]
        g = read_graph(p, weights=None if weighted else False)
        compare(g, nx_graph(range(1, n + 1), one, True, weighted), weighted)
        r = read_graph_file(p, directed=False, weights=None if weighted else False)
        compare(r.graph, nx_graph(range(1, n + 1), one, False, weighted), weighted)
        # Matrix Market: general = directed, symmetric = undirected (one triangle written)
        field = "integer" if weighted else "pattern"
        if directed:
            entries = one
        else:
            entries = [(max(u, v), min(u, v), w) for u, v, w in one]
        text = (f"%%MatrixMarket matrix coordinate {field} "
                f"{'general' if directed else 'symmetric'}\n% random\n{n} {n} {len(entries)}\n"
                + "".join(f"{i} {j}" + (f" {w}" if weighted else "") + "\n"
                          for i, j, w in entries))
        g = read_graph(write(d, "g.mtx", text, gz))
        compare(g, nx_graph(range(1, n + 1), one, directed, weighted), weighted)
        # METIS: the undirected simple graph, each edge listed from both ends
        H = nx_graph(range(1, n + 1), one, False, weighted)
        rows = []
        for v in range(1, n + 1):
            nb = sorted(H[v])
            rows.append(" ".join(f"{u} {H[v][u]['weight']}" if weighted else str(u) for u in nb))
        text = f"% random\n{n} {H.number_of_edges()}{' 1' if weighted else ''}\n" + \
            "".join(r + "\n" for r in rows)
        g = read_graph(write(d, "g.graph", text, gz))
        compare(g, H, weighted)
