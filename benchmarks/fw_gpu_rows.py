"""Floyd–Warshall kernel rows of ``bench_network_gpu.py --fw-sizes``: the min-plus kernels
(:mod:`simengine.network.cuda.floyd_warshall`) — CUDA C++ ("C++", Hopper with CuPy) and numba —
in each distance type, with and without predecessors and DPX, next to the first kernel
(`benchmarks/fw_classic.py`,
float64) in the same run, on G(n, p) graphs with integer weights 1–10 and real weights.

Updates = n³ (one candidate d(i,k) + d(k,j) per triple, padding excluded).  Peak = the rate at
which the device can issue an add and a min per update: SMs × 64 updates per clock (128 FP32 lanes
per SM, two instructions per update; the int32 ALU and DPX ``VIADDMNMX`` are 64 lanes per SM) ×
the device's maximum clock.  Every timed matrix is checked against the classic kernel (exact for
integer weights) or, where it did not run, against scipy on a sample of rows."""
from __future__ import annotations

import time

import numpy as np


def peak_updates() -> tuple[float, str]:
    from numba import cuda

    dev = cuda.get_current_device()
    sms = dev.MULTIPROCESSOR_COUNT
    ghz = dev.CLOCK_RATE / 1e6
    return sms * 64 * ghz * 1e9, f"{sms} SMs x 64 updates/clock x {ghz:.2f} GHz"


def _graph(n, p, weights, seed):
    from simengine.network import generators as gen

    if weights == "real sparse":               # mean degree 6
        return _graph(n, 6.0 / max(1, n - 1), "real", seed)
    g = gen.erdos_renyi_gnp(n, p, seed=seed)
    if weights == "int":
        return gen.random_weights(g, 1, 10, seed=seed)
    from simengine.network.graph import CSRGraph
    rng = np.random.default_rng(seed)
    w = rng.uniform(1.0, 10.0, g.num_arcs)
    if not g.directed:                         # same weight both ways
        s, t = g.arcs()
        key = np.minimum(s, t) * n + np.maximum(s, t)
        _, inv = np.unique(key, return_inverse=True)
        w = rng.uniform(1.0, 10.0, inv.max() + 1)[inv]
    return CSRGraph(n, g.indptr, g.indices, w, g.directed)


def _time(fn, reps):
    from numba import cuda

    ts = []
    out = None
    for _ in range(reps):
        out = None
        cuda.synchronize()
        t = time.perf_counter()
        out = fn()
        cuda.synchronize()
        ts.append(time.perf_counter() - t)
    return float(np.median(ts)), out


def _run(g, kw):
    """floyd_warshall_device(g, **kw); ``_float_mode`` in kw: the float32 predecessor mode
    (minplus_nvrtc.FLOAT_PRED_MODE) for this call."""
    from simengine.network.cuda import minplus_nvrtc
    from simengine.network.cuda.floyd_warshall import floyd_warshall_device

    kw = dict(kw)
    mode = kw.pop("_float_mode", None)
    keep = minplus_nvrtc.FLOAT_PRED_MODE
    if mode is not None:
        minplus_nvrtc.FLOAT_PRED_MODE = mode
    try:
        return floyd_warshall_device(g, **kw)
    finally:
        minplus_nvrtc.FLOAT_PRED_MODE = keep


def _float_pred_modes():
    """float32 predecessors kept by the kernels: mode 5 (the default) and 4 (compare and
    select)."""
    base = {"dtype": "float32", "kernel": "cxx", "predecessors": True}
    return [(f"float32 C++ + pred (mode {m})", dict(base, _float_mode=m)) for m in (4,)]


def variants(weights, n=0, cxx_only=False):
    """(label, kwargs of floyd_warshall_device) timed for one weight kind (fewer beyond 8192):
    the CUDA C++ kernels ("C++", Hopper) next to the numba ones."""
    if weights == "int":
        v = [("int32 C++", {"dtype": "int32", "kernel": "cxx"}),
             ("float32 C++", {"dtype": "float32", "kernel": "cxx"}),
             ("float32 numba (exact ints)", {"dtype": "float32", "kernel": "numba"}),
             ("int32 numba DPX", {"dtype": "int32", "dpx": True, "kernel": "numba"}),
             ("int32 C++ + pred", {"dtype": "int32", "kernel": "cxx", "predecessors": True}),
             ("float32 numba (exact ints) + pred",
              {"dtype": "float32", "predecessors": "inline", "kernel": "numba"})]
    elif weights == "real":
        v = [("float32 C++", {"dtype": "float32", "kernel": "cxx"}),
             ("float32 numba", {"dtype": "float32", "kernel": "numba"}),
             ("float64", {"dtype": "float64"}),
             ("float32 C++ + pred", {"dtype": "float32", "kernel": "cxx", "predecessors": True}),
             ] + _float_pred_modes() + [
             ("float64 + pred", {"dtype": "float64", "predecessors": "inline"})]
    else:                                      # "real sparse" (degree 6)
        v = [("float32 C++", {"dtype": "float32", "kernel": "cxx"}),
             ("float32 C++ + pred", {"dtype": "float32", "kernel": "cxx", "predecessors": True}),
             ] + _float_pred_modes()
    if cxx_only:
        v = [x for x in v if "C++" in x[0]]
    if n > 8192:
        keep = ("int32 C++", "float32 C++", "int32 C++ + pred")
        v = [x for x in v if x[0] in keep]
    return v


def warm_up(cxx_only=False, sparse=False):
    from fw_classic import classic_device

    for weights in ("int", "real") + (("real sparse",) if sparse else ()):
        g = _graph(300, 0.1, weights, 0)
        classic_device(g)
        for label, kw in variants(weights, cxx_only=cxx_only):
            try:
                _run(g, kw)
            except Exception as e:
                print(f"# warm-up {label}: {type(e).__name__}: {str(e)[:2000]}", flush=True)


def fw_rows(sizes, density=0.1, seed=1, classic_max=8192, reps=3, configs=(), cxx_only=False,
            sparse=False):
    """Benchmark rows (dicts) for each n in ``sizes``; ``configs``: extra
    :class:`TileConfig` s timed for float32 at the first size; ``cxx_only``: only the CUDA C++
    variants (and the classic reference); ``sparse``: also real weights on a degree-6 graph."""
    from simengine.network.cuda.floyd_warshall import floyd_warshall_device, to_host
    from fw_classic import classic_device
    from simengine.network.cuda import clear_cache

    peak, peak_text = peak_updates()
    rows = []
    for n in sizes:
        r = reps if n <= 8192 else 1
        kinds = ("int", "real") + (("real sparse",) if sparse else ())
        for weights in kinds if n <= 8192 else ("int",):
            g = _graph(n, density if n <= 8192 else 0.01, weights, seed)   # (generation time)
            ref = None
            t_old = None
            if n <= classic_max:
                t_old, Dold = _time(lambda: classic_device(g), r)
                ref = Dold.copy_to_host()[:n, :n]
                del Dold
                rows.append(_row(n, g, weights, "classic float64 (old)", t_old, peak, peak_text,
                                 None, "reference"))
            base = {}
            for label, kw in variants(weights, n, cxx_only):
                try:
                    t, (D, P, inf) = _time(lambda: _run(g, kw), r)
                except Exception as e:          # e.g. DPX linking on a device without it
                    print(f"# {label} n={n}: {type(e).__name__}: {str(e)[:300]}", flush=True)
                    continue
                from simengine.network.cuda import floyd_warshall as fwm
                print(f"# n={n} {weights} {label}: {t:.4f} s ({fwm.last_kernel})", flush=True)
                H = to_host(D, n, inf) if ref is not None else None
                if ref is None:
                    check = "n/a"
                elif weights == "int":
                    check = "exact" if np.array_equal(H, ref) else "MISMATCH"
                else:
                    err = np.nanmax(np.abs(H - ref) / np.where(np.isfinite(ref), ref, 1))
                    check = f"rel {err:.1e}"
                del D, P, H
                plain = label.split(" + pred")[0]
                base.setdefault(plain, t)
                rows.append(_row(n, g, weights, label, t, peak, peak_text, t_old, check,
                                 base.get(plain) if "pred" in label else None))
            clear_cache(g)
        if n == sizes[0]:
            g = _graph(n, density, "int", seed)
            for cfg in configs:
                floyd_warshall_device(_graph(300, density, "int", 0), dtype="float32", config=cfg)
                t, _ = _time(lambda: floyd_warshall_device(g, dtype="float32", config=cfg), r)
                rows.append(_row(n, g, "int", f"float32 {cfg}", t, peak, peak_text, t_old, ""))
    return rows


def _row(n, g, weights, label, t, peak, peak_text, t_old, check, t_nopred=None):
    ups = float(n) ** 3 / t
    return {"family": "fw_kernel", "n": n, "edges": g.num_edges, "weights": weights,
            "kernel": label, "seconds": t, "updates_per_s": ups, "pct_peak": 100 * ups / peak,
            "peak": peak_text, "speedup_vs_old": (t_old / t) if t_old else None,
            "pred_over_nopred": (t / t_nopred) if t_nopred else None, "check": check}


def to_markdown(rows) -> list[str]:
    fr = [r for r in rows if r.get("family") == "fw_kernel"]
    if not fr:
        return []
    out = [f"peak: {fr[0]['peak']}", "",
           "| n | weights | kernel | s | 10¹² updates/s | % of peak | vs old | pred/no pred "
           "| check |",
           "|---|---|---|---|---|---|---|---|---|"]
    for r in fr:
        vs = f"{r['speedup_vs_old']:.2f}×" if r["speedup_vs_old"] else ""
        pp = f"{r['pred_over_nopred']:.2f}×" if r["pred_over_nopred"] else ""
        out.append(f"| {r['n']} | {r['weights']} | {r['kernel']} | {r['seconds']:.4g} | "
                   f"{r['updates_per_s'] / 1e12:.2f} | {r['pct_peak']:.0f} | {vs} | {pp} | "
                   f"{r['check']} |")
    return out + [""]


def pred_mode_rows(n=8192, density=0.1, seed=1, reps=3):
    """float32 real weights at ``n``: the time of the rounds without predecessors and with them
    in modes 5 (the default) and 4 (the ratios are the issue's "≤ 1.5×"); both modes'
    distances equal those without predecessors. Prints one line per form."""
    g = _graph(n, density, "real", seed)
    small = _graph(300, density, "real", 0)
    forms = [("float32 C++", {"dtype": "float32", "kernel": "cxx"})] + [
        (f"float32 C++ + pred (mode {m})",
         {"dtype": "float32", "kernel": "cxx", "predecessors": True, "_float_mode": m})
        for m in (5, 4)]
    for _, kw in forms:
        _run(small, kw)                               # NVRTC compiles each form once
    out, t0 = {}, None
    for label, kw in forms:
        t, (D, P, _) = _time(lambda: _run(g, kw), reps)
        out[label] = (D.copy_to_host(), None if P is None else P.copy_to_host())
        t0 = t0 or t
        print(f"fw n={n} real {label}: {t:.4f} s, {t / t0:.2f}x without predecessors",
              flush=True)
        del D, P
    d0 = out["float32 C++"][0]
    for m in (5, 4):
        print(f"mode {m}: distances equal those without predecessors: "
              f"{np.array_equal(out[f'float32 C++ + pred (mode {m})'][0], d0)}", flush=True)
