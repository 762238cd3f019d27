"""The reductions of a field held by the spectral solver, on its own device (NumPy or CuPy):
mass, free energy, min, max — the same definitions as :mod:`simengine.field.observables`
(forward differences, the boundary's wall terms), accumulated in float64."""
from __future__ import annotations

import numpy as np

from ..observables import FieldPartials


def free_energy_sums(phi, model, boundary, xp=np):
    """``(Σ f(φ), Σ_axes Σ (forward difference)²)`` in float64 (device scalars for CuPy)."""
    p = phi.astype(np.float64)
    if getattr(model, "general", False):
        sum_f = xp.sum(xp.asarray(model.f(p)))
    else:
        a0, a1, a2, a3 = (float(c) for c in model.coefficients)
        sum_f = xp.sum(p * (a0 + p * (a1 / 2.0 + p * (a2 / 3.0 + p * a3 / 4.0))))
    grad2 = 0.0
    for ax in range(p.ndim):
        d = xp.diff(p, axis=ax)
        grad2 = grad2 + xp.sum(d * d)
        if boundary.kind == "periodic":
            w = xp.take(p, 0, axis=ax) - xp.take(p, -1, axis=ax)
            grad2 = grad2 + xp.sum(w * w)
        elif boundary.kind == "fixed":
            v = float(boundary.value)
            w0 = xp.take(p, 0, axis=ax) - v
            w1 = v - xp.take(p, -1, axis=ax)
            grad2 = grad2 + xp.sum(w0 * w0) + xp.sum(w1 * w1)
    return sum_f, grad2


def free_energy(phi, model, grid, boundary, xp=np) -> float:
    sum_f, grad2 = free_energy_sums(phi, model, boundary, xp)
    h = float(grid.spacing)
    return ((float(sum_f) + getattr(model, "f_offset", 0.0) * phi.size
             + 0.5 * model.kappa * float(grad2) / (h * h)) * h ** phi.ndim)


def partials(phi, model, boundary, xp=np) -> FieldPartials:
    """:class:`FieldPartials` of a whole field (one read back of six scalars)."""
    sum_f, grad2 = free_energy_sums(phi, model, boundary, xp)
    vals = xp.stack([xp.sum(phi.astype(np.float64)), sum_f, xp.asarray(grad2, dtype=np.float64),
                     xp.min(phi).astype(np.float64), xp.max(phi).astype(np.float64)])
    s, f, g, lo, hi = (float(x) for x in (vals.get() if hasattr(vals, "get") else vals))
    return FieldPartials(int(phi.size), s, f, g, lo, hi)
