"""Diagnostic: host time to enqueue replays of CUDA Graphs of k fused steps (200² fp64) against
the total with the GPU, per step: is the small-grid step bound by the host?"""
import time, numpy as np
from simengine.field.cuda_solver import CudaFieldSolver
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.cuda import graph as cg
s = CudaFieldSolver(CahnHilliard.classic(), Grid((200, 200)), Boundary("periodic"), precision="float64", dt=1e-3)
print(s.name)
s.load(np.random.default_rng(0).uniform(-0.1, 0.1, (200, 200)))
s.advance(1000); s.synchronize()
for k in (4, 16, 64, 256, 1024):
    g = s._step_graph(k)
    g.replay(2); s.synchronize()
    reps = max(1, 12800 // k)
    t = time.perf_counter(); g.replay(reps); te = time.perf_counter() - t; s.synchronize(); ta = time.perf_counter() - t
    print(f"graph of {k:5d} steps: enqueue {te / (reps * k) * 1e6:.3f} us/step, total {ta / (reps * k) * 1e6:.3f} us/step")
