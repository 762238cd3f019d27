"""CUDA twin of the CPU field solver (``backend: cuda``).

The state stays on the device for the whole run in three flat buffers (φⁿ, φ*, φⁿ⁺¹) rotated
after every step; the host sees the field only through :meth:`CudaFieldSolver.state`, the
reductions (computed on the device, accumulated in float64) and, for a slab, the halo rows
(:meth:`CudaFieldSolver.boundary_rows` / :meth:`CudaFieldSolver.set_halo`, through pinned host
buffers, for an exchanger whose MPI is not CUDA-aware).
"""
from __future__ import annotations

import numpy as np
from numba import cuda

from . import cuda as ck
from . import plans
from .cuda.fused_launch import graph_recording
from .cuda.fused_slab import PipelinedStep, can_pipeline
from .solver import FieldSolver


class CudaFieldSolver(FieldSolver):
    """Cahn–Hilliard solver on one CUDA GPU (numba-cuda kernels A–D, see :mod:`simengine.field.cuda`).

    Constructor: that of :class:`~simengine.field.solver.FieldSolver`. CUDA hints:
    ``layout`` for the tiled kernels: ``seed`` or ``modern`` (default: seed in 2-D, modern in 1-D
    and 3-D, from the H100 measurements); ``tile`` is the CPU backend's hint and is ignored;
    ``block``: a thread-block shape with x (the last axis) first, e.g. ``[32, 8]``, ``None`` for
    the default, or ``"auto"`` to time candidates once and cache the choice (see
    :mod:`simengine.field.cuda_tuning`); ``cells_per_thread`` (1, 2, 4) for the direct kernels
    (default: 4 in 2-D, else 1); ``march`` (direct kernels, 2-D/3-D): rows/planes one thread
    walks along axis 0 with a register queue (:func:`simengine.field.cuda.march_kernel`), 0 = off;
    default ``DEFAULT_MARCH`` unless ``cells_per_thread`` is given; ``vec`` (2-D direct kernels):
    2 = the pair kernel (:func:`simengine.field.cuda.vec_kernel`), 0 = off; default
    ``DEFAULT_VEC[precision]`` unless ``cells_per_thread`` or ``march`` is given; ``device``: the
    CUDA device id (default: the current device); ``fused``: ``True`` / ``False`` / ``None``
    (auto) — a fused RK2 form (one launch per step; ``block`` is then its thread block), chosen
    by the plan registry :mod:`simengine.field.plans` (``plan_choice``: the form and why)."""

    backend = "cuda"

    def _setup(self, *, tile, block, layout, cells_per_thread, march, vec, device, fused=None):
        if not cuda.is_available():
            raise RuntimeError("backend 'cuda' needs a CUDA GPU (or NUMBA_ENABLE_CUDASIM=1)")
        del tile  # the CPU backend's tile extents; the CUDA kernels take ``block``/``layout``
        if device is not None:
            cuda.select_device(int(device))
        self.device = _device_id()
        grid = self.grid
        self.layout = layout or ck.DEFAULT_LAYOUT[grid.ndim]
        if self.layout not in ck.LAYOUTS:
            raise ValueError(f"unknown layout {self.layout!r}; choose from {ck.LAYOUTS}")
        if isinstance(block, (list, tuple)):
            block = tuple(int(b) for b in block)
        self.shape = self.local_shape
        self.shape3 = ck.view3(self.shape)
        self.scal = self.packed.scalars
        self._hints = dict(cpt=cells_per_thread, march=march, vec=vec)
        if isinstance(block, str) and block == "auto":
            from .cuda_tuning import autotune_block

            block = autotune_block(self.kernel, self.layout, self.shape, self.dtype, self.model,
                                   grid, self.boundary, cpt=cells_per_thread, march=march,
                                   vec=vec)
        self._block_hint = block  # the user's block (None: the defaults' rules per range)
        self.plan = self._make_plan(block, self.lo, self.hi)
        self.block = self.plan.block
        # the plan registry (field/plans.py): a fused RK2 form, or None for the unfused stages
        case = self._case = plans.case_of(self, block)
        self.plan_choice = plans.choose(case, fused)
        self.fused_plan = self.plan_choice.build(case) if self.plan_choice.fused else None
        #: a fused form on a slab: a step is one "stage" (the 4-row exchange, one launch); on
        #: the whole grid run_stage keeps offering the unfused stages on the same buffers
        self._fused_slab = self.fused_plan is not None and not self.slab.whole
        if self._fused_slab:
            self.stages_per_step = 1
        self._pipe = None  # the pipelined slab step (cuda/fused_slab.py) and its exchanger
        self._plans = {}
        self.cells = int(np.prod(self.shape))
        self.row_cells = self.cells // self.shape[0]
        # flat device buffers (φⁿ, φ*, φⁿ⁺¹); the kernels index them by linear offset
        self.buffers = [cuda.device_array(self.cells, dtype=self.dtype) for _ in range(3)]
        self._partial = None
        self._pinned = None
        self._observing = None  # observe_async's pinned host buffers (sets used in turn)
        self._observed = -1     # ... the slot used last
        # CUDA Graphs of many steps for whole-grid runs (see advance)
        self.use_graphs = True
        self._graphs = {}
        self._exact_keys = []  # keys of graphs of exact advance lengths (graph.cache_graph)
        self._lengths = ck.graph.LengthsSeen()  # an exact-length graph for repeated lengths
        self._graph_error = None

    def _make_plan(self, block, lo, hi, **extra):
        return ck.StageLaunch(self.kernel, self.grid.ndim, self.shape3, self.boundary.code,
                            self.dtype, layout=self.layout, block=block, lo=lo, hi=hi,
                            **self._hints, **extra)

    def _range_plan(self, lo, hi):
        """The plan of a stage over rows ``lo:hi`` other than the owned rows (the boundary-first
        order's end and interior rows): the solver's kernel with its output rows per thread
        (same per-cell arithmetic), the launch defaults' rules (march length) for the range."""
        extra = {}
        if getattr(self.plan, "smarch", False):
            extra = dict(smarch=True, smarch_rows=self.plan.rows)
        return self._make_plan(self._block_hint, lo, hi, **extra)

    @property
    def plan_summary(self) -> str:
        """Which form of the plan registry runs and why, e.g. ``stages/smarch: auto: unfused
        for texture 3-D`` (the field job logs it at start-up)."""
        form = self.plan_choice.form.name
        if not self.plan_choice.fused:
            form += "/" + plans.stage_kernel(self.plan)
        where = ""
        if not self.slab.whole:  # a slab: its rows, its halo and how the halo arrives
            s = self.slab
            how = getattr(self.exchange, "label", None) or "in-process"
            where = (f" on slab rows {s.start}:{s.stop}, halo {s.depth}, exchange {how}")
            if self.exchange_overlapped:
                where += " overlapped with the interior"
        return f"{form}: {self.plan_choice.reason}{where}"

    @property
    def exchange_overlapped(self) -> bool:
        """Whether this slab's halo exchange runs while the interior is computed: a fused step's
        pipeline (``cuda/fused_slab.py``) or the stages' boundary-first order (the exchanger's
        ``boundary_first``). The one answer for every log line that says so."""
        if self._fused_slab:
            return can_pipeline(self.exchange, self.lo, self.hi)
        return bool(getattr(self.exchange, "boundary_first", False))

    @property
    def name(self) -> str:
        if self.fused_plan is not None:
            return f"cuda/{self.kernel}/{self.dtype.name} ({self.fused_plan.description})"
        tiled = self.kernel in ("shared", "combined")
        lay = f"/{self.layout}" if tiled else ""
        blk = "x".join(str(b) for b in self.block)
        cpt = f"c{self.plan.cpt}" if self.plan.layout == "direct" else ""
        extra = f", {self.plan.cpt} cells/thread" if cpt else ""
        if self.plan.march:
            extra = f", march {self.plan.march}"
            if getattr(self.plan, "smarch", False):
                extra = f", shared-memory march {self.plan.march}"
        if self.plan.vec:
            extra = f", 2x{self.plan.cpt} cells/thread (pair loads)"
        return f"cuda/{self.kernel}{lay}/{self.dtype.name} (block {blk}{extra})"

    # -- state ------------------------------------------------------------------------------
    def load(self, phi):
        phi = self._check_load(phi)
        host = np.ascontiguousarray(phi, dtype=self.dtype).reshape(-1)
        rc = self.row_cells
        self.buffers[0][self.lo * rc:self.hi * rc].copy_to_device(host)

    def load_rows(self, a, block, stream=0) -> None:
        """Copy ``block`` (host, e.g. pinned) into owned rows ``a:a+len(block)`` of the state (a
        field loaded window by window, :meth:`FieldJob.start`; asynchronous on ``stream``)."""
        rc = self.row_cells
        host = np.asarray(block).reshape(-1)
        lo = (self.lo + int(a)) * rc
        self.buffers[0][lo:lo + host.size].copy_to_device(host, stream=stream)

    def state(self) -> np.ndarray:
        rc = self.row_cells
        own = self.buffers[0][self.lo * rc:self.hi * rc].copy_to_host()
        return own.reshape(self.owned_shape)

    # -- time stepping -----------------------------------------------------------------------
    def stage(self, src, base, out, coef, lo=None, hi=None):
        """``out[lo:hi] = base[lo:hi] + coef R(src)[lo:hi]`` on flat device buffers of the local
        shape (default: the owned rows, the solver's own plan)."""
        lo = self.lo if lo is None else int(lo)
        hi = self.hi if hi is None else int(hi)
        if lo == self.lo and hi == self.hi:
            plan = self.plan
        else:
            plan = self._plans.get((lo, hi))
            if plan is None:
                plan = self._plans[(lo, hi)] = self._range_plan(lo, hi)
        plan(src, base, out, coef, self.scal)

    def advance(self, nsteps: int = 1) -> None:
        """``nsteps`` steps; a whole-grid run replays recorded CUDA Graphs of
        :data:`~simengine.field.cuda.graph.GRAPH_STEPS` steps (one host call per graph instead
        of one launch per stage, see :mod:`simengine.field.cuda.graph`) and smaller graphs for
        the rest; at most one step is launched alone."""
        n = int(nsteps)
        if n < 2 or not self._graphs_usable():
            return self._launch_steps(n)
        if (self.fused_plan or self.plan)._fast is None:  # the first steps compile the kernels
            self._launch_steps(2)
            n -= 2
        # (not ``self.steps += replay_steps(...)``: that would read self.steps before the
        # remainder launched inside replay_steps counts its steps, and lose them)
        replayed = ck.graph.replay_steps(n, self._step_graph, self._launch_steps,
                                         exact=self._lengths.again(n) and
                                         self.cells <= ck.graph.EXACT_MAX_CELLS)
        self.steps += replayed

    def _launch_steps(self, n: int) -> None:
        """``n`` steps launched one by one."""
        if self.fused_plan is None:
            super().advance(n)
        elif self.slab.whole:  # a fused RK2 form: one launch per step
            self.fused_plan.advance(self.buffers, n, self.coefs, self.scal)
            self.steps += int(n)
        else:  # a fused form on a slab: the 4-row halo exchange, then the step
            for _ in range(int(n)):
                self.run_stage(0)
                self.end_step()

    def run_stage(self, i: int) -> None:
        """Stage ``i`` of the current step (lockstep drivers); a fused form's step on a slab is
        one stage: the exchange of φ's 4-row halo, then the fused launch φ → buffers[2]."""
        if not self._fused_slab:
            return super().run_stage(i)
        c1, c2 = self.coefs
        ex = self.exchange
        if self._pipe is None or self._pipe[1] is not ex:
            pipe = (PipelinedStep(self.plan_choice.form.build, self._case)
                    if can_pipeline(ex, self.lo, self.hi) else None)
            self._pipe = (pipe, ex)
        if self._pipe[0] is not None:  # the exchange overlapped with the step's interior
            self._pipe[0](ex, self.buffers[0], self.buffers[2], c1, c2, self.scal)
            return
        ex(self.buffers[0])
        self.fused_plan(self.buffers[0], self.buffers[2], c1, c2, self.scal)

    def end_step(self) -> None:
        if not self._fused_slab:
            return super().end_step()
        self.buffers[0], self.buffers[2] = self.buffers[2], self.buffers[0]
        self.steps += 1

    def _graphs_usable(self) -> bool:
        return (self.use_graphs and not ck.SIMULATOR and self.slab.whole
                and self._graph_error is None)

    def _step_graph(self, steps=None):
        steps = ck.graph.GRAPH_STEPS if steps is None else int(steps)
        key = tuple(id(b) for b in self.buffers) + (steps,)
        g = self._graphs.get(key)
        if g is None:
            def record_stage(target, src, base, out, coef):
                self.plan.record(target, src, base, out, coef, self.scal)

            scheme, coefs = self.scheme, self.coefs
            if self.fused_plan is not None:  # fused RK2: one recorded kernel per step
                scheme, coefs, record_stage = graph_recording(
                    self.fused_plan, self.coefs, self.scal)
            try:
                g = ck.graph.StepGraph(self.device, self.buffers, scheme, coefs, record_stage,
                                       steps=steps)
            except Exception as exc:  # recording unsupported here: launch step by step
                self._graph_error = f"{type(exc).__name__}: {exc}"
                return None
            ck.graph.cache_graph(self._graphs, key, g, steps, self._exact_keys)
        return g

    def synchronize(self):
        cuda.synchronize()

    # -- halo access (host side, pinned) ------------------------------------------------------
    def _pins(self):
        if self._pinned is None:
            n = self.slab.depth * self.row_cells
            self._pinned = [cuda.pinned_array(n, dtype=self.dtype) for _ in range(2)]
        return self._pinned

    def boundary_rows(self, array):
        """Host copies of the owned rows ``[lo, lo+d)`` and ``[hi-d, hi)`` (d: the slab's halo
        depth) of a device buffer, in two pinned host arrays (reused by the next call) of
        :meth:`halo_shape`."""
        low, high = self._pins()
        send_low, send_high = self.edge_views(array)[:2]
        send_low.copy_to_host(low)
        send_high.copy_to_host(high)
        shp = self.halo_shape()
        return low.reshape(shp), high.reshape(shp)

    def set_halo(self, array, low, high) -> None:
        """Copy host rows into the halo ``[lo-d, lo)`` (``low``) and ``[hi, hi+d)`` (``high``)
        of a device buffer; ``None`` skips a side (no halo there)."""
        _, _, halo_low, halo_high = self.edge_views(array)
        if low is not None:
            halo_low.copy_to_device(np.ascontiguousarray(low, dtype=self.dtype).reshape(-1))
        if high is not None:
            halo_high.copy_to_device(np.ascontiguousarray(high, dtype=self.dtype).reshape(-1))

    def edge_views(self, array):
        """Flat device views of ``array`` (no copy): the owned rows a neighbour needs
        ``[lo, lo+d)``, ``[hi-d, hi)`` and the halo rows ``[lo-d, lo)``, ``[hi, hi+d)`` (d: the
        slab's halo depth; a side without a halo gives an empty view) — what a CUDA-aware MPI
        sends and receives in place."""
        rc, d, lo, hi = self.row_cells, self.slab.depth, self.lo, self.hi
        return (array[lo * rc:(lo + d) * rc], array[(hi - d) * rc:hi * rc],
                array[max(lo - d, 0) * rc:lo * rc], array[hi * rc:(hi + d) * rc]
                if hi + d <= self.shape[0] else array[hi * rc:hi * rc])

    # -- observables -------------------------------------------------------------------------
    def _partial_buffer(self):
        """The device array of per-block partial sums (kept; large enough for any rows)."""
        nb = ck.reduction_blocks(self.cells)
        if self._partial is None or self._partial.shape[0] < nb:
            self._partial = cuda.device_array((nb, 5), dtype=np.float64)
        return self._partial

    def _partials(self):
        return ck.field_partials(self.buffers[0], self.shape, self.model, self.boundary,
                                 self.lo, self.hi, partial=self._partial_buffer())

    def owned_device(self):
        """The owned rows of the current state (a flat device view, no copy)."""
        rc = self.row_cells
        return self.buffers[0][self.lo * rc:self.hi * rc]

    def observe_async(self, slots: int = 2, spectrum=None, copy_field=True
                      ) -> "AsyncObservation":
        """Enqueue an observation of the current state behind the launched steps: the reduction
        kernel, then the partial sums and the owned rows copied into pinned host memory, all
        asynchronous on the default stream; the host goes on (e.g. to launch the next steps)
        and :meth:`AsyncObservation.result` waits for the copies only. ``slots`` sets of host
        buffers are used in turn (at least 2; the set grows to the largest ``slots`` asked):
        a result stays valid until ``slots - 1`` more observations are enqueued. Gives what
        :meth:`reductions` and :meth:`state` give, bit for bit. ``spectrum``: a
        :class:`~simengine.field.spectrum_cuda.DeviceSpectrum` whose transform and sums are
        enqueued too (:meth:`AsyncObservation.spectrum_result`); ``copy_field=False`` copies no
        field to the host (the result's rows are then None)."""
        stream = cuda.default_stream()
        device_partial = self._partial_buffer()
        if self._observing is None:
            self._observing = []
        own = (self.hi - self.lo) * self.row_cells
        while len(self._observing) < max(2, int(slots)):
            # the field's buffer only once a copy of the field asks for it: a big field
            # observed without one (S(k) on the GPU) holds no pinned host copy of itself
            self._observing.append([cuda.pinned_array(device_partial.shape, dtype=np.float64),
                                    None])
        # the slot after the last one used (after a growth: a new slot first)
        self._observed = (self._observed + 1) % len(self._observing)
        slot = self._observing[self._observed]
        if copy_field and slot[1] is None:
            slot[1] = cuda.pinned_array(own, dtype=self.dtype)
        host_partial, host_phi = slot
        rc = self.row_cells
        self.exchange(self.buffers[0])  # as partials() does (a no-op for the whole grid)
        partial, nb, owned = ck.launch_partials(self.buffers[0], self.shape, self.model,
                                                self.boundary, self.lo, self.hi,
                                                partial=device_partial, stream=stream)
        partial.copy_to_host(host_partial, stream=stream)
        pending = spectrum.enqueue(self.owned_device()) if spectrum is not None else None
        if copy_field:
            self.buffers[0][self.lo * rc:self.hi * rc].copy_to_host(host_phi, stream=stream)
        done = cuda.event() if ck.SIMULATOR else cuda.event(timing=False)
        done.record(stream)
        return AsyncObservation(self, done, host_partial, host_phi if copy_field else None, nb,
                                owned, pending)

    def occupancy(self) -> dict:
        from .cuda.occupancy import occupancy_report

        return occupancy_report(self.fused_plan or self.plan)


class AsyncObservation:
    """An observation enqueued by :meth:`CudaFieldSolver.observe_async`."""

    def __init__(self, solver, event, host_partial, host_phi, nb, owned, spectrum=None):
        self._solver, self._event = solver, event
        self._partial, self._phi, self._nb, self._owned = host_partial, host_phi, nb, owned
        self._spectrum = spectrum

    def result(self):
        """``(reductions dict, owned rows)`` once the copies are done (waits for them only);
        the rows are a view of a pinned host buffer (see :meth:`CudaFieldSolver.observe_async`)."""
        from . import observables

        self._event.synchronize()
        s = self._solver
        part = ck.partials_of(self._partial, self._nb, self._owned)
        return (observables.merge_partials([part], s.model, s.grid),
                None if self._phi is None else self._phi.reshape(s.owned_shape))

    def spectrum_result(self, bounds):
        """``(length, radial)`` of the enqueued spectrum (None when none was enqueued)."""
        return None if self._spectrum is None else self._spectrum.result(bounds)

    def interface_area(self):
        """The interface area summed with the enqueued spectrum (None without one)."""
        return None if self._spectrum is None else self._spectrum.interface_area()


def _device_id() -> int:
    try:
        return int(cuda.get_current_device().id)
    except Exception:  # pragma: no cover - simulator without a device object
        return 0
