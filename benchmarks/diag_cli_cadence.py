"""Diagnostic: what the output cadence costs the CLI path of a small CUDA field run.

Runs the CLI's runner in-process (``simengine.api.run``, the same controller, job and writer as
``simengine run``) on 200² fp64 with several output cadences and prints the steady-state µs per
step from each run's own observables wall-time column (rows from step ``--first`` to the end:
no start-up, compilation or graph recording), next to the solver alone (``advance`` in pieces
of 1000 steps, synchronised), all in the same process. Variants switch off one mechanism at a
time: ``sync-writes`` writes snapshots/checkpoints in the main thread instead of behind,
``sleep-writes`` replaces each write-behind by a 20 ms sleep (a write that holds no GIL; its
rows go with the next write), ``no-sk`` skips the host's S(k) (the length scale) and ``switch`` sets the interpreter's
thread switch interval to 0.1 ms (experiments: which host work competes with a write-behind),
``ahead-write-behind`` writes in a background thread after enqueueing the run-ahead stops
(``job.RUN_AHEAD_WRITE_BEHIND = True``), ``sync-observe`` reads the reductions and the field
back at the stop instead of enqueueing them behind the steps (the path before
``observe_async``).

    python benchmarks/diag_cli_cadence.py [--steps 420000] [--repeats 2]
"""
from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time

import h5py
import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from bench_field_gpu import inrun_us  # noqa: E402  (the same steady-state measure)

SCEN = ("kind: field\nname: small\ngrid: {{shape: [{n}, {n}]}}\nboundary: {{type: periodic}}\n"
        "model: {{mobility: 1.0, kappa: 1.0, potential: {{b: 1.0, u: 1.0}}}}\n"
        "initial: {{type: noise, mean: 0.0, amplitude: 0.05, seed: 1}}\n"
        "time: {{dt: 0.001, steps: {steps}}}\n"
        "solver: {{backend: cuda, precision: {prec}}}\n"
        "output: {{snapshot_every: {snap}, checkpoint_every: {ckpt}, "
        "observables_every: {obs}}}\n")

#: name -> (observables, snapshot, checkpoint cadence, patch)
VARIANTS = {
    "benchmark cadence (obs 1000, snapshot + checkpoint 20 000)": (1000, 20000, 20000, None),
    "  … writes synchronous (no write-behind)": (1000, 20000, 20000, "sync-writes"),
    "  … run-ahead with the write behind (in a thread)": (1000, 20000, 20000, "ahead-write-behind"),
    "  … observation read back at the stop (no observe_async)": (1000, 20000, 20000,
                                                                  "sync-observe"),
    "  … each write-behind replaced by a 20 ms sleep (holds no GIL)": (1000, 20000, 20000,
                                                                      "sleep-writes"),
    "  … no S(k) on the host (length not computed)": (1000, 20000, 20000, "no-sk"),
    "  … no S(k), thread switch interval 0.1 ms": (1000, 20000, 20000, "no-sk+switch"),
    "  … thread switch interval 0.1 ms": (1000, 20000, 20000, "switch"),
    "obs 1000, snapshot + checkpoint 200 000": (1000, 200000, 200000, None),
    "obs 1000 only": (1000, 0, 0, None),
    "obs 10 000 only": (10000, 0, 0, None),
    "obs 100 000 only": (100000, 0, 0, None),
}


def patched(kind):
    """Context: switch one mechanism off (see the module docstring)."""
    import contextlib

    from simengine.field.cuda_solver import CudaFieldSolver
    from simengine.io.field_output import FieldOutput

    @contextlib.contextmanager
    def ctx():
        saved = []
        try:
            if "switch" in (kind or ""):
                import sys

                saved.append((None, "switch", sys.getswitchinterval()))
                sys.setswitchinterval(1e-4)
            if "no-sk" in (kind or ""):
                from simengine.field import observables

                saved.append((observables, "characteristic_length",
                              observables.characteristic_length))
                observables.characteristic_length = lambda phi, spacing=1.0: 1.0
            if kind == "ahead-write-behind":
                from simengine.field import job as fjob

                saved.append((fjob, "RUN_AHEAD_WRITE_BEHIND", fjob.RUN_AHEAD_WRITE_BEHIND))
                fjob.RUN_AHEAD_WRITE_BEHIND = True
            if kind == "sleep-writes":
                saved.append((FieldOutput, "_write", FieldOutput._write))
                real = FieldOutput._write

                def fake(self, batch, complete):
                    if complete or self._behind is None:  # the last write: the real one
                        return real(self, batch, complete)
                    time.sleep(0.02)
                    self.obs[:0] = batch[2]  # the rows go with the next write

                FieldOutput._write = fake
            elif kind == "sync-writes":
                saved += [(FieldOutput, "write_behind", FieldOutput.write_behind),
                          (FieldOutput, "wait", FieldOutput.wait)]
                FieldOutput.write_behind = lambda self: self.write()
                FieldOutput.wait = lambda self: None
            elif kind == "sync-observe":
                saved.append((CudaFieldSolver, "observe_async", CudaFieldSolver.observe_async))

                class Now:
                    def __init__(self, s):
                        self.r = (s.reductions(), s.state())

                    def result(self):
                        return self.r

                CudaFieldSolver.observe_async = lambda self: Now(self)
            yield
        finally:
            for cls, name, fn in saved:
                if cls is None:
                    import sys

                    sys.setswitchinterval(fn)
                else:
                    setattr(cls, name, fn)

    return ctx()


def cycle_profile(path, first, every, period):
    """Mean ms per observables interval by its position after a write (0 = the interval that
    ends at a snapshot/checkpoint stop, 1 = the next one, ...): where the writes cost."""
    with h5py.File(path, "r") as f:
        step = f["observables/step"][()]
        wall = f["observables/wall_time"][()]
    keep = step >= first
    step, wall = step[keep], wall[keep]
    d = np.diff(wall) * 1e3
    pos = (step[1:] // every) % (period // every)
    return {int(p): float(d[pos == p].mean()) for p in sorted(set(pos.tolist()))}


def solver_us(n, prec, steps, piece=1000):
    from numba import cuda

    from simengine.field.model import Boundary, CahnHilliard, Grid
    from simengine.field.solver import make_solver

    s = make_solver(CahnHilliard(), Grid((n, n)), Boundary("periodic"), backend="cuda",
                    dt=1e-3, precision=prec)
    s.load(np.random.default_rng(1).uniform(-0.05, 0.05, (n, n)))
    for _ in range(3):
        s.advance(piece)
    cuda.synchronize()
    t = time.perf_counter()
    for _ in range(steps // piece):
        s.advance(piece)
        s.synchronize()
    return (time.perf_counter() - t) / (steps // piece * piece) * 1e6


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--n", type=int, default=200)
    p.add_argument("--precision", default="float64")
    p.add_argument("--steps", type=int, default=420000)
    p.add_argument("--first", type=int, default=20000)
    p.add_argument("--repeats", type=int, default=2)
    p.add_argument("--only", default=None,
                   help="comma-separated words: run only the variants whose name has one")
    args = p.parse_args()
    if args.only:
        words = args.only.split(",")
        for name in list(VARIANTS):
            if not any(w in name for w in words):
                del VARIANTS[name]
    from simengine import api

    res = {name: [] for name in VARIANTS}
    res["solver alone (advance 1000 + synchronize)"] = []
    with tempfile.TemporaryDirectory() as wd:
        for _ in range(args.repeats):
            for name, (obs, snap, ckpt, patch) in VARIANTS.items():
                text = SCEN.format(n=args.n, steps=args.steps, prec=args.precision, obs=obs,
                                   snap=snap, ckpt=ckpt)
                path = os.path.join(wd, "run.h5")
                if os.path.exists(path):
                    os.remove(path)
                with patched(patch):
                    api.run(text, path)
                res[name].append(inrun_us(path, args.first))
                print(f"{name}: {res[name][-1]:.3f} us/step", flush=True)
                if snap and obs and snap // obs <= 40:
                    prof = cycle_profile(path, args.first, obs, snap)
                    print("   ms per interval by position after a write (0 = ends at it): "
                          + ", ".join(f"{p}: {v:.2f}" for p, v in prof.items()), flush=True)
            res["solver alone (advance 1000 + synchronize)"].append(
                solver_us(args.n, args.precision, args.steps - args.first))
    print(f"\n{args.n}² {args.precision}, µs per step in steady state (rows {args.first} … "
          f"{args.steps} of each run's wall-time column), {args.repeats} runs each\n")
    print("| run | µs/step (each run) | best |\n|---|---|---|")
    for name, v in res.items():
        print(f"| {name.strip()} | {', '.join(f'{u:.2f}' for u in v)} | {min(v):.2f} |")


if __name__ == "__main__":
    main()
