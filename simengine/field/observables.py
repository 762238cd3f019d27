"""Field observables (host NumPy; these are the definitions the CPU and CUDA solvers must match).

* ``mass(φ)`` = mean φ.
* ``free_energy(φ)`` = h^d Σ_cells [ f(φ) + κ/2 Σ_axes ((φ[i+1] − φ[i]) / h)² ] with forward
  differences; f is the bulk density with f(0) = 0 (``CahnHilliard.f``). Boundary terms per axis:
  periodic wraps (the last cell's difference is to cell 0); mirror: the difference past the last
  cell is 0 (edge-duplicating ghost); fixed: both wall differences are added, (φ₀ − v)² at the low
  side and (v − φ_{N−1})² at the high side.
* ``characteristic_length(φ, h)`` = 2π / k₁ with k₁ = Σ_{k≠0} |k| S(k) / Σ_{k≠0} S(k) and
  S(k) = |FFT(φ − mean φ)|² (angular wavenumbers, k = 2π·fftfreq(N, h) per axis). A flat field has
  no structure: the length is ``inf``.
"""
from __future__ import annotations

import numpy as np

from .model import Boundary, CahnHilliard, Grid


def mass(phi) -> float:
    return float(np.mean(phi, dtype=np.float64))


def free_energy(phi, model: CahnHilliard, grid: Grid, boundary: Boundary) -> float:
    p = np.asarray(phi, dtype=np.float64)
    h = float(grid.spacing)
    total = float(np.sum(model.f(p)))
    grad2 = 0.0
    for ax in range(p.ndim):
        d = np.diff(p, axis=ax)
        grad2 += float(np.sum(d * d))
        if boundary.kind == "periodic":
            first = np.take(p, 0, axis=ax)
            last = np.take(p, -1, axis=ax)
            w = first - last
            grad2 += float(np.sum(w * w))
        elif boundary.kind == "fixed":
            v = float(boundary.value)
            w0 = np.take(p, 0, axis=ax) - v
            w1 = v - np.take(p, -1, axis=ax)
            grad2 += float(np.sum(w0 * w0)) + float(np.sum(w1 * w1))
        elif boundary.kind != "mirror":
            raise ValueError(f"unknown boundary {boundary.kind!r}")
    total += 0.5 * model.kappa * grad2 / (h * h)
    return total * h ** p.ndim


def characteristic_length(phi, spacing: float = 1.0) -> float:
    p = np.asarray(phi, dtype=np.float64)
    s = np.abs(np.fft.fftn(p - p.mean())) ** 2
    ks = np.meshgrid(*[2 * np.pi * np.fft.fftfreq(n, d=spacing) for n in p.shape], indexing="ij")
    kmag = np.sqrt(sum(k * k for k in ks))
    mask = kmag > 0
    st = float(s[mask].sum())
    if not np.isfinite(st):
        return float("nan")
    if st <= 1e-300 * max(1, p.size):
        return float("inf")
    k1 = float((kmag[mask] * s[mask]).sum()) / st
    return float(2 * np.pi / k1)


def reductions(phi, model, grid, boundary) -> dict:
    """``dict(mass, free_energy, min, max)`` of a host field."""
    return dict(mass=mass(phi), free_energy=free_energy(phi, model, grid, boundary),
                min=float(np.min(phi)), max=float(np.max(phi)))
