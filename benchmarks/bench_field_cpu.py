"""CPU field-kernel benchmark: cell updates per second (one RK2 step of one cell = one update).

Every kernel strategy and precision at 2D 1024² and 3D 128³ (by default), side by side with the
NumPy reference (``reference.step``) measured in the same run; ratios are against the reference.
Warm-up (compilation, first step) is excluded; the best of ``--repeats`` timings is reported.

    python benchmarks/bench_field_cpu.py [--sizes 1024x1024,128x128x128] [--steps 5]
        [--repeats 3] [--kernels global,shared,texture,combined] [--precisions float64,float32]
        [--threads N] [--boundary periodic]
"""
from __future__ import annotations

import argparse
import time

import numpy as np


def _best(fn, repeats):
    best = float("inf")
    for _ in range(repeats):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="1024x1024,128x128x128")
    ap.add_argument("--steps", type=int, default=5, help="RK2 steps per timing")
    ap.add_argument("--ref-steps", type=int, default=2, help="reference steps per timing")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--kernels", default="global,shared,texture,combined")
    ap.add_argument("--precisions", default="float64,float32")
    ap.add_argument("--boundary", default="periodic")
    ap.add_argument("--threads", type=int, default=None, help="numba threads (default: all)")
    args = ap.parse_args(argv)

    import numba

    from simengine.field import reference
    from simengine.field.initial import noise
    from simengine.field.model import Boundary, CahnHilliard, Grid
    from simengine.field.backends import make_solver

    if args.threads:
        numba.set_num_threads(args.threads)
    model = CahnHilliard.classic()
    b = Boundary(args.boundary, 0.0)
    rows = []
    for size in args.sizes.split(","):
        shape = tuple(int(s) for s in size.split("x"))
        grid = Grid(shape)
        cells = grid.cells
        phi0 = noise(shape, 0.0, 0.1, seed=0)
        dt = 0.01
        p = phi0.copy()
        reference.step(p, dt, model, grid, b)

        def run_ref():
            q = p
            for _ in range(args.ref_steps):
                q = reference.step(q, dt, model, grid, b)

        t_ref = _best(run_ref, args.repeats) / args.ref_steps
        ref_rate = cells / t_ref
        rows.append((size, "numpy reference", "float64", ref_rate, 1.0))
        for prec in args.precisions.split(","):
            for kernel in args.kernels.split(","):
                s = make_solver(model, grid, b, backend="cpu", kernel=kernel, precision=prec,
                                dt=dt)
                s.load(phi0)
                s.advance(1)  # warm-up: compile / load from cache
                t = _best(lambda: s.advance(args.steps), args.repeats) / args.steps
                rows.append((size, kernel, prec, cells / t, (cells / t) / ref_rate))
                print(f"  {size:>12} {kernel:>9} {prec:>8} {cells / t / 1e6:9.1f} M/s", flush=True)
    print(f"\nthreads={numba.get_num_threads()} boundary={args.boundary} steps={args.steps} "
          f"repeats={args.repeats} (best)")
    print(f"| {'size':>12} | {'kernel':>15} | {'precision':>9} | {'Mupdates/s':>10} | "
          f"{'vs NumPy':>8} |")
    print(f"|{'-' * 14}|{'-' * 17}|{'-' * 11}|{'-' * 12}|{'-' * 10}|")
    for size, kernel, prec, rate, ratio in rows:
        print(f"| {size:>12} | {kernel:>15} | {prec:>9} | {rate / 1e6:10.1f} | {ratio:7.1f}x |")
    return rows


if __name__ == "__main__":
    main()
