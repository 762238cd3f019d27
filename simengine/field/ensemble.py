"""Ensembles: M independent fields of one problem advanced together.

The members share grid, model, dt, boundary, integrator, precision and solver options and differ
only in their field (the seed or the initial condition of a sweep). Every member's values are bit
for bit those of a one-member run of the same kernel:

* CPU: three arrays ``(M,) + shape``; a stage runs the CPU backend's stage function of the kernel
  on each member's contiguous sub-array in turn (members below ``serial_below`` cells on one
  thread, as :class:`~simengine.field.solver.CpuFieldSolver` does).
* CUDA: three flat device buffers of ``M·cells``; a stage is one launch over all members
  (:class:`simengine.field.cuda.ensemble.EnsemblePlan`: member = a grid axis), the reductions one
  launch (:func:`simengine.field.cuda.ensemble.member_partials`). Only the direct kernels
  ``global``/``texture`` have an ensemble form; :attr:`EnsembleSolver.single_options` are the
  single-run options each member equals (in 3-D: ``march=0, cells_per_thread=1``).

API::

    ens = EnsembleSolver(model, grid, boundary, members=64, backend="cuda", kernel="texture",
                         precision="float64", dt=1e-3)
    ens.load(phis)              # (M,) + grid.shape; or ens.load_member(m, phi)
    ens.advance(1000)
    ens.state()                 # (M,) + grid.shape host copy; ens.state_member(m)
    ens.reductions()            # [dict(mass, free_energy, min, max)] per member (float64)
    ens.member(m)               # a view with the single solver's load/state/reductions/name
"""
from __future__ import annotations

from contextlib import contextmanager

import numpy as np

from . import integrator as integ
from . import observables
from .backends import resolve
from .model import Boundary, CahnHilliard, Grid
from .params import pack, precision_dtype
from .solver import check_problem, serial_threads


class EnsembleSolver:
    """``members`` independent fields of one (model, grid, boundary, dt, precision) problem."""

    def __init__(self, model: CahnHilliard, grid: Grid, boundary: Boundary, members: int, *,
                 backend="auto", kernel="texture", precision="float64", integrator="rk2", dt,
                 tile=None, block=None, layout=None, cells_per_thread=None, march=None, vec=None,
                 device=None):
        check_problem(grid, boundary, kernel=kernel, dt=dt)
        if int(members) < 1:
            raise ValueError(f"an ensemble needs at least one member, got {members}")
        del layout  # the tiled kernels' hint; tiled kernels have no CUDA ensemble form
        self.backend = resolve(backend)
        self.model, self.grid, self.boundary = model, grid, boundary
        self.members = int(members)
        self.kernel, self.integrator = kernel, integrator
        self.scheme = integ.scheme(integrator)
        self.dtype = precision_dtype(precision)
        self.dt = float(dt)
        self.shape = tuple(int(n) for n in grid.shape)
        self.cells = int(np.prod(self.shape))
        self.coefs = integ.coefficients(self.scheme, self.dt, self.dtype.type)
        self.packed = pack(model, grid, boundary, self.dtype)
        self.steps = 0
        self._cache = {}
        if self.backend == "cuda":
            self._impl = _CudaMembers(self, block=block, cpt=cells_per_thread, march=march,
                                      vec=vec, device=device)
        else:
            self._impl = _CpuMembers(self, tile=tile)
        self.buffers = self._impl.buffers

    # ------------------------------------------------------------------ names
    @property
    def member_name(self) -> str:
        """The ``name`` of the one-member solver each member equals (written to outputs)."""
        return self._impl.member_name

    @property
    def name(self) -> str:
        return f"ensemble of {self.members} x {self.member_name}"

    @property
    def single_options(self) -> dict:
        """Solver options of the one-member run (:func:`~simengine.field.backends.make_solver`)
        whose results every member reproduces bit for bit."""
        return dict(self._impl.single_options)

    # ------------------------------------------------------------------ state
    def _check_member(self, m):
        m = int(m)
        if not 0 <= m < self.members:
            raise IndexError(f"member {m} of an ensemble of {self.members}")
        return m

    def load(self, phis) -> None:
        """Load every member: ``phis`` of shape ``(members,) + grid.shape``."""
        phis = np.asarray(phis)
        want = (self.members,) + self.shape
        if phis.shape != want:
            raise ValueError(f"ensemble fields of shape {phis.shape}, expected {want}")
        self._impl.load(np.ascontiguousarray(phis, dtype=self.dtype))
        self._cache.clear()

    def load_member(self, m, phi) -> None:
        phi = np.asarray(phi)
        if phi.shape != self.shape:
            raise ValueError(f"field shape {phi.shape} does not match the grid {self.shape}")
        self._impl.load_member(self._check_member(m),
                               np.ascontiguousarray(phi, dtype=self.dtype))
        self._cache.clear()

    def state(self) -> np.ndarray:
        """Host copy of every member, ``(members,) + grid.shape``."""
        if "state" not in self._cache:
            self._cache["state"] = self._impl.state()
        return self._cache["state"].copy()

    def state_member(self, m) -> np.ndarray:
        m = self._check_member(m)
        if "state" not in self._cache:
            self._cache["state"] = self._impl.state()
        return self._cache["state"][m].copy()

    # ------------------------------------------------------------------ time stepping
    def advance(self, nsteps: int = 1) -> None:
        """``nsteps`` steps of every member."""
        self._cache.clear()
        with self._impl.threads():
            self._impl.advance(int(nsteps))
        self.steps += int(nsteps)

    def _advance_stages(self, nsteps: int) -> None:
        """``nsteps`` steps launched stage by stage (the integrator loop)."""
        integ.advance(self.buffers, self._impl.stage, integ.no_exchange, self.scheme,
                      self.coefs, 0, self.shape[0], int(nsteps))

    def synchronize(self) -> None:
        self._impl.synchronize()

    # ------------------------------------------------------------------ observables
    def partials(self) -> list:
        """One :class:`~simengine.field.observables.FieldPartials` per member."""
        if "partials" not in self._cache:
            self._cache["partials"] = self._impl.partials()
        return self._cache["partials"]

    def reductions(self) -> list:
        """``[dict(mass, free_energy, min, max)]``, one per member (float64 accumulation)."""
        return [observables.merge_partials([p], self.model, self.grid) for p in self.partials()]

    def member_reductions(self, m) -> dict:
        m = self._check_member(m)
        return observables.merge_partials([self.partials()[m]], self.model, self.grid)

    def member(self, m) -> "MemberSolver":
        return MemberSolver(self, self._check_member(m))

    def __repr__(self):
        return (f"EnsembleSolver({self.members} x {self.member_name}, shape={self.shape}, "
                f"boundary={self.boundary.kind}, dt={self.dt}, {self.integrator})")


class MemberSolver:
    """One member of an :class:`EnsembleSolver` seen through the single solver's interface
    (``name``, ``load``, ``state``, ``reductions``, ``steps``) — what a field job needs to write
    the member's output. The members advance together (:meth:`EnsembleSolver.advance`); a
    member's own ``advance`` is refused. Built unbound when the ensemble does not exist yet
    (:meth:`bind` later)."""

    def __init__(self, ensemble=None, index=None):
        self.ensemble, self.index = ensemble, index

    def bind(self, ensemble, index) -> None:
        self.ensemble, self.index = ensemble, int(index)

    @property
    def name(self) -> str:
        return self.ensemble.member_name

    @property
    def steps(self) -> int:
        return self.ensemble.steps

    def load(self, phi) -> None:
        self.ensemble.load_member(self.index, phi)

    def state(self) -> np.ndarray:
        return self.ensemble.state_member(self.index)

    def reductions(self) -> dict:
        return self.ensemble.member_reductions(self.index)

    def advance(self, nsteps=1):
        raise RuntimeError("ensemble members advance together: call EnsembleSolver.advance")

    def synchronize(self) -> None:
        self.ensemble.synchronize()


# ====================================================================== backends
class _CpuMembers:
    """Host buffers ``(M,) + shape``; a stage is the CPU stage on each member in turn."""

    serial_below = 32768

    def __init__(self, ens, *, tile):
        from . import cpu as ck

        self.ens = ens
        g = ens.grid
        t = ck.default_tile(g.ndim) if tile is None else np.asarray(tile, dtype=np.int64)
        if t.shape != (g.ndim,) or (t < 1).any():
            raise ValueError(f"tile must be {g.ndim} positive integers, got {tile!r}")
        self.tile = np.ascontiguousarray(t, dtype=np.int64)
        self._stage = ck.get_stage(ens.kernel, g.ndim)
        p = ens.packed
        self._args = (p.params, p.bcode, p.bvalue)
        shp = (ens.members,) + ens.shape
        self.buffers = [np.zeros(shp, ens.dtype) for _ in range(3)]
        self.member_name = f"cpu/{ens.kernel}/{ens.dtype.name}"
        self.single_options = dict(backend="cpu", kernel=ens.kernel, tile=tile)
        self._serial = ens.cells < self.serial_below

    def advance(self, nsteps):
        self.ens._advance_stages(nsteps)

    def load(self, phis):
        self.buffers[0][...] = phis

    def load_member(self, m, phi):
        self.buffers[0][m] = phi

    def state(self):
        return self.buffers[0].copy()

    def stage(self, src, base, out, coef, lo, hi):
        params, bcode, bvalue = self._args
        c = self.ens.dtype.type(coef)
        for m in range(self.ens.members):
            self._stage(src[m], base[m], out[m], c, params, bcode, bvalue, lo, hi, self.tile)

    def threads(self):
        return serial_threads(self._serial)

    def synchronize(self):
        pass

    def partials(self):
        e = self.ens
        return [observables.field_partials(self.buffers[0][m], 0, e.shape[0], e.model,
                                           e.boundary) for m in range(e.members)]


class _CudaMembers:
    """Flat device buffers of ``M·cells``; one launch per stage and per reduction."""

    def __init__(self, ens, *, block, cpt, march, vec, device):
        from numba import cuda

        from .cuda.ensemble import EnsemblePlan

        if not cuda.is_available():
            raise RuntimeError("backend 'cuda' needs a CUDA GPU (or NUMBA_ENABLE_CUDASIM=1)")
        if device is not None:
            cuda.select_device(int(device))
        if isinstance(block, str):
            if block != "auto":
                raise ValueError(f"block must be a list of extents or 'auto', got {block!r}")
            block = None   # no auto-tune for ensembles: the default block of the form
        elif block is not None:
            block = tuple(int(b) for b in block)
        self.ens = ens
        self.plan = EnsemblePlan(ens.kernel, ens.shape, ens.members, ens.boundary.code,
                                 ens.dtype, block=block, cpt=cpt, march=march, vec=vec)
        self.scal = ens.packed.scalars
        n = ens.members * ens.cells
        self.buffers = [cuda.device_array(n, dtype=ens.dtype) for _ in range(3)]
        self._partial = None
        self.use_graphs, self._graphs, self._graph_error = True, {}, None
        self._exact_keys = []  # keys of graphs of exact advance lengths (graph.cache_graph)
        self._lengths = None  # graph.LengthsSeen, made with the first graph replay
        try:
            self.device = int(cuda.get_current_device().id)
        except Exception:  # pragma: no cover - simulator without a device object
            self.device = 0
        self.single_options = dict(backend="cuda", kernel=ens.kernel, block=list(self.plan.block),
                                   **self.plan.single)

    @property
    def member_name(self) -> str:
        p = self.plan
        blk = "x".join(str(b) for b in p.block)
        if p.form == "pair":
            extra = f", 2x{p.cpt} cells/thread (pair loads)"
        else:
            extra = f", {p.cpt} cells/thread"
        return f"cuda/{self.ens.kernel}/{self.ens.dtype.name} (block {blk}{extra})"

    def load(self, phis):
        self.buffers[0].copy_to_device(phis.reshape(-1))

    def load_member(self, m, phi):
        c = self.ens.cells
        self.buffers[0][m * c:(m + 1) * c].copy_to_device(phi.reshape(-1))

    def state(self):
        return self.buffers[0].copy_to_host().reshape((self.ens.members,) + self.ens.shape)

    def stage(self, src, base, out, coef, lo, hi):
        self.plan(src, base, out, coef, self.scal)

    def advance(self, nsteps):
        """As :meth:`CudaFieldSolver.advance`: recorded CUDA Graphs of
        :func:`~simengine.field.cuda.graph.split_steps` sizes (the same kernels and bits), at
        most one step stage by stage."""
        from .cuda import graph
        from .cuda.config import SIMULATOR

        n = int(nsteps)
        if n < 2 or SIMULATOR or not self.use_graphs or self._graph_error is not None:
            return self.ens._advance_stages(n)
        if not self.plan.ready:   # the first steps compile the kernel and prepare launches
            self.ens._advance_stages(2)
            n -= 2
        if self._lengths is None:
            self._lengths = graph.LengthsSeen()
        graph.replay_steps(n, self._step_graph, self.ens._advance_stages,
                           exact=self._lengths.again(n))

    def _step_graph(self, steps):
        from .cuda import graph

        key = tuple(id(b) for b in self.buffers) + (int(steps),)
        g = self._graphs.get(key)
        if g is None:
            def record_stage(target, src, base, out, coef):
                self.plan.record(target, src, base, out, coef, self.scal)

            try:
                g = graph.StepGraph(self.device, self.buffers, self.ens.scheme, self.ens.coefs,
                                    record_stage, steps=steps)
            except Exception as exc:  # recording unsupported here: launch step by step
                self._graph_error = f"{type(exc).__name__}: {exc}"
                return None
            graph.cache_graph(self._graphs, key, g, steps, self._exact_keys)
        return g

    @contextmanager
    def threads(self):
        yield

    def synchronize(self):
        from numba import cuda

        cuda.synchronize()

    def partials(self):
        from .cuda.ensemble import member_partials

        e = self.ens
        parts, self._partial = member_partials(self.buffers[0], e.shape, e.members, e.model,
                                               e.boundary, partial=self._partial)
        return parts
