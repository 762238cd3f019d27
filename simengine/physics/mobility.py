"""Mobilities M(x): constant, degenerate, polynomial.

* ``Constant(m)``: M = m (the default; the existing kernels run it as M·lap μ).
* ``Degenerate(m0, variable)``: M = m0 (1 − φ²) in φ-form, m0 c (1 − c) for a free energy in c
  (``double_well``, ``flory_huggins``) — clipped at 0 where a state overshoots the wells
  (M ≥ 0 keeps the flux down the gradient of μ).
* ``PolynomialMobility(coefficients)``: M = Σ b_k x^k, clipped at 0 likewise.

Each has NumPy ``__call__``, ``jit_m(dtype)`` (the kernels' numba function) and ``bound(lo, hi)``
(max M over a range: the reference mobility A ≥ max M of the spectral splitting and the
stability limit's M).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

SAMPLES = 4097


@dataclass(frozen=True)
class Constant:
    m: float = 1.0
    name = "constant"
    constant = True

    def __call__(self, x):
        return self.m + 0.0 * np.asarray(x, dtype=np.float64)

    def bound(self, lo, hi) -> float:
        return float(self.m)

    def jit_m(self, dtype=np.float64):
        from numba import njit

        m = np.dtype(dtype).type(self.m)

        @njit(inline="always")
        def mob(x):
            return m

        return mob

    def describe(self):
        return f"constant {self.m:g}"


@dataclass(frozen=True)
class Degenerate:
    m0: float = 1.0
    #: ``phi``: m0 (1 − φ²); ``c``: m0 c (1 − c)
    variable: str = "phi"
    name = "degenerate"
    constant = False

    def __call__(self, x):
        x = np.asarray(x, dtype=np.float64)
        q = 1.0 - x * x if self.variable == "phi" else x * (1.0 - x)
        return self.m0 * np.maximum(q, 0.0)

    def bound(self, lo, hi) -> float:
        return float(self.m0 if self.variable == "phi" else 0.25 * self.m0)

    def jit_m(self, dtype=np.float64):
        from numba import njit

        t = np.dtype(dtype).type
        m0, one, zero = t(self.m0), t(1), t(0)
        if self.variable == "phi":
            @njit(inline="always")
            def mob(x):
                q = one - x * x
                return m0 * (q if q > zero else zero)
        else:
            @njit(inline="always")
            def mob(x):
                q = x * (one - x)
                return m0 * (q if q > zero else zero)
        return mob

    def describe(self):
        form = "(1 − φ²)" if self.variable == "phi" else "c(1 − c)"
        return f"degenerate {self.m0:g}·{form}"


@dataclass(frozen=True)
class PolynomialMobility:
    coefficients: tuple = (1.0,)
    name = "polynomial"
    constant = False

    def __post_init__(self):
        object.__setattr__(self, "coefficients", tuple(float(b) for b in self.coefficients))

    def __call__(self, x):
        x = np.asarray(x, dtype=np.float64)
        acc = self.coefficients[-1] + 0.0 * x
        for b in self.coefficients[-2::-1]:
            acc = b + x * acc
        return np.maximum(acc, 0.0)

    def bound(self, lo, hi) -> float:
        return float(np.max(self(np.linspace(min(lo, hi), max(lo, hi), SAMPLES))))

    def jit_m(self, dtype=np.float64):
        from numba import njit

        t = np.dtype(dtype).type
        coefs = tuple(t(b) for b in self.coefficients)
        n, top, zero = len(coefs), coefs[-1], t(0)

        @njit(inline="always")
        def mob(x):
            acc = top
            for k in range(n - 2, -1, -1):
                acc = coefs[k] + x * acc
            return acc if acc > zero else zero

        return mob

    def describe(self):
        return "polynomial M = [" + ", ".join(f"{b:g}" for b in self.coefficients) + "]"
