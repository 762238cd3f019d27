"""One packing of the stage parameters for every field backend.

:func:`pack` turns (model, grid, boundary, dtype) into :class:`StageParams`; the CPU stages take
``params`` (``[M, κ, a0, a1, a2, a3, 1/h², 2·ndim]`` in the array dtype, so no float64 literal
promotes float32 arithmetic), ``bcode`` and ``bvalue``; the CUDA stages take :attr:`StageParams.
scalars` (``M/h², κ/h², 2·ndim, a0..a3, φ_wall, μ_wall``), derived from the same numbers.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .model import Boundary, CahnHilliard, Grid

PRECISIONS = {"float64": np.float64, "float32": np.float32, "fp64": np.float64,
              "fp32": np.float32, "double": np.float64, "single": np.float32}


def precision_dtype(precision) -> np.dtype:
    """float32 / float64 from a name (``float64``, ``fp32``, ``double``, …) or a dtype."""
    if isinstance(precision, str):
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; choose float64 or float32")
        return np.dtype(PRECISIONS[precision])
    dt = np.dtype(precision)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"unsupported precision {precision!r}; choose float64 or float32")
    return dt


@dataclass(frozen=True)
class StageParams:
    dtype: np.dtype
    #: ``[M, κ, a0, a1, a2, a3, 1/h², 2·ndim]`` (array dtype)
    params: np.ndarray
    bcode: int
    #: fixed-boundary value φ_wall (array dtype)
    bvalue: object
    #: ``(M/h², κ/h², 2·ndim, a0, a1, a2, a3, φ_wall, μ_wall)`` (array dtype)
    scalars: tuple


def make_params(model: CahnHilliard, grid: Grid, dtype=np.float64) -> np.ndarray:
    """``[M, κ, a0, a1, a2, a3, 1/h², 2·ndim]`` in ``dtype`` (computed in float64, then cast)."""
    h = float(grid.spacing)
    return np.array([model.mobility, model.kappa, *model.coefficients, 1.0 / (h * h),
                     2.0 * grid.ndim], dtype=dtype)


def stage_scalars(model: CahnHilliard, grid: Grid, boundary: Boundary, dtype) -> tuple:
    """(M/h², κ/h², 2d, a0, a1, a2, a3, φ_fixed, μ_fixed) as scalars of ``dtype``."""
    t = np.dtype(dtype).type
    h2 = float(grid.spacing) ** 2
    a0, a1, a2, a3 = (float(c) for c in model.coefficients)
    v = float(boundary.value)
    # a general law's f′ may diverge at v = 0 (Flory–Huggins): μ_wall only matters on fixed walls
    wall = boundary.kind == "fixed" or not getattr(model, "general", False)
    return (t(model.mobility / h2), t(model.kappa / h2), t(2 * grid.ndim), t(a0), t(a1), t(a2),
            t(a3), t(v), t(float(model.fprime(v)) if wall else 0.0))


def pack(model: CahnHilliard, grid: Grid, boundary: Boundary, dtype) -> StageParams:
    dt = precision_dtype(dtype)
    return StageParams(dt, make_params(model, grid, dt), int(boundary.code),
                       dt.type(boundary.value), stage_scalars(model, grid, boundary, dt))
