"""Big graphs on the CPU: generation time and peak memory at n = 10⁷, and per-source BFS / SSSP
against scipy.sparse.csgraph on the same graph.

Generation (each in its own process, so its peak RSS is its own): ``gnm`` n = 10⁷ with 3·10⁷
edges, ``random_weighted`` n = 10⁷ (mean degree 6, weights 1–10), ``rmat`` scale 24 (Graph500:
a = 0.57, b = c = 0.19, edge factor 16).  Reported: wall and CPU seconds of the generator call
(numba compiled beforehand; CPU = user + system, the system part shown on its own: first touches
of fresh memory, which are slow on some virtual machines), peak RSS of the process minus its RSS
before the call, and the final CSR size.

Traversal (one process; the graph is random_weighted n = 10⁷, its unweighted twin drops the
weights): per source, direction-optimising BFS (``dobfs``) against
``scipy.sparse.csgraph.shortest_path(method="D", unweighted=True)``, Dial and binary-heap
Dijkstra against ``scipy.sparse.csgraph.dijkstra``, distances compared; the MS-BFS batch path and
``run_sources(auto)`` (with the statistics) on the same sources for reference.

Usage: python benchmarks/bench_big_graphs.py [--n 10000000] [--rmat-scale 24] [--sources 4]
       [--skip-generation] [--skip-traversal] [--markdown FILE]
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import time

import numpy as np


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) / 1024
    return float("nan")


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child_generate(kind: str, n: int, scale: int) -> dict:
    from simengine.network import generators as gen

    gen.random_weighted(1000, 6, seed=1)          # compile outside the measurement
    gen.rmat(8, seed=1)
    before = _rss_mib()
    sys0 = resource.getrusage(resource.RUSAGE_SELF).ru_stime
    t, c = time.perf_counter(), time.process_time()
    if kind == "gnm":
        g = gen.erdos_renyi_gnm(n, 3 * n, seed=1)
        label = f"gnm n={n}, m={3 * n}"
    elif kind == "random_weighted":
        g = gen.random_weighted(n, 6, seed=1)
        label = f"random_weighted n={n}, deg 6, w 1–10"
    else:
        g = gen.rmat(scale, seed=1)
        label = f"rmat scale {scale} (n={1 << scale}, {16 << scale} generated edges)"
    wall, cpu = time.perf_counter() - t, time.process_time() - c
    sys_s = resource.getrusage(resource.RUSAGE_SELF).ru_stime - sys0
    csr = g.indptr.nbytes + g.indices.nbytes + (g.weights.nbytes if g.weighted else 0)
    peak = _peak_mib() - before
    return {"row": "generate", "graph": label, "arcs": g.num_arcs, "wall_s": wall, "cpu_s": cpu,
            "sys_s": sys_s,
            "csr_mib": csr / 2**20, "peak_extra_mib": peak, "peak_over_csr": peak * 2**20 / csr}


def _time(fn, *args):
    t = time.perf_counter()
    out = fn(*args)
    return out, time.perf_counter() - t


def child_traverse(n: int, k: int) -> list:
    import scipy.sparse.csgraph as csg

    from simengine.network import generators as gen
    from simengine.network.apsp import run_sources
    from simengine.network.cpu.dobfs import DOBFS
    from simengine.network.graph import CSRGraph
    from simengine.network.cpu.sssp import dial, dijkstra
    from simengine.network.statistics import PathStatistics

    small = gen.random_weighted(2000, 6, seed=1)               # compile
    DOBFS(small).run(0)
    dial(small, 0)
    dijkstra(small, 0)
    for alg in ("msbfs", "dobfs", "dial"):
        gg = small if alg == "dial" else CSRGraph(small.n, small.indptr, small.indices)
        run_sources(gg, np.arange(2), PathStatistics.for_graph(gg), alg)
    g = gen.random_weighted(n, 6, seed=1)
    gu = CSRGraph(g.n, g.indptr, g.indices, None, False)
    A = g.to_scipy()
    src = np.sort(np.random.default_rng(1).choice(n, size=k, replace=False))
    rows = []

    def row(graph, what, secs, ok, sources=k, note=""):
        rows.append({"row": "traverse", "graph": graph, "what": what, "sources": sources,
                     "ms_per_source": 1e3 * secs / sources, "same_as_scipy": ok, "note": note})

    b = DOBFS(gu)
    t_do, t_sp, ok = 0.0, 0.0, True
    pulls = []
    for s in src:
        d, t = _time(b.run, int(s))
        t_do += t
        pulls.append(b.pull_levels)
        ref, t = _time(lambda: csg.shortest_path(A, method="D", unweighted=True, directed=False,
                                                 indices=int(s)))
        t_sp += t
        ok &= bool(np.array_equal(np.where(d < 0, np.inf, d), ref))
    lbl = f"random_weighted n={n} without weights"
    row(lbl, "dobfs (simengine, distances only)", t_do, ok,
        note=f"{pulls[0]} of {b.levels} levels pulled")
    row(lbl, "scipy shortest_path(method='D', unweighted=True)", t_sp, True)
    for alg in ("dobfs", "msbfs"):
        st = PathStatistics.for_graph(gu, planned_sources=k)
        _, t = _time(run_sources, gu, src, st, alg)
        row(lbl, f"run_sources({alg}) with statistics", t, "")
    lbl = f"random_weighted n={n}, w 1–10"
    t_dial, t_dij, t_sp, ok = 0.0, 0.0, 0.0, True
    for s in src:
        d1, t = _time(dial, g, int(s))
        t_dial += t
        d2, t = _time(dijkstra, g, int(s))
        t_dij += t
        ref, t = _time(lambda: csg.dijkstra(A, directed=False, indices=int(s)))
        t_sp += t
        ok &= bool(np.array_equal(d1, ref) and np.array_equal(d2, ref))
    row(lbl, "dial (simengine, one thread)", t_dial, ok)
    row(lbl, "dijkstra (simengine, binary heap, one thread)", t_dij, ok)
    row(lbl, "scipy dijkstra", t_sp, True)
    st = PathStatistics.for_graph(g, planned_sources=k)
    _, t = _time(run_sources, g, src, st, "auto")
    row(lbl, f"run_sources(auto = dial, {k} sources over the threads) with statistics", t, "")
    return rows


def _child(args) -> None:
    if args.child == "generate":
        print(json.dumps(child_generate(args.kind, args.n, args.rmat_scale)))
    else:
        for r in child_traverse(args.n, args.sources):
            print(json.dumps(r))


def _spawn(*extra) -> list:
    cmd = [sys.executable, os.path.abspath(__file__), *map(str, extra)]
    p = subprocess.run(cmd, capture_output=True, text=True)
    if p.returncode:
        raise SystemExit(p.stderr)
    return [json.loads(x) for x in p.stdout.splitlines() if x.startswith("{")]


def to_markdown(rows) -> str:
    out = []
    gen = [r for r in rows if r["row"] == "generate"]
    if gen:
        out += ["| graph | arcs | wall s | CPU s | of which system s | CSR MiB | "
                "peak RSS − start MiB | peak / CSR |", "|---|---|---|---|---|---|---|---|"]
        for r in gen:
            out.append(f"| {r['graph']} | {r['arcs']:,} | {r['wall_s']:.2f} | {r['cpu_s']:.2f} | "
                       f"{r.get('sys_s', float('nan')):.2f} | "
                       f"{r['csr_mib']:.0f} | {r['peak_extra_mib']:.0f} | "
                       f"{r['peak_over_csr']:.2f} |")
        out.append("")
    tr = [r for r in rows if r["row"] == "traverse"]
    if tr:
        out += ["| graph | what | sources | ms per source | = scipy | note |",
                "|---|---|---|---|---|---|"]
        for r in tr:
            out.append(f"| {r['graph']} | {r['what']} | {r['sources']} | "
                       f"{r['ms_per_source']:.4g} | {r['same_as_scipy']} | {r['note']} |")
        out.append("")
    return "\n".join(out)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--rmat-scale", type=int, default=24)
    ap.add_argument("--sources", type=int, default=4)
    ap.add_argument("--skip-generation", action="store_true")
    ap.add_argument("--skip-traversal", action="store_true")
    ap.add_argument("--markdown", default=None)
    ap.add_argument("--child", choices=("generate", "traverse"), help=argparse.SUPPRESS)
    ap.add_argument("--kind", default="gnm", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.child:
        _child(a)
        return 0
    import numba

    head = (f"# {time.strftime('%Y-%m-%d %H:%M')}, {os.cpu_count()} CPUs, numba threads "
            f"{numba.get_num_threads()}, load average {os.getloadavg()[0]:.1f}")
    print(head, flush=True)
    rows = []
    if not a.skip_generation:
        for kind in ("gnm", "random_weighted", "rmat"):
            for r in _spawn("--child", "generate", "--kind", kind, "--n", a.n,
                            "--rmat-scale", a.rmat_scale):
                rows.append(r)
                print(json.dumps(r), flush=True)
    if not a.skip_traversal:
        for r in _spawn("--child", "traverse", "--n", a.n, "--sources", a.sources):
            rows.append(r)
            print(json.dumps(r), flush=True)
    tail = f"# load average at the end {os.getloadavg()[0]:.1f}"
    md = to_markdown(rows)
    print(md + "\n" + tail)
    if a.markdown:
        with open(a.markdown, "w") as f:
            f.write(head + "\n\n" + md + "\n" + tail + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
