"""A field run's modelled time for ``simengine validate``: seconds per step = cells × the cost
per cell-step measured for the backend, dimension, kernel and precision (the sources below), on a
GPU at least its launch-bound floor; a CPU figure is scaled by the cores it was measured on over
the run's numba threads. Fixed steps: × steps. Adaptive steps are not known in advance: the per
step cost and the step count of the measured reference run are given instead. A model, ±2× and
worse on a loaded machine; the run's progress bar gives the real rate after its first piece."""
from __future__ import annotations

from ..machine import fmt_seconds

#: CPU RK2 stages, ns per cell-step on 2 cores (docs/field.md, bench_field_cpu 2026-11-21:
#: 1024² and 128³ Mupdates/s), by (3-D?, kernel, precision)
CPU_RK2_NS = {
    (False, "texture", "float64"): 1.21, (False, "texture", "float32"): 0.80,
    (False, "shared", "float64"): 2.68, (False, "shared", "float32"): 1.99,
    (False, "combined", "float64"): 3.01, (False, "combined", "float32"): 2.10,
    (False, "global", "float64"): 5.76, (False, "global", "float32"): 18.3,
    (True, "texture", "float64"): 2.59, (True, "texture", "float32"): 1.42,
    (True, "shared", "float64"): 3.80, (True, "shared", "float32"): 2.11,
    (True, "combined", "float64"): 4.21, (True, "combined", "float32"): 3.09,
    (True, "global", "float64"): 16.6, (True, "global", "float32"): 36.6,
}
#: CPU spectral (SBDF2, NumPy/SciPy FFTs), ns per cell-step on 2 cores: measured 2026-12-02 on
#: this machine under load, 256² 160, 512² 630, 64³ 285, 128³ 477 (fixed dt, 10 steps)
CPU_SPECTRAL_NS = 500.0
CPU_CORES_MEASURED = 2
#: the CPU's floor per step (thread start-up of the stages): 64² texture fp64 took 72 µs a step
#: on 2 loaded cores (2026-12-02)
CPU_FLOOR = 5e-5
#: GPU RK2, ns per cell-step (H100 fp64, README: 4096² 0.124 ms, 512³ 2.18 ms) and the floor of
#: one step (200²: 2.41 µs); the spectral step (H200, 4096² to t = 10⁶: 136.6 s / 4 494 steps
#: with observations; 512²: about 1.5 ms, launch bound)
GPU_RK2_NS = {False: 0.0074, True: 0.0162}
GPU_RK2_FLOOR = 2.4e-6
GPU_SPECTRAL_NS = 1.8
GPU_SPECTRAL_FLOOR = 1.5e-3
#: the measured adaptive reference: coarsening-2d (256², t = 10⁴), accepted + rejected steps
ADAPTIVE_REFERENCE = "coarsening-2d took 1 375 steps (1 247 accepted) to t = 10⁴ on 256²"


def step_seconds(problem, threads: int) -> float:
    """Modelled seconds of one step of the whole grid on this plan's backend (per rank's share
    when the grid is split over ranks)."""
    cells = problem.cells / max(1, int(problem.ranks))
    three = problem.ndim >= 3
    if problem.backend == "cuda":
        if problem.integrator == "spectral":
            return max(GPU_SPECTRAL_FLOOR, cells * GPU_SPECTRAL_NS * 1e-9)
        stages = 1.0 if problem.integrator == "rk2" else 0.5
        return max(GPU_RK2_FLOOR, stages * cells * GPU_RK2_NS[three] * 1e-9)
    scale = CPU_CORES_MEASURED / max(1, int(threads))
    if problem.integrator == "spectral":
        return max(CPU_FLOOR, cells * CPU_SPECTRAL_NS * 1e-9 * scale)
    ns = CPU_RK2_NS.get((three, problem.kernel, problem.precision), CPU_RK2_NS[
        (three, "global", "float64")])
    stages = 1.0 if problem.integrator == "rk2" else 0.5
    return max(CPU_FLOOR, stages * cells * ns * 1e-9 * scale)


def _fmt(s: float) -> str:
    if s < 1e-3:
        return f"{s * 1e6:.3g} µs"
    if s < 1:
        return f"{s * 1e3:.3g} ms"
    return fmt_seconds(s)


def time_line(problem, threads: int) -> str:
    """One line for ``simengine validate``."""
    per = step_seconds(problem, threads)
    where = (f"{problem.backend}" + (f", {threads} threads" if problem.backend == "cpu" else "")
             + (f", {problem.ranks} ranks" if problem.ranks > 1 else ""))
    if problem.adaptive or not problem.steps:
        return (f"time: about {_fmt(per)} per step ({where}; modelled from idle-machine measurements, ±2×, slower under load); adaptive "
                f"steps are not known in advance ({ADAPTIVE_REFERENCE}: "
                f"≈ {_fmt(1375 * per)} at this cost)")
    return (f"time: about {_fmt(per * problem.steps)} for {problem.steps} steps "
            f"({_fmt(per)} per step, {where}; modelled from idle-machine measurements, ±2×, slower under load)")
