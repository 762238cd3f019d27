"""Cahn–Hilliard problem definition: parameters, grid, boundary. No backend code here.

The equation is ∂φ/∂t = ∇·(M∇μ) with μ = f'(φ) − κ∇²φ. ``CahnHilliard`` is what the engines
take: with ``law=None`` (or a law whose f′ is a cubic and whose mobility is constant) it is the
polynomial f'(φ) = a0 + a1 φ + a2 φ² + a3 φ³ with constant M (the classic form −bφ + uφ³ is
``a = (0, -b, 0, u)``), run by the cubic kernels; any other law (:class:`simengine.physics.
Model`: a free energy, M(φ), noise) is run by the model kernels, and ``coefficients`` are NaN so
that no cubic path can run it silently.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

BOUNDARY_KINDS = ("periodic", "mirror", "fixed")


def fprime_poly(c, a0, a1, a2, a3):
    """f'(c) = a0 + a1 c + a2 c² + a3 c³ in Horner form: the one definition (NumPy here and in
    field/reference.py, compiled by numba for the CPU kernels in field/cpu/common.py)."""
    return a0 + c * (a1 + c * (a2 + c * a3))


#: integer codes the kernels use for the boundary kind
BOUNDARY_CODE = {"periodic": 0, "mirror": 1, "fixed": 2}


NAN4 = (float("nan"),) * 4


@dataclass(frozen=True)
class CahnHilliard:
    """Model parameters. ``coefficients`` are a0..a3 of f'(φ) = a0 + a1φ + a2φ² + a3φ³;
    ``law`` the physics object (:class:`simengine.physics.Model`) when there is one
    (:meth:`of`). ``mobility`` is the constant M, or for M(φ) the reference mobility A = max M
    over the range the run visits (stability limit, spectral splitting)."""

    mobility: float = 1.0
    kappa: float = 1.0
    coefficients: tuple = (0.0, -1.0, 0.0, 1.0)
    law: object = None
    #: f(0) of the law's cubic form (PFHub's double well: ρcα²cβ²), added to F by observables
    f_offset: float = 0.0

    @classmethod
    def classic(cls, mobility=1.0, kappa=1.0, b=1.0, u=1.0):
        return cls(float(mobility), float(kappa), (0.0, -float(b), 0.0, float(u)))

    @classmethod
    def of(cls, law, reference_mobility=None):
        """The engines' view of a physics :class:`~simengine.physics.Model`: a cubic law with
        constant M becomes the coefficients the cubic kernels run (``law`` kept for its σ,
        F_min, noise); any other keeps ``law`` and NaN coefficients."""
        cubic = law.cubic
        m = law.mobility.m if law.mobility.constant else reference_mobility
        if m is None:
            m = law.mobility_bound(*((0.0, 1.0) if law.variable == "c" else (-1.0, 1.0)))
        offset = float(getattr(law.free_energy, "offset", 0.0)) if cubic is not None else 0.0
        return cls(float(m), float(law.kappa), tuple(cubic) if cubic is not None else NAN4,
                   law, offset)

    @property
    def general(self) -> bool:
        """True when the model kernels must run it (f′ not a cubic, or M(φ) not constant)."""
        return self.law is not None and self.law.general

    @property
    def free_energy(self):
        """The law's free energy (σ, equilibria, f_min for ``interface_energy``), or None."""
        return None if self.law is None else self.law.free_energy

    @property
    def variable_mobility(self) -> bool:
        return self.law is not None and not self.law.mobility.constant

    @property
    def noise(self):
        n = None if self.law is None else self.law.noise
        return n if n is not None and n.amplitude > 0 else None

    def fprime(self, phi):
        if self.general:
            return self.law.fp(phi)
        return fprime_poly(phi, *self.coefficients)

    def fsecond(self, phi):
        if self.general:
            return self.law.fpp(phi)
        _, a1, a2, a3 = self.coefficients
        return a1 + phi * (2.0 * a2 + phi * 3.0 * a3)

    def mobility_at(self, phi):
        if self.variable_mobility:
            return self.law.m(phi)
        return self.mobility + 0.0 * phi

    def f(self, phi):
        """Bulk free-energy density: the cubic form's with f(0) = 0 (``f_offset`` is added to
        the total by the observables), a general law's as it is."""
        if self.general:
            return self.law.f(phi)
        a0, a1, a2, a3 = self.coefficients
        return phi * (a0 + phi * (a1 / 2.0 + phi * (a2 / 3.0 + phi * a3 / 4.0)))



@dataclass(frozen=True)
class Grid:
    shape: tuple
    spacing: float = 1.0

    @property
    def ndim(self) -> int:
        return len(self.shape)

    @property
    def cells(self) -> int:
        return int(np.prod(self.shape))


@dataclass(frozen=True)
class Boundary:
    """``periodic`` wraps; ``mirror`` is the edge-duplicating reflection (φ₋₁ = φ₀, φ₋₂ = φ₁) of
    both φ and μ (zero flux, conserves mass); ``fixed`` holds φ = ``value`` in every cell outside
    the domain and μ = f'(value) there (the outside is a uniform reservoir at ``value``, whose
    Laplacian is zero)."""

    kind: str = "periodic"
    value: float = 0.0

    @property
    def code(self) -> int:
        return BOUNDARY_CODE[self.kind]
