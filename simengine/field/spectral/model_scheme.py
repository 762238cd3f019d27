"""The spectral integrator for a general model (CPU, one process): any f′, and M(φ) by the
semi-implicit splitting of Zhu, Chen, Shen & Tikare, Phys. Rev. E 60, 3564 (1999), §II.

* **any f′** (constant M): the scheme of :mod:`.scheme` with g = f′(φ*) − f′(v) − S(φ* − v)
  evaluated by the law's NumPy f′ (:class:`ModelKernels`).
* **M(φ)**: with a constant A ≥ max M (``model.mobility``: the reference mobility), write
  ∇·(M∇μ) = [∇·(M∇μ) + Dψ] − Dψ with D the operator of symbol Aκλ² − ASλ ≥ 0: the stiff −Dψ is
  implicit, the bracket explicit at φ*, and the explicit ∇·(M∇μ) is the stencil's conservative
  face form (``reference.rhs``, the same discretisation as RK2), so the scheme converges to the
  stencil solution as dt → 0 (symbol ``fd`` only). Per step: ψ̂ⁿ⁺¹ = (c1 ψ̂ⁿ − c2 ψ̂ⁿ⁻¹ + dt·(R̂(φ*)
  + D ψ̂*)) / (a + dt·D): two forward transforms and one inverse (with M constant this is exactly
  the SBDF2 step of :mod:`.scheme`).
"""
from __future__ import annotations

import numpy as np

from .. import reference
from .scheme import SBDF2, Kernels


class ModelKernels(Kernels):
    """The pointwise parts with the law's f′ (NumPy)."""

    def __init__(self, xp, dtype, model):
        super().__init__(xp, dtype)
        self.model = model

    def extrapolate_g(self, phi, prev, w, c):
        star = phi if prev is None else (1 + w) * phi - w * prev
        star = star.astype(self.dtype, copy=False)
        fv, s, v = c[4], c[5], c[6]
        g = self.model.fprime(star).astype(self.dtype, copy=False) - fv - s * (star - v)
        return star, g.astype(self.dtype, copy=False)


class MobilitySBDF2(SBDF2):
    """SBDF2 with M(φ): the explicit part R(φ*) + Dψ* (module docstring)."""

    def __init__(self, model, grid, boundary, transform, kernels, stabilization):
        super().__init__(model, boundary, transform, kernels, stabilization)
        self.model, self.grid, self.boundary = model, grid, boundary
        self.mlam = np.ones_like(self.mlam)

    def _explicit(self, phi, prev, w):
        star = phi if prev is None else (1 + w) * phi - w * prev
        star = star.astype(self.dtype, copy=False)
        r = reference.rhs(star, self.model, self.grid, self.boundary).astype(self.dtype,
                                                                           copy=False)
        psi = star - self.dtype.type(self.v)
        return star, self.tr.forward(r) + self.dop * self.tr.forward(psi)
