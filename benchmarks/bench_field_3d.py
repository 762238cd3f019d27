"""The fused 3-D RK2 step (form ``fused-3d``, simengine/field/cuda/fused_3d.py) against the
unfused stages on one GPU: the solver loop (CUDA Graphs, as a user runs it) and ``simengine
run`` with the default settings but ``fused: true`` / ``fused: false`` (observables every
``--every`` steps), ms per step, the ratio fused/stages, and the fraction of the 2-word roofline (read
φ, write φ once per step) and of the stages' 5-word one, against the CuPy copy bandwidth measured
in the same run. The fused field is checked against the stages' after ``--check`` steps.

    python benchmarks/bench_field_3d.py [--cases 512:float64,512:float32,256:float64]
        [--frames 32x32,32x24,32x16] [--unrolls 1] [--cli] [--every 100] [--seconds 0.3] [--json out.json]

``--frames``: extra fused-3d rows with that frame (the block: tile + 4 on every side).
``--unrolls 1,4``: extra fused-3d rows with that many steady planes per trip of the march loop
(``fused_3d.DEFAULT_UNROLL_3D``, the default 12 in the pair rows).
"""
from __future__ import annotations

import argparse
import gc
import json
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from compare_field_trees import steady_seconds  # noqa: E402
from field_cli_inrun import cli_inrun  # noqa: E402
from roofline import cupy_copy, numba_memcpy  # noqa: E402

from simengine.field.cuda import fused_3d as f3  # noqa: E402
from simengine.field.cuda_solver import CudaFieldSolver  # noqa: E402
from simengine.field.model import Boundary, CahnHilliard, Grid  # noqa: E402

MODEL, DT = CahnHilliard.classic(), 1e-3


def copy_bandwidth():
    """(bytes/s read + written, how): CuPy's copy (the issue's reference), else numba's."""
    try:
        return cupy_copy(1 << 30, 20), "cupy copy"
    except Exception as exc:  # no CuPy
        return numba_memcpy(1 << 30, 20), f"numba memcpy (CuPy: {type(exc).__name__})"


def make(shape, prec, fused, frame=None, seed=0):
    kw = {} if frame is None else dict(block=frame + (1,))
    s = CudaFieldSolver(MODEL, Grid(shape), Boundary("periodic"), kernel="texture",
                        precision=prec, dt=DT, fused=fused, **kw)
    s.load(np.random.default_rng(seed).uniform(-0.1, 0.1, shape))
    return s


def solver_row(shape, prec, fused, seconds, frame=None):
    s = make(shape, prec, fused, frame)
    t, steps, ts = steady_seconds(s, seconds=seconds)
    row = dict(shape=list(shape), precision=prec, form=s.plan_choice.form.name,
               frame=list(frame) if frame else None, ms=t * 1e3,
               spread=(max(ts) - min(ts)) / min(ts), steps=steps, name=s.name,
               plan=s.plan_summary)
    try:
        occ = s.occupancy()
        row.update(regs=occ.get("registers_per_thread"), blocks_per_sm=occ.get("blocks_per_sm"),
                   occupancy=occ.get("occupancy"), local=occ.get("local_mem_per_thread"))
    except Exception as exc:  # pragma: no cover - a report, not the benchmark
        row["occupancy_error"] = str(exc)[:80]
    del s
    gc.collect()
    return row


def check(shape, prec, steps):
    """max |fused − stages| / max |stages| after ``steps`` steps from one field."""
    out = []
    for fused in (True, False):
        s = make(shape, prec, fused, seed=3)
        s.advance(steps)
        out.append(s.state())
        del s
        gc.collect()
    return float(np.max(np.abs(out[0] - out[1])) / np.max(np.abs(out[1])))


def fracs(shape, prec, ms, bw):
    cells, isz = int(np.prod(shape)), np.dtype(prec).itemsize
    return (2 * cells * isz / (ms / 1e3) / bw, 5 * cells * isz / (ms / 1e3) / bw)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="512:float64,512:float32,256:float64")
    ap.add_argument("--frames", default="")
    ap.add_argument("--unrolls", default="")
    ap.add_argument("--seconds", type=float, default=0.3)
    ap.add_argument("--check", type=int, default=20, help="steps of the fused/stages check")
    ap.add_argument("--cli", action="store_true", help="simengine run rows too")
    ap.add_argument("--no-loop", action="store_true", help="only the CLI rows")
    ap.add_argument("--no-pair", action="store_true",
                    help="only the --frames rows (no fused/stages pair, no check)")
    ap.add_argument("--every", type=int, default=100)
    ap.add_argument("--json", default="")
    a = ap.parse_args(argv)
    bw, how = copy_bandwidth()
    print(f"copy bandwidth ({how}, read + write): {bw / 1e9:.0f} GB/s", flush=True)
    frames = [tuple(int(x) for x in f.split("x")) for f in a.frames.split(",") if f]
    rows = []
    for case in a.cases.split(","):
        n, prec = case.split(":")
        shape = (int(n),) * 3
        tag = f"{n}^3 {prec}"
        if not a.no_loop:
            got = {}
            for fused in (() if a.no_pair else (True, False)):
                r = solver_row(shape, prec, fused, a.seconds)
                got[fused] = r["ms"]
                two, five = fracs(shape, prec, r["ms"], bw)
                r.update(kind="loop", roof2=two, roof5=five)
                rows.append(r)
                print(f"loop {tag} {r['form']:9s} {r['ms']:.4f} ms/step ({100 * two:.1f}% of "
                      f"the 2-word roofline, {100 * five:.1f}% of 5 words; spread "
                      f"{100 * r['spread']:.1f}%, {r.get('regs')} regs, "
                      f"{r.get('blocks_per_sm')} blocks/SM) {r['name']}", flush=True)
            if got:
                print(f"loop {tag} fused/stages {got[True] / got[False]:.3f}", flush=True)
            for fr in frames:
                r = solver_row(shape, prec, True, a.seconds, frame=fr)
                two, _five = fracs(shape, prec, r["ms"], bw)
                r.update(kind="frame", roof2=two)
                rows.append(r)
                print(f"frame {tag} {fr[0]}x{fr[1]} {r['ms']:.4f} ms/step "
                      f"({100 * two:.1f}% of 2 words, {r.get('regs')} regs, "
                      f"{r.get('blocks_per_sm')} blocks/SM) {r['name']}", flush=True)
            for u in [int(x) for x in a.unrolls.split(",") if x]:
                keep = f3.DEFAULT_UNROLL_3D
                f3.DEFAULT_UNROLL_3D = u
                try:
                    r = solver_row(shape, prec, True, a.seconds)
                finally:
                    f3.DEFAULT_UNROLL_3D = keep
                two, _five = fracs(shape, prec, r["ms"], bw)
                r.update(kind="unroll", unroll=u, roof2=two)
                rows.append(r)
                print(f"unroll {tag} {u} {r['ms']:.4f} ms/step ({100 * two:.1f}% of 2 words, "
                      f"{r.get('regs')} regs, {r.get('blocks_per_sm')} blocks/SM)"
                      + (f" vs stages {r['ms'] / got[False]:.3f}" if False in got else ""),
                      flush=True)
            if a.check and not a.no_pair:
                d = check(shape, prec, a.check)
                rows.append(dict(kind="check", shape=list(shape), precision=prec,
                                 steps=a.check, rel=d))
                print(f"check {tag}: fused vs stages after {a.check} steps: max rel diff "
                      f"{d:.3g}", flush=True)
        if a.cli:
            cli = {}
            for fused in (True, False):
                steps = 5 * a.every if int(n) >= 512 else 10 * a.every
                r = cli_inrun(shape, prec, steps, a.every, first=2 * a.every,
                              solver={"fused": "true" if fused else "false"})
                if "error" in r:
                    print(f"cli {tag} fused: {'true' if fused else 'false'}: FAILED "
                          f"{r['error']}", flush=True)
                    continue
                cli[fused] = r["ms"]
                two, five = fracs(shape, prec, r["ms"], bw)
                rows.append(dict(kind="cli", shape=list(shape), precision=prec, fused=fused,
                                 ms=r["ms"], roof2=two, roof5=five, plan=r["plan"],
                                 stepping_ms=r.get("stepping_ms"), wall=r["wall"]))
                print(f"cli {tag} fused: {'true ' if fused else 'false'} "
                      f"{r['ms']:.4f} ms/step ({100 * two:.1f}% of 2 words, {100 * five:.1f}% "
                      f"of 5; stepping {r.get('stepping_ms')} ms; {r['wall']:.0f} s) "
                      f"{r['plan']}", flush=True)
            if len(cli) == 2:
                print(f"cli {tag} fused/stages {cli[True] / cli[False]:.3f}", flush=True)
    if a.json:
        with open(a.json, "w") as f:
            json.dump(dict(copy_bandwidth=bw, copy=how, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
