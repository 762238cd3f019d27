"""Diagnostic: where the wall time of a CLI field run goes — ``simengine run`` in-process with
timers around the job's pieces (solver.advance = enqueueing the steps, finish_observation = the
host part of the previous observation, synchronize = waiting for the GPU, at_stop = the
observation's device part and the writes). 200² fp64 CUDA, the benchmark's output cadence
(observables every 1000 steps, snapshot and checkpoint every 20 000)."""
import argparse
import collections
import os
import tempfile
import time

p = argparse.ArgumentParser()
p.add_argument("--steps", type=int, default=220000)
args = p.parse_args()
scen = ("kind: field\nname: small\ngrid: {shape: [200, 200]}\nboundary: {type: periodic}\n"
        "model: {mobility: 1.0, kappa: 1.0, potential: {b: 1.0, u: 1.0}}\n"
        "initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}\n"
        f"time: {{dt: 0.001, steps: {args.steps}}}\n"
        "solver: {backend: cuda, precision: float64}\n"
        "output: {snapshot_every: 20000, checkpoint_every: 20000, observables_every: 1000}\n")
from simengine.cli import main
from simengine.field import job as fjob
from simengine.field.cuda_solver import CudaFieldSolver
from simengine.io.field_output import FieldOutput

spent = collections.defaultdict(float)
calls = collections.Counter()


def timed(cls, name, label):
    fn = getattr(cls, name)

    def wrapper(*a, **kw):
        t = time.perf_counter()
        try:
            return fn(*a, **kw)
        finally:
            spent[label] += time.perf_counter() - t
            calls[label] += 1

    setattr(cls, name, wrapper)


for cls, name, label in ((CudaFieldSolver, "advance", "solver.advance (enqueue)"),
                         (CudaFieldSolver, "synchronize", "synchronize (GPU wait)"),
                         (CudaFieldSolver, "reductions", "reductions (device)"),
                         (CudaFieldSolver, "state", "state (to host)"),
                         (fjob.FieldJob, "finish_observation", "finish_observation (S(k))"),
                         (fjob.FieldJob, "at_stop", "at_stop (all)"),
                         (FieldOutput, "write", "write (synchronous)"),
                         (FieldOutput, "wait", "wait for write-behind"),
                         (fjob.FieldJob, "advance", "job.advance (all)")):
    timed(cls, name, label)
with tempfile.TemporaryDirectory() as wd:
    path = os.path.join(wd, "s.yaml")
    with open(path, "w") as f:
        f.write(scen)
    t0 = time.perf_counter()
    main(["run", path, "-o", os.path.join(wd, "s.h5"), "-q", "--overwrite"])
    total = time.perf_counter() - t0
print(f"{args.steps} steps, {total:.2f} s in main()")
for label, s in sorted(spent.items(), key=lambda kv: -kv[1]):
    print(f"{label:34s} {s:8.3f} s  {calls[label]:7d} calls  "
          f"{s / max(calls[label], 1) * 1e3:8.3f} ms/call  {s / args.steps * 1e6:7.3f} us/step")
