"""The field engine's backend registry: what each backend can run, ``auto`` resolved once,
explicit CUDA device ids.

``resolve("auto")`` is CUDA when a real GPU is usable (never the CUDA simulator), else CPU; it is
decided once per process. ``can_run(backend, kernel=…, ndim=…, precision=…)`` answers
``(True, "")`` or ``(False, reason)`` without building anything. ``make_solver`` builds the
solver with the constructor every backend shares (:class:`simengine.field.solver.FieldSolver`);
``device`` picks the GPU of a CUDA solver (default: the current one) — one process may drive
several GPUs, and the CUDA launch plans are keyed by device.
"""
from __future__ import annotations

import functools
import os
from dataclasses import dataclass

from .model import Boundary, CahnHilliard, Grid
from .params import PRECISIONS

NAMES = ("cpu", "cuda")
CHOICES = ("auto",) + NAMES
KERNELS = ("global", "shared", "texture", "combined")


@dataclass(frozen=True)
class BackendInfo:
    name: str
    kernels: tuple
    ndims: tuple
    precisions: tuple
    #: takes a ``device`` id
    devices: bool


INFO = {
    "cpu": BackendInfo("cpu", KERNELS, (1, 2, 3), ("float32", "float64"), False),
    "cuda": BackendInfo("cuda", KERNELS, (1, 2, 3), ("float32", "float64"), True),
}


@functools.lru_cache(maxsize=None)
def _driver_nodes() -> bool:
    """False on a Linux machine with no GPU driver device node (NVIDIA's /dev/nvidia*, WSL's
    /dev/dxg, Tegra's /dev/nvhost*): then there is no GPU, and importing numba.cuda to ask
    (≈ 0.25 s of every CPU run's start-up) is skipped. True elsewhere (ask the driver)."""
    import glob
    import sys

    if not sys.platform.startswith("linux"):
        return True
    return bool(glob.glob("/dev/nvidia*") or os.path.exists("/dev/dxg")
                or glob.glob("/dev/nvhost*"))


def cuda_usable() -> bool:
    """True only with a real CUDA device (not the CUDA simulator); checked once per process."""
    try:
        from numba import config as nconfig

        if getattr(nconfig, "ENABLE_CUDASIM", 0) or not _driver_nodes():
            return False
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # pragma: no cover - no numba-cuda / no driver
        return False


def cuda_available() -> bool:
    """A CUDA device or the simulator (what the CUDA solver can be built on)."""
    try:
        from numba import cuda

        return bool(cuda.is_available())
    except Exception:  # pragma: no cover
        return False


@functools.lru_cache(maxsize=None)
def _resolved_auto() -> str:
    return "cuda" if cuda_usable() else "cpu"


def resolve(backend: str) -> str:
    """``cpu`` or ``cuda`` for a backend choice (``auto`` decided once per process)."""
    if backend not in CHOICES:
        raise ValueError(f"unknown field backend {backend!r}; choose one of {', '.join(CHOICES)}")
    return _resolved_auto() if backend == "auto" else backend


def can_run(backend: str, *, kernel="texture", ndim=2, precision="float64") -> tuple:
    """``(True, "")`` if ``backend`` can run this case, else ``(False, reason)``."""
    try:
        name = resolve(backend)
    except ValueError as exc:
        return False, str(exc)
    info = INFO[name]
    if kernel not in info.kernels:
        return False, f"backend {name} has no kernel {kernel!r} (has {', '.join(info.kernels)})"
    if ndim not in info.ndims:
        return False, f"backend {name} runs {info.ndims}-D fields, not {ndim}-D"
    p = PRECISIONS.get(precision, precision) if isinstance(precision, str) else precision
    try:
        import numpy as np

        pname = np.dtype(p).name
    except TypeError:
        return False, f"unknown precision {precision!r}"
    if pname not in info.precisions:
        return False, f"backend {name} computes in {' or '.join(info.precisions)}, not {pname}"
    if name == "cuda" and not cuda_available():
        return False, "backend 'cuda' needs a CUDA GPU (or NUMBA_ENABLE_CUDASIM=1)"
    return True, ""


def solver_class(backend: str):
    name = resolve(backend)
    if name == "cuda":
        from .cuda_solver import CudaFieldSolver

        return CudaFieldSolver
    from .solver import CpuFieldSolver

    return CpuFieldSolver


def make_solver(model: CahnHilliard, grid: Grid, boundary: Boundary, *, backend="auto",
                **kwargs):
    """Build a field solver. ``backend``: ``auto`` | ``cpu`` | ``cuda``; the other keyword
    arguments are the shared constructor's (``kernel``, ``precision``, ``integrator``, ``dt``,
    ``tile``, ``block``, ``layout``, ``cells_per_thread``, ``march``, ``vec``, ``device``,
    ``slab``, ``exchange``, ``fused`` — CUDA: the fused RK2 step, ``None`` = auto)."""
    return solver_class(backend)(model, grid, boundary, **kwargs)
