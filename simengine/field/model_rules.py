"""Which targets run which model: the model's row of the plan (one-line refusals), and the
per-step hooks of a general model on the CPU stencil solver (noise, the free energy's domain).

Targets (docs/field.md, "Models"):

* the cubic f′ with constant M (``potential``, ``coefficients``, a polynomial of degree ≤ 3,
  ``double_well``): every backend, strategy, form and integrator, as before;
* any other f′ or M(φ) (``flory_huggins``, a polynomial of higher degree, ``degenerate`` or
  ``polynomial`` mobility): RK2/Euler on the CPU in the model kernel (``solver.kernel: global``,
  the conservative face-mobility stencil; any rank count), and the CPU spectral integrator (the
  other strategies and the CUDA stencils and spectral form: a one-line refusal);
* noise: RK2/Euler on the CPU with fixed steps, periodic or mirror walls.
"""
from __future__ import annotations

import numpy as np

from ..errors import SimulationError

MODEL_KERNEL = "global"


def needs(model) -> tuple:
    """What a model asks of a target: ``general`` (f′ not a cubic, or M(φ)), ``mobility``
    (M(φ)), ``noise``, ``domain`` (a bounded domain of the field's values)."""
    law = getattr(model, "law", model if hasattr(model, "free_energy") else None)
    if law is None:
        return ()
    out = []
    if law.general:
        out.append("general")
    if not law.mobility.constant:
        out.append("mobility")
    if law.noise is not None and law.noise.amplitude > 0:
        out.append("noise")
    if law.domain is not None:
        out.append("domain")
    return tuple(out)


def needs_of_spec(model_spec) -> tuple:
    """:func:`needs` of a scenario's ``model:`` block."""
    from ..physics.build import is_legacy, model_of

    return () if is_legacy(model_spec) else needs(model_of(model_spec))


def describe_spec(model_spec) -> str:
    from ..physics.build import is_legacy, model_of

    return "" if is_legacy(model_spec) else model_of(model_spec).describe()


def can_run(problem, model_needs=None) -> tuple:
    """``(True, "")`` or ``(False, one line naming the key)`` for a plan's problem."""
    nd = tuple(getattr(problem, "model_needs", ()) if model_needs is None else model_needs)
    if not nd:
        return True, ""
    integ = getattr(problem, "integrator", "rk2")
    backend = getattr(problem, "backend", "cpu")
    what = "model.mobility (M(φ))" if "mobility" in nd else "model.free_energy (f′ not a cubic)"
    if "general" in nd:
        if backend == "cuda":
            return False, (f"{what} runs on backend cpu: the CUDA stencils and the GPU spectral "
                           f"form run the cubic f′ with a constant M (set solver.backend: cpu)")
        if integ != "spectral" and getattr(problem, "kernel", MODEL_KERNEL) != MODEL_KERNEL:
            return False, (f"solver.kernel: {problem.kernel}: {what} runs in kernel "
                           f"{MODEL_KERNEL} only (the model kernel, conservative face form); "
                           f"set solver.kernel: {MODEL_KERNEL}")
        if integ == "spectral" and getattr(problem, "ranks", 1) > 1:
            return False, (f"{what} runs the spectral integrator in one process (its "
                           f"explicit part is not split into slabs)")
        if integ == "spectral" and "mobility" in nd:
            if (getattr(problem, "symbol", "fd") or "fd") != "fd":
                return False, ("solver.symbol: exact: M(φ) in the spectral integrator uses the "
                               "stencil's face form, symbol fd only")
            if getattr(problem, "ranks", 1) > 1:
                return False, ("model.mobility: M(φ) in the spectral integrator runs in one "
                               "process (its explicit face-flux part is not split into slabs)")
    if "noise" in nd:
        if backend == "cuda":
            return False, "model.noise runs on backend cpu (set solver.backend: cpu)"
        if integ == "spectral":
            return False, ("model.noise runs with integrator rk2 or euler (fixed steps); the "
                           "spectral integrator has no noise term")
        if getattr(problem, "adaptive", False):
            return False, ("time.adaptive: model.noise needs fixed steps (a rejected step would "
                           "redraw the noise: no error estimate of a stochastic step is used)")
        if getattr(problem, "boundary", "periodic") == "fixed":
            return False, "model.noise runs with periodic or mirror walls, not fixed"
    return True, ""


def check_solver(model, backend: str, kernel: str, integrator: str = "rk2") -> None:
    """``ValueError`` (the same line) where a solver is built for a model it cannot run."""
    class _P:
        pass

    p = _P()
    p.backend, p.kernel, p.integrator, p.symbol, p.ranks = backend, kernel, integrator, "fd", 1
    p.adaptive, p.boundary = False, "periodic"
    ok, why = can_run(p, needs(model))
    if not ok:
        raise ValueError(why)


def check_domain(model, phi, step: int) -> None:
    """SimulationError (one line naming the step) when the owned values left the law's domain
    (or are not finite)."""
    lo, hi = model.law.domain
    mn, mx = float(np.min(phi)), float(np.max(phi))
    if not (lo < mn and mx < hi):
        v = model.law.variable
        raise SimulationError(f"step {step}: {v} left the domain ({lo:g}, {hi:g}) of "
                              f"{model.law.free_energy.name} (min {mn:.6g}, max {mx:.6g}): f′ "
                              f"diverges at its ends; take a smaller dt or a milder quench")
