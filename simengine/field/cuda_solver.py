"""CUDA twin of the CPU field solver (``backend: cuda``).

The state stays on the device for the whole run in three buffers (φⁿ, φ*, φⁿ⁺¹) that are swapped
after every step; the host sees the field only through :meth:`CudaFieldSolver.state` and the
reductions (computed on the device, accumulated in float64).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from . import cuda_kernels as ck
from .model import Boundary, CahnHilliard, Grid

PRECISIONS = {"float32": np.float32, "fp32": np.float32, "single": np.float32,
              "float64": np.float64, "fp64": np.float64, "double": np.float64}


def _dtype(precision):
    if isinstance(precision, str):
        try:
            return np.dtype(PRECISIONS[precision])
        except KeyError:
            raise ValueError(f"unknown precision {precision!r}") from None
    return np.dtype(precision)


class CudaFieldSolver:
    """Cahn–Hilliard solver on one CUDA GPU (numba-cuda kernels A–D, see ``cuda_kernels``).

    ``kernel``: ``global`` | ``shared`` | ``texture`` (default, fastest measured) | ``combined``;
    ``layout`` for the tiled kernels: ``seed`` or ``modern`` (default: seed in 2-D, modern in 1-D
    and 3-D, from the H100 measurements); ``tile`` is the CPU backend's hint and is ignored;
    ``block``: a thread-block
    shape with x (the last axis) first, e.g. ``[32, 8]``, ``None`` for the default, or ``"auto"``
    to time candidates once and cache the choice (see :mod:`simengine.field.cuda_tuning`);
    ``cells_per_thread`` (1, 2, 4) for the direct kernels (default: 4 in 2-D, else 1);
    ``march`` (direct kernels, 2-D/3-D): rows/planes one thread walks along axis 0 with a register
    queue (:func:`cuda_kernels.march_kernel`), 0 = off; default ``DEFAULT_MARCH`` unless
    ``cells_per_thread`` is given; ``vec`` (2-D direct kernels): 2 = the pair kernel
    (:func:`cuda_kernels.vec_kernel`, 2 cells along x × ``cells_per_thread`` rows per thread,
    pair loads), 0 = off; default ``DEFAULT_VEC[precision]`` unless ``cells_per_thread`` or
    ``march`` is given."""

    backend = "cuda"

    def __init__(self, model: CahnHilliard, grid: Grid, boundary: Boundary, *, kernel="texture",
                 precision="float64", integrator="rk2", dt=1e-3, tile=None, block=None,
                 layout=None, cells_per_thread=None, march=None, vec=None):
        if not cuda.is_available():
            raise RuntimeError("backend 'cuda' needs a CUDA GPU (or NUMBA_ENABLE_CUDASIM=1)")
        if integrator not in ("rk2", "euler"):
            raise ValueError(f"unknown integrator {integrator!r}")
        if kernel not in ck.KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}; choose from {ck.KERNELS}")
        if any(int(n) < 2 for n in grid.shape):
            raise ValueError("the CUDA kernels need at least 2 cells per axis")
        self.model, self.grid, self.boundary = model, grid, boundary
        self.kernel, self.integrator, self.dt = kernel, integrator, float(dt)
        self.dtype = _dtype(precision)
        del tile  # the CPU backend's tile extents; the CUDA kernels take ``block``/``layout``
        self.layout = layout or ck.DEFAULT_LAYOUT[grid.ndim]
        if self.layout not in ck.LAYOUTS:
            raise ValueError(f"unknown layout {self.layout!r}; choose from {ck.LAYOUTS}")
        if isinstance(block, (list, tuple)):
            block = tuple(int(b) for b in block)
        self.shape = tuple(int(n) for n in grid.shape)
        self.shape3 = ck.view3(self.shape)
        self.scal = ck.stage_scalars(model, grid, boundary, self.dtype)
        if isinstance(block, str) and block == "auto":
            from .cuda_tuning import autotune_block

            block = autotune_block(kernel, self.layout, self.shape, self.dtype, model, grid,
                                   boundary, cpt=cells_per_thread, march=march, vec=vec)
        self.plan = ck.StagePlan(kernel, grid.ndim, self.shape3, boundary.code, self.dtype,
                                 layout=self.layout, block=block, cpt=cells_per_thread,
                                 march=march, vec=vec)
        self.block = self.plan.block
        self.cells = int(np.prod(self.shape))
        # flat device buffers (φⁿ, φ*, φⁿ⁺¹); the kernels index them by linear offset
        self._buf = [cuda.device_array(self.cells, dtype=self.dtype) for _ in range(3)]
        self._partial = None
        self.steps = 0

    @property
    def name(self) -> str:
        tiled = self.kernel in ("shared", "combined")
        lay = f"/{self.layout}" if tiled else ""
        blk = "x".join(str(b) for b in self.block)
        cpt = f"c{self.plan.cpt}" if self.plan.layout == "direct" else ""
        extra = f", {self.plan.cpt} cells/thread" if cpt else ""
        if self.plan.march:
            extra = f", march {self.plan.march}"
        if self.plan.vec:
            extra = f", 2x{self.plan.cpt} cells/thread (pair loads)"
        return f"cuda/{self.kernel}{lay}/{self.dtype.name} (block {blk}{extra})"

    # -- state ------------------------------------------------------------------------------
    def load(self, phi):
        phi = np.asarray(phi)
        if phi.shape != self.shape:
            raise ValueError(f"field shape {phi.shape} != grid shape {self.shape}")
        host = np.ascontiguousarray(phi, dtype=self.dtype).reshape(self.cells)
        self._buf[0].copy_to_device(host)

    def state(self) -> np.ndarray:
        return self._buf[0].copy_to_host().reshape(self.shape)

    # -- time stepping -----------------------------------------------------------------------
    def advance(self, nsteps: int):
        plan, scal, dt = self.plan, self.scal, self.dt
        half = 0.5 * dt
        b = self._buf
        for _ in range(int(nsteps)):
            if self.integrator == "rk2":
                plan(b[0], b[0], b[1], half, scal)  # φ* = φ + dt/2 R(φ)
                plan(b[1], b[0], b[2], dt, scal)  # φⁿ⁺¹ = φ + dt R(φ*)
                b[0], b[2] = b[2], b[0]
            else:
                plan(b[0], b[0], b[1], dt, scal)
                b[0], b[1] = b[1], b[0]
        self.steps += int(nsteps)

    def synchronize(self):
        cuda.synchronize()

    # -- observables -------------------------------------------------------------------------
    def reductions(self) -> dict:
        nb = ck.reduction_blocks(self.cells)
        if self._partial is None or self._partial.shape[0] != nb:
            self._partial = cuda.device_array((nb, 5), dtype=np.float64)
        return ck.reductions(self._buf[0], self.model, self.grid, self.boundary,
                             partial=self._partial)

    def occupancy(self) -> dict:
        from .cuda_tuning import occupancy_report

        return occupancy_report(self.plan)
