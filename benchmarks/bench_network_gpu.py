"""APSP-statistics benchmark of the CUDA network engine against the CPU engine (same machine).

Seed families (Leist et al.): Watts α-model with ring substrate (k=10), without substrate (k=10),
Barabási–Albert k=100 (m=50), at --sizes; every vertex is a source on the GPU.  Weighted random
graphs (Harish & Narayanan: G(n,m), mean degree 6, integer weights 1–10) at --weighted-sizes with
--weighted-sources sampled sources.  Dense weighted graphs for Floyd–Warshall at --fw-sizes.  Few sources on big graphs
(--per-source-sizes, --per-source-sources): the per-source paths ``auto`` picks there
(direction-optimising BFS, near–far SSSP) next to the MS-BFS / frontier batch paths on the same
sources, G(n, m) with mean degree 6 and weights 1–10 (the unweighted rows drop the weights).

The CPU engine (simengine.network, numba, all cores) runs on --cpu-sources sampled sources and
its time is extrapolated linearly to the GPU's source count (marked "extrapolated").  Every GPU
result on the CPU's sample is checked against the CPU's statistics.

TEPS = traversed edges per second = sources × edges (undirected edges counted once) / seconds.

Exact betweenness (Brandes) of the families at --betweenness-sizes: bench_betweenness.py's GPU
rows (engine and engine time, checked against the CPU engine on 8 listed sources).

Usage: python benchmarks/bench_network_gpu.py [--sizes 1000,5000] [--families ring,free,ba]
       [--weighted-sizes 100000] [--fw-sizes 2048] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import sys
import time

import numpy as np


def _now():
    from numba import cuda
    cuda.synchronize()
    return time.perf_counter()


def run_gpu(g, sources, alg, bin_width=1.0, **kw):
    from simengine.network.apsp import run_sources
    from simengine.network.statistics import PathStatistics

    st = PathStatistics.for_graph(g, bin_width=bin_width, planned_sources=len(sources))
    t0 = _now()
    run_sources(g, sources, st, alg, backend="cuda", **kw)
    return st, _now() - t0


def run_cpu(g, sources, alg, bin_width=1.0):
    from simengine.network.apsp import run_sources
    from simengine.network.statistics import PathStatistics

    st = PathStatistics.for_graph(g, bin_width=bin_width, planned_sources=len(sources))
    t0 = time.perf_counter()
    run_sources(g, sources, st, alg, backend="cpu")
    return st, time.perf_counter() - t0


def same(a, b, tol=1e-12):
    """'ok' when the accumulators agree (integers exactly, floats to ``tol``), else the keys."""
    sa, sb = a.state(), b.state()
    bad = [k for k in ("done", "row_reach", "col_reach", "hist")
           if not np.array_equal(sa[k], sb[k])]
    for k in ("row_sum", "row_harm", "row_max", "col_sum", "col_harm"):
        if not np.allclose(sa[k], sb[k], rtol=tol, atol=0):
            d = np.max(np.abs(sa[k] - sb[k]) / np.maximum(np.abs(sb[k]), 1e-300))
            bad.append(f"{k}:{d:.1e}")
    return "ok" if not bad else ",".join(bad)


def warm_up(algorithms=("msbfs", "bfs", "auto"), weighted=True, per_source=True):
    """Compile the kernels of the rows that will run (and the CPU engine) on tiny graphs, outside
    the timings: the unweighted ``algorithms``, the weighted ones, the per-source ones."""
    from simengine.network import generators as gen

    g = gen.watts_alpha(1100, 10, ring=False, seed=0)
    gw = gen.random_weighted(200, seed=0)
    src = np.arange(64)
    run_cpu(g, np.arange(1024), "msbfs")
    for alg in algorithms:
        alg = alg.split("(")[0]
        run_gpu(g, np.arange(1024), alg)
        if alg in ("bfs",):
            run_cpu(g, np.arange(1024), alg)
    if "auto" in algorithms:         # auto may pick the block-per-source BFS
        run_gpu(g, src, "bfs_blocks")
    if weighted:
        for alg in ("frontier", "nearfar", "fw"):
            run_gpu(gw, src, alg)
        run_cpu(gw, src, "dijkstra")
    if per_source:
        run_gpu(g, src[:2], "dobfs")
        run_cpu(g, src[:2], "dobfs")
        run_cpu(gw, src[:2], "dial")


def sample(n, k, seed=0):
    if k >= n:
        return np.arange(n, dtype=np.int64)
    return np.sort(np.random.default_rng(seed).choice(n, size=k, replace=False)).astype(np.int64)


def to_markdown(rows) -> str:
    """Markdown tables of benchmark rows (as printed / saved by :func:`main`)."""
    out = []
    fam = [r for r in rows if r["family"] in ("ring", "free", "ba")]
    if fam:
        out += ["| family | n | edges | algorithm | GPU s (all sources) | GTEPS | CPU s (all sources) "
                "| GPU/CPU speed-up | mean dist. | diam. | = CPU |",
                "|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in fam:
            g = f"{r['gpu_full_s']:.3g}" + (" (extrap.)" if r["gpu_extrapolated"] else "")
            c = f"{r['cpu_full_s']:.3g}" + (f" (extrap. from {r['cpu_sources']})"
                                            if r["cpu_extrapolated"] else "")
            out.append(f"| {r['family']} | {r['n']} | {r['edges']} | {r['algorithm']} | {g} | "
                       f"{r['teps'] / 1e9:.3g} | {c} | {r['speedup']:.3g}× | "
                       f"{r['mean_distance']:.4g} | {r['diameter']:.0f} | {r['matches_cpu']} |")
        out.append("")
    wr = [r for r in rows if r["family"] == "weighted_random_d6"]
    if wr:
        out += ["| graph | n | edges | algorithm | GPU sources | GPU s | GPU ms/source | GTEPS | "
                "CPU ms/source (Dijkstra) | speed-up | = CPU | = scipy |",
                "|---|---|---|---|---|---|---|---|---|---|---|---|"]
        for r in wr:
            out.append(f"| G(n,m) deg 6, w 1–10 | {r['n']} | {r['edges']} | {r['algorithm']} | "
                       f"{r['gpu_sources']} | {r['gpu_s']:.3g} | {r['gpu_per_source_ms']:.3g} | "
                       f"{r['teps'] / 1e9:.3g} | {r['cpu_per_source_ms']:.3g} "
                       f"({r['cpu_sources']} src) | {r['speedup']:.3g}× | {r['matches_cpu']} | "
                       f"{r['distances_match_scipy']} |")
        out.append("")
    ps = [r for r in rows if r["family"] == "per_source"]
    if ps:
        out += ["| n | arcs | weights | path | auto picks | sources | ms per source | "
                "= scipy (2 sources) | = batch path |",
                "|---|---|---|---|---|---|---|---|---|"]
        for r in ps:
            out.append(f"| {r['n']} | {r['arcs']} | {r['weights']} | {r['path']} | "
                       f"{r['auto']} | {r['sources']} | {r['ms_per_source']:.3g} | "
                       f"{r['distances_match_scipy']} | {r['matches_batch']} |")
        out.append("")
    btw = [r for r in rows if r["family"].startswith("betweenness_")]
    if btw:
        import bench_betweenness
        out += ["Exact betweenness (GPU engine time):", ""] + \
            bench_betweenness.gpu_table(btw) + [""]
    import fw_gpu_rows
    out += fw_gpu_rows.to_markdown(rows)
    fw = [r for r in rows if r["family"].startswith("fw_weighted")]
    if fw:
        out += ["| graph | n | edges | FW s | min-plus Gop/s | frontier SSSP s (extrap.) | "
                "FW vs frontier | CPU Dijkstra s (extrap.) | FW vs CPU | = CPU |",
                "|---|---|---|---|---|---|---|---|---|---|"]
        for r in fw:
            out.append(f"| {r['family'][3:]} | {r['n']} | {r['edges']} | {r['gpu_s']:.3g} | "
                       f"{r['gflops_minplus']:.0f} | {r['frontier_s']:.3g} | "
                       f"{r['fw_vs_frontier']:.2g}× | {r['cpu_dijkstra_full_s']:.3g} | "
                       f"{r['speedup']:.3g}× | {r['matches_cpu']} |")
    return "\n".join(out)


def run_gpu_store(g, sources, alg, **kw):
    """GPU run that also keeps the distance rows (for the scipy check)."""
    from simengine.network.apsp import run_sources, store_dtype
    from simengine.network.statistics import PathStatistics

    store = np.empty((len(sources), g.n), store_dtype(g))
    st = PathStatistics.for_graph(g, planned_sources=len(sources))
    run_sources(g, sources, st, alg, backend="cuda", store=store, **kw)
    return store


def per_source_rows(n, k, seed):
    """Few sources on a big graph: per-source paths against the batch paths, per source."""
    import scipy.sparse.csgraph as csg

    from simengine.network import generators as gen
    from simengine.network.backends import choose
    from simengine.network.graph import CSRGraph

    t = time.perf_counter()
    g = gen.random_weighted(n, 6.0, 1, 10, seed=seed)
    print(f"# per-source: random_weighted n={n} generated in {time.perf_counter() - t:.1f} s",
          flush=True)
    gu = CSRGraph(g.n, g.indptr, g.indices, None, False)
    src = sample(n, k, seed)
    A = g.to_scipy()
    rows = []
    for graph, label, paths, batch_path in ((gu, "none", ("dobfs", "msbfs"), "msbfs"),
                                            (g, "1–10", ("nearfar", "frontier"), "frontier")):
        if graph.weighted:
            ref = csg.dijkstra(A, directed=False, indices=src[:2])
        else:
            ref = csg.shortest_path(A, method="D", unweighted=True, directed=False,
                                    indices=src[:2])
        stats = {}
        for alg in paths:
            kw = {"batch": k} if alg in ("nearfar", "frontier") else {}
            # the first call uploads the graph (and its transpose) to the device and sizes the
            # buffers: reported apart, the per-source time is the steady state of a run
            _, first = run_gpu(graph, src[:1], alg, **kw)
            print(f"# per-source {alg} n={n}: first call (1 source, graph upload included) "
                  f"{first:.3f} s", flush=True)
            st, secs = run_gpu(graph, src, alg, **kw)
            stats[alg] = st
            D = run_gpu_store(graph, src[:2], alg, **kw).astype(np.float64)
            if not graph.weighted:
                D[D == np.iinfo(store_dtype_of(graph)).max] = np.inf
            rows.append({"family": "per_source", "n": n, "arcs": graph.num_arcs, "weights": label,
                         "path": alg, "auto": choose(graph, "auto", "cuda", num_sources=k).algorithm,
                         "sources": k, "seconds": secs, "ms_per_source": 1e3 * secs / k,
                         "distances_match_scipy": bool(np.array_equal(D, ref)),
                         "matches_batch": "(batch path)"})
        rows[-2]["matches_batch"] = same(stats[paths[0]], stats[batch_path])
        cpu_alg = "dial" if graph.weighted else "dobfs"
        kc = min(k, 4)
        _, secs = run_cpu(graph, src[:kc], cpu_alg)
        rows.append({"family": "per_source", "n": n, "arcs": graph.num_arcs, "weights": label,
                     "path": f"CPU {cpu_alg}", "auto": "", "sources": kc, "seconds": secs,
                     "ms_per_source": 1e3 * secs / kc, "distances_match_scipy": "",
                     "matches_batch": ""})
    return rows


def store_dtype_of(g):
    from simengine.network.apsp import store_dtype

    return store_dtype(g)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--sizes", default="1000,5000,10000,30000")
    ap.add_argument("--families", default="ring,free,ba")
    ap.add_argument("--algorithms", default="msbfs,bfs", help="GPU algorithms, unweighted")
    ap.add_argument("--msbfs-variants", default="",
                    help="extra msbfs rows, e.g. '16:1,32:0' = words:persistent")
    ap.add_argument("--bfs-sources", type=int, default=4096,
                    help="sources for the per-source 'bfs' kernel (extrapolated to n)")
    ap.add_argument("--cpu-sources", type=int, default=2048)
    ap.add_argument("--weighted-sizes", default="100000,1000000")
    ap.add_argument("--weighted-sources", type=int, default=1024)
    ap.add_argument("--weighted-algorithms", default="frontier,nearfar")
    ap.add_argument("--cpu-weighted-sources", type=int, default=64)
    ap.add_argument("--fw-sizes", default="2048,4096",
                    help="Floyd-Warshall kernels (min-plus vs the first kernel), G(n, 0.1)")
    ap.add_argument("--fw-compare-sizes", default="",
                    help="Floyd-Warshall vs frontier SSSP over all sources (crossover)")
    ap.add_argument("--fw-kinds", default="0.1,sparse", help="density p, or 'sparse' (degree 6)")
    ap.add_argument("--fw-configs", default="",
                    help="extra float32 tile configurations K:TM:TN:KC:P1Y at the first --fw-sizes")
    ap.add_argument("--fw-cpu-sources", type=int, default=64, help="0: no CPU Dijkstra column")
    ap.add_argument("--fw-cxx-only", action="store_true",
                    help="--fw-sizes: only the CUDA C++ variants (and the classic reference)")
    ap.add_argument("--per-source-sizes", default="10000000")
    ap.add_argument("--per-source-sources", type=int, default=8)
    ap.add_argument("--betweenness-sizes", default="30000",
                    help="exact betweenness of the --families (bench_betweenness.py's GPU rows)")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None)
    ap.add_argument("--no-warmup", action="store_true")
    ap.add_argument("--markdown", default=None, help="also write the tables here")
    ap.add_argument("--format-log", default=None,
                    help="only print the tables of a saved log/JSON file and exit")
    a = ap.parse_args(argv)
    if a.format_log:
        text = open(a.format_log).read().strip()
        rows = json.loads(text) if text.startswith("[") else \
            [json.loads(x) for x in text.splitlines() if x.startswith("{")]
        print(to_markdown(rows))
        return rows

    from numba import cuda
    from simengine.network import generators as gen

    dev = cuda.get_current_device()
    name = getattr(dev, "name", "simulator")
    name = name.decode() if isinstance(name, bytes) else str(name)
    import numba
    print(f"# device: {name}; CPU threads: {numba.get_num_threads()}", flush=True)
    t = time.perf_counter()
    if not a.no_warmup:
        warm_up([x for x in a.algorithms.split(",") if x] if a.sizes else (),
                bool(a.weighted_sizes or a.fw_compare_sizes), bool(a.per_source_sizes))
    print(f"# warm-up (compilation) {time.perf_counter() - t:.1f} s", flush=True)
    rows = []

    def emit(r):
        rows.append(r)
        print(json.dumps(r), flush=True)

    fams = {"ring": lambda n: gen.watts_alpha(n, 10, ring=True, seed=a.seed),
            "free": lambda n: gen.watts_alpha(n, 10, ring=False, seed=a.seed),
            "ba": lambda n: gen.barabasi_albert(n, 50, seed=a.seed)}
    sizes = [int(x) for x in a.sizes.split(",") if x]
    for fam in [f for f in a.families.split(",") if f]:
        for n in sizes:
            g = fams[fam](n)
            allsrc = np.arange(n, dtype=np.int64)
            cs = sample(n, a.cpu_sources, a.seed)
            cpu_st, t_cpu = run_cpu(g, cs, "msbfs")
            t_cpu_full = t_cpu * n / len(cs)
            runs = [(alg, {}) for alg in a.algorithms.split(",") if alg]
            for v in [x for x in a.msbfs_variants.split(",") if x]:
                w, pers = v.split(":")
                runs.append((f"msbfs(W={w},persistent={pers})",
                             {"batch": 32 * int(w), "persistent": bool(int(pers))}))
            for alg, kw in runs:
                base = alg.split("(")[0]
                if base == "auto":         # the row names what auto ran
                    from simengine.network.backends import choose
                    alg = f"auto ({choose(g, 'auto', 'cuda', num_sources=n).algorithm})"
                src = allsrc if base in ("msbfs", "auto", "bfs_blocks") else \
                    sample(n, a.bfs_sources, a.seed)
                st, t_gpu = run_gpu(g, src, base, **kw)
                t_full = t_gpu * n / len(src)
                chk, _ = run_gpu(g, cs, base, **kw)
                res = st.results()
                emit({"family": fam, "n": n, "edges": g.num_edges, "algorithm": alg,
                      "gpu_sources": len(src), "gpu_s": t_gpu, "gpu_full_s": t_full,
                      "gpu_extrapolated": len(src) < n,
                      "teps": len(src) * g.num_edges / t_gpu,
                      "cpu_sources": len(cs), "cpu_s": t_cpu, "cpu_full_s": t_cpu_full,
                      "cpu_extrapolated": len(cs) < n, "speedup": t_cpu_full / t_full,
                      "mean_distance": res["mean_distance"], "diameter": res["diameter"],
                      "matches_cpu": same(chk, cpu_st)})
    for n in [int(x) for x in a.weighted_sizes.split(",") if x]:
        g = gen.random_weighted(n, 6.0, 1, 10, seed=a.seed)
        src = sample(n, a.weighted_sources, a.seed)
        cs = src[: a.cpu_weighted_sources]
        cpu_st, t_cpu = run_cpu(g, cs, "dijkstra")
        from scipy.sparse.csgraph import dijkstra as sp_dijkstra
        from simengine.network.cuda.sssp import sssp_many
        ref = sp_dijkstra(g.to_scipy(), directed=False, indices=src[:4])
        for alg in a.weighted_algorithms.split(","):
            st, t_gpu = run_gpu(g, src, alg)
            chk, _ = run_gpu(g, cs, alg)
            dist_ok = bool(np.array_equal(sssp_many(g, src[:4], alg), ref))
            emit({"family": "weighted_random_d6", "n": n, "edges": g.num_edges, "algorithm": alg,
                  "gpu_sources": len(src), "gpu_s": t_gpu, "gpu_per_source_ms": 1e3 * t_gpu / len(src),
                  "teps": len(src) * g.num_edges / t_gpu,
                  "cpu_sources": len(cs), "cpu_s": t_cpu,
                  "cpu_per_source_ms": 1e3 * t_cpu / len(cs),
                  "speedup": (t_cpu / len(cs)) / (t_gpu / len(src)),
                  "matches_cpu": same(chk, cpu_st), "distances_match_scipy": dist_ok})
    fw_sizes = [int(x) for x in a.fw_sizes.split(",") if x]
    if fw_sizes:
        import fw_gpu_rows
        from simengine.network.cuda.minplus import TileConfig
        sparse = "sparse" in a.fw_kinds.split(",")   # also real weights on degree-6 graphs
        fw_gpu_rows.warm_up(a.fw_cxx_only, sparse)   # compiles the variants timed (always)
        cfgs = [TileConfig(*map(int, c.split(":"))) for c in a.fw_configs.split(",") if c]
        for r in fw_gpu_rows.fw_rows(fw_sizes, seed=a.seed, configs=cfgs,
                                     cxx_only=a.fw_cxx_only, sparse=sparse):
            emit(r)
    for n, kind in [(int(x), k) for x in a.fw_compare_sizes.split(",") if x
                    for k in a.fw_kinds.split(",")]:
        if kind == "sparse":       # mean degree 6
            g = gen.random_weighted(n, 6.0, 1, 10, seed=a.seed)
        else:                      # density p
            g = gen.random_weights(gen.erdos_renyi_gnp(n, float(kind), seed=a.seed), 1, 10,
                                   seed=a.seed)
        src = np.arange(n, dtype=np.int64)
        from simengine.network.cuda import clear_cache
        clear_cache(g)
        st_fw, t_fw = run_gpu(g, src, "fw")
        fs = sample(n, 1024, a.seed)          # frontier SSSP on a sample, extrapolated
        st_fr, t_fr = run_gpu(g, fs, "frontier")
        t_fr *= n / len(fs)
        cs = sample(n, max(1, a.fw_cpu_sources), a.seed)
        cpu_st, t_cpu = run_cpu(g, cs, "dijkstra") if a.fw_cpu_sources else (None, float("nan"))
        chk, _ = run_gpu(g, cs, "fw")
        emit({"family": f"fw_weighted_{kind}", "n": n, "edges": g.num_edges, "algorithm": "fw",
              "gpu_s": t_fw, "gflops_minplus": 2 * float(n) ** 3 / t_fw / 1e9,
              "frontier_s": t_fr, "fw_vs_frontier": t_fr / t_fw,
              "cpu_dijkstra_full_s": t_cpu * n / len(cs), "cpu_extrapolated": True,
              "speedup": t_cpu * n / len(cs) / t_fw,
              "matches_cpu": same(chk, cpu_st) if cpu_st is not None else "",
              "frontier_extrapolated_from": len(fs), "fw_matches_frontier": same(chk, run_gpu(g, cs, "frontier")[0])})
    for n in [int(x) for x in a.per_source_sizes.split(",") if x]:
        for r in per_source_rows(n, a.per_source_sources, a.seed):
            emit(r)
    btw_sizes = [int(x) for x in a.betweenness_sizes.split(",") if x]
    if btw_sizes:
        import bench_betweenness as bb
        bb.gpu_compile()
        names = {"ring": "watts_ring_k10", "free": "watts_free_k10", "ba": "ba_k100"}
        for n in btw_sizes:
            for r in bb.gpu_betweenness_rows([names[f] for f in a.families.split(",") if f], n):
                emit(r)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    md = to_markdown(rows)
    print(md)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(f"device: {name}, {time.strftime('%Y-%m-%d')}\n\n{md}\n")
    return rows


if __name__ == "__main__":
    sys.exit(0 if main() is not None else 1)
