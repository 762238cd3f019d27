"""Flory–Huggins free energy of a binary blend in the volume fraction c ∈ (0, 1):

    f(c) = c ln c / n_a + (1 − c) ln(1 − c) / n_b + χ c (1 − c),
    f′(c) = (ln c + 1)/n_a − (ln(1 − c) + 1)/n_b + χ (1 − 2c),
    f″(c) = 1/(n_a c) + 1/(n_b (1 − c)) − 2χ.

Critical point χ_c = ½ (1/√n_a + 1/√n_b)² at c_c = √n_b / (√n_a + √n_b); the spinodals are the
zeros of f″ (a quadratic). f′ diverges at both ends: the kernels evaluate the logarithms as they
are, and the run checks after every accepted step that c stays in (0, 1) (a state leaving it
stops the run with one line naming the step, never a NaN field)."""
from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .base import FreeEnergy


@dataclass(frozen=True)
class FloryHuggins(FreeEnergy):
    chi: float = 2.5
    n_a: float = 1.0
    n_b: float = 1.0
    name = "flory_huggins"
    variable = "c"
    domain = (0.0, 1.0)

    def f(self, x):
        x = np.asarray(x, dtype=np.float64)
        with np.errstate(divide="ignore", invalid="ignore"):
            a = np.where(x > 0, x * np.log(np.where(x > 0, x, 1.0)), 0.0)
            y = 1.0 - x
            b = np.where(y > 0, y * np.log(np.where(y > 0, y, 1.0)), 0.0)
        return a / self.n_a + b / self.n_b + self.chi * x * (1.0 - x)

    def fp(self, x):
        return ((np.log(x) + 1.0) / self.n_a - (np.log(1.0 - x) + 1.0) / self.n_b
                + self.chi * (1.0 - 2.0 * x))

    def fpp(self, x):
        return 1.0 / (self.n_a * x) + 1.0 / (self.n_b * (1.0 - x)) - 2.0 * self.chi

    @property
    def chi_critical(self) -> float:
        return 0.5 * (1 / math.sqrt(self.n_a) + 1 / math.sqrt(self.n_b)) ** 2

    @property
    def c_critical(self) -> float:
        return math.sqrt(self.n_b) / (math.sqrt(self.n_a) + math.sqrt(self.n_b))

    def spinodals(self):
        # f″ = 0  ⇔  2χ n_a n_b c² − (2χ n_a n_b + n_b − n_a) c + n_a = 0 ... times c(1−c):
        # n_b (1 − c) + n_a c − 2χ n_a n_b c (1 − c) = 0
        a, b, k = self.n_a, self.n_b, self.chi
        qa, qb, qc = 2 * k * a * b, -(2 * k * a * b - a + b), b
        disc = qb * qb - 4 * qa * qc
        if k <= self.chi_critical or disc <= 0:
            return None
        r = math.sqrt(disc)
        return (-qb - r) / (2 * qa), (-qb + r) / (2 * qa)

    def fpp_bound(self, lo, hi):
        """f″ is convex on (0, 1): its maximum over [lo, hi] is at an end (the ends clipped
        1e-12 inside the domain)."""
        lo = max(float(min(lo, hi)), 1e-12)
        hi = min(float(max(lo, hi)), 1.0 - 1e-12)
        return float(max(self.fpp(lo), self.fpp(hi)))

    def jit_fp(self, dtype=np.float64):
        import math as m

        from numba import njit

        t = np.dtype(dtype).type
        ia, ib, chi, one, two = t(1 / self.n_a), t(1 / self.n_b), t(self.chi), t(1), t(2)

        @njit(inline="always")
        def fp(x):
            return ((m.log(x) + one) * ia - (m.log(one - x) + one) * ib
                    + chi * (one - two * x))

        return fp

    def describe(self):
        return f"flory_huggins chi={self.chi:g} n_a={self.n_a:g} n_b={self.n_b:g}"
