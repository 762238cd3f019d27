"""Explicit time-step limit of the discrete Cahn–Hilliard operator (Euler and RK2 midpoint).

Both explicit Euler and the explicit midpoint method are stable on the negative real axis for
z = λ·dt ∈ [−2, 0] (|1 + z| ≤ 1, resp. |1 + z + z²/2| ≤ 1). Linearising R about a uniform state φ̄,
the discrete modes of the composed operator are sines/cosines with eigenvalue

    λ(k) = −M Λ(k) (f''(φ̄) + κ Λ(k)),   Λ(k) = Σ_axes (4/h²) sin²(k_a h / 2)

over the wavenumbers the grid and boundary admit: periodic k = 2πm/(N h), m = 0..N−1; mirror
(edge-duplicating, Neumann at the cell face) k = πm/(N h), m = 0..N−1; fixed (Dirichlet ghost =
value) k = πm/((N+1) h), m = 1..N. The step limit is

    dt_max = 2 / max |λ(k)| over decaying modes (λ < 0),

with f'' = a1 + 2a2φ + 3a3φ² taken at its maximum over the φ range: the given range (e.g. the
initial field's min/max), widened by the equilibrium values ±sqrt(−a1/a3) when they exist (and the
fixed wall value). Since |λ| grows with Λ for Λ > −f''/(2κ), the maximum is at the largest admitted
Λ. For f'' ≈ 2 (classic model at φ = ±1), h = κ = M = 1, periodic even N this gives
dt_max = 2/(4d(2 + 4dκ)) – the familiar h⁴/(8d²Mκ) once the κΛ² term dominates.
"""
from __future__ import annotations

import math

import numpy as np

from .model import Boundary, CahnHilliard, Grid


def _lambda_axis_max(n: int, h: float, kind: str) -> float:
    """Largest 1-D Laplacian symbol of an axis of ``n`` cells, evaluated only at the modes where
    sin² peaks (no array of n modes: a validated 10⁹-cell axis needed tens of GB here)."""
    n = int(n)
    if kind == "periodic":      # sin²(πm/n), m = 0 … n−1: largest at m = ⌊n/2⌋ or ⌈n/2⌉
        m = np.array(sorted({n // 2, min(n - 1, (n + 1) // 2)}), dtype=np.int64)
        s = np.sin(np.pi * m / n) ** 2
    elif kind == "mirror":      # sin²(πm/2n), m = 0 … n−1: increasing, largest at m = n−1
        m = np.array([n - 1], dtype=np.int64)
        s = np.sin(np.pi * m / (2 * n)) ** 2
    elif kind == "fixed":       # sin²(πm/2(n+1)), m = 1 … n: increasing, largest at m = n
        m = np.array([n], dtype=np.int64)
        s = np.sin(np.pi * m / (2 * (n + 1))) ** 2
    else:
        raise ValueError(f"unknown boundary {kind!r}")
    return float(4.0 / (h * h) * s.max())


def fsecond_max(model: CahnHilliard, lo: float, hi: float) -> float:
    """max of f''(φ) = a1 + 2a2φ + 3a3φ² over [lo, hi] (a general law: its ``fpp_bound``)."""
    if getattr(model, "general", False):
        return float(model.law.fpp_bound(lo, hi))
    _, a1, a2, a3 = model.coefficients
    cands = [lo, hi]
    if a3 != 0:
        v = -a2 / (3 * a3)
        if lo <= v <= hi:
            cands.append(v)
    return max(float(model.fsecond(c)) for c in cands)


def phi_bounds(model: CahnHilliard, boundary: Boundary | None = None, phi_range=None):
    """The φ range used for f'': ``phi_range`` ∪ equilibria ±sqrt(−a1/a3) ∪ fixed wall value."""
    vals = []
    if phi_range is not None:
        vals += [float(phi_range[0]), float(phi_range[1])]
    law = getattr(model, "law", None)
    eq = law.equilibria if law is not None else None
    if eq is not None:
        vals += [float(eq[0]), float(eq[1])]
    _, a1, _, a3 = model.coefficients
    if law is None and a3 != 0 and -a1 / a3 > 0:
        e = math.sqrt(-a1 / a3)
        vals += [-e, e]
    if boundary is not None and boundary.kind == "fixed":
        vals.append(float(boundary.value))
    if not vals:
        vals = [0.0]
    return min(vals), max(vals)


def max_stable_dt(model: CahnHilliard, grid: Grid, boundary: Boundary, phi_range=None) -> float:
    """Largest stable dt of explicit Euler/RK2 (see the module docstring). ``inf`` if no mode
    decays (e.g. M = 0)."""
    lo, hi = phi_bounds(model, boundary, phi_range)
    fpp = fsecond_max(model, lo, hi)
    lam_max = sum(_lambda_axis_max(n, float(grid.spacing), boundary.kind) for n in grid.shape)
    M, K = float(model.mobility), float(model.kappa)
    # λ(Λ) = −M Λ (fpp + κΛ): |λ| over decaying modes is largest at the largest admitted Λ
    rate = M * lam_max * (fpp + K * lam_max)
    if rate <= 0:
        return math.inf
    return 2.0 / rate


def check_dt(dt: float, model: CahnHilliard, grid: Grid, boundary: Boundary, phi_range=None):
    """``(ok, dt_max)``: ok when ``dt <= dt_max``."""
    dmax = max_stable_dt(model, grid, boundary, phi_range)
    return bool(dt <= dmax), dmax


def linear_rate(model: CahnHilliard, grid: Grid, phi_mean: float, lam: float) -> float:
    """Discrete linear growth rate ω = −M Λ (f''(φ̄) + κ Λ) of a mode with Laplacian symbol Λ."""
    return -model.mobility * lam * (float(model.fsecond(phi_mean)) + model.kappa * lam)


def laplacian_symbol(k, h: float) -> float:
    """Λ(k) = Σ_axes (4/h²) sin²(k_a h/2) for a wavevector ``k`` (iterable of angular k_a)."""
    return float(sum(4.0 / (h * h) * math.sin(ka * h / 2) ** 2 for ka in np.atleast_1d(k)))
