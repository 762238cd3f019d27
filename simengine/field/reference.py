"""Plain NumPy reference of the discrete Cahn–Hilliard operator and time steppers.

This is the specification every kernel (CPU strategies and CUDA kernels) is tested against. It is
written for clarity, not speed: ghost cells by ``np.pad``, whole-array operations.

Discretisation (any dimension d, spacing h):

* ``lap(g) = Σ_axes (g[i+1] + g[i-1] - 2 g[i]) / h²`` (3/5/7-point),
* ``μ = f'(φ) − κ lap(φ)`` at every cell, ghost values of φ from the boundary rule,
* ``R(φ) = M lap(μ)``, ghost values of μ from the boundary rule (13-point footprint in 2D).

Boundary rules (see :class:`simengine.field.model.Boundary`): periodic wrap; mirror is the
edge-duplicating reflection for φ and μ; fixed puts φ = value and μ = f'(value) in ghost cells.
"""
from __future__ import annotations

import numpy as np

from . import integrator as integ
from .model import Boundary, CahnHilliard, Grid


def pad(g: np.ndarray, width: int, boundary: Boundary, fill: float) -> np.ndarray:
    """Pad ``g`` by ``width`` ghost cells on every side following the boundary rule.

    ``fill`` is the ghost value for fixed boundaries.
    """
    if boundary.kind == "periodic":
        return np.pad(g, width, mode="wrap")
    if boundary.kind == "mirror":
        return np.pad(g, width, mode="symmetric")  # edge-duplicating reflection
    if boundary.kind == "fixed":
        return np.pad(g, width, mode="constant", constant_values=fill)
    raise ValueError(f"unknown boundary {boundary.kind!r}")


def _lap_of_padded(gp: np.ndarray, h: float) -> np.ndarray:
    """5-point-style Laplacian of the interior of a 1-cell-padded array."""
    nd = gp.ndim
    core = tuple(slice(1, -1) for _ in range(nd))
    c = gp[core]
    out = np.zeros_like(c)
    for ax in range(nd):
        lo = list(core)
        hi = list(core)
        lo[ax] = slice(0, -2)
        hi[ax] = slice(2, None)
        out += gp[tuple(lo)] + gp[tuple(hi)]
    out -= 2 * nd * c
    return out / (h * h)


def chemical_potential(phi, model: CahnHilliard, grid: Grid, boundary: Boundary):
    """μ = f'(φ) − κ lap(φ) on every cell."""
    php = pad(phi, 1, boundary, boundary.value)
    return model.fprime(phi) - model.kappa * _lap_of_padded(php, grid.spacing)


def face_divergence(phi, mu, model: CahnHilliard, grid: Grid, boundary: Boundary):
    """∇·(M∇μ) in the conservative form: Σ_axes [M_{i+½}(μ_{i+1} − μ_i) − M_{i−½}(μ_i −
    μ_{i−1})] / h², face mobility M_{i+½} = (M(φ_i) + M(φ_{i+1}))/2, ghost φ and μ from the
    boundary rule (fixed: M(v) and μ = f'(v) outside)."""
    mu_ghost = float(model.fprime(boundary.value)) if boundary.kind == "fixed" else 0.0
    mp = pad(model.mobility_at(phi), 1, boundary, float(model.mobility_at(boundary.value)))
    up = pad(mu, 1, boundary, mu_ghost)
    h = grid.spacing
    nd = phi.ndim
    core = tuple(slice(1, -1) for _ in range(nd))
    out = np.zeros_like(mu)
    for ax in range(nd):
        lo, hi = list(core), list(core)
        lo[ax], hi[ax] = slice(0, -2), slice(2, None)
        lo, hi = tuple(lo), tuple(hi)
        fhi = (mp[core] + mp[hi]) * 0.5 * (up[hi] - up[core])
        flo = (mp[lo] + mp[core]) * 0.5 * (up[core] - up[lo])
        out += fhi - flo
    return out / (h * h)


def rhs(phi, model: CahnHilliard, grid: Grid, boundary: Boundary):
    """R(φ) = M lap(μ) (M(φ): the conservative face form, :func:`face_divergence`)."""
    mu = chemical_potential(phi, model, grid, boundary)
    if model.variable_mobility:
        return face_divergence(phi, mu, model, grid, boundary)
    mu_ghost = float(model.fprime(boundary.value)) if boundary.kind == "fixed" else 0.0
    mup = pad(mu, 1, boundary, mu_ghost)
    return model.mobility * _lap_of_padded(mup, grid.spacing)


def stage(src, base, coef, model, grid, boundary):
    """One explicit stage: ``base + coef * R(src)`` (Euler is ``stage(φ, φ, dt)``)."""
    return base + coef * rhs(src, model, grid, boundary)


def step(phi, dt, model, grid, boundary, integrator="rk2"):
    """One time step of ``integrator`` (:mod:`simengine.field.integrator`): ``rk2`` is the
    explicit midpoint method φ* = φ + dt/2 R(φ); φ' = φ + dt R(φ*); ``euler`` is φ + dt R(φ)."""
    sch = integ.scheme(integrator)
    buffers = [phi, None, None]
    for st in sch.stages:
        buffers[st.out] = stage(buffers[st.src], buffers[st.base], st.fraction * dt, model, grid,
                                boundary)
    integ.rotate(buffers, sch)
    return buffers[0]


def run(phi, nsteps, dt, model, grid, boundary, integrator="rk2"):
    for _ in range(nsteps):
        phi = step(phi, dt, model, grid, boundary, integrator)
    return phi
