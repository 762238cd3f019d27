"""CPU APSP-statistics benchmark: simengine vs networkx, scipy, igraph, NetworKit.

Every (tool, graph) measurement runs in its own subprocess so peak RSS (ru_maxrss, whole process
including the interpreter) is per tool.  Times are wall-clock seconds for computing all-pairs
distances (peers) or the full statistics (simengine: distances fused with every reduction); graph
generation and conversion are excluded; simengine's numba kernels are warmed up on a tiny graph
first (on-disk cache).  Peers that would take too long run on a subset of K sources and are
extrapolated linearly to all n sources (marked ``*`` in the table).

    python benchmarks/bench_network_cpu.py            # the full table (a few minutes)
    python benchmarks/bench_network_cpu.py --quick    # small sizes
"""
from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time

import numpy as np

CASES = {
    # name: (generator spec, peer source subset K or None = all)
    "watts_ring_k10": ({"type": "watts_alpha", "n": 10000, "k": 10, "ring": True, "seed": 1}, 500),
    "watts_free_k10": ({"type": "watts_alpha", "n": 10000, "k": 10, "ring": False, "seed": 1},
                       500),
    "ba_k100": ({"type": "barabasi_albert", "n": 5000, "m": 50, "seed": 1}, 250),
    "ba_n10000_m5": ({"type": "barabasi_albert", "n": 10000, "m": 5, "seed": 1}, None),
}
QUICK = {k: ({**v[0], "n": 2000}, 200) for k, v in CASES.items()}
TOOLS = ["simengine", "networkit", "scipy", "igraph", "networkx"]
# networkx is pure Python: always a small subset
NX_SOURCES = 40


def make_graph(spec, weighted):
    from simengine.network.generators import generate

    spec = dict(spec)
    if weighted:
        spec["weights"] = {"type": "uniform_int", "low": 1, "high": 10, "seed": 7}
    return generate(spec)


def run_one(tool, spec, weighted, K):
    g = make_graph(spec, weighted)
    n = g.n
    src = np.arange(n) if (K is None or K >= n) else np.linspace(0, n - 1, K).astype(np.int64)
    info = {}
    if tool == "simengine":
        from simengine.network.apsp import run_sources
        from simengine.network.generators import barabasi_albert, random_weights
        from simengine.network.statistics import PathStatistics

        tiny = barabasi_albert(200, 2, seed=0)
        for gg in (tiny, random_weights(tiny, 1, 10, seed=0)):
            run_sources(gg, np.arange(gg.n), PathStatistics.for_graph(gg))
        src = np.arange(n)
        st = PathStatistics.for_graph(g)
        t0 = time.perf_counter()
        alg = run_sources(g, src, st)
        t = time.perf_counter() - t0
        r = st.results()
        info = {"mean_distance": r["mean_distance"], "algorithm": alg}
    elif tool == "networkit":
        import networkit as nk

        nk.setNumberOfThreads(2)
        G = nk.Graph(n, weighted=weighted, directed=False)
        s, d = g.arcs()
        keep = s < d
        w = g.weights[keep] if weighted else None
        for i, (a, b) in enumerate(zip(s[keep].tolist(), d[keep].tolist())):
            if weighted:
                G.addEdge(a, b, float(w[i]))
            else:
                G.addEdge(a, b)
        t0 = time.perf_counter()
        if len(src) == n:
            a = nk.distance.APSP(G)
            a.run()
            D = a.getDistances(asarray=True) if "asarray" in a.getDistances.__doc__ else None
        else:
            a = nk.distance.SPSP(G, src.tolist())
            a.run()
        t = time.perf_counter() - t0
    elif tool == "scipy":
        from scipy.sparse.csgraph import shortest_path

        A = g.to_scipy()
        t0 = time.perf_counter()
        D = shortest_path(A, method="D", directed=False, unweighted=not weighted, indices=src)
        t = time.perf_counter() - t0
        fin = np.isfinite(D) & (D > 0)
        info = {"mean_distance": float(D[fin].mean())}
    elif tool == "igraph":
        import igraph as ig

        s, d = g.arcs()
        keep = s < d
        G = ig.Graph(n=n, edges=list(zip(s[keep].tolist(), d[keep].tolist())))
        kw = {"weights": g.weights[keep].tolist()} if weighted else {}
        t0 = time.perf_counter()
        step = 200
        for lo in range(0, len(src), step):
            G.distances(source=src[lo:lo + step].tolist(), **kw)
        t = time.perf_counter() - t0
    elif tool == "networkx":
        import networkx as nx

        G = g.to_networkx()
        src = src[np.linspace(0, len(src) - 1, min(len(src), NX_SOURCES)).astype(int)]
        t0 = time.perf_counter()
        for s_ in src.tolist():
            if weighted:
                nx.single_source_dijkstra_path_length(G, s_)
            else:
                nx.single_source_shortest_path_length(G, s_)
        t = time.perf_counter() - t0
    else:
        raise ValueError(tool)
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # MiB (Linux: KiB)
    return {"time": t * n / len(src), "extrapolated": len(src) < n, "sources": int(len(src)),
            "peak_rss_mib": rss, **info}


def child(args):
    spec = json.loads(args.spec)
    res = run_one(args.tool, spec, args.weighted, None if args.k < 0 else args.k)
    print("RESULT " + json.dumps(res))


def spawn(tool, spec, weighted, K, timeout=900):
    cmd = [sys.executable, __file__, "--child", "--tool", tool, "--spec", json.dumps(spec),
           "--k", str(-1 if K is None else K)] + (["--weighted"] if weighted else [])
    try:
        out = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout)
    except subprocess.TimeoutExpired:
        return {"error": "timeout"}
    for line in out.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    err = (out.stderr.strip().splitlines() or ["failed"])[-1]
    return {"error": err[:60]}


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--child", action="store_true")
    ap.add_argument("--tool")
    ap.add_argument("--spec")
    ap.add_argument("--k", type=int, default=-1)
    ap.add_argument("--weighted", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--tools", default=",".join(TOOLS))
    ap.add_argument("--cases", default=None)
    ap.add_argument("--big", type=int, default=50000, help="n of the memory check (0 = skip)")
    args = ap.parse_args()
    if args.child:
        return child(args)
    cases = QUICK if args.quick else CASES
    if args.cases:
        cases = {k: v for k, v in cases.items() if k in args.cases.split(",")}
    tools = args.tools.split(",")
    rows = []
    print("| graph | n | arcs | w | tool | time [s] | × simengine | peak RSS [MiB] |")
    print("|---|---|---|---|---|---|---|---|")
    for name, (spec, K) in cases.items():
        g = make_graph(spec, False)
        for weighted in (False, True):
            base = None
            for tool in tools:
                r = spawn(tool, spec, weighted, K)
                rows.append((name, weighted, tool, r))
                if "error" in r:
                    print(f"| {name} | {g.n} | {g.num_arcs} | {'1–10' if weighted else '—'} | "
                          f"{tool} | skipped ({r['error']}) | | |", flush=True)
                    continue
                if tool == "simengine":
                    base = r["time"]
                ratio = f"{r['time'] / base:.1f}×" if base else ""
                star = "*" if r["extrapolated"] else ""
                extra = f" ({r['algorithm']})" if "algorithm" in r else ""
                print(f"| {name} | {g.n} | {g.num_arcs} | {'1–10' if weighted else '—'} | "
                      f"{tool}{extra} | {r['time']:.2f}{star} | {ratio} | "
                      f"{r['peak_rss_mib']:.0f} |", flush=True)
    if args.big:
        spec = {"type": "barabasi_albert", "n": args.big, "m": 5, "seed": 1}
        for weighted in (False,):
            r = spawn("simengine", spec, weighted, None)
            if "error" not in r:
                print(f"| ba_n{args.big}_m5 (memory check) | {args.big} | | "
                      f"{'1–10' if weighted else '—'} | simengine ({r['algorithm']}) | "
                      f"{r['time']:.2f} | | {r['peak_rss_mib']:.0f} |", flush=True)
    print("\n* = peer run on a subset of sources and extrapolated linearly to all n sources; "
          f"networkx always on {NX_SOURCES} sources.")


if __name__ == "__main__":
    main()
