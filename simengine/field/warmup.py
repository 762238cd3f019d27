"""Compilation is start-up, never work: the CPU stage kernels of a field run, compiled (or loaded
from numba's disk cache) on a tiny grid of the same kind before the work timer starts, so that
the first piece of steps — and ``wall_time``, the ``done: … in X s`` line — counts stepping only.
(The observables' kernels already run at step 0, before the timer.)"""
from __future__ import annotations

import time

import numpy as np

#: cells per axis of the warm-up grid (the kernels' types do not depend on the size)
SIDE = 16


def warm_cpu_steps(model, grid, boundary, kw) -> float:
    """One step of a solver built like the run's (``kw``: make_solver's options) on a
    ``SIDE``-per-axis grid; returns the seconds spent (0 when it could not be built: the real
    solver reports any problem)."""
    from .backends import make_solver
    from .model import Grid

    t = time.perf_counter()
    try:
        tiny = Grid(tuple(min(int(n), SIDE) for n in grid.shape), grid.spacing)
        solver = make_solver(model, tiny, boundary, backend="cpu", **kw)
        solver.load(np.zeros(tiny.shape, dtype=np.dtype(kw.get("precision", "float64"))))
        solver.advance(1)
    except Exception:  # noqa: BLE001 - a warm-up never fails a run
        return 0.0
    return time.perf_counter() - t
