"""The warp-marching fused 2-D step (fused-warp) with its int64-modulo boundary fold
(``physics.fold_fn``, the default) against the same kernel built with the division-free fold
(``physics.fold4``: fewer registers), and the unfused stages, in one run: µs per step of the
solver
loop (CUDA Graphs), registers, blocks per SM, the rows per chunk the plan fitted, % of the
2-word roofline against the CuPy copy bandwidth of the same run. The field of the two folds is
compared bit for bit after 20 steps.

    python benchmarks/bench_warp_fold.py [--sizes 4096] [--seconds 0.3]
"""
from __future__ import annotations

import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_field_3d import copy_bandwidth  # noqa: E402
from compare_field_trees import steady_seconds  # noqa: E402

from simengine.field.cuda import fused_warp, physics  # noqa: E402
from simengine.field.cuda_solver import CudaFieldSolver  # noqa: E402
from simengine.field.model import Boundary, CahnHilliard, Grid  # noqa: E402


def build(shape, prec, fused, fold, seed=0):
    fused_warp.warp_kernel.cache_clear()
    fused_warp.fold_fn = fold  # the module's name for its fold, read when the kernel is built
    s = CudaFieldSolver(CahnHilliard.classic(), Grid(shape), Boundary("periodic"),
                        kernel="texture", precision=prec, dt=1e-3, fused=fused)
    s.load(np.random.default_rng(seed).uniform(-0.1, 0.1, shape))
    return s


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="4096")
    ap.add_argument("--seconds", type=float, default=0.3)
    a = ap.parse_args(argv)
    bw, how = copy_bandwidth()
    print(f"copy bandwidth ({how}): {bw / 1e9:.0f} GB/s", flush=True)
    folds = {"fold4 (no division)": physics.fold4, "fold_fn (int64 %)": physics.fold_fn}
    try:
        for n in a.sizes.split(","):
            shape = (int(n), int(n))
            for prec in ("float64", "float32"):
                isz = np.dtype(prec).itemsize
                got = {}
                for label, fold in list(folds.items()) + [("stages", None)]:
                    s = build(shape, prec, fold is not None, fold or physics.fold_fn)
                    t, _steps, _ts = steady_seconds(s, seconds=a.seconds)
                    occ = s.occupancy()
                    plan = s.fused_plan
                    rows = f", {plan.length} rows/chunk" if plan is not None else ""
                    roof = 2 * shape[0] * shape[1] * isz / t / bw
                    print(f"{n}^2 {prec} {label:20s} {t * 1e6:8.2f} us/step ({100 * roof:.1f}% "
                          f"of 2 words; {occ.get('registers_per_thread')} regs, "
                          f"{occ.get('blocks_per_sm')} blocks/SM{rows})", flush=True)
                    del s
                    if fold is not None:
                        s = build(shape, prec, True, fold, seed=3)
                        s.advance(20)
                        got[label] = s.state()
                        del s
                a_, b_ = got.values()
                print(f"{n}^2 {prec} the two folds' fields after 20 steps bit-identical: "
                      f"{np.array_equal(a_, b_)}", flush=True)
    finally:
        fused_warp.fold_fn = physics.fold_fn
        fused_warp.warp_kernel.cache_clear()


if __name__ == "__main__":
    main()
