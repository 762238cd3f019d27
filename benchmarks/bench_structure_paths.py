"""Structure statistics and predecessors: simengine against networkx, igraph, NetworKit and scipy,
measured in the same run (ratios = peer time / simengine time).

* clustering (local clustering of every vertex + transitivity), core numbers, degree
  assortativity on a Barabási–Albert graph (undirected) — the peers' own functions;
* the cost of predecessors: simengine ``run_sources`` with stored distances, with and without
  ``predecessors=``, against scipy ``shortest_path(..., return_predecessors=False/True)`` over the
  same sampled sources.

Kernels are compiled first (numba on-disk cache); times are the best of ``--repeat`` runs.

    python benchmarks/bench_structure_paths.py            # n = 10^4 (BA m = 5)
    python benchmarks/bench_structure_paths.py --n 2000   # quick
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def best(fn, repeat):
    t = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        fn()
        t.append(time.perf_counter() - t0)
    return min(t)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--sources", type=int, default=1000)
    ap.add_argument("--repeat", type=int, default=3)
    a = ap.parse_args()

    import networkx as nx
    import numba

    from simengine.network.apsp import run_sources, store_dtype
    from simengine.network.clustering import clustering_results
    from simengine.network.degree_structure import core_numbers, degree_assortativity
    from simengine.network.generators import generate
    from simengine.network.statistics import PathStatistics

    g = generate({"type": "barabasi_albert", "n": a.n, "m": a.m, "seed": 1})
    src, dst = g.arcs()
    keep = src < dst
    edges = list(zip(src[keep].tolist(), dst[keep].tolist()))
    G = nx.Graph(edges)
    G.add_nodes_from(range(g.n))
    rows = []

    def measure(what, ours, peers):
        ours()                                   # compile / warm
        t0 = best(ours, a.repeat)
        rows.append((what, "simengine", t0, 1.0))
        for name, fn in peers:
            try:
                t = best(fn, 1 if name == "networkx" else a.repeat)
            except ImportError:
                continue
            rows.append((what, name, t, t / t0))

    def ig():
        import igraph
        return igraph.Graph(n=g.n, edges=edges)

    def nk():
        import networkit
        return networkit.nxadapter.nx2nk(G)

    IG = ig()
    try:
        NK = nk()
        from networkit.centrality import LocalClusteringCoefficient as local_clustering
    except ImportError:
        NK = None
    measure("clustering + transitivity", lambda: clustering_results(g),
            [("networkx", lambda: (nx.clustering(G), nx.transitivity(G))),
             ("igraph", lambda: (IG.transitivity_local_undirected(mode="zero"),
                                 IG.transitivity_undirected()))]
            + ([("networkit", lambda: local_clustering(NK).run())] if NK is not None else []))
    measure("core numbers", lambda: core_numbers(g),
            [("networkx", lambda: nx.core_number(G)), ("igraph", lambda: IG.coreness())])
    measure("degree assortativity", lambda: degree_assortativity(g),
            [("networkx", lambda: nx.degree_assortativity_coefficient(G)),
             ("igraph", lambda: IG.assortativity_degree(directed=False))])

    import scipy.sparse.csgraph as csg

    rng = np.random.default_rng(1)
    S = np.sort(rng.choice(g.n, size=min(a.sources, g.n), replace=False))
    A = g.to_scipy()

    def ours(pred):
        store = np.empty((len(S), g.n), store_dtype(g))
        P = np.empty((len(S), g.n), np.int32) if pred else None
        run_sources(g, S, PathStatistics.for_graph(g), "msbfs", "cpu", store=store,
                    predecessors=P)
    ours(True)
    t_plain, t_pred = best(lambda: ours(False), a.repeat), best(lambda: ours(True), a.repeat)
    s_plain = best(lambda: csg.shortest_path(A, indices=S, unweighted=True), 1)
    s_pred = best(lambda: csg.shortest_path(A, indices=S, unweighted=True,
                                            return_predecessors=True), 1)
    what = f"{len(S)} sources, distances"
    rows += [(what, "simengine msbfs", t_plain, 1.0), (what, "scipy", s_plain, s_plain / t_plain),
             (what + " + predecessors", "simengine msbfs", t_pred, 1.0),
             (what + " + predecessors", "scipy", s_pred, s_pred / t_pred)]

    print(f"BA n = {g.n}, m = {a.m} ({g.num_arcs} arcs), numba threads {numba.get_num_threads()}")
    print(f"{'what':42s} {'tool':16s} {'time [s]':>10s} {'x simengine':>12s}")
    for what, tool, t, r in rows:
        print(f"{what:42s} {tool:16s} {t:10.4f} {r:12.1f}")
    print(f"predecessors cost {t_pred / t_plain:.2f}x the distances alone (scipy: "
          f"{s_pred / s_plain:.2f}x)")


if __name__ == "__main__":
    main()
