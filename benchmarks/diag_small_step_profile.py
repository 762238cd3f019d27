"""Diagnostic: the small-grid fused step's kernel (fused: auto's plan, 200² fp64) launched one
step at a time, for a profiler (``ncu``), and its PTX/SASS written next to ``--out``."""
import argparse
import os

import numpy as np

from simengine.field.cuda.fused_blocked import BlockedPlan
from simengine.field.cuda_solver import CudaFieldSolver
from simengine.field.model import Boundary, CahnHilliard, Grid

p = argparse.ArgumentParser()
p.add_argument("--out", default=".")
p.add_argument("--steps", type=int, default=50)
p.add_argument("--shape", default="200x200")
args = p.parse_args()
shape = tuple(int(v) for v in args.shape.split("x"))
s = CudaFieldSolver(CahnHilliard.classic(), Grid(shape), Boundary("periodic"), kernel="texture",
                    precision="float64", dt=1e-3)
s.fused_plan = BlockedPlan(s.kernel, 2, s.shape3, s.boundary.code, s.dtype)
s.use_graphs = False
s.load(np.random.default_rng(0).uniform(-0.1, 0.1, shape))
s.advance(args.steps)
s.synchronize()
fn = s.fused_plan.fn
for kind, getter in (("ptx", fn.inspect_asm), ("sass", getattr(fn, "inspect_sass", None))):
    if getter is None:
        continue
    try:
        text = getter()
        text = next(iter(text.values())) if isinstance(text, dict) else text
        with open(os.path.join(args.out, f"blocked_200.{kind}"), "w") as f:
            f.write(text)
    except Exception as exc:  # e.g. no nvdisasm
        print(kind, "failed:", exc)
print(s.name, "regs", fn.get_regs_per_thread())
