"""The spectral field solver: the runner's solver interface over :class:`.scheme.SBDF2`.

``SpectralFieldSolver(model, grid, boundary, *, precision, dt, symbol="fd", backend="cpu",
device=None, stabilization=None)`` — the interface of :class:`simengine.field.solver.
FieldSolver` that the field job uses (``load``, ``state``, ``advance(nsteps)`` at the fixed
``dt``, ``partials``, ``reductions``, ``synchronize``, ``name``, ``lo``/``hi``, ``cells``) plus
the trial-stepper protocol of :mod:`simengine.field.adaptive` (``trial``, ``accept``,
``energy``, ``trial_energy``) and ``restart()`` (the next step is a start step: the job calls it
at every checkpoint, so a resumed run takes the same steps as an uninterrupted one).

CPU: NumPy arrays, ``scipy.fft`` with ``workers`` = numba's thread count. GPU (``backend:
cuda``): CuPy arrays on the device, cuFFT through ``cupyx.scipy.fft``, the pointwise work in
CuPy elementwise kernels (:mod:`.gpu`); per step only the error estimate (one float) comes back
to the host. ``owned_device()`` gives the field to the device S(k)
(:mod:`simengine.field.spectrum_cuda`).
"""
from __future__ import annotations

import numpy as np

from ..adaptive import reservoir_term
from ..model import BOUNDARY_KINDS
from ..params import precision_dtype
from ..stability import fsecond_bound
from . import energy
from .scheme import SBDF2, Kernels
from .gpu_step import MAX_CELLS, FusedSBDF2, TransformCopy
from .transforms import SYMBOLS, Transform


def stabilization_for(model, boundary, phi_range=None) -> float:
    """S = max(0, max f''(φ)) over the φ range the run can visit (the initial range, the
    wells of f, a fixed wall value: :func:`~simengine.field.stability.fsecond_bound`): the
    Lipschitz bound of f' there, which the energy argument of docs/field.md asks for (S ≥ L/2
    for the first-order step; S = L here)."""
    return max(0.0, fsecond_bound(model, boundary, phi_range))


def cupy_module():
    """CuPy, or a RuntimeError with the one-line reason it cannot be used."""
    try:
        import cupy as cp
        import cupyx.scipy.fft  # noqa: F401
    except Exception as exc:  # ImportError, or CUDA libraries missing
        raise RuntimeError(f"integrator spectral on backend cuda needs CuPy (the 'cuda' extra, "
                           f"cupy-cuda13x): {type(exc).__name__}: {exc}") from None
    return cp


class SpectralFieldSolver:
    integrator = "spectral"
    kernel = "spectral"

    def __init__(self, model, grid, boundary, *, precision="float64", dt, symbol="fd",
                 backend="cpu", device=None, stabilization=None, phi_range=None, workers=None,
                 comm=None, rows=None, **_hints):
        if boundary.kind not in BOUNDARY_KINDS:
            raise ValueError(f"unknown boundary {boundary.kind!r}")
        if symbol not in SYMBOLS:
            raise ValueError(f"unknown solver.symbol {symbol!r}; choose one of "
                             f"{', '.join(SYMBOLS)}")
        if dt is None or not dt > 0:
            raise ValueError(f"dt must be positive, got {dt!r}")
        self.model, self.grid, self.boundary = model, grid, boundary
        self.dtype = precision_dtype(precision)
        self.dt = float(dt)
        self.symbol = symbol
        self.backend = backend
        self.cells = int(np.prod(grid.shape))
        #: MPI: this rank's rows of axis 0 (``rows[comm.rank]``) and the communicator
        self.comm = comm if comm is not None and comm.size > 1 else None
        self.rows = rows
        a, b = rows[comm.rank] if self.comm is not None else (0, int(grid.shape[0]))
        self.lo, self.hi = 0, int(b - a)
        self.owned_shape = (int(b - a),) + tuple(int(n) for n in grid.shape[1:])
        self.steps = 0
        if backend == "cuda":
            cp = cupy_module()
            if device is None and self.comm is not None:  # one GPU per rank (node-local)
                device = self.comm.local_rank % cp.cuda.runtime.getDeviceCount()
            if device is not None:
                cp.cuda.Device(int(device)).use()
            self.device = device
            from .gpu import GpuKernels

            xp, kernels = cp, GpuKernels(cp, self.dtype)
        elif backend == "cpu":
            import numba

            xp, kernels = np, Kernels(np, self.dtype)
            workers = workers or numba.get_num_threads()
        else:
            raise ValueError(f"unknown backend {backend!r} for integrator spectral")
        self.xp = xp
        if self.comm is not None:
            from .slabs import SlabKernels, SlabTransform

            kernels = SlabKernels(self.dtype, self.comm, xp)
            self.transform = SlabTransform(grid.shape, grid.spacing, boundary.kind, symbol,
                                           self.dtype, self.comm, rows, workers, xp)
        else:
            self.transform = Transform(grid.shape, grid.spacing, boundary.kind, symbol,
                                       self.dtype, xp, workers)
        self.S = (stabilization_for(model, boundary, phi_range) if stabilization is None
                  else float(stabilization))
        if getattr(model, "general", False):
            if self.comm is not None or backend != "cpu":
                raise ValueError("a model with f′ not a cubic or M(φ) runs the spectral "
                                 "integrator on the CPU in one process")
            from .model_scheme import ModelKernels, MobilitySBDF2

            kernels = ModelKernels(np, self.dtype, model)
            if model.variable_mobility:
                if symbol != "fd":
                    raise ValueError("M(φ) in the spectral integrator needs symbol fd")
                self.scheme = MobilitySBDF2(model, grid, boundary, self.transform, kernels,
                                            self.S)
            else:
                self.scheme = SBDF2(model, boundary, self.transform, kernels, self.S)
        elif self.comm is None and self.cells < MAX_CELLS:
            if backend == "cuda":
                self.scheme = FusedSBDF2(xp, model, grid, boundary, self.transform, self.S,
                                         self.dtype)
            else:  # the same step with numba kernels and scipy.fft (workers = threads)
                from .cpu_kernels import CpuModule, HostArrays, ScipyPlans

                fft = (ScipyPlans(grid.shape, workers) if boundary.kind == "periodic"
                       else TransformCopy(self.transform))
                self.scheme = FusedSBDF2(HostArrays, model, grid, boundary, self.transform,
                                         self.S, self.dtype, module=CpuModule(), fft=fft)
        else:
            self.scheme = SBDF2(model, boundary, self.transform, kernels, self.S)
        self.fused = bool(getattr(self.scheme, "fused", False))
        self.name = f"{backend}/spectral/{self.dtype.name}"
        law = getattr(model, "law", None)
        self._domain = law is not None and law.domain is not None

    def describe(self) -> str:
        return (f"integrator spectral (stabilised SBDF2, S = {self.S:g}), transform "
                f"{self.transform.name}, symbol {self.symbol}"
                + (f", scipy.fft workers {self.transform.workers}"
                   if self.xp is np and self.transform.workers else "")
                + (", cuFFT" if self.backend == "cuda" else "")
                + ((f" ({self.scheme.fft.name}), fused step and reductions, one read per "
                    f"adaptive trial") if self.fused and self.backend == "cuda" else "")
                + (", fused numba step and reductions" if self.fused and self.backend == "cpu"
                   else "")
                + (f", {self.comm.size} slabs of axis 0, transposed through "
                   f"{self.transform.transport}" if self.comm is not None else ""))

    # ------------------------------------------------------------------ state
    def load(self, phi) -> None:
        phi = np.asarray(phi)
        if phi.shape != self.owned_shape:
            raise ValueError(f"field shape {phi.shape} does not match the grid "
                             f"{self.owned_shape}")
        self.scheme.load(np.ascontiguousarray(phi, dtype=self.dtype))

    def state(self) -> np.ndarray:
        phi = self.scheme.phi
        return phi.get() if hasattr(phi, "get") else np.array(phi)

    def owned_device(self):
        return self.scheme.phi

    def restart(self) -> None:
        self.scheme.restart()

    def synchronize(self) -> None:
        if self.backend == "cuda":
            self.xp.cuda.get_current_stream().synchronize()

    # ------------------------------------------------------------------ fixed steps
    def advance(self, nsteps: int = 1) -> None:
        if self._domain:
            for _ in range(int(nsteps)):
                self.scheme.step(self.dt, 1)
                self.steps += 1
                self._check_domain()
            return
        self.scheme.step(self.dt, int(nsteps))
        self.steps += int(nsteps)

    def _check_domain(self) -> None:
        from ..model_rules import check_domain

        check_domain(self.model, self.scheme.phi, self.steps)

    # ------------------------------------------------------------------ trial-stepper protocol
    def trial(self, dt) -> float:
        return self.scheme.trial(dt)

    def accept(self) -> None:
        self.scheme.accept()
        self.steps += 1
        if self._domain:
            self._check_domain()

    def _reservoir(self, phi, total=None) -> float:
        """f′(v)·h^d·Σφ of fixed walls (0 otherwise; ``total``: Σφ when already reduced)."""
        if self.boundary.kind != "fixed":
            return 0.0
        if total is None:
            total = float(self.xp.sum(phi, dtype=np.float64))
        return reservoir_term(self.model, self.grid, self.boundary, total)

    def _energy_of(self, phi) -> float:
        """The functional the adaptive controller keeps from rising: F, or for fixed walls the
        grand potential Ω = F − f′(v)·h^d·Σφ (:func:`..adaptive.reservoir_term`)."""
        if self.fused:
            v = self.scheme.sums(phi)
            return self.scheme.energy_of_sums(v) - self._reservoir(phi, float(v[1]))
        if self.comm is None:
            F = energy.free_energy(phi, self.model, self.grid, self.boundary, self.xp)
            return F - self._reservoir(phi)
        merged = self._merged(self._partials_of(phi))
        return merged["free_energy"] - self._reservoir(phi, merged["mass"] * self.grid.cells)

    def energy(self) -> float:
        if self.fused:  # kept from the accepted trial's reduction
            return self.scheme.energy() - self._reservoir(self.scheme.phi)
        return self._energy_of(self.scheme.phi)

    def trial_energy(self) -> float:
        if self.fused:  # computed with the trial's error estimate, in the same read
            return self.scheme.trial_energy() - self._reservoir(self.scheme.trial_phi)
        return self._energy_of(self.scheme.trial_phi)

    # ------------------------------------------------------------------ observables
    def _partials_of(self, phi):
        if self.fused:
            from ..observables import FieldPartials

            v = self.scheme.sums(phi)
            return FieldPartials(self.cells, float(v[1]), float(v[3]), float(v[4]),
                                 float(v[5]), float(v[6]))
        if self.comm is None:
            return energy.partials(phi, self.model, self.boundary, self.xp)
        from .slabs import slab_partials

        return slab_partials(phi, self.comm, self.rows, self.model, self.boundary)

    def _merged(self, part) -> dict:
        from ..observables import FieldPartials, merge_partials

        parts = [part] if self.comm is None else \
            [FieldPartials.from_array(p) for p in self.comm.allgather(part.to_array())]
        return merge_partials(parts, self.model, self.grid)

    def partials(self):
        """:class:`FieldPartials` of this rank's rows (collective on MPI ranks)."""
        return self._partials_of(self.scheme.phi)

    def reductions(self) -> dict:
        """Of the whole field (collective on MPI ranks)."""
        return self._merged(self.partials())

    def __repr__(self):
        return (f"SpectralFieldSolver({self.name}, shape={tuple(self.grid.shape)}, "
                f"boundary={self.boundary.kind}, symbol={self.symbol})")
