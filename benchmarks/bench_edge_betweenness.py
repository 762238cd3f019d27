"""Edge betweenness: the GPU kernel (network/cuda/brandes.py: edge_dependencies) against the CPU
engine (network/cpu/edge_brandes.py) on the same graph in the same run, and networkx on a small
one.

    python benchmarks/bench_edge_betweenness.py [--n 20000] [--m 4] [--sources 2000]

Prints seconds of each (the first call of each compiles: timed on the second), the ratio
CPU / GPU, and the largest relative difference of the per-arc sums (they must agree to ~1e-12).
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=20000)
    ap.add_argument("--m", type=int, default=4)
    ap.add_argument("--sources", type=int, default=2000)
    a = ap.parse_args(argv)
    import networkx as nx

    from simengine.network import generators
    from simengine.network.cpu.edge_brandes import edge_dependencies as cpu
    from simengine.network.cuda.brandes import edge_dependencies as gpu
    from simengine.network.edge_betweenness import edge_betweenness
    from simengine.network.graph import CSRGraph

    G = nx.barabasi_albert_graph(300, 3, seed=1)              # correctness against networkx
    g = CSRGraph.from_networkx(G, weight=None)
    want = nx.edge_betweenness_centrality(G, normalized=False)
    got = edge_betweenness(g, np.arange(g.n), backend="cuda")
    worst = max(abs(x - want.get((u, v), want.get((v, u)))) / max(abs(x), 1e-300)
                for u, v, x in zip(got["edge_source"], got["edge_target"],
                                   got["edge_betweenness"]))
    print(f"networkx BA n=300: largest relative difference {worst:.2e}")
    g = generators.generate({"type": "barabasi_albert", "n": a.n, "m": a.m, "seed": 1})
    src = np.arange(min(a.sources, g.n))
    times = {}
    res = {}
    for name, fn in (("gpu", gpu), ("cpu", cpu)):
        fn(g, src[:8])                                       # compile
        t = time.perf_counter()
        res[name] = fn(g, src)
        times[name] = time.perf_counter() - t
    diff = np.max(np.abs(res["gpu"] - res["cpu"]) / np.maximum(np.abs(res["cpu"]), 1e-300))
    print(f"BA n={g.n} arcs={g.num_arcs}, {len(src)} sources: gpu {times['gpu']:.3f} s, "
          f"cpu {times['cpu']:.3f} s, cpu/gpu = {times['cpu'] / times['gpu']:.1f}; largest "
          f"relative difference {diff:.2e}")
    if worst > 1e-9 or diff > 1e-9:
        raise SystemExit("MISMATCH")


if __name__ == "__main__":
    main()
