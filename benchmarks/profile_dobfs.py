"""Where the time of the GPU per-source BFS goes (``dobfs`` on ``random_weighted``, unweighted).

One graph in one process: the steady-state ``run_sources`` time of ``dobfs`` (and ``msbfs`` for
reference), then one source traversed level by level with CUDA events around every launch (the
direction, the frontier size, the kernel time and the host time of the level: launches and the
counter round trip), then the parts of a batch: the distance fill, the on-device reduction
(``reduce_rows``: row kernel, column kernel, the copies to the host) and the host accumulation
(``PathStatistics.add``).

Usage: python benchmarks/profile_dobfs.py [--n 10000000] [--sources 8] [--json out.json]
"""
from __future__ import annotations

import argparse
import json
import time

import numpy as np


def _ms(a, b):
    return a.elapsed_time(b)


def main(argv=None):
    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=10_000_000)
    ap.add_argument("--sources", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", default=None)
    ap.add_argument("--skip-msbfs", action="store_true")
    a = ap.parse_args(argv)

    from numba import cuda

    from simengine.network import generators as gen
    from simengine.network.apsp import run_sources
    from simengine.network.cuda import dobfs as D
    from simengine.network.graph import CSRGraph
    from simengine.network.statistics import PathStatistics

    out = {}
    t = time.perf_counter()
    g = gen.random_weighted(a.n, 6.0, 1, 10, seed=a.seed)
    gu = CSRGraph(g.n, g.indptr, g.indices, None, False)
    del g
    print(f"# graph n={gu.n} arcs={gu.num_arcs} generated in {time.perf_counter() - t:.1f} s",
          flush=True)
    rng = np.random.default_rng(a.seed)
    src = np.sort(rng.choice(gu.n, size=a.sources, replace=False)).astype(np.int64)

    def timed_run(alg, sources, **kw):
        st = PathStatistics.for_graph(gu, planned_sources=len(sources))
        cuda.synchronize()
        t0 = time.perf_counter()
        run_sources(gu, sources, st, alg, backend="cuda", **kw)
        cuda.synchronize()
        return time.perf_counter() - t0, st

    first, _ = timed_run("dobfs", src[:1])
    print(f"# dobfs first call {first:.3f} s", flush=True)
    timed_run("dobfs", src[:1], persistent=False)
    pl = [timed_run("dobfs", src, persistent=False)[0] for _ in range(2)]
    out["dobfs_per_level_run_s"] = pl
    print(f"# dobfs (launch per level) run_sources: {[round(x, 4) for x in pl]} s "
          f"-> {1e3 * min(pl) / a.sources:.2f} ms/source", flush=True)
    steady = []
    for _ in range(3):
        s, st_d = timed_run("dobfs", src)
        steady.append(s)
    out["dobfs_run_s"] = steady
    print(f"# dobfs run_sources {a.sources} sources: {[round(x, 4) for x in steady]} s "
          f"-> {1e3 * min(steady) / a.sources:.2f} ms/source", flush=True)

    # ---- one source, level by level (the same launches as dobfs.dobfs_row, with events)
    dg = D._prepared(gu)
    from simengine.network.cuda import graph_cache
    cache = graph_cache(gu)
    buf = cache[("dobfs", a.sources)]
    cols = cache["dobfs_columns"]
    n = dg.n
    T = D.THREADS
    blocks = D._blocks
    for rep in range(2):
        levels = []
        dist = buf.dist[0]
        cuda.synchronize()
        t_src = time.perf_counter()
        e0, e1 = cuda.event(), cuda.event()
        e0.record()
        D.fill[blocks(n), T](dist, D.UNREACHED)
        e1.record()
        e1.synchronize()
        fill_ms = _ms(e0, e1)
        s0 = int(src[0])
        D._start[1, 32](dist, buf.queue, s0, buf.slots)
        deg = int(dg.degree_host[s0])
        nq, mf, mu = 1, deg, dg.num_arcs - deg
        queue, nxt_q, front, nxt_b = buf.queue, buf.nxt_q, buf.front, buf.nxt_b
        slots, hc = buf.slots, buf.host_counters
        level = 0
        bottom_up = False
        nf = prev_nf = 1
        while nf > 0:
            level += 1
            k = level & 1
            th = time.perf_counter()
            e = [cuda.event() for _ in range(3)]
            e[0].record()
            conv = ""
            if not bottom_up and mf > mu // D.ALPHA and nf >= n // D.BETA:
                D.fill[blocks(n), T](front, np.uint8(0))
                D._queue_to_bitmap[blocks(nq), T](queue, nq, front)
                bottom_up = True
                conv = "q->bitmap"
            elif bottom_up and nf < prev_nf and nf < n // D.BETA:
                D._bitmap_to_queue[blocks(n), T](front, n, queue, slots, k)
                bottom_up = False
                conv = "bitmap->q"
            e[1].record()
            prev_nf = nf
            if bottom_up:
                D._bottom_up[blocks(n), T](dg.indptr, dg.t_indptr, dg.t_indices, front, nxt_b,
                                           dist, np.int32(level), n, slots, k)
                front, nxt_b = nxt_b, front
            else:
                D._top_down[blocks(nq), T](dg.indptr, dg.indices, dg.t_indptr, queue, nq,
                                           nxt_q, dist, np.int32(level), slots, k)
                queue, nxt_q = nxt_q, queue
            e[2].record()
            slots[k].copy_to_host(hc)
            host_ms = 1e3 * (time.perf_counter() - th)
            levels.append({"level": level, "dir": "pull" if bottom_up else "push",
                           "frontier_in": int(prev_nf), "new": int(hc[0]), "conv": conv,
                           "conv_ms": _ms(e[0], e[1]), "kernel_ms": _ms(e[1], e[2]),
                           "host_ms": host_ms})
            nf, mf = int(hc[0]), int(hc[1])
            mu -= int(hc[2])
            nq = nf
        buf.queue, buf.nxt_q, buf.front, buf.nxt_b = queue, nxt_q, front, nxt_b
        src_ms = 1e3 * (time.perf_counter() - t_src)
    out["levels"] = levels
    out["fill_ms"] = fill_ms
    out["one_source_wall_ms"] = src_ms
    print(f"# one source wall {src_ms:.2f} ms, fill {fill_ms:.3f} ms", flush=True)
    print("| level | dir | frontier in | new | conversion | conv ms | kernel ms | "
          "host ms (level) |")
    print("|---|---|---|---|---|---|---|---|")
    for r in levels:
        print(f"| {r['level']} | {r['dir']} | {r['frontier_in']} | {r['new']} | {r['conv']} | "
              f"{r['conv_ms']:.3f} | {r['kernel_ms']:.3f} | {r['host_ms']:.3f} |")
    print(f"# sum kernel ms {sum(r['kernel_ms'] for r in levels):.3f}, "
          f"sum host ms {sum(r['host_ms'] for r in levels):.3f}", flush=True)

    # ---- the traversals alone, all sources: a launch per level, one launch per source
    for name, fn in (("dobfs_row", D.dobfs_row), ("dobfs_row_persistent", D.dobfs_row_persistent)):
        res = []
        for _ in range(3):
            cuda.synchronize()
            t0 = time.perf_counter()
            for b, s in enumerate(src):
                lv = fn(dg, int(s), buf, b)
            cuda.synchronize()
            res.append(1e3 * (time.perf_counter() - t0) / len(src))
        out[name + "_ms_per_source"] = res
        print(f"# {name} x{len(src)}: {[round(x, 3) for x in res]} ms/source (levels, pulls of "
              f"the last: {lv}; grid {D._grid_blocks()} blocks)", flush=True)
    d_row = buf.dist.copy_to_host()
    D.dobfs_row(dg, int(src[-1]), buf, 0)
    print(f"# last source: one-launch row == per-level row: "
          f"{bool((buf.dist.copy_to_host()[0] == d_row[len(src) - 1]).all())}", flush=True)

    # ---- the column pass and the copies of a batch
    from simengine.network.accumulate import parallel_copy
    B = len(src)
    e0, e1 = cuda.event(), cuda.event()
    d_src = cuda.to_device(src)
    e0.record()
    D._columns[blocks(n), T](buf.dist, d_src, B, n, cols.col_sum, cols.col_reach, cols.col_harm)
    e1.record()
    e1.synchronize()
    out["columns_kernel_ms"] = _ms(e0, e1)
    cols.stage()
    t0 = time.perf_counter()
    cols.col_sum.copy_to_host(cols.h_sum)
    cols.col_reach.copy_to_host(cols.h_reach)
    cols.col_harm.copy_to_host(cols.h_harm)
    out["pinned_copies_ms"] = 1e3 * (time.perf_counter() - t0)
    t0 = time.perf_counter()
    cs = [parallel_copy(cols.h_sum), parallel_copy(cols.h_reach), parallel_copy(cols.h_harm)]
    out["parallel_host_copies_ms"] = 1e3 * (time.perf_counter() - t0)
    t0 = time.perf_counter()
    cs2 = [cols.h_sum.copy(), cols.h_reach.copy(), cols.h_harm.copy()]
    out["numpy_host_copies_ms"] = 1e3 * (time.perf_counter() - t0)
    del cs2
    print(f"# columns kernel {out['columns_kernel_ms']:.2f} ms, 3 copies to pinned "
          f"{out['pinned_copies_ms']:.2f} ms, 3 parallel host copies "
          f"{out['parallel_host_copies_ms']:.2f} ms (numpy copies "
          f"{out['numpy_host_copies_ms']:.2f} ms)", flush=True)
    part = next(iter(D.dobfs_partials(gu, src, batch=B)))
    adds = []
    for _ in range(2):
        st = PathStatistics.for_graph(gu, planned_sources=B)
        t0 = time.perf_counter()
        st.add(part)
        adds.append(1e3 * (time.perf_counter() - t0))
    t0 = time.perf_counter()
    st.merge(PathStatistics.for_graph(gu, planned_sources=B))
    out["stats_merge_ms"] = 1e3 * (time.perf_counter() - t0)
    out["stats_add_ms"] = adds
    print(f"# PathStatistics.add (fresh accumulator) {adds} ms; merge {out['stats_merge_ms']:.1f}"
          f" ms", flush=True)
    for _ in range(2):
        cuda.synchronize()
        t0 = time.perf_counter()
        part = next(iter(D.dobfs_partials(gu, src, batch=B)))
        out["dobfs_partials_ms"] = 1e3 * (time.perf_counter() - t0)
    print(f"# dobfs_partials (one batch of {B}): {out['dobfs_partials_ms']:.1f} ms", flush=True)
    if not a.skip_msbfs:
        timed_run("msbfs", src[:1])
        ms = [timed_run("msbfs", src)[0] for _ in range(2)]
        out["msbfs_run_s"] = ms
        print(f"# msbfs run_sources: {ms} s -> {1e3 * min(ms) / len(src):.2f} ms/source",
              flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(out, f, indent=1)


if __name__ == "__main__":
    main()
