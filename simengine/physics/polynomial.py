"""Polynomial free energy: f′(x) = a0 + a1 x + … + an xⁿ of any degree (``coefficients`` are
f′'s, as the existing ``potential.coefficients``; ``potential: {b, u}`` is (0, −b, 0, u)),
f(x) = Σ a_k x^(k+1)/(k+1) with f(0) = 0 (plus ``offset``, the value f(0) a form such as
PFHub's double well gives it)."""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .base import FreeEnergy


def horner(x, coefs):
    """Σ coefs[k] x^k by Horner's rule, highest degree first (NumPy and numba alike)."""
    acc = coefs[-1] + 0.0 * x
    for k in range(len(coefs) - 2, -1, -1):
        acc = coefs[k] + x * acc
    return acc


@dataclass(frozen=True)
class Polynomial(FreeEnergy):
    #: f′'s coefficients a0 … an
    coefficients: tuple = (0.0, -1.0, 0.0, 1.0)
    #: f(0)
    offset: float = 0.0
    name = "polynomial"

    def __post_init__(self):
        c = tuple(float(a) for a in self.coefficients)
        while len(c) > 1 and c[-1] == 0.0:
            c = c[:-1]
        object.__setattr__(self, "coefficients", c or (0.0,))

    @property
    def degree(self) -> int:
        return len(self.coefficients) - 1

    def f(self, x):
        a = self.coefficients
        return self.offset + x * horner(x, tuple(a[k] / (k + 1) for k in range(len(a))))

    def fp(self, x):
        return horner(x, self.coefficients)

    def fpp(self, x):
        a = self.coefficients
        if len(a) == 1:
            return 0.0 * x
        return horner(x, tuple(k * a[k] for k in range(1, len(a))))

    def cubic(self):
        if self.degree > 3:
            return None
        return tuple(self.coefficients) + (0.0,) * (3 - self.degree)

    def bounded_below(self) -> bool:
        """f → +∞ both ways (an odd degree of f′ with a positive leading coefficient), or f
        convex-free constant/linear growth is refused: otherwise φ runs away."""
        a = self.coefficients
        if self.degree == 0:
            return a[0] == 0.0
        return self.degree % 2 == 1 and a[-1] > 0

    def search_range(self):
        r = np.roots(self.coefficients[::-1]) if self.degree >= 1 else np.array([0.0])
        m = max(1.0, float(np.max(np.abs(r)))) if r.size else 1.0
        return -2.0 * m, 2.0 * m

    def fpp_bound(self, lo, hi):
        """max f″ on [lo, hi], exactly: at the ends or at a real zero of f‴ inside."""
        lo, hi = float(min(lo, hi)), float(max(lo, hi))
        cands = [lo, hi]
        a = self.coefficients
        if len(a) >= 4:
            d3 = [k * (k - 1) * a[k] for k in range(2, len(a))]
            for r in np.roots(d3[::-1]):
                if abs(r.imag) < 1e-12 and lo < r.real < hi:
                    cands.append(float(r.real))
        return max(float(self.fpp(c)) for c in cands)

    def jit_fp(self, dtype=np.float64):
        from numba import njit

        t = np.dtype(dtype).type
        coefs = tuple(t(a) for a in self.coefficients)
        n = len(coefs)
        top = coefs[-1]

        @njit(inline="always")
        def fp(x):
            acc = top
            for k in range(n - 2, -1, -1):
                acc = coefs[k] + x * acc
            return acc

        return fp

    def describe(self):
        terms = ", ".join(f"{a:g}" for a in self.coefficients)
        return f"polynomial f′ = [{terms}]"
