"""Field solvers: ``make_solver`` picks a backend; ``CpuFieldSolver`` runs the numba stages.

Interface shared with the CUDA twin (``cuda_solver.CudaFieldSolver``, same constructor args):
``load(phi)``, ``state() -> np.ndarray`` (host copy), ``advance(nsteps)``,
``reductions() -> dict(mass, free_energy, min, max)``, ``name``.
"""
from __future__ import annotations

import numba
import numpy as np

from . import cpu_kernels as ck
from . import observables
from .model import BOUNDARY_KINDS, Boundary, CahnHilliard, Grid

BACKENDS = ("auto", "cpu", "cuda")
INTEGRATORS = ("rk2", "euler")
PRECISIONS = {"float64": np.float64, "float32": np.float32, "fp64": np.float64,
              "fp32": np.float32, "double": np.float64, "single": np.float32}


def _precision(precision):
    if isinstance(precision, str):
        if precision not in PRECISIONS:
            raise ValueError(f"unknown precision {precision!r}; choose float64 or float32")
        return np.dtype(PRECISIONS[precision])
    dt = np.dtype(precision)
    if dt not in (np.dtype(np.float64), np.dtype(np.float32)):
        raise ValueError(f"unsupported precision {precision!r}; choose float64 or float32")
    return dt


def cuda_usable() -> bool:
    """True only with a real CUDA device (not the CUDA simulator)."""
    try:
        from numba import config as nconfig
        if getattr(nconfig, "ENABLE_CUDASIM", 0):
            return False
        from numba import cuda
        return bool(cuda.is_available())
    except Exception:  # pragma: no cover - no numba-cuda / no driver
        return False


def make_solver(model: CahnHilliard, grid: Grid, boundary: Boundary, *, backend="auto",
                kernel="texture", precision="float64", integrator="rk2", dt, tile=None,
                block=None, layout=None):
    """Build a field solver. ``backend``: ``auto`` (CUDA when a real GPU is usable, else CPU),
    ``cpu`` or ``cuda``. ``kernel``: ``global``, ``shared``, ``texture`` or ``combined``.
    ``tile`` (CPU tile extents), ``block`` (CUDA block shape) and ``layout`` (CUDA shared-memory
    layout, ``seed`` or ``modern``) are backend hints; the CPU backend ignores ``block``/``layout``."""
    if backend not in BACKENDS:
        raise ValueError(f"unknown field backend {backend!r}; choose one of {', '.join(BACKENDS)}")
    if kernel not in ck.STRATEGIES:
        raise ValueError(f"unknown field kernel {kernel!r}; choose one of "
                         f"{', '.join(ck.STRATEGIES)}")
    if backend == "auto":
        backend = "cuda" if cuda_usable() else "cpu"
    if backend == "cuda":
        from .cuda_solver import CudaFieldSolver
        return CudaFieldSolver(model, grid, boundary, kernel=kernel, precision=precision,
                               integrator=integrator, dt=dt, tile=tile, block=block,
                               layout=layout)
    return CpuFieldSolver(model, grid, boundary, kernel=kernel, precision=precision,
                          integrator=integrator, dt=dt, tile=tile, block=block)


class CpuFieldSolver:
    """numba CPU solver: three buffers (φ, φ*, φ_next), swapped after each step, never in place."""

    backend = "cpu"

    def __init__(self, model: CahnHilliard, grid: Grid, boundary: Boundary, *, kernel="texture",
                 precision="float64", integrator="rk2", dt, tile=None, block=None):
        if kernel not in ck.STRATEGIES:
            raise ValueError(f"unknown field kernel {kernel!r}; choose one of "
                             f"{', '.join(ck.STRATEGIES)}")
        if integrator not in INTEGRATORS:
            raise ValueError(f"unknown integrator {integrator!r}; choose rk2 or euler")
        if boundary.kind not in BOUNDARY_KINDS:
            raise ValueError(f"unknown boundary {boundary.kind!r}")
        if grid.ndim not in (1, 2, 3):
            raise ValueError(f"field solver supports 1, 2 or 3 dimensions, not {grid.ndim}")
        if min(grid.shape) < 2:
            raise ValueError(f"every grid axis needs at least 2 cells, got {grid.shape}")
        if not (dt > 0):
            raise ValueError(f"dt must be positive, got {dt!r}")
        self.model, self.grid, self.boundary = model, grid, boundary
        self.kernel, self.integrator = kernel, integrator
        self.dtype = _precision(precision)
        self.dt = float(dt)
        self.name = f"cpu/{kernel}/{self.dtype.name}"
        t = ck.default_tile(grid.ndim) if tile is None else np.asarray(tile, dtype=np.int64)
        if t.shape != (grid.ndim,) or (t < 1).any():
            raise ValueError(f"tile must be {grid.ndim} positive integers, got {tile!r}")
        self.tile = np.ascontiguousarray(t, dtype=np.int64)
        self._stage = ck.get_stage(kernel, grid.ndim)
        ty = self.dtype.type
        self._params = ck.make_params(model, grid, self.dtype)
        self._bcode = int(boundary.code)
        self._bvalue = ty(boundary.value)
        self._half = ty(0.5 * self.dt)
        self._full = ty(self.dt)
        shape = tuple(grid.shape)
        self._phi = np.zeros(shape, self.dtype)
        self._mid = np.zeros(shape, self.dtype)
        self._next = np.zeros(shape, self.dtype)
        self.steps = 0
        # small grids run on one thread: a parallel launch costs more than the work there
        self.serial_below = 32768
        self._serial = grid.cells < self.serial_below

    # ------------------------------------------------------------------ interface
    def load(self, phi) -> None:
        phi = np.asarray(phi)
        if phi.shape != tuple(self.grid.shape):
            raise ValueError(f"field shape {phi.shape} does not match grid {self.grid.shape}")
        self._phi[...] = phi

    def state(self) -> np.ndarray:
        return self._phi.copy()

    def stage(self, src, base, out, coef, lo=0, hi=None):
        """One stage ``out[lo:hi] = base[lo:hi] + coef R(src)[lo:hi]`` (arrays of this dtype)."""
        hi = self.grid.shape[0] if hi is None else hi
        self._stage(src, base, out, self.dtype.type(coef), self._params, self._bcode,
                    self._bvalue, int(lo), int(hi), self.tile)

    def advance(self, nsteps: int = 1) -> None:
        f, p, b, bv, t = self._stage, self._params, self._bcode, self._bvalue, self.tile
        n0 = int(self.grid.shape[0])
        nthreads = numba.get_num_threads()
        if self._serial:
            numba.set_num_threads(1)
        try:
            self._advance(f, p, b, bv, t, n0, int(nsteps))
        finally:
            numba.set_num_threads(nthreads)

    def _advance(self, f, p, b, bv, t, n0, nsteps):
        for _ in range(nsteps):
            if self.integrator == "rk2":
                f(self._phi, self._phi, self._mid, self._half, p, b, bv, 0, n0, t)
                f(self._mid, self._phi, self._next, self._full, p, b, bv, 0, n0, t)
            else:
                f(self._phi, self._phi, self._next, self._full, p, b, bv, 0, n0, t)
            self._phi, self._next = self._next, self._phi
            self.steps += 1

    def reductions(self) -> dict:
        return observables.reductions(self._phi, self.model, self.grid, self.boundary)

    def __repr__(self):
        return (f"CpuFieldSolver({self.name}, shape={tuple(self.grid.shape)}, "
                f"boundary={self.boundary.kind}, dt={self.dt}, {self.integrator})")
