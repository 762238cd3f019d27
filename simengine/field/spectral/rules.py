"""The spectral integrator's row of the plan (the agreed interface, docs/architecture.md):
functions of a *problem description* — any object with ``ndim``, ``shape``, ``precision``,
``boundary``, ``integrator``, ``backend`` (resolved: ``cpu`` | ``cuda``), ``ranks``, ``devices``,
``symbol`` and ``adaptive`` (read duck-typed; missing ``symbol``/``adaptive``/``ranks``/``devices``
mean ``fd``/False/1/1). Never picked by ``auto``: a scenario asks for it by name.
"""
from __future__ import annotations

import math

from .transforms import SYMBOLS, TRANSFORM_NAMES

#: arrays of the grid's size one step holds (φⁿ, φⁿ⁻¹, φ*, g, the candidate, the start step's
#: two extra levels; the spectra ψ̂ⁿ, ψ̂ⁿ⁻¹, ĝ, the candidate's; the symbol tables) — in the
#: compute precision — and the free-energy check's float64 temporaries
ARRAYS = 14
FLOAT64_TEMPORARIES = 3


def _get(problem, name, default):
    return getattr(problem, name, default)


def can_run(problem) -> tuple:
    """``(True, "")`` or ``(False, one-line reason)``."""
    if _get(problem, "integrator", "spectral") != "spectral":
        return False, f"not the spectral integrator ({problem.integrator})"
    boundary = _get(problem, "boundary", "periodic")
    if boundary not in TRANSFORM_NAMES:
        return False, f"integrator spectral has no transform for boundary {boundary!r}"
    symbol = _get(problem, "symbol", "fd") or "fd"
    if symbol not in SYMBOLS:
        return False, f"unknown solver.symbol {symbol!r}; choose one of {', '.join(SYMBOLS)}"
    ranks = _get(problem, "ranks", 1) or 1
    if ranks > 1 and _get(problem, "ndim", len(getattr(problem, "shape", (0, 0)))) < 2:
        return False, "integrator spectral on MPI ranks needs a grid of 2 or 3 axes"
    if ranks > 1 and int(problem.shape[0]) < ranks:
        return False, f"integrator spectral on {ranks} ranks needs at least {ranks} rows"
    if _get(problem, "devices", 1) > 1:
        return False, "integrator spectral runs on one GPU"
    if _get(problem, "precision", "float64") not in ("float32", "float64"):
        return False, f"integrator spectral computes in float32 or float64"
    if _get(problem, "backend", "cpu") == "cuda":
        from .solver import cupy_module

        try:
            cupy_module()
        except RuntimeError as exc:
            return False, str(exc)
    return True, ""


def describe(problem) -> str:
    """e.g. ``spectral sbdf2 fft symbol=fd adaptive`` (+ ``fused-step`` on one GPU, + ``slabs=2
    transpose=host-staged-alltoall`` on GPU ranks)."""
    symbol = _get(problem, "symbol", "fd") or "fd"
    words = ["spectral", "sbdf2", TRANSFORM_NAMES.get(_get(problem, "boundary", "periodic"),
                                                      "?"), f"symbol={symbol}"]
    if _get(problem, "adaptive", False):
        words.append("adaptive")
    ranks = _get(problem, "ranks", 1) or 1
    if ranks > 1:  # the transpose's transport (slabs.py)
        words.append(f"slabs={ranks} transpose=" + ("host-staged-alltoall"
                     if _get(problem, "backend", "cpu") == "cuda" else "alltoall"))
    elif _get(problem, "backend", "cpu") == "cuda":
        words.append("fused-step")
    return " ".join(words)


def memory_bytes(problem) -> int:
    """Bytes the spectral solve holds (on the GPU for backend cuda, else on the host)."""
    cells = math.prod(int(n) for n in problem.shape)
    isz = 4 if _get(problem, "precision", "float64") == "float32" else 8
    return cells * (ARRAYS * isz + FLOAT64_TEMPORARIES * 8)
