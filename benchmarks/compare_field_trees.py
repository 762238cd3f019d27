"""Before/after of a change to the CUDA field engine, one tree per process, the same code for both:
the solver's default plan (fused: auto, CUDA Graphs) on 200², 4096², 512³ × fp32/fp64, steady µs
per step (median of 3 advances of about SECONDS each, as ``bench_field_gpu._solver_ms``), the PTX
instruction count and registers of the kernel that runs, and a SHA-256 of the field after 200
steps from a fresh solver (equal digests: the same bits).

    cd BASE_TREE && PYTHONPATH=$PWD python /path/to/compare_field_trees.py base 0.3 base.json
    cd NEW_TREE  && PYTHONPATH=$PWD python benchmarks/compare_field_trees.py new 0.3 new.json

then compare the two JSON files row by row (docs/measurements/field-gpu-2026-11-25-plans.md)."""
import hashlib
import json
import re
import sys
import time

import numpy as np
from simengine.field.cuda_solver import CudaFieldSolver
from simengine.field.model import Boundary, CahnHilliard, Grid

MODEL, DT = CahnHilliard.classic(), 1e-3
INSN = re.compile(r"^\s*(@%?\w+\s+)?[a-z][a-z0-9_.]*\s")


def ptx_stats(fn):
    try:
        asm = fn.inspect_asm()
        asm = next(iter(asm.values())) if isinstance(asm, dict) else asm
        lines = [ln for ln in asm.splitlines()
                 if INSN.match(ln) and not ln.strip().startswith(".")]
        regs = fn.get_regs_per_thread()
        regs = next(iter(regs.values())) if isinstance(regs, dict) else regs
        return len(lines), regs
    except Exception as exc:
        return str(exc)[:80], None


def steady_seconds(s, steps=400, seconds=None):
    """Seconds per step of solver ``s`` (loaded) in steady state: 128 steps of warm-up, then the
    median of 3 timed advances of ``steps`` steps (``seconds``: as many steps as take about that
    long, from a timed advance of 128). Returns (median, steps, the 3 times)."""
    s.advance(128)
    s.synchronize()
    if seconds:
        t = time.perf_counter()
        s.advance(128)
        s.synchronize()
        steps = max(128, 2 * int(seconds / ((time.perf_counter() - t) / 128) / 2))
    ts = []
    for _ in range(3):
        t = time.perf_counter()
        s.advance(steps)
        s.synchronize()
        ts.append((time.perf_counter() - t) / steps)
    return float(np.median(ts)), steps, ts


def main(tag, seconds, path):
    out = []
    for shape in ((200, 200), (4096, 4096), (512, 512, 512)):
        for prec in ("float32", "float64"):
            s = CudaFieldSolver(MODEL, Grid(shape), Boundary("periodic"), kernel="texture",
                                precision=prec, dt=DT, fused=None)
            s.load(np.random.default_rng(0).uniform(-0.1, 0.1, shape))
            t, steps, ts = steady_seconds(s, seconds=seconds)
            plan = s.fused_plan or s.plan
            ninsn, regs = ptx_stats(plan.fn)
            summ = getattr(s, "plan_summary", "")
            del s
            s = CudaFieldSolver(MODEL, Grid(shape), Boundary("periodic"), kernel="texture",
                                precision=prec, dt=DT, fused=None)
            s.load(np.random.default_rng(1).uniform(-0.1, 0.1, shape))
            s.advance(200)
            digest = hashlib.sha256(s.state().tobytes()).hexdigest()[:16]
            out.append(dict(tree=tag, shape="x".join(map(str, shape)), precision=prec,
                            us=t * 1e6, spread=(max(ts) - min(ts)) / min(ts), steps=steps,
                            name=s.name, plan=summ, ptx_insn=ninsn, regs=regs,
                            sha_200_steps=digest))
            print(json.dumps(out[-1]), flush=True)
            del s
    with open(path, "w") as f:
        json.dump(out, f, indent=1)


if __name__ == "__main__":
    main(sys.argv[1], float(sys.argv[2]), sys.argv[3])
