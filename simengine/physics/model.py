"""The model object: free energy + mobility + κ (+ noise), what every target compiles.

``Model.cubic`` is f′'s (a0, a1, a2, a3) when f′ is a polynomial of degree ≤ 3 and the mobility
is constant: then the existing kernels run it with the same arithmetic as before (the polynomial
default). Otherwise ``general`` is True and the model kernels of ``field/`` (factories closing
over :meth:`jit_fp` and :meth:`jit_m`) run it.

Attributes for the energy length L_E = 2Vσ/(F − F_min) and the stability checks:
``sigma`` (planar interface tension), ``f_min(mean)`` (equilibrium bulk density),
``equilibria``, ``fpp_bound(lo, hi)`` (max f″), ``mobility_bound(lo, hi)`` (max M).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass, field

import numpy as np

from .mobility import Constant
from .polynomial import Polynomial


@dataclass(frozen=True)
class Noise:
    """Conserved thermal noise ∇·ξ, ⟨ξ_a(r,t) ξ_b(r′,t′)⟩ = 2·amplitude·M·δ_ab δ(r−r′) δ(t−t′)
    (``amplitude`` = k_BT), drawn by a counter-based generator keyed by (seed, step, cell)."""

    amplitude: float = 0.0
    seed: int = 0


@dataclass(frozen=True)
class Model:
    free_energy: object = field(default_factory=Polynomial)
    mobility: object = field(default_factory=Constant)
    kappa: float = 1.0
    noise: Noise | None = None

    # ---------------------------------------------------------------- what runs it
    @property
    def cubic(self):
        if not self.mobility.constant:
            return None
        return self.free_energy.cubic()

    @property
    def general(self) -> bool:
        return self.cubic is None

    @property
    def variable(self) -> str:
        return self.free_energy.variable

    @property
    def domain(self):
        return self.free_energy.domain

    def describe(self) -> str:
        words = [self.free_energy.describe(), f"mobility {self.mobility.describe()}",
                 f"kappa={self.kappa:g}"]
        if self.noise is not None:
            words.append(f"noise amplitude={self.noise.amplitude:g} seed={self.noise.seed}")
        return ", ".join(words)

    # ---------------------------------------------------------------- pointwise
    def fp(self, x):
        return self.free_energy.fp(x)

    def fpp(self, x):
        return self.free_energy.fpp(x)

    def f(self, x):
        return self.free_energy.f(x)

    def m(self, x):
        return self.mobility(x)

    @functools.lru_cache(maxsize=4)
    def jit_fp(self, dtype=np.float64):
        return self.free_energy.jit_fp(np.dtype(dtype))

    @functools.lru_cache(maxsize=4)
    def jit_m(self, dtype=np.float64):
        return self.mobility.jit_m(np.dtype(dtype))

    # ---------------------------------------------------------------- derived numbers
    @property
    def equilibria(self):
        return self.free_energy.equilibria()

    @functools.cached_property
    def sigma(self) -> float:
        """Planar interface tension σ = ∫ √(2κ(f − tangent)) dx between the binodal phases."""
        return self.free_energy.sigma(self.kappa)

    def f_min(self, mean: float) -> float:
        """Equilibrium bulk free-energy density of a state of mean ``mean`` (F_min = V·this)."""
        return self.free_energy.f_min(mean)

    def fpp_bound(self, lo: float, hi: float) -> float:
        """max f″ over [lo, hi] (the explicit stability limit's stiffness; the spectral S)."""
        return self.free_energy.fpp_bound(lo, hi)

    def mobility_bound(self, lo: float, hi: float) -> float:
        return self.mobility.bound(lo, hi)
