"""PFHub benchmark 1's double well in the concentration: f(c) = ρ (c − cα)² (cβ − c)².

f′ is a cubic in c, so the field *is* c and every kernel runs it as a polynomial; σ and the
equilibria have closed forms: c± = cα, cβ, σ = √(2κρ) (cβ − cα)³ / 6, F_min = 0."""
from __future__ import annotations

import math
from dataclasses import dataclass

from .polynomial import Polynomial


@dataclass(frozen=True)
class DoubleWell(Polynomial):
    rho: float = 5.0
    c_alpha: float = 0.3
    c_beta: float = 0.7
    name = "double_well"
    variable = "c"

    def __post_init__(self):
        r, a, b = float(self.rho), float(self.c_alpha), float(self.c_beta)
        # f = ρ(c−a)²(c−b)² = ρ[c⁴ − 2(a+b)c³ + (a²+4ab+b²)c² − 2ab(a+b)c + a²b²]
        coefs = (-2 * r * a * b * (a + b), 2 * r * (a * a + 4 * a * b + b * b),
                 -6 * r * (a + b), 4 * r)
        object.__setattr__(self, "coefficients", coefs)
        object.__setattr__(self, "offset", r * a * a * b * b)
        super().__post_init__()

    def f(self, x):
        return self.rho * (x - self.c_alpha) ** 2 * (self.c_beta - x) ** 2

    def binodal(self):
        return (self.c_alpha, self.c_beta, 0.0)

    def sigma(self, kappa):
        return math.sqrt(2 * kappa * self.rho) * (self.c_beta - self.c_alpha) ** 3 / 6.0

    def describe(self):
        return f"double_well rho={self.rho:g} c_alpha={self.c_alpha:g} c_beta={self.c_beta:g}"
