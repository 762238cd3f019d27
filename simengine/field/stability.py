"""Explicit time-step limit of the discrete Cahn–Hilliard operator (Euler and RK2 midpoint).

Both explicit Euler and the explicit midpoint method are stable on the negative real axis for
z = λ·dt ∈ [−2, 0] (|1 + z| ≤ 1, resp. |1 + z + z²/2| ≤ 1). Linearising R about a uniform state φ̄,
the discrete modes of the composed operator are sines/cosines with eigenvalue

    λ(k) = −M Λ(k) (f''(φ̄) + κ Λ(k)),   Λ(k) = Σ_axes (4/h²) sin²(k_a h / 2)

over the wavenumbers the grid and boundary admit: periodic k = 2πm/(N h), m = 0..N−1; mirror
(edge-duplicating, Neumann at the cell face) k = πm/(N h), m = 0..N−1; fixed (Dirichlet ghost =
value) k = πm/((N+1) h), m = 1..N. The step limit is

    dt_max = 2 / max |λ(k)| over decaying modes (λ < 0),

with f'' = a1 + 2a2φ + 3a3φ² taken at its maximum over the φ range the run can take
(:func:`fsecond_bound`): the given range (e.g. the initial field's min/max), widened to the wells
of f — the real roots of f' where f'' > 0 (±sqrt(b/u) for the classic form; 0.3 and 0.7 for
PFHub's 5(φ−0.3)²(0.7−φ)² given as coefficients) — and the fixed wall value. Phase separation
drives φ to the wells, so a limit from the initial range alone (near the spinodal, where f'' < 0)
is too large. Since |λ| grows with Λ for Λ > −f''/(2κ), the maximum is at the largest admitted
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


def wells(model: CahnHilliard) -> list:
    """The minima of f: real roots of f'(φ) = a0 + a1φ + a2φ² + a3φ³ where f''(φ) > 0."""
    a0, a1, a2, a3 = (float(c) for c in model.coefficients)
    poly = [a3, a2, a1, a0]
    while poly and poly[0] == 0.0:
        poly = poly[1:]
    if len(poly) < 2:
        return []
    roots = np.roots(poly)
    scale = max(1.0, float(np.abs(roots).max()))
    real = [float(r.real) for r in roots if abs(r.imag) <= 1e-9 * scale]
    return sorted(r for r in real if float(model.fsecond(r)) > 0)


def phi_bounds(model: CahnHilliard, boundary: Boundary | None = None, phi_range=None):
    """The φ range the run can take: ``phi_range`` ∪ the wells of f (:func:`wells`) ∪ the fixed
    wall value."""
    vals = []
    if phi_range is not None:
        vals += [float(phi_range[0]), float(phi_range[1])]
    if getattr(model, "general", False):     # a general law: its own coexisting phases
        eq = model.law.equilibria
        vals += [] if eq is None else [float(eq[0]), float(eq[1])]
    else:
        vals += wells(model)
    if boundary is not None and boundary.kind == "fixed":
        vals.append(float(boundary.value))
    if not vals:
        vals = [0.0]
    return min(vals), max(vals)


def fsecond_bound(model: CahnHilliard, boundary: Boundary | None = None, phi_range=None) -> float:
    """The bound of f'' that the explicit limit (and the spectral stabilisation) use: its maximum
    over :func:`phi_bounds`. The one place that bounds f'' for a potential."""
    lo, hi = phi_bounds(model, boundary, phi_range)
    return fsecond_max(model, lo, hi)


def max_stable_dt(model: CahnHilliard, grid: Grid, boundary: Boundary, phi_range=None) -> float:
    """Largest stable dt of explicit Euler/RK2 (see the module docstring). ``inf`` if no mode
    decays (e.g. M = 0)."""
    fpp = fsecond_bound(model, boundary, phi_range)
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
