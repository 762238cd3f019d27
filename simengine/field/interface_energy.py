"""The constants of a model's phase-separated state that the energy length needs: the coexisting
phases x₋ < x₊ (the common tangent of f), the planar interface tension σ and the bulk free-energy
density f_min(x̄) of the separated state of mean x̄ (the lever rule: the tangent line at x̄).

The energy length (:mod:`.lengths`) is L_E = 2Vσ / (F − V·f_min(x̄)): the excess free energy
over the separated bulk is σ times the interface area A, and L_E = 2V/A (for stripes of period
λ, L_E = λ).

:func:`interface_constants` asks the model first: a model object that carries a free energy with
``equilibria()``, ``f_min(mean)`` and ``sigma(kappa)`` (``model.free_energy``, the physics
package's form) is used as it is. Otherwise the polynomial f′ = a0 + a1φ + a2φ² + a3φ³ of
:class:`.model.CahnHilliard` (f quartic, a3 > 0) has a closed form: f − tangent =
(a3/4)(φ − x₋)²(φ − x₊)², so x₋ + x₊ = −2a2/(3a3), x₋x₊ = a1/a3 − (x₋ + x₊)²/2, the tangent's
slope s = a0 + a3·x₋x₊(x₋ + x₊)/2 and σ = √(κa3/2)·(x₊ − x₋)³/6 (2√2/3 for f = (φ² − 1)²/4,
κ = 1). :func:`numeric_constants` does the same for any f by the lower convex hull and
quadrature (documented in docs/field.md, "Coarsening measures"); the tests check it against the
closed form.
"""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np


@dataclass(frozen=True)
class InterfaceConstants:
    """x₋ < x₊ (coexisting phases), the tangent's value at 0 and slope (f_min(x̄) =
    ``offset + slope·x̄`` for x₋ < x̄ < x₊), σ, and where they came from."""

    low: float
    high: float
    offset: float
    slope: float
    sigma: float
    source: str
    f: object = None  # the bulk density (outside the binodal range f_min = f(x̄))

    @property
    def level(self) -> float:
        """The level whose crossings are the interfaces: midway between the phases."""
        return 0.5 * (self.low + self.high)

    def f_min(self, mean: float) -> float:
        """Bulk free-energy density of the separated state of mean ``mean``."""
        if self.low < mean < self.high or self.f is None:
            return self.offset + self.slope * float(mean)
        return float(self.f(float(mean)))


def quartic_constants(coefficients, kappa: float, f=None) -> InterfaceConstants | None:
    """The closed form for f′ = a0 + a1φ + a2φ² + a3φ³ (None when f has one phase only)."""
    a0, a1, a2, a3 = (float(c) for c in coefficients)
    if a3 <= 0:
        return None
    s = -2.0 * a2 / (3.0 * a3)
    p = a1 / a3 - s * s / 2.0
    disc = s * s - 4.0 * p
    if disc <= 0:
        return None
    r = math.sqrt(disc)
    lo, hi = (s - r) / 2.0, (s + r) / 2.0
    slope = a0 + a3 * p * s / 2.0
    f = f or (lambda x: x * (a0 + x * (a1 / 2 + x * (a2 / 3 + x * a3 / 4))))
    offset = float(f(lo)) - slope * lo
    sigma = math.sqrt(float(kappa) * a3 / 2.0) * (hi - lo) ** 3 / 6.0
    return InterfaceConstants(lo, hi, offset, slope, sigma, "closed form (quartic f)", f)


def numeric_constants(f, kappa: float, lo: float = -10.0, hi: float = 10.0,
                      samples: int = 20001) -> InterfaceConstants | None:
    """Common tangent and σ of any bulk density ``f`` (vectorised NumPy callable) on [lo, hi]:
    the widest edge of the lower convex hull of f sampled on ``samples`` points gives x₋, x₊
    (refined by Newton on f′(x₋) = f′(x₊) = (f(x₊) − f(x₋))/(x₊ − x₋) with numerical
    derivatives), σ = ∫ √(2κ(f − tangent)) by adaptive quadrature. None without a
    non-convex stretch."""
    from scipy.integrate import quad

    x = np.linspace(lo, hi, samples)
    y = np.asarray(f(x), dtype=np.float64)
    hull = []  # lower convex hull (Andrew's monotone chain)
    for i in range(samples):
        while len(hull) >= 2:
            i0, i1 = hull[-2], hull[-1]
            if (y[i1] - y[i0]) * (x[i] - x[i0]) >= (y[i] - y[i0]) * (x[i1] - x[i0]):
                hull.pop()
            else:
                break
        hull.append(i)
    gaps = np.diff(x[hull])
    j = int(np.argmax(gaps))
    if gaps[j] <= 2.5 * (x[1] - x[0]):
        return None
    a, b = float(x[hull[j]]), float(x[hull[j + 1]])
    step = 1e-6 * max(1.0, abs(hi - lo))

    def d(g, z):
        return (float(g(z + step)) - float(g(z - step))) / (2 * step)

    def fs(z):
        return float(f(np.float64(z)))

    for _ in range(50):  # Newton on (f'(a) − m, f'(b) − m), m the chord's slope
        m = (fs(b) - fs(a)) / (b - a)
        r = np.array([d(fs, a) - m, d(fs, b) - m])
        if np.max(np.abs(r)) < 1e-13:
            break
        fa2 = (d(fs, a + step) - d(fs, a - step)) / (2 * step)
        fb2 = (d(fs, b + step) - d(fs, b - step)) / (2 * step)
        dm_da = (m - d(fs, a)) / (b - a)
        dm_db = (d(fs, b) - m) / (b - a)
        jac = np.array([[fa2 - dm_da, -dm_db], [-dm_da, fb2 - dm_db]])
        try:
            da, db = np.linalg.solve(jac, -r)
        except np.linalg.LinAlgError:
            break
        a, b = a + da, b + db
    slope = (fs(b) - fs(a)) / (b - a)
    offset = fs(a) - slope * a
    sigma = quad(lambda z: math.sqrt(max(0.0, 2.0 * kappa * (fs(z) - offset - slope * z))),
                 a, b, limit=200, epsrel=1e-10)[0]
    return InterfaceConstants(a, b, offset, slope, float(sigma), "numerical (hull + quadrature)",
                              f)


def interface_constants(model) -> InterfaceConstants | None:
    """The model's constants: its own free energy's (``model.free_energy`` with ``equilibria``,
    ``f_min``, ``sigma``) where it has one, else the quartic closed form of its f′
    coefficients, else numerical from ``model.f``. None for a one-phase model (no energy
    length, no interfaces)."""
    fe = getattr(model, "free_energy", None)
    kappa = float(getattr(model, "kappa", 1.0))
    if fe is not None and all(hasattr(fe, n) for n in ("equilibria", "f_min", "sigma")):
        eq = fe.equilibria()
        if eq is None:
            return None
        lo, hi = (float(v) for v in eq)
        mid = 0.5 * (lo + hi)
        slope = (float(fe.f_min(mid + 1e-3 * (hi - lo))) - float(fe.f_min(mid))) / (1e-3 * (hi - lo))
        offset = float(fe.f_min(mid)) - slope * mid
        return InterfaceConstants(lo, hi, offset, slope, float(fe.sigma(kappa)),
                                  f"the model's free energy ({type(fe).__name__})", fe.f)
    coefficients = getattr(model, "coefficients", None)
    if coefficients is not None:
        got = quartic_constants(coefficients, kappa, getattr(model, "f", None))
        if got is not None or float(coefficients[3]) > 0:
            return got
    if hasattr(model, "f"):
        return numeric_constants(model.f, kappa)
    return None
