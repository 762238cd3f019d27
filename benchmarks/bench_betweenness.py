"""Betweenness-centrality benchmark: simengine's Brandes engines against igraph and NetworKit,
measured in the same run.

CPU (default): exact unweighted betweenness of Barabási–Albert n = 10⁴, m = 5 (``--n``, ``--m``):
simengine (numba, all cores: ``NUMBA_NUM_THREADS``), igraph ``Graph.betweenness`` (one thread),
NetworKit ``Betweenness`` (``--nk-threads``, default 2). Prints seconds, the ratio of each peer's
time to simengine's and the largest relative difference of the values (networkx convention:
halved for undirected graphs), and the CPU seconds of the process beside the wall seconds (on a
busy machine the wall ratio is noisy). Graph generation and conversion are not timed; numba is
compiled on a small graph first.

GPU (``--gpu``): exact betweenness of the seed families at ``--gpu-n`` (Watts α-model with and
without ring substrate, k = 10; Barabási–Albert k = 100) and ``--sampled`` sampled sources on
G(n, m) with n = ``--big-n``, mean degree 6; engine time = ``run_sources`` (graph upload and the
GPU engine's probe BFS included, kernels of both GPU engines compiled before), two ways in the
same run: betweenness alone (the engine computes nothing else) and betweenness with the path
statistics (the engine before branch i40, timed beside them then: docs/measurements/
network-gpu-2026-11-28.md). Every GPU result is checked against the CPU engine on ``--check``
listed sources.

    python benchmarks/bench_betweenness.py                 # CPU table
    python benchmarks/bench_betweenness.py --gpu           # GPU rows
    python benchmarks/bench_betweenness.py --gpu --profile --families ba_k100   # where it goes
    python benchmarks/bench_betweenness.py --gpu --weighted 30000 --families ""  # weighted row

Weighted (``--weighted N``): Barabási–Albert n = N, m = 5 (mean degree 10), integer weights 1–10,
all sources: the GPU engine (:mod:`simengine.network.cuda.brandes_weighted`) against the CPU
engine on all cores (what ``backend: cuda`` ran before), the CPU on ``--weighted-cpu-sources``
listed sources extrapolated to all (both engines' betweenness over those sources compared).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np


def ba(n, m, seed=1):
    from simengine.network.generators import generate

    return generate({"type": "barabasi_albert", "n": n, "m": m, "seed": seed})


def ours(g, sources="all", backend="cpu", paths=True, batch=None):
    """(betweenness, wall s, CPU s) of simengine's engine on ``backend``: ``paths`` = with the
    path statistics."""
    from simengine.network.apsp import run_sources
    from simengine.network.sources import choose_sources
    from simengine.network.statistics import PathStatistics

    src, sampled = choose_sources(g.n, sources)
    st = PathStatistics.for_graph(g, sampled=sampled, planned_sources=len(src), betweenness=1,
                                  paths=paths)
    if backend == "cuda":             # every variant pays the graph's upload and the probe
        from numba import cuda
        from simengine.network.cuda import clear_cache
        clear_cache(g)
        cuda.synchronize()
    t = time.perf_counter()
    c = time.process_time()
    run_sources(g, src, st, backend=backend, batch=batch)
    if backend == "cuda":
        cuda.synchronize()
    return st.results()["betweenness"], time.perf_counter() - t, time.process_time() - c


def edges(g):
    u = np.repeat(np.arange(g.n), np.diff(g.indptr))
    keep = u < g.indices
    return u[keep], g.indices[keep].astype(np.int64)


def igraph_time(g):
    import igraph as ig

    u, v = edges(g)
    G = ig.Graph(n=g.n, edges=np.column_stack([u, v]).tolist(), directed=False)
    t, c = time.perf_counter(), time.process_time()
    b = G.betweenness(directed=False)
    return np.asarray(b), time.perf_counter() - t, time.process_time() - c


def networkit_time(g, threads):
    import networkit as nk

    nk.setNumberOfThreads(threads)
    u, v = edges(g)
    G = nk.Graph(g.n, weighted=False, directed=False)
    for a, b in zip(u.tolist(), v.tolist()):
        G.addEdge(a, b)
    t, c = time.perf_counter(), time.process_time()
    bc = nk.centrality.Betweenness(G, normalized=False)
    bc.run()
    dt, dc = time.perf_counter() - t, time.process_time() - c
    # NetworKit sums over ordered pairs for undirected graphs; networkx halves
    return np.asarray(bc.scores()) / 2.0, dt, dc


def rel(a, b):
    return float(np.max(np.abs(a - b)) / max(np.max(np.abs(b)), 1e-300))


def cpu_table(a):
    import numba

    g = ba(a.n, a.m)
    ours(ba(200, a.m))                                   # compile
    rows = []
    load = os.getloadavg()[0]
    ref, t0, c0 = ours(g)
    rows.append(("simengine (Brandes, numba)", numba.get_num_threads(), t0, c0, 0.0))
    if "igraph" in a.peers:
        b, t, c = igraph_time(g)
        rows.append(("igraph betweenness", 1, t, c, rel(b, ref)))
    if "networkit" in a.peers:
        b, t, c = networkit_time(g, a.nk_threads)
        rows.append(("NetworKit Betweenness", a.nk_threads, t, c, rel(b, ref)))
    print(f"exact betweenness, Barabási–Albert n = {a.n}, m = {a.m} ({g.num_edges} edges), "
          f"{os.cpu_count()} CPUs, load average {load:.1f} -> {os.getloadavg()[0]:.1f}")
    print("| tool | threads | wall [s] | wall / simengine | CPU [s] | CPU / simengine's | "
          "max rel. diff |")
    print("|---|---|---|---|---|---|---|")
    for name, th, t, c, d in rows:
        print(f"| {name} | {th} | {t:.2f} | {t / t0:.2f}× | {c:.2f} | {c / c0:.2f}× | {d:.1e} |")
    peers = [t for _, _, t, _, _ in rows[1:]]
    if peers:
        print(f"fastest peer / simengine (wall) = {min(peers) / t0:.2f}× (target >= 3)")


FAMILIES = {"watts_ring_k10": lambda n: _gen().watts_alpha(n, 10, ring=True, seed=1),
            "watts_free_k10": lambda n: _gen().watts_alpha(n, 10, ring=False, seed=1),
            "ba_k100": lambda n: _gen().barabasi_albert(n, 50, seed=1)}


def _gen():
    from simengine.network import generators

    return generators


def gpu_compile():
    """Compile the kernels of both GPU engines on a small graph."""
    from simengine.network.cuda.betweenness import brandes_partials as gpu_brandes

    for paths in (False, True):
        ours(ba(60, 3), backend="cuda", paths=paths)
        ours(ba(60, 3), {"sample": 20, "seed": 1}, backend="cuda", paths=paths)
        for _ in gpu_brandes(ba(60, 3), np.arange(8), engine="blocks", paths=paths):
            pass


def gpu_betweenness_rows(families, n, big_n=0, sampled=1024, check=8, alt_batch=0):
    """One dict per GPU case: exact betweenness of ``families`` (names of FAMILIES) at ``n``,
    and (``big_n`` > 0, first) ``sampled`` sources of G(n, m) with n = ``big_n``, mean degree 6.
    Engine time as in the module's docstring; ``check`` listed sources against the CPU."""
    from simengine.network.centrality import betweenness
    from simengine.network.cuda import device_graph
    from simengine.network.cuda.brandes import engine_for

    cases = [(f, lambda f=f: FAMILIES[f](n), "all") for f in families]
    if big_n:       # first: the sampled case (the ring family is the slowest)
        cases.insert(0, ("gnm_d6", lambda: _gen().generate({"type": "gnm", "n": big_n,
                                                            "m": 3 * big_n, "seed": 1}),
                         {"sample": sampled, "seed": 1}))
    for name, make, sources in cases:
        g = make()
        b, t, _ = ours(g, sources, backend="cuda", paths=False)
        _, t_paths, _ = ours(g, sources, backend="cuda", paths=True)
        t_alt = ours(g, sources, backend="cuda", paths=False, batch=alt_batch)[1] \
            if alt_batch else None
        listed = list(range(0, g.n, max(1, g.n // check)))[:check]
        gc = betweenness(g, listed, backend="cuda")["betweenness"]
        cc = betweenness(g, listed, backend="cpu")["betweenness"]
        yield {"family": f"betweenness_{name}", "n": g.n, "edges": g.num_edges,
               "sources": g.n if sources == "all" else sources["sample"],
               "engine": engine_for(g, device_graph(g)), "engine_s": t,
               "engine_paths_s": t_paths, "check_rel_diff": rel(gc, cc),
               "alt_batch": alt_batch, "alt_batch_s": t_alt}


def gpu_table(rows) -> list[str]:
    """Markdown lines of :func:`gpu_betweenness_rows`' dicts."""
    out = ["| graph | n | edges | sources | GPU engine | betweenness alone s | with path "
           "statistics s | check vs CPU (listed sources) |", "|---|---|---|---|---|---|---|---|"]
    return out + [f"| {r['family'][12:]} | {r['n']} | {r['edges']} | {r['sources']} | "
                  f"{r['engine']} | {r['engine_s']:.3f} | {r.get('engine_paths_s', 0):.3f} | "
                  f"max rel. diff {r['check_rel_diff']:.1e} |"
                  + (f" alone, batch {r['alt_batch']}: {r['alt_batch_s']:.3f} s |"
                     if r.get("alt_batch_s") else "") for r in rows]


def weighted_row(n, cpu_sources, check=True):
    """The weighted case of the module's docstring: one dict."""
    import numba
    from simengine.network.generators import random_weights

    g = random_weights(ba(n, 5), 1, 10, seed=1)
    small = random_weights(ba(60, 3), 1, 10, seed=1)
    for backend in ("cuda", "cpu"):                   # compile
        ours(small, backend=backend, paths=False)
    b, t_gpu, _ = ours(g, backend="cuda", paths=False)
    _, t_gpu_paths, _ = ours(g, backend="cuda", paths=True)
    listed = np.linspace(0, n - 1, min(cpu_sources, n)).astype(np.int64)
    lb, lt, _ = ours(g, list(listed), backend="cuda", paths=False)
    cb, ct, _ = ours(g, list(listed), backend="cpu", paths=True)
    t_cpu = ct * n / len(listed)
    return {"family": "betweenness_weighted_ba_k10", "n": g.n, "edges": g.num_edges,
            "sources": n, "gpu_s": t_gpu, "gpu_paths_s": t_gpu_paths,
            "cpu_threads": numba.get_num_threads(), "cpu_sources": len(listed),
            "cpu_s": ct, "cpu_full_s": t_cpu, "speedup": t_cpu / t_gpu,
            "check_rel_diff": rel(lb, cb)}


def weighted_table(r) -> list[str]:
    return ["| graph | n | edges | sources | GPU s (betweenness alone) | GPU s (with path "
            "statistics) | CPU engine s (threads, extrap. from listed) | GPU speed-up | "
            "check vs CPU (listed sources) |", "|---|---|---|---|---|---|---|---|---|",
            f"| BA k = 10, weights 1–10 | {r['n']} | {r['edges']} | {r['sources']} | "
            f"{r['gpu_s']:.3f} | {r['gpu_paths_s']:.3f} | {r['cpu_full_s']:.2f} "
            f"({r['cpu_threads']} threads, {r['cpu_sources']} sources: {r['cpu_s']:.2f} s) | "
            f"{r['speedup']:.1f}× | max rel. diff {r['check_rel_diff']:.1e} |"]


def gpu_rows(a):
    if a.weighted:
        print("\n".join(weighted_table(weighted_row(a.weighted, a.weighted_cpu_sources))),
              flush=True)
    if not a.families:
        return
    gpu_compile()
    head = True
    for r in gpu_betweenness_rows([f for f in a.families.split(",") if f], a.gpu_n, a.big_n,
                                  a.sampled, a.check, a.alt_batch):
        lines = gpu_table([r])
        print("\n".join(lines if head else lines[2:]), flush=True)
        head = False


def one_batch_phases(g, B, pull_only=False, paths=False):
    """Seconds per step of one batch of the batched engine (sources 0..B-1; each step's launch
    synchronized), the batch's copies (and with ``paths`` its level counts) included; second of
    two runs. ``pull_only``: every backward level pulls (no atomics) instead of the engine's
    choice."""
    from simengine.network.cuda import brandes

    rule = brandes.push_back
    if pull_only:
        brandes.push_back = lambda level_out, next_in: False
    try:
        return _phases(g, B, paths)
    finally:
        brandes.push_back = rule


def _phases(g, B, paths):
    from numba import cuda
    from simengine.network.cuda import device_graph
    from simengine.network.cuda.brandes import BrandesBuffers, brandes_batch, level_type

    dg, src = device_graph(g), np.arange(B, dtype=np.int64)
    buf = BrandesBuffers(g.n, B, level_type(g, dg))
    for _ in range(2):
        times, clock = {}, [time.perf_counter()]

        def phase(name):
            cuda.synchronize()
            now = time.perf_counter()
            times[name] = times.get(name, 0.0) + now - clock[0]
            clock[0] = now

        cuda.synchronize()
        clock[0] = time.perf_counter()
        deepest = brandes_batch(dg, src, buf, squares=False, phase=phase, paths=paths)
        if paths:
            buf.lvl[:deepest + 1].copy_to_host()
            buf.col_sum.copy_to_host()
        buf.btw.copy_to_host()
        phase("copies")
    return times


def gpu_profile(a):
    """Engine time per batch size (``--batches``; 0 = the engine's default) for the families,
    and the steps of one batch of the batched engine."""
    from simengine.network.apsp import run_sources
    from simengine.network.cuda import device_graph
    from simengine.network.cuda.brandes import engine_for
    from simengine.network.statistics import PathStatistics
    from numba import cuda

    gpu_compile()
    for name in [f for f in a.families.split(",") if f]:
        g = FAMILIES[name](a.gpu_n)
        engine = engine_for(g, device_graph(g))
        print(f"{name}: n = {g.n}, {g.num_edges} edges, GPU engine {engine}", flush=True)
        ref = None
        for B in [int(x) for x in a.batches.split(",") if x]:
            st = PathStatistics.for_graph(g, planned_sources=g.n, betweenness=1, paths=False)
            cuda.synchronize()
            t = time.perf_counter()
            run_sources(g, np.arange(g.n), st, backend="cuda", batch=B or None)
            cuda.synchronize()
            t = time.perf_counter() - t
            b = st.results()["betweenness"]
            ref = b if ref is None else ref
            print(f"  batch {B or 'default'}: engine {t:.3f} s, max rel. diff to the first "
                  f"{rel(b, ref):.1e}", flush=True)
            for pull_only, paths in (((False, False), (True, False), (False, True))
                                     if engine == "levels" and B else ()):
                times = one_batch_phases(g, B, pull_only, paths)
                total = sum(times.values())
                print(f"    one batch{', backward pulls only' if pull_only else ''}"
                      f"{', with path statistics' if paths else ''} "
                      f"{1e3 * total:.1f} ms (× {g.n / B:.1f} batches = {total * g.n / B:.3f} "
                      f"s): " + ", ".join(f"{k} {1e3 * v:.2f}" for k, v in times.items()),
                      flush=True)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--n", type=int, default=10000)
    ap.add_argument("--m", type=int, default=5)
    ap.add_argument("--peers", default="igraph,networkit")
    ap.add_argument("--nk-threads", type=int, default=2)
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--gpu-n", type=int, default=30000)
    ap.add_argument("--families", default="watts_free_k10,ba_k100,watts_ring_k10")
    ap.add_argument("--big-n", type=int, default=1000000)
    ap.add_argument("--sampled", type=int, default=1024)
    ap.add_argument("--check", type=int, default=16)
    ap.add_argument("--profile", action="store_true",
                    help="with --gpu: engine time per --batches and the steps of one batch")
    ap.add_argument("--batches", default="0,2048,1024,512,256")
    ap.add_argument("--weighted", type=int, default=0,
                    help="with --gpu: the weighted row at this n (0: none)")
    ap.add_argument("--weighted-cpu-sources", type=int, default=2048)
    ap.add_argument("--alt-batch", type=int, default=0,
                    help="with --gpu: also time betweenness alone with this batch size")
    a = ap.parse_args(argv)
    if a.gpu and a.profile:
        gpu_profile(a)
    elif a.gpu:
        gpu_rows(a)
    else:
        cpu_table(a)


if __name__ == "__main__":
    sys.exit(main())
