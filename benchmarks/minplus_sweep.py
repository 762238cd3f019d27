"""Tile sweep of the CUDA C++ min-plus kernels (simengine/network/cuda/minplus_tiles.cu) on one GPU.

1. Issue rate of one update (add + min) per instruction form — float ``fminf(acc, a + b)``, int
   ``__viaddmin_s32`` (DPX) and int ``min(acc, a + b)`` — in updates per clock per SM at the
   device's maximum clock (16 independent chains per thread, one wave of blocks).
2. SASS of the product instances (``nvcc`` + ``cuobjdump``, where present): counts of the
   add/min instructions, shared loads and local-memory spills.
3. The "rest" update alone (phase 3 of one round at n) per tile configuration: updates/s.
4. Whole closures at n: numba float32 (the previous kernels) against the C++ modes, checked
   against the numba result (exact for integer weights); predecessors checked arc by arc
   (D[i, P[i, j]] + w(P[i, j], j) == D[i, j]) on sampled rows.

Usage: python benchmarks/minplus_sweep.py [--n 8192] [--micro] [--sass] [--sweep] [--full]
"""
from __future__ import annotations

import argparse
import os
import shutil
import subprocess
import sys
import tempfile
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

_MICRO_KERNEL = r"""
extern "C" __global__ void upd_NAME(const T *in, T *out, int iters) {
    T a = in[threadIdx.x], acc[16], b[16];
    for (int i = 0; i < 16; ++i) { acc[i] = in[i + 32]; b[i] = in[i + 64]; }
    for (int it = 0; it < iters; ++it) {
#pragma unroll
        for (int i = 0; i < 16; ++i) acc[i] = STEP;
        a += 1;
    }
    T s = 0; for (int i = 0; i < 16; ++i) s += acc[i];
    out[blockIdx.x * blockDim.x + threadIdx.x] = s;
}
"""
#: the add-and-min forms timed by :func:`micro` (name, C type, one update)
_FORMS = (("f", "float", "fminf(acc[i], a + b[i])"), ("dpx", "int", "__viaddmin_s32(a, b[i], acc[i])"),
          ("i", "int", "min(acc[i], a + b[i])"))
MICRO = "".join(_MICRO_KERNEL.replace("NAME", n).replace("T ", t + " ").replace("T *", t + " *")
                .replace("STEP", e) for n, t, e in _FORMS)


def _events_ms(fn, reps=5):
    import cupy as cp

    fn()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        a, b = cp.cuda.Event(), cp.cuda.Event()
        a.record()
        fn()
        b.record()
        b.synchronize()
        ts.append(cp.cuda.get_elapsed_time(a, b))
    return float(np.median(ts))


def micro():
    import cupy as cp

    dev = cp.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    mod = cp.RawModule(code=MICRO, options=("-std=c++17",))
    iters = 1 << 14
    rows = []
    for name, dt in (("upd_f", cp.float32), ("upd_dpx", cp.int32), ("upd_i", cp.int32)):
        k = mod.get_function(name)
        inp = cp.arange(128, dtype=dt) % 7
        out = cp.zeros(sms * 8 * 1024, dtype=dt)
        for threads, blocks in ((256, sms * 4), (256, sms * 8)):
            ms = _events_ms(lambda: k((blocks,), (threads,), (inp, out, np.int32(iters))))
            ghz = dev.attributes["ClockRate"] / 1e6          # the maximum SM clock
            ups = blocks * threads * iters * 16 / (ms * 1e-3)
            rows.append((name, threads, blocks, ms, ups / 1e12, ups / (sms * ghz * 1e9)))
    print("| kernel | threads | blocks | ms | 10^12 updates/s | updates/clk/SM at the max clock |")
    print("|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.3f} | {r[4]:.2f} | {r[5]:.1f} |")
    return rows


def sass(instances):
    """SASS instruction counts of the given fw_product instances (nvcc + cuobjdump)."""
    from simengine.network.cuda import minplus_nvrtc as mn

    nvcc, cuobj = shutil.which("nvcc"), shutil.which("cuobjdump")
    if not (nvcc and cuobj):
        print("# sass: no nvcc/cuobjdump")
        return
    with tempfile.TemporaryDirectory() as d:
        src = os.path.join(d, "i.cu")
        with open(src, "w") as f:
            f.write(f'#include "{mn.SOURCE}"\n')
            f.write(MICRO)
            for name in instances:
                targs = name[name.index("<") + 1:-1]
                ct = targs.split(",")[0]
                f.write(f"template __global__ void fw_product<{targs}>({ct}*,int*,int,int);\n")
        cub = os.path.join(d, "i.cubin")
        r = subprocess.run([nvcc, "-arch=sm_90", "-DSE_DPX", "-std=c++17", "-cubin", "-Xptxas",
                            "-v", "-o", cub, src], capture_output=True, text=True)
        print("\n".join(l for l in r.stderr.splitlines() if "registers" in l or "spill" in l
                        or "error" in l)[:6000])
        out = subprocess.run([cuobj, "-sass", cub], capture_output=True, text=True).stdout
    funcs = out.split("Function : ")[1:]
    keys = ("VIADDMNMX", "FMNMX", "FADD", "IMNMX", "VIMNMX", "IADD3", "LDS.128", "LDS.64", "LDS",
            "LDL", "STL", "LDGSTS", "BAR")
    print("| function | " + " | ".join(keys) + " |")
    for fn in funcs:
        name = fn.splitlines()[0].strip()
        cnt = []
        for k in keys:
            cnt.append(sum(1 for l in fn.splitlines() if f" {k} " in l or f" {k}." in l
                           if not (k == "LDS" and ("LDS.128" in l or "LDS.64" in l))))
        print(f"| {name[:70]} | " + " | ".join(map(str, cnt)) + " |")


def _graph(n, weights="int", seed=1, p=0.1):
    import fw_gpu_rows

    return fw_gpu_rows._graph(n, p, weights, seed)


def sweep(n, configs):
    """Phase 3 of one round alone (k = 1) for each (dtype, mode, ProductConfig)."""
    import cupy as cp
    from simengine.network.cuda import minplus_nvrtc as mn
    from simengine.network.cuda.floyd_warshall import floyd_warshall_device

    g = _graph(n)
    out = []
    for dt in ("float32", "int32"):
        D, _, _ = floyd_warshall_device(g, dtype=dt, kernel="cxx")
        nt = D.shape[0] // mn.R
        Dc = cp.asarray(D)
        ups = (nt - 1) ** 2 * mn.R ** 3
        Pc = cp.zeros(D.shape, cp.int32)
        for mode, cfg in configs:
            if (mode in (0, 4)) != (dt == "float32"):
                continue
            try:
                fn, smem = mn.product_kernel(np.dtype(dt), mode, 3, cfg)
                g3 = (D.shape[0] // cfg.BN, D.shape[0] // cfg.BM)
                args = (Dc, Pc, np.int32(D.shape[0]), np.int32(mn.R))
                ms = _events_ms(lambda: fn(g3, (cfg.threads,), args, shared_mem=smem), reps=7)
                out.append((dt, mode, cfg.text(), ms, ups / (ms * 1e-3) / 1e12))
            except Exception as e:
                out.append((dt, mode, cfg.text(), float("nan"), f"{type(e).__name__}: {e}"[:200]))
            print(out[-1], flush=True)
        del D, Dc, Pc
    print("| dtype | mode | config | rest ms (1 round) | 10^12 updates/s |")
    print("|---|---|---|---|---|")
    for r in out:
        v = f"{r[4]:.2f}" if isinstance(r[4], float) else r[4]
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.3f} | {v} |")


def _check_preds(g, D, P, n, rows=64):
    """Arc check on sampled rows: the arc P[i,j] -> j exists and D[i, P[i,j]] + w == D[i, j]."""
    import scipy.sparse as sp

    s, t = g.arcs()
    W = sp.csr_matrix((g.weights, (s, t)), shape=(n, n))
    bad = 0
    for i in np.linspace(0, n - 1, rows).astype(int):
        js = np.nonzero(np.isfinite(D[i]))[0]
        js = js[js != i]
        us = P[i, js]
        if np.any(us < 0):
            bad += int(np.sum(us < 0))
            js, us = js[us >= 0], us[us >= 0]
        w = np.asarray(W[us, js]).ravel()
        bad += int(np.sum((w <= 0) | (D[i, us] + w != D[i, js]))) + int(P[i, i] != -1)
    return bad


def phases(n):
    """Event times of each kernel of one round (k = nt/2) and of all rounds, on a closed matrix;
    host time of the first call on a fresh graph (weight scan included) and of a repeat."""
    import cupy as cp
    from simengine.network.cuda import minplus_nvrtc as mn
    from simengine.network.cuda.floyd_warshall import floyd_warshall_device

    for dt, mode in (("int32", 1), ("float32", 0), ("int32", 3), ("float32", 5)):
        g = _graph(n)
        t = time.perf_counter()
        D, P, _ = floyd_warshall_device(g, dtype=dt, kernel="cxx", predecessors=mn.keeps_predecessors(mode))
        cp.cuda.Device().synchronize()
        t1 = time.perf_counter() - t
        t = time.perf_counter()
        D, P, _ = floyd_warshall_device(g, dtype=dt, kernel="cxx", predecessors=mn.keeps_predecessors(mode))
        cp.cuda.Device().synchronize()
        t2 = time.perf_counter() - t
        nt = D.shape[0] // mn.R
        Dc = cp.asarray(D)
        Pc = cp.asarray(P) if P is not None else cp.zeros(D.shape, cp.int32)
        args = (Dc, Pc, np.int32(D.shape[0]), np.int32((nt // 2) * mn.R))
        k1 = mn.diag_kernel(np.dtype(dt), mn.keeps_predecessors(mode))
        k2, s2 = mn.panels_kernel(np.dtype(dt), "select" if mn.mode_name(mode) == "chunk-search" else mode)
        rest = mn.REST[mn.mode_name(mode)]
        k3, s3 = mn.product_kernel(np.dtype(dt), mode, 3, rest)
        g3 = (D.shape[0] // rest.BN, D.shape[0] // rest.BM)
        t_d = _events_ms(lambda: k1((1,), (32, 32), args), 7)
        t_p = _events_ms(lambda: k2((D.shape[0] // 64, 2), (256,), args, shared_mem=s2), 7)
        t_r = _events_ms(lambda: k3(g3, (rest.threads,), args, shared_mem=s3), 7)
        t_all = _events_ms(lambda: mn.run_rounds(D, P, nt, mode, lookahead=False), 3)
        t_la = _events_ms(lambda: mn.run_rounds(D, P, nt, mode, lookahead=True), 3)
        print(f"| {n} | {dt} mode {mn.mode_name(mode)} | diag {1e3 * t_d:.0f} us | panels {1e3 * t_p:.0f} us | "
              f"rest {t_r:.3f} ms ({(nt - 1) ** 2 * mn.R ** 3 / t_r / 1e9:.2f}e12/s) | "
              f"rounds {t_all:.2f} ms, look-ahead {t_la:.2f} ms | first call {1e3 * t1:.1f} ms, repeat {1e3 * t2:.1f} ms |",
              flush=True)
        del D, P, Dc, Pc
    g = _graph(n, "real")
    for cfg in (mn.ProductConfig(TM=8, TN=4, MINB=1), mn.ProductConfig(TM=8, TN=8, MINB=1)):
        old, mn.REST["chunk-search"] = mn.REST["chunk-search"], cfg
        ts = []
        for _ in range(3):
            cp.cuda.Device().synchronize()
            t = time.perf_counter()
            floyd_warshall_device(g, dtype="float32", kernel="cxx", predecessors=True)
            cp.cuda.Device().synchronize()
            ts.append(time.perf_counter() - t)
        mn.REST["chunk-search"] = old
        print(f"| {n} | float32 real + pred, mode chunk-search | {cfg.text()} | {1e3 * min(ts[1:]):.1f} ms |",
              flush=True)


def full(n, reps=3):
    import fw_gpu_rows
    from simengine.network.cuda import floyd_warshall as fwm
    from simengine.network.cuda.floyd_warshall import floyd_warshall_device, to_host

    peak, text = fw_gpu_rows.peak_updates()
    print(f"peak {peak / 1e12:.2f}e12 updates/s ({text})")
    rows = []
    for weights in ("int", "real"):
        g = _graph(n, weights)
        ref = None
        var = [("numba float32", dict(dtype="float32", kernel="numba")),
               ("cxx float32", dict(dtype="float32", kernel="cxx")),
               ("cxx float32 + pred", dict(dtype="float32", kernel="cxx", predecessors=True))]
        if weights == "int":
            var += [("cxx int32 DPX", dict(dtype="int32", kernel="cxx", dpx=True)),
                    ("cxx int32 plain", dict(dtype="int32", kernel="cxx", dpx=False)),
                    ("cxx int32 + pred (packed)", dict(dtype="int32", kernel="cxx",
                                                       predecessors=True)),
]
        for label, kw in var:
            floyd_warshall_device(_graph(300, weights, 0), **kw)      # compile
            t, (D, P, inf) = fw_gpu_rows._time(lambda: floyd_warshall_device(g, **kw), reps)
            H = to_host(D, n, inf)
            if ref is None:
                ref = H
                chk = "reference"
            elif weights == "int":
                chk = "exact" if np.array_equal(H, ref) else "MISMATCH"
            else:
                chk = f"rel {np.nanmax(np.abs(H - ref) / np.where(np.isfinite(ref), ref, 1)):.1e}"
            if P is not None and weights == "int":
                bad = _check_preds(g, H, P.copy_to_host()[:n, :n], n, rows=16)
                chk += f", pred arcs bad {bad}"
            rows.append((n, weights, label, t, n ** 3 / t / 1e12, 100 * n ** 3 / t / peak, chk,
                         fwm.last_kernel))
            print(rows[-1], flush=True)
            del D, P
    print("| n | weights | kernel | s | 10^12 upd/s | % peak | check | ran |")
    print("|---|---|---|---|---|---|---|---|")
    for r in rows:
        print(f"| {r[0]} | {r[1]} | {r[2]} | {r[3]:.4f} | {r[4]:.2f} | {r[5]:.0f} | {r[6]} | "
              f"{r[7]} |")


def main():
    from simengine.network.cuda import minplus_nvrtc as mn

    ap = argparse.ArgumentParser()
    ap.add_argument("--n", type=int, default=8192)
    ap.add_argument("--micro", action="store_true")
    ap.add_argument("--sass", action="store_true")
    ap.add_argument("--sweep", action="store_true")
    ap.add_argument("--full", action="store_true")
    ap.add_argument("--phases", action="store_true")
    a = ap.parse_args()
    P = mn.ProductConfig
    cfgs = [(0, P()), (0, P(VA=4)), (0, P(STAGES=2)), (0, P(STAGES=4)),
            (0, P(MINB=1)), (0, P(BM=64, BN=128, TM=4, TN=8)),
            (1, P()), (1, P(MINB=1)), (1, P(VA=4, MINB=1)), (2, P()),
            (2, P(MINB=1)), (3, P()), (3, P(MINB=1)), (4, mn.REST["select"]), (0, P(VA=4, STAGES=2)), (0, P(VA=4, STAGES=4))]
    if a.micro:
        micro()
    if a.sass:
        names = []
        for mode, c in cfgs:
            ct = "int" if mode in (1, 2, 3) else "float"
            names.append(f"fw_product<{ct},{mode},3,{c.BM},{c.BN},{c.TM},{c.TN},{c.KC},"
                         f"{c.STAGES},{c.MINB},{c.VA}>")
        sass(names[:1] + names[6:7] + names[9:10] + names[11:13] + names[-1:])
    if a.sweep:
        t = time.perf_counter()
        sweep(a.n, cfgs)
        print(f"# sweep {time.perf_counter() - t:.0f} s")
    if a.phases:
        phases(a.n)
    if a.full:
        full(a.n)


if __name__ == "__main__":
    main()
