"""Field solvers: :class:`FieldSolver` (what every backend shares) and :class:`CpuFieldSolver`.

Every backend takes the same constructor arguments (backend hints the other backend does not use
are accepted and ignored), packs its parameters with :func:`params.pack`, and runs the same
integrator (:mod:`simengine.field.integrator`) over its own ``stage(src, base, out, coef, lo,
hi)``, calling ``exchange(src)`` before each stage. A solver is built either for the whole grid
(``slab=None``) or for one slab of it (:mod:`simengine.field.decomposition`): then it stores the
owned rows plus halo rows, updates only the owned rows ``lo:hi``, and ``exchange`` fills the halo.

Interface: ``load(phi)`` (the owned rows), ``state()`` (host copy of the owned rows),
``advance(nsteps)``, ``partials()`` (:class:`observables.FieldPartials` of the owned rows),
``reductions()`` (``dict(mass, free_energy, min, max)``; of the whole grid when ``slab`` is
``None``), ``name``, ``lo``, ``hi``, ``buffers``; halo access for an exchanger:
``boundary_rows(array)`` and ``set_halo(array, low, high)``.
"""
from __future__ import annotations

from contextlib import contextmanager

import numba
import numpy as np

from . import cpu as ck
from . import integrator as integ
from . import model_rules, observables
from .decomposition import Slab, whole_slab
from .model import BOUNDARY_KINDS, Boundary, CahnHilliard, Grid
from .params import PRECISIONS, pack, precision_dtype  # noqa: F401  (PRECISIONS re-exported)


@contextmanager
def serial_threads(serial: bool):
    """numba's threads set to one while ``serial`` (small grids: a parallel launch costs more
    than the work there), restored afterwards."""
    nthreads = numba.get_num_threads()
    if serial:
        numba.set_num_threads(1)
    try:
        yield
    finally:
        numba.set_num_threads(nthreads)

INTEGRATORS = integ.INTEGRATORS
KERNELS = ("global", "shared", "texture", "combined")


def check_problem(grid: Grid, boundary: Boundary, *, kernel: str, dt) -> None:
    """``ValueError`` for what no field solver runs: an unknown kernel or boundary, a grid of
    other than 1–3 axes or an axis under 2 cells, a dt that is not positive."""
    if kernel not in KERNELS:
        raise ValueError(f"unknown field kernel {kernel!r}; choose one of "
                         f"{', '.join(KERNELS)}")
    if boundary.kind not in BOUNDARY_KINDS:
        raise ValueError(f"unknown boundary {boundary.kind!r}")
    if grid.ndim not in (1, 2, 3):
        raise ValueError(f"field solver supports 1, 2 or 3 dimensions, not {grid.ndim}")
    if min(grid.shape) < 2:
        raise ValueError(f"every grid axis needs at least 2 cells, got {grid.shape}")
    if dt is None or not (dt > 0):
        raise ValueError(f"dt must be positive, got {dt!r}")


class FieldSolver:
    """Shared part of the field solvers: validation, parameters, slab geometry, the integrator
    loop and the reductions. Subclasses provide ``_setup`` (buffers, plans), ``stage``,
    ``load``, ``state``, ``boundary_rows``, ``set_halo`` and ``_partials``."""

    backend = "?"

    def __init__(self, model: CahnHilliard, grid: Grid, boundary: Boundary, *, kernel="texture",
                 precision="float64", integrator="rk2", dt, tile=None, block=None, layout=None,
                 cells_per_thread=None, march=None, vec=None, device=None, slab: Slab = None,
                 exchange=None, fused=None):
        check_problem(grid, boundary, kernel=kernel, dt=dt)
        self.scheme = integ.scheme(integrator)
        self.model, self.grid, self.boundary = model, grid, boundary
        self.kernel, self.integrator = kernel, integrator
        self.dtype = precision_dtype(precision)
        self.dt = float(dt)
        self.slab = whole_slab(grid.shape[0]) if slab is None else slab
        if self.slab.n != int(grid.shape[0]):
            raise ValueError(f"slab of {self.slab.n} rows for a grid of {grid.shape[0]}")
        if not self.slab.whole and self.slab.owned < self.slab.depth:
            raise ValueError(f"a slab must own at least {self.slab.depth} rows, got "
                             f"{self.slab.owned}")
        self.lo, self.hi = self.slab.lo, self.slab.hi
        rest = tuple(int(n) for n in grid.shape[1:])
        self.local_shape = (self.slab.rows,) + rest
        self.owned_shape = (self.slab.owned,) + rest
        self.exchange = integ.no_exchange if exchange is None else exchange
        self.coefs = integ.coefficients(self.scheme, self.dt, self.dtype.type)
        self.stages_per_step = len(self.scheme.stages)
        self.packed = pack(model, grid, boundary, self.dtype)
        self.steps = 0
        self.buffers = []
        self._needs = model_rules.needs(model)
        if self._needs:
            model_rules.check_solver(model, self.backend, kernel, integrator)
        self._setup(tile=tile, block=block, layout=layout, cells_per_thread=cells_per_thread,
                    march=march, vec=vec, device=device, fused=fused)

    # ------------------------------------------------------------------ time stepping
    def advance(self, nsteps: int = 1) -> None:
        if "noise" in self._needs or "domain" in self._needs:
            for _ in range(int(nsteps)):
                integ.advance(self.buffers, self.stage, self.exchange, self.scheme, self.coefs,
                              self.lo, self.hi, 1)
                self._after_step(self.steps)
                self.steps += 1
            return
        integ.advance(self.buffers, self.stage, self.exchange, self.scheme, self.coefs,
                      self.lo, self.hi, int(nsteps))
        self.steps += int(nsteps)

    @property
    def has_step_hooks(self) -> bool:
        return "noise" in self._needs or "domain" in self._needs

    def _after_step(self, step: int) -> None:
        self.prepare_step_hooks()
        self.apply_step_hooks(step)

    def prepare_step_hooks(self) -> None:
        """Before the noise of M(φ): the halo of φ (collective; a lockstep driver calls it on
        every slab before any applies the noise)."""
        if "noise" in self._needs and "mobility" in self._needs:
            self.exchange(self.buffers[0])

    def apply_step_hooks(self, step: int) -> None:
        """A general model's per-step work after step ``step`` (0-based): its noise (into the
        spare buffer, then swapped in) and the domain check (``model_rules``)."""
        if "noise" in self._needs:
            from .noise import add_noise

            src, out = self.buffers[0], self.buffers[1]
            add_noise(src, out, model=self.model, grid=self.grid, boundary=self.boundary,
                      dt=self.dt, step=step, lo=self.lo, hi=self.hi, row0=self.slab.start)
            self.buffers[0], self.buffers[1] = out, src
        if "domain" in self._needs:
            model_rules.check_domain(self.model, self.buffers[0][self.lo:self.hi], step + 1)

    def run_stage(self, i: int) -> None:
        """Stage ``i`` of the current step (exchange, then stage) — for lockstep drivers."""
        integ.run_stage(self.buffers, self.stage, self.exchange, self.scheme, self.coefs, i,
                        self.lo, self.hi)

    def end_step(self, hooks: bool = True) -> None:
        """Rotate the buffers; ``hooks``: then the model's per-step work (a lockstep driver
        passes False and calls :meth:`prepare_step_hooks` / :meth:`apply_step_hooks` itself)."""
        integ.rotate(self.buffers, self.scheme)
        if hooks and self._needs:
            self._after_step(self.steps)
        self.steps += 1

    def synchronize(self) -> None:
        """Wait for the work already launched (a no-op where stages run synchronously)."""

    def halo_shape(self) -> tuple:
        """Shape of one side's halo rows (and of each array :meth:`boundary_rows` returns)."""
        return (self.slab.depth,) + tuple(self.local_shape[1:])

    def buffer_index(self, array) -> int:
        for i, b in enumerate(self.buffers):
            if b is array:
                return i
        raise ValueError("array is not one of this solver's buffers")

    # ------------------------------------------------------------------ observables
    def partials(self) -> observables.FieldPartials:
        """Mergeable reductions of the owned rows. Refreshes the halo of φ first (collective
        with the neighbouring slabs: every slab calls it at the same step)."""
        self.exchange(self.buffers[0])
        return self._partials()

    def reductions(self) -> dict:
        """``dict(mass, free_energy, min, max)`` of the owned rows (the whole field for a
        whole-grid solver; merge the :meth:`partials` of all slabs otherwise)."""
        return observables.merge_partials([self.partials()], self.model, self.grid)

    def _check_load(self, phi):
        phi = np.asarray(phi)
        if phi.shape != self.owned_shape:
            raise ValueError(f"field shape {phi.shape} does not match the "
                             f"{'grid' if self.slab.whole else 'slab'} {self.owned_shape}")
        return phi


class CpuFieldSolver(FieldSolver):
    """numba CPU solver: three host buffers (φ, φ*, φ_next), rotated after each step."""

    backend = "cpu"

    def _setup(self, *, tile, **_hints):
        g = self.grid
        t = ck.default_tile(g.ndim) if tile is None else np.asarray(tile, dtype=np.int64)
        if t.shape != (g.ndim,) or (t < 1).any():
            raise ValueError(f"tile must be {g.ndim} positive integers, got {tile!r}")
        self.tile = np.ascontiguousarray(t, dtype=np.int64)
        self.name = f"cpu/{self.kernel}/{self.dtype.name}"
        if self.model.general:
            from .cpu.model_stage import model_stage

            self._stage = model_stage(self.model.law, self.dtype)
        else:
            self._stage = ck.get_stage(self.kernel, g.ndim)
        p = self.packed
        self._args = (p.params, p.bcode, p.bvalue)
        self.buffers = [np.zeros(self.local_shape, self.dtype) for _ in range(3)]
        # small grids run on one thread: a parallel launch costs more than the work there
        self.serial_below = 32768
        self._serial = int(np.prod(self.local_shape)) < self.serial_below

    @property
    def _phi(self):
        return self.buffers[0]

    def load(self, phi) -> None:
        self.buffers[0][self.lo:self.hi] = self._check_load(phi)

    def state(self) -> np.ndarray:
        return self.buffers[0][self.lo:self.hi].copy()

    def stage(self, src, base, out, coef, lo=None, hi=None):
        """``out[lo:hi] = base[lo:hi] + coef R(src)[lo:hi]`` (arrays of this dtype and the local
        shape; default the owned rows)."""
        lo = self.lo if lo is None else int(lo)
        hi = self.hi if hi is None else int(hi)
        params, bcode, bvalue = self._args
        self._stage(src, base, out, self.dtype.type(coef), params, bcode, bvalue, lo, hi,
                    self.tile)

    def _threads(self):
        """One thread for small grids (a parallel launch costs more than the work there)."""
        return serial_threads(self._serial)

    def advance(self, nsteps: int = 1) -> None:
        with self._threads():
            super().advance(nsteps)

    def run_stage(self, i: int) -> None:
        with self._threads():
            super().run_stage(i)

    # ------------------------------------------------------------------ halo access
    def boundary_rows(self, array):
        """The owned rows a neighbour needs: ``(array[lo:lo+d], array[hi-d:hi])`` (views)."""
        d = self.slab.depth
        return array[self.lo:self.lo + d], array[self.hi - d:self.hi]

    def set_halo(self, array, low, high) -> None:
        """Write the halo rows ``[lo-d, lo)`` from ``low`` and ``[hi, hi+d)`` from ``high``
        (d: the slab's halo depth; ``None``: that side has no halo)."""
        d = self.slab.depth
        if low is not None:
            array[self.lo - d:self.lo] = low
        if high is not None:
            array[self.hi:self.hi + d] = high

    def _partials(self):
        return observables.field_partials(self.buffers[0], self.lo, self.hi, self.model,
                                          self.boundary)

    def __repr__(self):
        return (f"CpuFieldSolver({self.name}, shape={tuple(self.grid.shape)}, "
                f"boundary={self.boundary.kind}, dt={self.dt}, {self.integrator})")
