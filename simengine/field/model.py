"""Cahn–Hilliard problem definition: parameters, grid, boundary. No backend code here.

The equation is ∂φ/∂t = M ∇²μ with μ = f'(φ) − κ∇²φ and the polynomial
f'(φ) = a0 + a1 φ + a2 φ² + a3 φ³ (the classic form −bφ + uφ³ is ``a = (0, -b, 0, u)``).
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


@dataclass(frozen=True)
class CahnHilliard:
    """Model parameters. ``coefficients`` are a0..a3 of f'(φ) = a0 + a1φ + a2φ² + a3φ³."""

    mobility: float = 1.0
    kappa: float = 1.0
    coefficients: tuple = (0.0, -1.0, 0.0, 1.0)

    @classmethod
    def classic(cls, mobility=1.0, kappa=1.0, b=1.0, u=1.0):
        return cls(float(mobility), float(kappa), (0.0, -float(b), 0.0, float(u)))

    def fprime(self, phi):
        return fprime_poly(phi, *self.coefficients)

    def fsecond(self, phi):
        _, a1, a2, a3 = self.coefficients
        return a1 + phi * (2.0 * a2 + phi * 3.0 * a3)

    def f(self, phi):
        """Bulk free-energy density with f(0) = 0."""
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
