"""What every free energy provides, with numerical defaults where a form has no closed one.

A free energy ``f`` of the order parameter x (φ, or the concentration c) defines NumPy ``f``,
``fp`` (f′), ``fpp`` (f″) and ``jit_fp()`` (a numba function of one float: the kernels' f′). The
base class derives from them, numerically:

* ``spinodals()``: the zeros of f″ (the two ends of the unstable range), or ``None``;
* ``binodal()``: the common tangent (x₋, x₊, slope s): f′(x₋) = f′(x₊) = s and
  f(x₊) − f(x₋) = s (x₊ − x₋) — the coexisting phases (the two minima for a symmetric well);
* ``tangent(x)``: the tangent line f(x₋) + s (x − x₋) (the lever-rule density of the
  phase-separated state; a state of mean x̄ in the binodal range has F_min = V·tangent(x̄));
* ``sigma(kappa)``: the planar interface tension σ = ∫_{x₋}^{x₊} √(2κ (f − tangent)) dx (the
  gradient-energy integral of the 1-D equilibrium profile);
* ``fpp_bound(lo, hi)``: max f″ over [lo, hi] (the stiffness bound of the explicit stability
  limit and of the spectral stabilisation).
"""
from __future__ import annotations

import math

import numpy as np

#: points of the grid the numerical bounds sample (plus the interval's ends and f‴'s zeros)
SAMPLES = 4097


class FreeEnergy:
    name = "?"
    #: the field's variable: ``phi`` or ``c`` (what initial fields, plots and units speak)
    variable = "phi"
    #: the open interval a state must stay in (``None``: the whole real line)
    domain = None

    # ---------------------------------------------------------------- to be defined
    def f(self, x):
        raise NotImplementedError

    def fp(self, x):
        raise NotImplementedError

    def fpp(self, x):
        raise NotImplementedError

    def jit_fp(self):
        """f′ as a numba ``njit(inline='always')`` function of one float (its constants
        closed over, so float32 arithmetic stays float32 where the kernel casts them)."""
        raise NotImplementedError

    def cubic(self):
        """``(a0, a1, a2, a3)`` when f′ is a polynomial of degree ≤ 3 (the existing kernels
        run it as they always did), else ``None``."""
        return None

    def describe(self) -> str:
        return self.name

    # ---------------------------------------------------------------- derived
    def search_range(self):
        """Where the numerical routines look for the spinodals."""
        if self.domain is not None:
            lo, hi = self.domain
            eps = 1e-9 * (hi - lo)
            return lo + eps, hi - eps
        return -10.0, 10.0

    def spinodals(self):
        lo, hi = self.search_range()
        x = np.linspace(lo, hi, SAMPLES)
        v = self.fpp(x)
        neg = np.nonzero(v < 0)[0]
        if neg.size == 0:
            return None
        from scipy.optimize import brentq

        i, j = int(neg[0]), int(neg[-1])
        a = x[i] if i == 0 else brentq(self.fpp, x[i - 1], x[i])
        b = x[j] if j == len(x) - 1 else brentq(self.fpp, x[j], x[j + 1])
        return float(a), float(b)

    def _branch(self, s, side):
        """The x of slope f′(x) = s on the convex branch left (side −1) or right (+1) of the
        spinodal range."""
        from scipy.optimize import brentq

        sp = self.spinodals()
        lo, hi = self.search_range()
        if side < 0:
            a, b = lo, sp[0]
            while self.domain is None and self.fp(a) > s:
                a = 2 * a - 1
        else:
            a, b = sp[1], hi
            while self.domain is None and self.fp(b) < s:
                b = 2 * b + 1
        return brentq(lambda x: float(self.fp(x)) - s, a, b, xtol=1e-15, rtol=1e-15)

    def binodal(self):
        """``(x₋, x₊, s)``, or ``None`` without a spinodal range (one phase only)."""
        from scipy.optimize import brentq

        sp = self.spinodals()
        if sp is None:
            return None
        s_lo, s_hi = float(self.fp(sp[1])), float(self.fp(sp[0]))

        def gap(s):
            a, b = self._branch(s, -1), self._branch(s, +1)
            return (float(self.f(b)) - s * b) - (float(self.f(a)) - s * a)

        pad = 1e-12 * max(1.0, abs(s_lo), abs(s_hi))
        s = brentq(gap, s_lo + pad, s_hi - pad, xtol=1e-15, rtol=1e-15)
        return self._branch(s, -1), self._branch(s, +1), s

    def equilibria(self):
        """``(x₋, x₊)`` of the coexisting phases, or ``None``."""
        b = self.binodal()
        return None if b is None else (b[0], b[1])

    def tangent(self, x):
        a, _, s = self.binodal()
        return float(self.f(a)) + s * (np.asarray(x, dtype=np.float64) - a)

    def f_min(self, mean: float) -> float:
        """The equilibrium free-energy density of a state of mean ``mean`` (bulk only, no
        interface): the tangent inside the binodal range, f(mean) outside."""
        b = self.binodal()
        if b is None or not b[0] < mean < b[1]:
            return float(self.f(mean))
        return float(self.tangent(mean))

    def sigma(self, kappa: float) -> float:
        from scipy.integrate import quad

        b = self.binodal()
        if b is None:
            return float("nan")
        a, c, _ = b

        def g(x):
            return math.sqrt(max(0.0, 2.0 * kappa * (float(self.f(x)) - float(self.tangent(x)))))

        return float(quad(g, a, c, limit=200, epsabs=0.0, epsrel=1e-11)[0])

    def fpp_bound(self, lo: float, hi: float) -> float:
        lo, hi = float(min(lo, hi)), float(max(lo, hi))
        if self.domain is not None:
            d0, d1 = self.domain
            eps = 1e-12 * (d1 - d0)
            lo, hi = max(lo, d0 + eps), min(hi, d1 - eps)
        x = np.linspace(lo, hi, SAMPLES)
        return float(np.max(self.fpp(x)))
