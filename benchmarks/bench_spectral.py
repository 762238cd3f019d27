"""The spectral integrator through `simengine run`: against explicit RK2 (issue 39), its steady
step against the bare CuPy step, and late-time runs (issue 49).

    python benchmarks/bench_spectral.py [--quick]            # CPU: spectral vs RK2
    python benchmarks/bench_spectral.py --cpu-step 1024      # CPU: the step vs plain NumPy/scipy
    python benchmarks/bench_spectral.py --gpu                # one GPU: everything below
    python benchmarks/bench_spectral.py --steady [--grids 4096x4096,...] [--ranks 2] [--tree DIR]
    python benchmarks/bench_spectral.py --big3d | --big-n 8192 --big-end 1e5 [--ranks 2]

CPU (default): 256² (``--quick``: 128² to t = 10³) to t = 10⁴, periodic, critical quench. Two runs
in this call: the spectral integrator with adaptive steps (tolerance 10⁻³) and RK2 at dt = 0.02
(0.8 of its stability limit 1/40); printed: the wall time of each (the whole CLI process), their
ratio (target ≥ 10×), and the relative differences of F and L at the end (targets 1 % and 2 %).
``--cpu-step N``: the solver's fixed step and adaptive trial at N² fp64 against a plain
NumPy/scipy.fft SBDF2 step (target ≥ 3× at 1024² on 2 cores).

GPU (``--gpu``): the steady step (``--steady``) at 512², 4096², 8192², 256³, 512³ in fp64 and
fp32; 4096² fp64 spectral adaptive to t = ``--big-end`` (default 10⁶) with observables every
Δt = 1000 (target ≤ 20 s of run); 512³ fp64 to t = 10⁴ (observables every Δt = 100); 512² to
t = 10⁴ against RK2 at dt = 0.02, both on the GPU (F within 1 %, L within 2 %, wall ratio).
``--steady``: the difference of two runs of fixed steps (observables at the ends only), per step,
in-run time; ``--tree DIR`` runs another tree's simengine (main's: before/after); ``--ranks N``
runs ``mpiexec -n N simengine run`` (one GPU per rank where there are as many). The bare CuPy
step and the parts of the solver's step: ``benchmarks/spectral_parts.py``.
"""
from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import h5py

def _env():
    """This tree first on the path, the rest kept (the device machine's wheels, e.g. pydantic,
    come from PYTHONPATH)."""
    rest = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(ROOT) + (os.pathsep + rest if rest else "")}


ROOT = Path(__file__).resolve().parents[1]


def scenario(path, name, n, end, integrator, backend, obs_dt, precision="float64", dt=None,
             tolerance=1e-3, dims=2):
    if integrator == "spectral":
        time_ = (f"{{end: {end:g}, dt: 0.01, adaptive: true, tolerance: {tolerance:g}}}")
        out = f"{{observables_dt: {obs_dt:g}}}"
    else:
        steps = round(end / dt)
        time_ = f"{{dt: {dt:g}, steps: {steps}}}"
        out = f"{{observables_every: {max(1, round(obs_dt / dt))}}}"
    path.write_text(
        f"kind: field\nname: {name}\ngrid: {{shape: {[n] * dims}}}\nboundary: {{type: periodic}}\n"
        f"initial: {{type: noise, mean: 0.0, amplitude: 0.05, seed: 1}}\ntime: {time_}\n"
        f"solver: {{integrator: {integrator}, backend: {backend}, precision: {precision}}}\n"
        f"output: {out}\n")
    return path


def run(scen, out, ranks=1):
    t = time.perf_counter()
    r = subprocess.run(mpiexec(ranks) + [sys.executable, "-m", "simengine", "run", str(scen),
                                         "-o", str(out), "--overwrite", "--quiet"],
                       capture_output=True, text=True, env=_env())
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise SystemExit(f"{scen.name}: exit {r.returncode}: {r.stderr.strip()[-2000:]}")
    with h5py.File(out, "r") as f:
        o = f["observables"]
        last = {k: float(o[k][-1]) for k in ("time", "free_energy", "length", "wall_time")}
    done = [ln for ln in r.stderr.splitlines() if ln.startswith("done:")]
    return wall, last, (done[-1] if done else "")


def compare(label, n, end, backend, obs_dt, tmp, precision="float64"):
    spec = scenario(tmp / f"s{n}.yaml", f"s{n}", n, end, "spectral", backend, obs_dt, precision)
    rk2 = scenario(tmp / f"r{n}.yaml", f"r{n}", n, end, "rk2", backend, obs_dt, precision,
                   dt=0.02)
    ws, ls, done_s = run(spec, tmp / f"s{n}.h5")
    wr, lr, _ = run(rk2, tmp / f"r{n}.h5")
    dF = ls["free_energy"] / lr["free_energy"] - 1
    dL = ls["length"] / lr["length"] - 1
    print(f"{label}: {n}² {precision} to t = {end:g}, periodic, critical quench")
    print(f"  spectral adaptive: {ws:.1f} s wall ({ls['wall_time']:.1f} s in the run) | "
          f"{done_s}")
    print(f"  rk2, dt = 0.02:    {wr:.1f} s wall ({lr['wall_time']:.1f} s in the run)")
    print(f"  wall ratio rk2/spectral {wr / ws:.1f}x (in-run {lr['wall_time'] / ls['wall_time']:.1f}x)"
          f"; F {ls['free_energy']:.6g} vs {lr['free_energy']:.6g} ({100 * dF:+.3f} %), "
          f"L {ls['length']:.5g} vs {lr['length']:.5g} ({100 * dL:+.3f} %)")
    ok = abs(dF) <= 0.01 and abs(dL) <= 0.02
    print(f"  accuracy targets (F 1 %, L 2 %): {'met' if ok else 'MISSED'}")
    return ok


def big(end, tmp, precision="float64", n=4096, dims=2, obs_dt=1000, ranks=1):
    obs_dt = obs_dt if end >= 10 * obs_dt else end / 10
    scen = scenario(tmp / "big.yaml", "big", n, end, "spectral", "cuda", obs_dt, precision,
                    dims=dims)
    wall, last, done = run(scen, tmp / "big.h5", ranks)
    print(f"GPU ({ranks} rank(s)): {n}^{dims} {precision} spectral adaptive to t = {end:g}, "
          f"observables every "
          f"Δt = {obs_dt:g}: {wall:.1f} s wall ({last['wall_time']:.1f} s "
          f"in the run), F {last['free_energy']:.6g}, L {last['length']:.5g} | {done}")
    if end < 1e6 and dims == 2:
        with h5py.File(tmp / "big.h5", "r") as f:
            t = f["observables/time"][()]
            w = f["observables/wall_time"][()]
        # steps per decade settle to a constant once dt grows with t: project the last
        # decade's cost per decade over the decades still to go
        half = t >= end / 10
        per_decade = float(w[-1] - w[half][0]) if half.sum() > 1 else float(w[-1])
        import math

        rest = math.log10(1e6 / end)
        print(f"  projected to t = 10⁶ (the last decade's {per_decade:.1f} s × {rest:.1f} more "
              f"decades, an estimate, not a run): {last['wall_time'] + per_decade * rest:.0f} s")


#: the issue's grids of the steady-step table, and a rough cost per cell and step (to size runs)
STEADY = [((512, 512), 200), ((4096, 4096), 200), ((8192, 8192), 60), ((256, 256, 256), 200),
          ((512, 512, 512), 40), ((16384, 16384), 20)]


def steady_scenario(path, shape, steps, precision, backend="cuda"):
    """Fixed dt = 0.5, ``steps`` steps, observables at step 0 and at the end only."""
    path.write_text(
        f"kind: field\nname: steady\ngrid: {{shape: {list(shape)}}}\n"
        "boundary: {type: periodic}\n"
        "initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}\n"
        f"time: {{dt: 0.5, steps: {steps}}}\n"
        f"solver: {{integrator: spectral, backend: {backend}, precision: {precision}}}\n"
        f"output: {{observables_every: {steps}}}\n")
    return path


def mpiexec(ranks):
    """``mpiexec -n ranks`` (Open MPI: the environment's PYTHONPATH passed on), or [] for 1."""
    if ranks <= 1:
        return []
    import shutil

    exe = shutil.which("mpiexec") or str(Path(sys.executable).with_name("mpiexec"))
    v = subprocess.run([exe, "--version"], capture_output=True, text=True).stdout
    return [exe, "-n", str(ranks)] + (["-x", "PYTHONPATH"] if "Open MPI" in v else [])


def run_tree(scen, out, tree=None, ranks=1):
    """``simengine run`` of ``scen`` with ``tree`` (a directory holding a simengine package)
    first on the path (default: this tree), on ``ranks`` MPI ranks: (process wall s, in-run wall
    s at the end, the start-up line naming the integrator)."""
    env = _env()
    if tree:
        env["PYTHONPATH"] = str(tree) + os.pathsep + env["PYTHONPATH"]
    t = time.perf_counter()
    # cwd outside the trees: ``python -m`` puts the working directory first on the path
    r = subprocess.run(mpiexec(ranks) + [sys.executable, "-m", "simengine", "run", str(scen),
                                         "-o", str(out), "--overwrite"],
                       capture_output=True, text=True, env=env, cwd=str(Path(out).parent))
    wall = time.perf_counter() - t
    if r.returncode != 0:
        raise RuntimeError(f"exit {r.returncode}: {r.stderr.strip()[-800:]}")
    with h5py.File(out, "r") as f:
        w = f["observables/wall_time"][()]
    plan = [ln.strip() for ln in r.stderr.splitlines() if "integrator spectral" in ln]
    return wall, float(w[-1] - w[0]), (plan[0] if plan else "")


def steady(tmp, grids, precisions, tree=None, label="this tree", scale=1.0, ranks=1):
    """The steady step through ``simengine run``: the difference of a short and a long run of
    fixed steps (observables only at step 0 and at the end), per step."""
    rows = []
    for shape, long_steps in grids:
        for prec in precisions:
            n2 = max(10, int(long_steps * scale))
            n1 = max(5, n2 // 5)
            name = "x".join(map(str, shape))
            try:
                a = run_tree(steady_scenario(tmp / "a.yaml", shape, n1, prec), tmp / "a.h5",
                             tree, ranks)
                b = run_tree(steady_scenario(tmp / "b.yaml", shape, n2, prec), tmp / "b.h5",
                             tree, ranks)
            except RuntimeError as exc:
                print(f"steady {label} {name} {prec}: FAILED {exc}", flush=True)
                continue
            inrun = 1e3 * (b[1] - a[1]) / (n2 - n1)
            rows.append((name, prec, inrun))
            print(f"steady {label} ranks={ranks} {name} {prec}: {inrun:.3f} ms/step in the run "
                  f"({n1} vs {n2} steps; process walls {a[0]:.1f} s, {b[0]:.1f} s) | "
                  f"{b[2][:200]}", flush=True)
    return rows


def cpu_step(n=1024, repeat=8):
    """CPU, one process, fp64, periodic: the solver's step against a plain NumPy/scipy.fft SBDF2
    step (scipy.fft without workers, NumPy pointwise expressions, the error norm as NumPy
    writes it), both from the same state, best of ``repeat``."""
    import numba
    import numpy as np
    import scipy.fft as sfft

    from simengine.field.initial import noise
    from simengine.field.model import Boundary, CahnHilliard, Grid
    from simengine.field.spectral.solver import SpectralFieldSolver
    from simengine.field.spectral.transforms import laplacian_symbol

    g = Grid((n, n))
    phi0 = noise(g.shape, 0.0, 0.05, 1)
    s = SpectralFieldSolver(CahnHilliard(), g, Boundary("periodic"), dt=0.5, backend="cpu")
    s.load(phi0)
    s.advance(3)
    phi, prev = s.state(), phi0.copy()
    hat, prev_hat = sfft.rfftn(phi), sfft.rfftn(prev)
    lam = laplacian_symbol(g.shape, 1.0, "periodic")
    S, dt, w = s.S, 0.5, 1.0
    dop = lam * lam - S * lam

    def plain():
        star = (1 + w) * phi - w * prev
        gg = star ** 3 - star - S * star
        gh = sfft.rfftn(gg)
        nh = ((1 + w) * hat - w * w / (1 + w) * prev_hat + dt * lam * gh) / \
            ((1 + 2 * w) / (1 + w) + dt * dop)
        new = sfft.irfftn(nh, s=g.shape)
        d = new - star
        return float(np.mean(d * d)) / float(np.var(new))

    def best(fn):
        fn()
        ts = []
        for _ in range(repeat):
            t = time.perf_counter()
            fn()
            ts.append(time.perf_counter() - t)
        return 1e3 * min(ts)

    def trial():
        s.trial(0.5)
        s.trial_energy()
        s.accept()

    p, f, a = best(plain), best(lambda: s.advance(1)), best(trial)
    print(f"CPU {n}² fp64, {numba.get_num_threads()} threads: plain NumPy/scipy.fft SBDF2 step "
          f"(error norm included) {p:.1f} ms; simengine fixed step {f:.1f} ms ({p / f:.1f}x), "
          f"adaptive trial + energy + accept {a:.1f} ms ({p / a:.1f}x) | {s.describe()}",
          flush=True)


def profile(n=4096, precision="float64", steps=50):
    """ms per fixed SBDF2 step, per adaptive trial (step + error estimate) and per free-energy
    check of the GPU solver alone (the cost behind the CLI figures)."""
    import numpy as np

    from simengine.field.initial import noise
    from simengine.field.model import Boundary, CahnHilliard, Grid
    from simengine.field.spectral.solver import SpectralFieldSolver

    g = Grid((n, n))
    s = SpectralFieldSolver(CahnHilliard(), g, Boundary("periodic"), dt=0.5,
                            precision=precision, backend="cuda")
    s.load(noise(g.shape, 0.0, 0.05, 1, np.dtype(precision)))
    s.advance(3)
    s.synchronize()

    def timed(fn, k):
        t = time.perf_counter()
        for _ in range(k):
            fn()
        s.synchronize()
        return 1e3 * (time.perf_counter() - t) / k

    step = timed(lambda: s.advance(1), steps)
    trial = timed(lambda: (s.trial(0.5), s.accept()), steps)
    energy = timed(s.energy, steps)
    red = timed(s.reductions, steps)
    print(f"GPU profile {n}² {precision}: fixed step {step:.2f} ms, adaptive trial+accept "
          f"{trial:.2f} ms, free-energy check {energy:.2f} ms, reductions {red:.2f} ms")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="CPU: 128² to t = 10³")
    ap.add_argument("--gpu", action="store_true")
    ap.add_argument("--big-end", type=float, default=1e6)
    ap.add_argument("--big-n", type=int, default=0,
                    help="GPU: only the adaptive run of an N² grid to --big-end (with --ranks)")
    ap.add_argument("--skip-big", action="store_true")
    ap.add_argument("--big3d", action="store_true",
                    help="GPU: 512³ fp64 spectral adaptive to t = 10⁴ (observables every 100)")
    ap.add_argument("--skip-compare", action="store_true")
    ap.add_argument("--profile", action="store_true", help="GPU: the solver's step costs only")
    ap.add_argument("--steady", action="store_true",
                    help="GPU: the steady step through `simengine run` at the issue's grids")
    ap.add_argument("--tree", default=None,
                    help="--steady: run the simengine of this directory (e.g. main's tree), "
                         "with a quarter of the steps")
    ap.add_argument("--grids", default=None,
                    help="--steady: comma-separated NxN[xN] grids (default: the issue's five; "
                         "16384x16384 on request)")
    ap.add_argument("--precisions", default="float64,float32")
    ap.add_argument("--steps", type=int, default=0,
                    help="--steady: steps of the long run (the short one: a fifth; default per "
                         "grid)")
    ap.add_argument("--ranks", type=int, default=1,
                    help="--steady: through `mpiexec -n RANKS simengine run` (one GPU per rank "
                         "where there are as many; ranks share the GPUs otherwise)")
    ap.add_argument("--cpu-step", type=int, default=0, metavar="N",
                    help="CPU: the solver's step at N² against a plain NumPy/scipy.fft step")
    args = ap.parse_args(argv)
    if args.cpu_step:
        sys.path.insert(0, str(ROOT))
        cpu_step(args.cpu_step)
        return 0
    if args.steady:
        def pick(text):
            want = {g.strip() for g in text.split(",") if g.strip()}
            return [(sh, st) for sh, st in STEADY if "x".join(map(str, sh)) in want]

        grids = pick(args.grids) if args.grids else STEADY[:5]
        if args.steps:
            grids = [(sh, args.steps) for sh, _ in grids]
        precs = [p for p in args.precisions.split(",") if p]
        with tempfile.TemporaryDirectory() as d:
            steady(Path(d), grids, precs, tree=args.tree,
                   label=f"tree={args.tree}" if args.tree else "this-tree",
                   scale=0.25 if args.tree else 1.0, ranks=args.ranks)
        return 0
    if args.profile:
        sys.path.insert(0, str(ROOT))
        profile()
        return 0
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        if args.big3d:
            big(1e4, tmp, n=512, dims=3, obs_dt=100, ranks=args.ranks)
            return 0
        if args.big_n:  # e.g. issue 53: --big-n 8192 --big-end 1e5 --ranks 2
            big(args.big_end, tmp, n=args.big_n, ranks=args.ranks)
            return 0
        if args.gpu:  # the whole table in one call
            steady(tmp, STEADY[:5], ["float64", "float32"])
            if not args.skip_big:
                big(args.big_end, tmp)
                big(1e4, tmp, n=512, dims=3, obs_dt=100)
            if not args.skip_compare:
                compare("GPU", 512, 1e4, "cuda", 100, tmp)
            return 0
        n, end = (128, 1e3) if args.quick else (256, 1e4)
        ok = compare("CPU", n, end, "cpu", end / 100, tmp)
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
