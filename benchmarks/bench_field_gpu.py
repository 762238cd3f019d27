"""Benchmark of the CUDA Cahn–Hilliard kernels (run on a GPU machine).

For 2D 4096² and 3D 256³, every kernel (both tile layouts for shared/combined) × fp32/fp64:
ms per RK2 step, cell-updates/s, effective bandwidth with the 5-array traffic model (read φⁿ,
write φ*, read φ*, read φⁿ, write φⁿ⁺¹), its fraction of the measured device-to-device copy
bandwidth (read + write bytes), the occupancy report, and a CuPy (or PyTorch) RK2 step written
with array rolls as the user-level reference.

    python benchmarks/bench_field_gpu.py [--sizes 2d,3d] [--tune] [--json out.json]
    python benchmarks/bench_field_gpu.py --variants fused,base   # the fused RK2 step vs default
    python benchmarks/bench_field_gpu.py --variants warp   # warp-marching fused step, 2-D 4096²
    python benchmarks/bench_field_gpu.py --variants solver --sizes small,2d,3d512
        # what the solver runs by default for each grid (plan registry form and reason)
    python benchmarks/bench_field_gpu.py --sizes 3d,3d512 --variants smarch --no-reference
        # 3-D: the shared-memory marching kernel (blocks × planes, register caps) and the
        # register march with register caps, against the register march 32 (the old default)
    python benchmarks/bench_field_gpu.py --sizes 3d512 --variants smarch --no-reference \
        --smarch 32x8:64:2,32x8:64:2:r2,32x8:64:2:b,32x8:64:1:r2b
        # block:planes:ahead[:options]: r2 = 2 output rows per thread (tile BX × 2·BY),
        # b = stage 1 (base is src) takes φ(k) from the shared φ ring, m80 = at most 80
        # registers (both stage kernels); every 3-D row of the
        # group is checked against the direct kernel (3 RK2 steps, |x − direct| / max)

Fused rows also report the 2-word traffic model (read φⁿ, write φⁿ⁺¹) and the largest
difference from two unfused stages after 20 steps.
"""
from __future__ import annotations

import argparse
import json
import math
import sys
import time

import numpy as np
from numba import cuda

from simengine.field import cuda as ck

try:
    from roofline import copy_roofline
except ImportError:  # run from elsewhere
    sys.path.insert(0, __import__("os").path.dirname(__file__))
    from roofline import copy_roofline
from compare_field_trees import steady_seconds  # noqa: E402  (the same steady-state timing)
import field_cli_inrun as cli_inrun  # noqa: E402  (--cli: the CLI's in-run figure)
from simengine.field.cuda_tuning import (CANDIDATES, autotune_block, gpu_name, occupancy_report,
                                         time_plan, time_steps)
from simengine.field.model import Boundary, CahnHilliard, Grid

MODEL = CahnHilliard.classic()
DT = 1e-3


def copy_bandwidth():
    """The honest roofline: the best device copy measured now (see benchmarks/roofline.py)."""
    best, name, _all = copy_roofline()
    return best


#: blocks of the frame-blocked fused step (fused: true; the block is the frame = tile + 4 on
#: every side) for ``--small-sweep``; 16x16 (tile 8x8) is the default on 200²
SMALL_FUSED_VARIANTS = [(16, 16), (20, 16), (24, 16), (24, 24), (12, 16)]
#: the CLI as it ran before observation pipelining (for the ratio): the length scale computed
#: at every stop before the next steps are launched
_CLI_PREVIOUS = ("import sys; import simengine.control.field_job as j; i = j.FieldJob.__init__\n"
                 "def init(self, *a, **k):\n    i(self, *a, **k); self._pipeline = False\n"
                 "j.FieldJob.__init__ = init\n"
                 "from simengine.cli import main; sys.exit(main(sys.argv[1:]))")


def small_grid(shape=(200, 200), precision="float64", kernel="texture", steps=(20000, 1020000),
               cli_previous=True, sweep=True, cli=True, cli_repeats=1):
    """Steady-state µs per RK2 step of a small grid, launch-bound: the solver with and without
    CUDA Graphs (:mod:`simengine.field.cuda.graph`), and the CLI path as a user runs it — the
    difference of a ``steps[1]``- and a ``steps[0]``-step run divided by the step difference, so
    start-up, compilation and output cancel."""
    import os
    import subprocess
    import tempfile

    from simengine.field.cuda_solver import CudaFieldSolver

    rows = []
    grid = Grid(shape)
    host = np.random.default_rng(0).uniform(-0.1, 0.1, shape)
    n = 20000

    def make(graphs=True, **options):
        s = CudaFieldSolver(MODEL, grid, Boundary("periodic"), kernel=kernel,
                            precision=precision, dt=DT, **options)
        s.use_graphs = graphs
        s.load(host)
        return s

    unfused20 = make(fused=False)
    unfused20.advance(20)
    unfused20 = unfused20.state()

    def steady_us(graphs=True, **options):
        """µs per step of ``n`` steps after 1000 of warm-up (and the solver); also checks
        that 20 steps of a fresh solver of the same options agree with 20 unfused steps."""
        s = make(**options)
        s.advance(20)
        d = float(np.max(np.abs(s.state() - unfused20)))
        tol = (1e-12 if precision == "float64" else 1e-5) * float(np.max(np.abs(unfused20)))
        if not d <= tol:
            raise RuntimeError(f"{s.name}: 20 steps differ from the unfused path by {d:.3g}")
        s = make(graphs, **options)
        s.advance(1000)
        s.synchronize()
        t = time.perf_counter()
        s.advance(n)
        s.synchronize()
        return (time.perf_counter() - t) / n * 1e6, s

    cases = [(f"solver unfused, {{name}}, one launch per stage", False, dict(fused=False)),
             (f"solver unfused, {{name}}, CUDA Graphs", True, dict(fused=False)),
             (f"solver default (fused: auto), {{name}}, CUDA Graphs", True, dict(fused=None))]
    cases += [(f"solver, frame-blocked fused step block {b[0]}x{b[1]}, CUDA Graphs", True,
               dict(fused=True, block=b)) for b in SMALL_FUSED_VARIANTS if sweep]
    ref = None  # the unfused stages through CUDA Graphs
    for label, graphs, options in cases:
        try:
            us, s = steady_us(graphs, **options)
        except ValueError as exc:  # e.g. a tile too large for 48 KB of shared memory
            print(f"small {shape} {precision}: {label}: skipped ({exc})", flush=True)
            continue
        if label.startswith("solver unfused") and graphs:
            ref = us
        rows.append((label.format(name=s.name), us))
        print(f"small {shape} {precision} {kernel}: {rows[-1][0]}: {us:.2f} us/step"
              + (f" (graph error: {s._graph_error})" if graphs and s._graph_error else ""),
              flush=True)
    if ref:
        rows = [(w + f" [{ref / us:.2f}x the unfused stages]", us) for w, us in rows]
    # one observation's pieces (what the CLI does every 1000 steps), ms
    from simengine.field.observables import characteristic_length

    s = CudaFieldSolver(MODEL, grid, Boundary("periodic"), kernel=kernel, precision=precision,
                        dt=DT)
    s.load(host)
    s.advance(10)
    parts = {"reductions (device)": s.reductions, "field to host": s.state,
             "S(k) + length (host)": lambda: characteristic_length(phi)}
    phi = s.state()
    for what, fn in parts.items():
        fn()
        t = time.perf_counter()
        for _ in range(50):
            fn()
        ms = (time.perf_counter() - t) / 50 * 1e3
        print(f"small {shape} {precision}: one observation: {what}: {ms:.3f} ms", flush=True)
        rows.append((f"one observation: {what} (ms, not µs/step)", ms))
    scen = (f"kind: field\nname: small\ngrid: {{shape: {list(shape)}}}\nboundary: {{type: periodic}}\n"
            f"model: {{mobility: 1.0, kappa: 1.0, potential: {{b: 1.0, u: 1.0}}}}\n"
            f"initial: {{type: noise, mean: 0.0, amplitude: 0.05, seed: 1}}\n"
            f"time: {{dt: {DT}, steps: STEPS}}\n"
            f"solver: {{backend: cuda, precision: PRECISION}}\n"
            f"output: {{snapshot_every: 20000, checkpoint_every: 20000, observables_every: 1000}}\n")
    clis = [("CLI `simengine run` (default solver: fused auto, observation pipelining)",
             ["-m", "simengine"], "")] if cli else []
    if cli and cli_previous:
        clis.append(("CLI as before (length scale before the next steps)",
                     ["-c", _CLI_PREVIOUS], ""))
    cli_us = []
    for label, cmd, extra in clis:
        walls = []
        inrun = []
        with tempfile.TemporaryDirectory() as wd:
            for k in steps:
                path = os.path.join(wd, f"s{k}.yaml")
                with open(path, "w") as f:
                    f.write(scen.replace("STEPS", str(k)).replace("PRECISION}",
                                                                  f"{precision}{extra}}}"))
                best = math.inf  # the least of the repeats: start-up varies by ~1 s per process
                for _ in range(max(1, int(cli_repeats))):
                    t = time.perf_counter()
                    r = subprocess.run([sys.executable, *cmd, "run", path, "-o",
                                        os.path.join(wd, f"s{k}.h5"), "-q", "--overwrite"],
                                       capture_output=True, text=True)
                    best = min(best, time.perf_counter() - t)
                    if r.returncode:
                        print(r.stderr[-2000:])
                        return rows
                    if k == steps[1]:
                        inrun.append(inrun_us(os.path.join(wd, f"s{k}.h5"), steps[0]))
                walls.append(best)
        us = (walls[1] - walls[0]) / (steps[1] - steps[0]) * 1e6
        cli_us.append(us)
        ratio = f" [{us / cli_us[0]:.2f}x the default's time]" if len(cli_us) > 1 else ""
        rows.append((f"{label}, output every 1000/20000 steps, "
                     f"({walls[1]:.1f} s − {walls[0]:.1f} s) / {steps[1] - steps[0]} steps"
                     + ratio, us))
        print(f"small {shape} {precision}: {rows[-1][0]}: {us:.2f} us/step", flush=True)
        rows.append((f"{label}, in-run steady state (the long run's own wall-time column, "
                     f"rows {steps[0]} … {steps[1]}; best of {len(inrun)})", min(inrun)))
        print(f"small {shape} {precision}: {rows[-1][0]}: {min(inrun):.2f} us/step "
              f"(all: {', '.join(f'{u:.2f}' for u in inrun)})", flush=True)
    return rows


def inrun_us(path, first):
    """µs per step of a finished run from its observables' wall-time column (elapsed time at
    each observables row), from the row at step ``first`` to the last row: the CLI path in
    steady state (observations, snapshots, checkpoints, progress) without process start-up."""
    import h5py

    with h5py.File(path, "r") as f:
        step = f["observables/step"][()]
        wall = f["observables/wall_time"][()]
    i = int(np.searchsorted(step, first))
    return float((wall[-1] - wall[i]) / (step[-1] - step[i]) * 1e6)


def user_reference(shape, dtype, steps=10):
    """Seconds per RK2 step of a roll-based periodic implementation in CuPy (or PyTorch)."""
    try:
        import cupy as xp

        lib = "cupy"
        roll = xp.roll

        def sync():
            xp.cuda.Device().synchronize()
    except Exception:
        try:
            import torch as xp

            lib = "torch"
            roll = xp.roll

            def sync():
                xp.cuda.synchronize()
        except Exception:
            return None, None
    a0, a1, a2, a3 = MODEL.coefficients
    M, K = MODEL.mobility, MODEL.kappa
    nd = len(shape)

    def lap(g):
        out = -2 * nd * g
        for ax in range(nd):
            out = out + roll(g, 1, ax) + roll(g, -1, ax)
        return out

    def R(phi):
        mu = a0 + phi * (a1 + phi * (a2 + phi * a3)) - K * lap(phi)
        return M * lap(mu)

    def step(phi):
        half = phi + 0.5 * DT * R(phi)
        return phi + DT * R(half)

    rng = np.random.default_rng(1)
    host = rng.uniform(-1, 1, shape).astype(dtype)
    if lib == "cupy":
        phi = xp.asarray(host)
    else:
        phi = xp.from_numpy(host).cuda()
    for _ in range(2):
        phi = step(phi)
    sync()
    t = time.perf_counter()
    for _ in range(steps):
        phi = step(phi)
    sync()
    return lib, (time.perf_counter() - t) / steps


def variants(groups="direct,march,tiled", marches=(32,)):
    """(kernel, layout, cells per thread, march length, block) to time; block None = default."""
    groups = groups.split(",")
    if "vec" in groups:  # 2-D pair kernel: (rows per thread, block in pairs × rows of threads)
        for k, rows, blk in VEC_VARIANTS:
            yield k, "modern", rows, 0, ("vec", blk)
    if "direct" in groups:
        for cpt in (1, 2, 4):
            yield "global", "modern", cpt, 0, None
            yield "texture", "modern", cpt, 0, None
    if "march" in groups:
        for m in marches:
            yield "global", "modern", 1, m, None
            yield "texture", "modern", 1, m, None
    if "smarch" in groups:  # 3-D marching forms against the register march (old default)
        yield "texture", "modern", 1, 32, ("ref",)
        for blk, planes, maxreg, ahead, rows, ring, *flat in SMARCH_VARIANTS:
            yield "texture", "modern", 1, planes, ("smarch", blk, maxreg, ahead, rows, ring,
                                                   flat[0] if flat else True)
        yield "texture", "modern", None, None, ("default",)
    if "mcap" in groups:  # the register march with register caps
        yield "texture", "modern", 1, 32, ("ref",)
        for planes, maxreg in MARCH_CAP_VARIANTS:
            yield "texture", "modern", 1, planes, ("mcap", maxreg)
    if "base" in groups:  # the previous best: texture with the default cells per thread
        yield "texture", "modern", None, 0, None
    if "sweep" in groups:  # march lengths (--march) x SWEEP_BLOCKS, texture kernel
        for m in marches:
            yield "texture", "modern", 1, m, "sweep"
    if "unroll1" in groups:  # the marching kernel without load-ahead
        for m in marches:
            yield "texture", "modern", 1, m, "u1"
    if "fused" in groups:  # the frame-blocked fused RK2 step (2-D): its thread block
        for blk in SMALL_FUSED_VARIANTS:
            yield "texture", "fused", None, 0, ("fused", 2, blk)
    if "tiled" in groups:
        yield "shared", "modern", 1, 0, None
        yield "shared", "seed", 1, 0, None
        yield "combined", "modern", 1, 0, None
        yield "combined", "seed", 1, 0, None


VEC_VARIANTS = [("texture", 2, (32, 4)), ("texture", 4, (32, 4)), ("texture", 4, (64, 2)),
                ("texture", 8, (32, 2)), ("texture", 8, (32, 4)), ("global", 4, (32, 4))]
#: shared-memory marching kernel variants (in-plane block, planes per block, register cap,
#: planes of loads in flight, output rows per thread, ring base for stage 1)
SMARCH_VARIANTS = [((32, 8), 64, None, 2, 1, False), ((32, 8), 64, None, 2, 2, False),
                   ((32, 8), 64, None, 2, 1, True), ((32, 8), 64, None, 2, 2, True),
                   ((32, 8), 64, None, 1, 2, False), ((32, 8), 64, None, 1, 2, True),
                   ((32, 4), 64, None, 2, 2, False)]


def parse_smarch(text):
    """``--smarch 32x8:64:2,32x16:64:3,32x8:64:2:r2b`` → SMARCH_VARIANTS entries
    (block:planes:ahead[:options]; options, in this order: ``r<rows>`` output rows per thread
    along y, ``b`` the ring base of stage 1, ``m<regs>`` a register cap (ptxas
    ``max_registers``, both stage kernels), ``n`` numba's indexing of the shared rings instead
    of flat loads/stores, e.g. ``r2``, ``b``, ``r2b``, ``r2bm80``, ``n``)."""
    import re

    out = []
    for item in text.split(","):
        parts = item.strip().split(":")
        if len(parts) not in (3, 4):
            raise ValueError(f"bad --smarch item {item!r} (block:planes:ahead[:options])")
        blk, planes, ahead = parts[:3]
        m = re.fullmatch(r"(?:r(\d+))?(b?)(?:m(\d+))?(n?)", parts[3] if len(parts) == 4 else "")
        if m is None:
            raise ValueError(f"bad --smarch options {parts[3]!r} (e.g. r2, b, r2b, r2bm80)")
        rows = int(m.group(1) or 1)
        maxreg = int(m.group(3)) if m.group(3) else None
        out.append((tuple(int(b) for b in blk.split("x")), int(planes), maxreg, int(ahead),
                    rows, bool(m.group(2)), not m.group(4)))
    return out


def smarch_name(plan):
    """Table name of a 3-D marching plan's options (rows per thread, ring base)."""
    if not getattr(plan, "smarch", False):
        return ""
    return ((f"-rows{plan.rows}" if plan.rows != 1 else "")
            + ("-ringbase" if plan.ring_base else "")
            + ("" if getattr(plan, "flat", True) else "-numbaidx"))


def rk2_check(plan, ref_out, s3, dtype, scal, steps=3, seed=11):
    """``plan``'s field after ``steps`` RK2 steps (dt DT) from a random field, launched as the
    solver does (stage 1 with φ as src and base: the ring-base kernel where on), and
    max |plan − ref| / max |ref| against ``ref_out`` (the same steps of the direct kernel,
    computed with ``plan=None`` on the first call: returns the field then)."""
    cells = int(np.prod(s3))
    host = np.random.default_rng(seed).uniform(-1, 1, cells).astype(dtype)
    if plan is None:
        plan = ck.StageLaunch("texture", 3, s3, 0, dtype, cpt=1, march=0, vec=0)
    u = [cuda.to_device(host), cuda.device_array(cells, dtype), cuda.device_array(cells, dtype)]
    for _ in range(steps):
        plan(u[0], u[0], u[1], 0.5 * DT, scal)
        plan(u[1], u[0], u[2], DT, scal)
        u[0], u[2] = u[2], u[0]
    got = u[0].copy_to_host()
    del u
    if ref_out is None:
        return got
    return float(np.max(np.abs(got.astype(np.float64) - ref_out)) / np.max(np.abs(ref_out)))
#: register march (march.py, block 32x4x1) with a register cap: (planes, max registers);
#: group ``mcap``
MARCH_CAP_VARIANTS = [(32, 64), (32, 72)]
SWEEP_BLOCKS = {2: [(128, 1), (64, 1), (32, 4)], 3: [(32, 4, 1), (32, 2, 1), (64, 2, 1)]}


def fused_row(kern, nd, shape, s3, bnd, grid, dtype, bufs, scal, rows_per_thread, planes,
              block, steps, cells, bw, ref_lib, ref_t):
    """Time one frame-blocked fused RK2 variant (``block`` = the frame; one launch per step,
    coefficient 0 while timing) and check it against two unfused stages of the non-marching
    texture kernel: 20 steps at dt from the same random field, max |fused − unfused| / max
    |unfused| (0 = bit-identical)."""
    from simengine.field.cuda.fused_frame import FramePlan

    size = f"{nd}d"
    try:
        plan = FramePlan(kern, nd, s3, bnd.code, dtype, tile=(block[1] - 8, block[0] - 8))
        t = _time_fused(plan, bufs, scal, steps)
        # correctness against the unfused stages
        unf = ck.StageLaunch("texture", nd, s3, bnd.code, dtype, cpt=1, march=0, vec=0)
        host = np.random.default_rng(7).uniform(-1, 1, cells).astype(dtype)
        f = [cuda.to_device(host), cuda.device_array(cells, dtype)]
        u = [cuda.to_device(host), cuda.device_array(cells, dtype),
             cuda.device_array(cells, dtype)]
        for _ in range(20):
            plan(f[0], f[1], 0.5 * DT, DT, scal)
            f.reverse()
            unf(u[0], u[0], u[1], 0.5 * DT, scal)
            unf(u[1], u[0], u[2], DT, scal)
            u[0], u[2] = u[2], u[0]
        a, e = f[0].copy_to_host(), u[0].copy_to_host()
        diff = float(np.max(np.abs(a.astype(np.float64) - e)) / np.max(np.abs(e)))
        del f, u
    except Exception as exc:
        print(f"{size} {dtype.name} fused {block}: FAILED {exc!r}", flush=True)
        return None
    occ = occupancy_report(plan)
    eff = 5 * cells * dtype.itemsize / t  # the 5-array model of the unfused rows (comparable)
    model = 2 * cells * dtype.itemsize / t  # what the fused step moves: read φⁿ, write φⁿ⁺¹
    row = dict(size=size, shape=list(shape), precision=dtype.name, kernel=kern,
               layout="fused-frame",
               cpt=plan.rows, march=plan.march, block=list(plan.block), ms_per_step=t * 1e3,
               gcups=cells / t / 1e9, eff_GBs=eff / 1e9, roofline_frac=eff / bw,
               traffic_words=2, model_GBs=model / 1e9, model_frac=model / bw,
               fused_vs_unfused_rel=diff, ref_lib=ref_lib,
               ref_ms=(ref_t * 1e3 if ref_t else None),
               speedup_vs_ref=(ref_t / t if ref_t else None), occupancy=occ,
               shared_bytes=plan.shared_bytes, host_us_per_launch=None)
    print(f"{size} {dtype.name} {kern:8s} {row['layout']:9s} b={'x'.join(map(str, plan.block)):7s}"
          f" {t * 1e3:8.3f} ms/step {cells / t / 1e9:7.2f} Gcell/s  2-word model"
          f" {model / 1e9:6.0f} GB/s ({100 * model / bw:5.1f}% of roofline)  5-array"
          f" {eff / 1e9:6.0f} GB/s  |fused-unfused|/max = {diff:.1e}"
          f"  regs={occ.get('registers_per_thread')} smem={occ.get('shared_mem_per_block')}"
          f" occ={occ.get('occupancy')} nc={occ.get('ptx_ld_global_nc')}", flush=True)
    return row


WARP_COLS = (2,)
WARP_LENGTHS = (32, 64, 128, 256)
WARP_WARPS = (2, 4, 8)
WARP_AHEAD = (0, 1)


def _time_fused(plan, bufs, scal, steps, reps=5):
    """Median seconds per fused step (one launch per step, coefficient 0 while timing)."""
    b = list(bufs)

    def step():
        plan(b[0], b[2], 0.0, 0.0, scal)
        b[0], b[2] = b[2], b[0]

    return time_steps(step, steps, reps)


def _solver_ms(shape, dtype, fused, steps=400, seconds=None):
    """ms per step of the solver (CUDA Graphs on, as a user runs it) and its name: the median
    of 3 timed advances of ``steps`` steps (``seconds``: as many steps as take about that long,
    from a first estimate)."""
    from simengine.field.cuda_solver import CudaFieldSolver

    s = CudaFieldSolver(MODEL, Grid(shape), Boundary("periodic"), kernel="texture",
                        precision=dtype.name, dt=DT, fused=fused)
    s.load(np.random.default_rng(0).uniform(-0.1, 0.1, shape))
    t, _steps, _ts = steady_seconds(s, steps, seconds)
    return t * 1e3, s.name


def solver_rows(sizes, precisions, seconds):
    """The ``solver`` group: what ``fused: auto`` runs for each grid (the plan registry's form
    and reason, field/plans.py) and its steady ms per step through CUDA Graphs."""
    from simengine.field import plans
    from simengine.field.cuda_solver import CudaFieldSolver

    shapes = {"small": (200, 200), "2d": (4096, 4096), "3d": (256, 256, 256),
              "3d512": (512, 512, 512)}
    rows = []
    for size in sizes:
        for prec in precisions:
            shape, dtype = shapes[size], np.dtype(prec)
            ms, name = _solver_ms(shape, dtype, None, seconds=seconds)
            s = CudaFieldSolver(MODEL, Grid(shape), Boundary("periodic"), precision=prec, dt=DT)
            choice = s.plan_choice
            rows.append(dict(size=size, precision=prec, ms_per_step=ms, name=name,
                             form=choice.form.name, reason=choice.reason))
            print(f"solver {size} {prec}: {ms * 1e3:.2f} us/step  {name}  "
                  f"[{choice.form.name}: {choice.reason}]", flush=True)
    print("\n" + plans.table())
    return rows


def warp_configs(sweep="short"):
    """(loads, columns per lane, rows per chunk (None = fitted), warps per block, load-ahead).
    ``full``: the whole grid of WARP_COLS × WARP_LENGTHS × WARP_WARPS × WARP_AHEAD with
    texture loads plus a plain-load subset; ``short``: around the defaults."""
    if sweep == "full":
        for cols in WARP_COLS:
            for length in WARP_LENGTHS:
                for warps in WARP_WARPS:
                    for ahead in WARP_AHEAD:
                        yield "texture", cols, length, warps, ahead
        for cols in WARP_COLS:
            for length in (64, 128):
                for ahead in WARP_AHEAD:
                    yield "global", cols, length, 4, ahead
    for warps in (2, 4):
        for length in (32, 64, 128, None):
            yield "texture", 2, length, warps, 1
    yield "texture", 2, None, 2, 0
    yield "global", 2, None, 2, 1


def warp_rows(shape, dtype, bw, steps, sweep="short"):
    """The warp-marching fused step (cuda/fused_warp.py): columns per lane × rows per chunk ×
    warps per block × loads, against the unfused default (the StageLaunch defaults, two stages
    per step) measured here; |warp − unfused| / max after 20 steps at dt from a random field;
    then the solver as a user runs it (CUDA Graphs) with fused auto and fused off."""
    from simengine.field.cuda.fused_frame import FramePlan
    from simengine.field.cuda.fused_warp import WarpFusedPlan

    cells = int(np.prod(shape))
    grid, bnd = Grid(shape), Boundary("periodic")
    s3 = ck.view3(shape)
    scal = ck.stage_scalars(MODEL, grid, bnd, dtype)
    w = dtype.itemsize
    host = np.random.default_rng(0).uniform(-1, 1, cells).astype(dtype)
    bufs = [cuda.to_device(host) for _ in range(3)]
    unf = ck.StageLaunch("texture", 2, s3, bnd.code, dtype)
    t_unf = time_plan(unf, bufs, scal, steps=steps, reps=5)
    # the 20-step reference of the unfused default
    h7 = np.random.default_rng(7).uniform(-1, 1, cells).astype(dtype)
    u = [cuda.to_device(h7), cuda.device_array(cells, dtype), cuda.device_array(cells, dtype)]
    for _ in range(20):
        unf(u[0], u[0], u[1], 0.5 * DT, scal)
        unf(u[1], u[0], u[2], DT, scal)
        u[0], u[2] = u[2], u[0]
    expect = u[0].copy_to_host().astype(np.float64)
    del u
    f = [cuda.device_array(cells, dtype), cuda.device_array(cells, dtype)]

    def diff(plan):
        f[0].copy_to_device(h7)
        a, b = f
        for _ in range(20):
            plan(a, b, 0.5 * DT, DT, scal)
            a, b = b, a
        return float(np.max(np.abs(a.copy_to_host() - expect)) / np.max(np.abs(expect)))

    def line(label, t, d, occ):
        g = cells / t / 1e9
        m2, m5 = 2 * cells * w / t / bw, 5 * cells * w / t / bw
        print(f"2d {dtype.name} {label:34s} {t * 1e3:7.4f} ms/step {g:7.1f} Gcell-steps/s "
              f"2-word {100 * m2:5.1f}% 5-word {100 * m5:5.1f}% of roofline  x{t_unf / t:5.2f} "
              f"vs unfused  |d|={d:.1e}  regs={occ.get('registers_per_thread')} "
              f"occ={occ.get('occupancy')}", flush=True)
        return dict(size="2d", shape=list(shape), precision=dtype.name, variant=label,
                    ms_per_step=t * 1e3, gcups=g, model2_frac=m2, model5_frac=m5,
                    vs_unfused=t_unf / t, diff20=d, occupancy=occ)

    rows = [line(f"unfused default ({unf.layout}{'-v2' if unf.vec else ''} c{unf.cpt})",
                 t_unf, 0.0, occupancy_report(unf))]
    frame = FramePlan("texture", 2, s3, bnd.code, dtype)
    rows.append(line("fused frame " + frame.description.split(", ", 2)[2],
                     _time_fused(frame, bufs, scal, steps), diff(frame),
                     occupancy_report(frame)))
    for kern, cols, length, warps, ahead in warp_configs(sweep):
        label = f"warp {kern} C{cols} L{length or 'auto'} W{warps} A{ahead}"
        try:
            plan = WarpFusedPlan(kern, 2, s3, bnd.code, dtype, cols=cols, length=length,
                                 warps=warps, ahead=ahead)
            t = _time_fused(plan, bufs, scal, steps)
            if not length:
                label += f" (L={plan.length})"
            rows.append(line(label, t, diff(plan), occupancy_report(plan)))
        except Exception as exc:
            print(f"2d {dtype.name} {label}: FAILED {exc!r}", flush=True)
    del bufs, f
    best = min((r for r in rows if r["variant"].startswith("warp")),
               key=lambda r: r["ms_per_step"], default=None)
    if best:
        print(f"2d {dtype.name} best warp variant: {best['variant']} {best['ms_per_step']:.4f} "
              f"ms/step ({best['gcups']:.1f} G), x{best['vs_unfused']:.2f} vs unfused", flush=True)
    for fused in (None, False):
        ms, name = _solver_ms(shape, dtype, fused)
        t = ms / 1e3
        rows.append(line(f"solver fused={'auto' if fused is None else 'off'} (graphs)", t,
                         float("nan"), {}))
        print(f"    solver: {name}", flush=True)
    return rows


def main(argv=None):
    p = argparse.ArgumentParser()
    p.add_argument("--sizes", default="2d,3d")
    p.add_argument("--precisions", default="float32,float64")
    p.add_argument("--steps", type=int, default=50)
    p.add_argument("--tune", action="store_true", help="auto-tune blocks (cached)")
    p.add_argument("--tune-kernels", default="all")
    p.add_argument("--no-reference", action="store_true")
    p.add_argument("--variants", default="direct,march,tiled",
                   help="comma list of groups: direct (cells/thread 1, 2, 4), march, sweep "
                        "(march lengths x blocks), tiled, vec (2-D pair kernel variants), "
                        "base (texture with the default options), fused (the fused RK2 step: "
                        "blocks x rows / planes, checked against the unfused stages), warp "
                        "(the warp-marching fused step on 2-D 4096²: columns/lane x rows/chunk "
                        "x warps/block x loads, vs the unfused default and the solver); "
                        "'solver' alone: the default plan of each --sizes grid (small = 200²), "
                        "its form and reason from the plan registry, µs/step")
    p.add_argument("--march", default="32", help="march lengths for the 'march' group")
    p.add_argument("--warp-sweep", default="short", choices=("short", "full"),
                   help="the 'warp' group: around the defaults, or the full grid of variants")
    p.add_argument("--small-sweep", action="store_true",
                   help="--sizes small: also the frame-blocked fused step with each block of "
                        "SMALL_FUSED_VARIANTS (fused: true)")
    p.add_argument("--small-shapes", default="200x200",
                   help="--sizes small: grid shapes (the first one also runs the CLI rows)")
    p.add_argument("--no-small-cli", action="store_true", help="--sizes small: no CLI rows")
    p.add_argument("--cli-repeats", type=int, default=1,
                   help="--sizes small: runs per CLI length; the shortest wall time of each "
                        "length is used (process start-up varies by about a second)")
    p.add_argument("--no-cli-previous", action="store_true",
                   help="--sizes small: no CLI row of the former default")
    p.add_argument("--smarch", default=None,
                   help="variants of the 'smarch' group, e.g. 32x8:64:2,32x8:64:3,32x8:64:2:r2b "
                        "(block:planes:planes of loads in flight[:options], options r2 = 2 "
                        "output rows per thread, b = stage-1 base from the shared ring, m80 = "
                        "register cap 80; order r, b, m); "
                        "default SMARCH_VARIANTS")
    p.add_argument("--seconds", type=float, default=1.0,
                   help="the 'solver' group: seconds per timed advance (3 per row)")
    p.add_argument("--cli", action="store_true",
                   help="3-D sizes: also `simengine run` on the grid (default settings), its "
                        "in-run ms/step beside this run's best row and the solver loop")
    p.add_argument("--json", default=None)
    args = p.parse_args(argv)

    if args.smarch:
        SMARCH_VARIANTS[:] = parse_smarch(args.smarch)
    if args.variants == "solver":  # what runs by default, and why
        rows = solver_rows(args.sizes.split(","), args.precisions.split(","), args.seconds)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"gpu": gpu_name(), "rows": rows}, f, indent=1)
        return 0
    dev = gpu_name()
    bw = copy_bandwidth()
    print(f"GPU: {dev}; honest roofline (best device copy, read+write): {bw / 1e9:.0f} GB/s",
          flush=True)
    shapes = {"2d": (4096, 4096), "3d": (256, 256, 256), "3d512": (512, 512, 512)}
    rows = []
    small_rows = []
    cli_rows = []
    if "small" in args.sizes.split(","):
        for prec in args.precisions.split(","):
            for i, shp in enumerate(args.small_shapes.split(",")):
                shape = tuple(int(v) for v in shp.split("x"))
                small_rows += [(prec, f"{shp}: {r[0]}", r[1])
                               for r in small_grid(shape=shape, precision=prec,
                                                   cli_previous=(prec == "float64" and
                                                                 not args.no_cli_previous),
                                                   sweep=args.small_sweep and i == 0,
                                                   cli=i == 0 and not args.no_small_cli,
                                                   cli_repeats=args.cli_repeats)]
    if "warp" in args.variants.split(","):  # the warp-marching fused step, 2-D 4096²
        warp = []
        for prec in args.precisions.split(","):
            warp += warp_rows(shapes["2d"], np.dtype(prec), bw, args.steps, args.warp_sweep)
        print("\n| precision | variant | ms/step | G cell-steps/s | % 2-word | % 5-word "
              "| × unfused | |warp−unfused| 20 steps | regs | occupancy |\n"
              "|---|---|---|---|---|---|---|---|---|---|")
        for r in warp:
            o = r["occupancy"]
            print(f"| {r['precision']} | {r['variant']} | {r['ms_per_step']:.4f} | "
                  f"{r['gcups']:.1f} | {100 * r['model2_frac']:.1f} | "
                  f"{100 * r['model5_frac']:.1f} | {r['vs_unfused']:.2f} | {r['diff20']:.1e} | "
                  f"{o.get('registers_per_thread', '–')} | {o.get('occupancy', '–')} |")
        print(f"\nhonest roofline {bw / 1e9:.0f} GB/s (best device copy) on {dev}, "
              f"{time.strftime('%Y-%m-%d')}", flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump({"gpu": dev, "copy_GBs": bw / 1e9, "rows": warp}, f, indent=1,
                          default=str)
        if args.variants == "warp":
            return 0
    for size in args.sizes.split(","):
        if size == "small":
            continue
        shape = shapes[size]
        nd = len(shape)
        cells = int(np.prod(shape))
        grid = Grid(shape)
        bnd = Boundary("periodic")
        s3 = ck.view3(shape)
        for prec in args.precisions.split(","):
            dtype = np.dtype(prec)
            rng = np.random.default_rng(0)
            host = rng.uniform(-1, 1, cells).astype(dtype)
            bufs = [cuda.to_device(host) for _ in range(3)]
            scal = ck.stage_scalars(MODEL, grid, bnd, dtype)
            ref_lib, ref_t = (None, None) if args.no_reference else user_reference(shape, dtype)
            if ref_t:
                print(f"{size} {prec}: {ref_lib} roll reference {ref_t * 1e3:.3f} ms/step",
                      flush=True)
            marches = tuple(int(m) for m in args.march.split(","))
            ref_march = None
            check_ref = None  # 3 RK2 steps of the direct kernel (rk2_check), once per size
            todo = []
            for kern, lay, cpt, march, blk in variants(args.variants, marches):
                if isinstance(blk, tuple) and blk and blk[0] == "fused":
                    if blk[1] == nd:
                        todo.append((kern, lay, cpt, march, blk))
                elif isinstance(blk, tuple) and blk and blk[0] == "vec":
                    todo.append((kern, lay, cpt, march, blk))
                elif blk == "u1":
                    todo.append((kern, lay, cpt, march, "u1"))
                elif blk == "sweep":
                    todo += [(kern, lay, cpt, march, b) for b in SWEEP_BLOCKS[nd]]
                else:
                    todo.append((kern, lay, cpt, march, blk))
            for kern, lay, cpt, march, block in todo:
                if isinstance(block, tuple) and block and block[0] == "fused":
                    row = fused_row(kern, nd, shape, s3, bnd, grid, dtype, bufs, scal, cpt,
                                    march, block[2], args.steps, cells, bw, ref_lib, ref_t)
                    if row is not None:
                        rows.append(row)
                    continue
                tune_ok = block is None and args.tune and (
                    (cpt or 1) == 1 or kern not in ('global', 'texture')) and (
                    args.tune_kernels == "all" or kern in args.tune_kernels.split(","))
                try:
                    if tune_ok:
                        block = autotune_block(kern, lay, shape, dtype, MODEL, grid, bnd,
                                               steps=10, march=march)
                    elif block is None and args.tune and (cpt or 1) > 1:  # the cpt=1 tuned block
                        block = autotune_block(kern, lay, shape, dtype, MODEL, grid, bnd,
                                               march=0)
                    unroll = None
                    vec = 0 if cpt else None  # explicit cells/thread: the scalar kernel
                    if block == "u1":
                        block, unroll = None, 1
                    if isinstance(block, tuple) and block and block[0] == "vec":
                        if nd != 2:
                            continue
                        block, vec = block[1], 2
                    extra, tag = {}, None
                    if isinstance(block, tuple) and block and block[0] in (
                            "ref", "smarch", "mcap", "default"):
                        if nd != 3:
                            continue
                        tag = block
                        if tag[0] == "ref":
                            extra = dict(smarch=False)
                        elif tag[0] == "smarch":
                            extra = dict(smarch=True, maxreg=tag[2], smarch_rows=tag[4],
                                         smarch_ring_base=tag[5], smarch_flat=tag[6])
                            unroll = tag[3]
                        elif tag[0] == "mcap":
                            extra = dict(smarch=False, maxreg=tag[1])
                        block = tag[1] if tag[0] == "smarch" else None
                    if tag == ("default",):
                        plan = cli_inrun.default_plan(shape, prec)
                    else:
                        plan = ck.StageLaunch(kern, nd, s3, bnd.code, dtype, layout=lay,
                                            block=block, cpt=cpt, march=march, unroll=unroll,
                                            vec=vec, **extra)
                    t = time_plan(plan, bufs, scal, steps=args.steps, reps=5)
                    # host cost of one launch (enqueue only): launch-bound if near t / 2
                    cuda.synchronize()
                    h0 = time.perf_counter()
                    for _ in range(50):
                        plan(bufs[0], bufs[0], bufs[1], 0.0, scal)
                    host_us = (time.perf_counter() - h0) / 50 * 1e6
                    cuda.synchronize()
                    diff = None
                    if tag is not None:  # 3-D marching rows: against the direct kernel
                        if check_ref is None:
                            check_ref = rk2_check(None, None, s3, dtype, scal)
                        diff = rk2_check(plan, check_ref, s3, dtype, scal)
                except Exception as exc:
                    print(f"{size} {prec} {kern}/{lay}: FAILED {exc!r}", flush=True)
                    continue
                occ = occupancy_report(plan)
                if getattr(plan, "same", None) is not None:  # the stage-1 ring-base kernel
                    o1 = occupancy_report(plan.same)
                    occ.update(stage1_registers=o1.get("registers_per_thread"),
                               stage1_occupancy=o1.get("occupancy"))
                eff = 5 * cells * dtype.itemsize / t
                if tag is not None and tag[0] == "ref":
                    ref_march = t
                name = ("smarch" if plan.smarch else plan.layout) + (
                    f"-m{plan.march}" + (f"u{plan.unroll}" if not plan.smarch else
                                         f"a{plan.unroll}")
                    if plan.march else "") + (f"-r{plan.maxreg}" if plan.maxreg else "") + (
                    smarch_name(plan))
                if tag is not None and tag[0] == "default":
                    name = "default:" + name
                row = dict(size=size, shape=list(shape), precision=prec, kernel=kern,
                           layout=name + (
                               "-v2" if getattr(plan, "vec", 0) else ""),
                           vs_march_ref=(ref_march / t if tag is not None and ref_march
                                         else None),
                           cpt=getattr(plan, "rows", 1) if plan.smarch else plan.cpt,
                           rows=getattr(plan, "rows", 1), ring_base=getattr(plan, "ring_base",
                                                                            False),
                           vs_direct_rel=diff, march=plan.march, block=list(plan.block),
                           ms_per_step=t * 1e3,
                           gcups=cells / t / 1e9, eff_GBs=eff / 1e9, roofline_frac=eff / bw,
                           ref_lib=ref_lib, ref_ms=(ref_t * 1e3 if ref_t else None),
                           speedup_vs_ref=(ref_t / t if ref_t else None), occupancy=occ,
                           host_us_per_launch=host_us)
                rows.append(row)
                print(f"{size} {prec} {kern:8s} {row['layout']:6s} c{row['cpt']} b={'x'.join(map(str, plan.block)):9s}"
                      f" {t * 1e3:8.3f} ms/step {cells / t / 1e9:7.2f} Gcell/s {eff / 1e9:7.0f} GB/s"
                      f" {100 * eff / bw:5.1f}% roof  x{(ref_t / t) if ref_t else float('nan'):5.1f} vs {ref_lib}"
                      f"  regs={occ.get('registers_per_thread')} smem={occ.get('shared_mem_per_block')}"
                      f" occ={occ.get('occupancy')} nc={occ.get('ptx_ld_global_nc')}"
                      f" host={host_us:.1f}us/launch"
                      + (f" x{row['vs_march_ref']:.3f} vs register march 32"
                         if row["vs_march_ref"] else "")
                      + (f" stage1 regs={occ.get('stage1_registers')}"
                         f" occ={occ.get('stage1_occupancy')}" if "stage1_registers" in occ
                         else "")
                      + (f" |x-direct|/max={diff:.1e}" if diff is not None else ""),
                      flush=True)
            del bufs
            if args.cli and nd == 3:
                cli_rows.append(cli_inrun.cli_row(shape, prec, rows, bw, _solver_ms))
    # summary table (markdown)
    print(f"\n| size | precision | kernel | layout | cells/thread | block | ms/step | Gcell-upd/s | eff. GB/s | % of roofline | × {rows[0]['ref_lib'] if rows else 'ref'} | regs | smem B | occupancy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in rows:
        o = r["occupancy"]
        sp = f"{r['speedup_vs_ref']:.1f}" if r["speedup_vs_ref"] else "–"
        occ = f"{o['occupancy']:.2f}" if o.get("occupancy") is not None else "–"
        print(f"| {r['size']} | {r['precision']} | {r['kernel']} | {r['layout']} | {r['cpt']} | "
              f"{'x'.join(map(str, r['block']))} | {r['ms_per_step']:.3f} | {r['gcups']:.2f} | "
              f"{r['eff_GBs']:.0f} | {100 * r['roofline_frac']:.1f} | {sp} | "
              f"{o.get('registers_per_thread')} | {o.get('shared_mem_per_block')} | {occ} |")
    mrows = [r for r in rows if r.get("vs_march_ref")]
    if mrows:
        print("\n| grid | precision | kernel (texture) | block | rows | ms/step | "
              "G cell-steps/s | % of roofline (5-word) | × register march 32 | regs | "
              "occupancy | stage-1 regs / occ. (ring base) | rel. diff. vs direct |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
        for r in mrows:
            o = r["occupancy"]
            occ = f"{o['occupancy']:.2f}" if o.get("occupancy") is not None else "–"
            s1 = (f"{o.get('stage1_registers')} / {o.get('stage1_occupancy')}"
                  if "stage1_registers" in o else "–")
            dd = f"{r['vs_direct_rel']:.1e}" if r.get("vs_direct_rel") is not None else "–"
            print(f"| {'x'.join(map(str, r['shape']))} | {r['precision']} | {r['layout']} | "
                  f"{'x'.join(map(str, r['block']))} | {r['rows']} | {r['ms_per_step']:.3f} | "
                  f"{r['gcups']:.1f} | {100 * r['roofline_frac']:.1f} | "
                  f"{r['vs_march_ref']:.3f} | {o.get('registers_per_thread')} | {occ} | "
                  f"{s1} | {dd} |")
    if small_rows:
        print("\n| small-grid RK2 step | precision | µs/step |\n|---|---|---|")
        for prec, what, us in small_rows:
            print(f"| {what} | {prec} | {us:.2f} |")
    print(f"\nhonest roofline {bw / 1e9:.0f} GB/s (best device copy) on {dev}, "
          f"{time.strftime('%Y-%m-%d')}")
    if args.json:
        with open(args.json, "w") as f:
            json.dump({"gpu": dev, "copy_GBs": bw / 1e9, "date": time.strftime("%Y-%m-%d"),
                       "rows": rows, "cli": cli_rows}, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
