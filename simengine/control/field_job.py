"""The field job: a Cahn–Hilliard scenario as units of work (time steps) for the controller.

The controller (:mod:`simengine.control.runner`) calls the job protocol: ``describe``, ``make_output``,
``start``, ``next_stop``, ``advance``, ``at_stop``, ``checkpoint``, ``finished``. The job owns the
solver built from the run's plan and the run's state (the field, its steps); its observations
are :mod:`.field_observe`, its output side (what is written at a stop, run-ahead, checkpoints)
:mod:`.field_writes`; the writer (``FieldOutput``) owns the file.
"""
from __future__ import annotations

import time

import numpy as np
from ..errors import OutputError, SimulationError, UserError
from .field_observe import ASYNC_OBSERVE_MAX_BYTES, BLOWUP, FieldObservations, _unbounded  # noqa: F401
from .field_writes import (RUN_AHEAD_SECONDS, RUN_AHEAD_STOPS,  # noqa: F401
                           RUN_AHEAD_WRITE_BEHIND, FieldWrites)

#: bytes of rows drawn at a time when the initial noise is loaded onto a device window by window
INIT_WINDOW_BYTES = 256 << 20

#: the longest piece of steps between two looks at the clock, the interrupt flag and the progress
MAX_PIECE = 1 << 16


def piece_size(piece: int, n: int, seconds: float) -> int:
    """The next piece of steps after ``n`` steps took ``seconds``: double while a piece takes
    under 0.2 s, else scale towards 0.3 s — always a power of two (≤ :data:`MAX_PIECE`), so a
    run advances by few distinct lengths: a CUDA solver records one graph per length it sees
    repeatedly (:func:`simengine.field.cuda.graph.split_steps`), and arbitrary lengths made it
    record a new graph for nearly every piece (measured: 18–70 µs per 200² step instead of 2.5)."""
    want = piece * 2 if seconds < 0.2 else n * 0.3 / max(seconds, 1e-9)
    want = int(max(1, min(want, MAX_PIECE)))
    return 1 << (want.bit_length() - 1)


class _Tally:
    """Steps and seconds added up (``tally += (steps, seconds)``)."""

    def __init__(self):
        self.steps, self.seconds = 0, 0.0

    def __iadd__(self, other):
        self.steps += int(other[0])
        self.seconds += float(other[1])
        return self


class FieldJob(FieldWrites, FieldObservations):
    kind = "field"
    unit = "step"

    def __init__(self, sc, log=None, comm=None, solver=None, plan=None):
        """``solver``: a prebuilt whole-grid solver to use instead of building one (a member of
        an ensemble, :class:`simengine.field.ensemble.MemberSolver`); one process only.
        ``plan``: the run's plan (:mod:`simengine.plan`; default: computed here)."""
        from ..config.checks import field_problem
        from ..field.backends import make_solver

        from ..parallel import SerialComm

        self.comm = comm or SerialComm()
        spec = sc.spec
        self.sc = sc
        self.spec = spec
        self.log = log or (lambda msg: None)
        self.model, self.grid, self.boundary = field_problem(spec)
        if plan is None:      # the run's plan: what runs, decided once (refusals: one line)
            from ..plan import for_scenario

            plan = for_scenario(sc, self.comm.size)
        self.run_plan = plan
        from ..field.clock import Clock

        from ..config.checks import initial_time
        from ..config.loader import Located

        try:
            self.clock = Clock(spec, initial_time(sc, Located(sc.data, {}, sc.path)))
        except ValueError as exc:
            key = ".".join(getattr(exc, "key", ("time",)))
            raise UserError(f"{sc.path}: {key}: {exc}") from None
        init = spec.initial
        self.phi_range = ((init.mean - init.amplitude, init.mean + init.amplitude)
                          if init.type == "noise" else None)
        s = spec.solver
        # the engine is built from the plan's choices (backend, integrator, strategy,
        # precision, fused); the scenario gives only the numbers (dt, launch hints)
        p = plan.problem
        kw = dict(kernel=p.kernel, precision=p.precision, integrator=p.integrator,
                  dt=spec.time.dt, tile=s.tile, block=s.block, layout=s.layout,
                  fused=None if p.fused == "auto" else p.fused)
        self.slabs = None
        try:
            if solver is not None:
                from ..field.decomposition import whole_slab

                self.solver, self.slab = solver, whole_slab(self.grid.shape[0])
            elif p.integrator == "spectral":
                self.solver, self.slab = self._spectral_solver()
            elif self.comm.size > 1:
                from ..field.distributed import make_rank_solver
                from ..field.plans import halo_of

                form = plan.decision("form")      # the slabs' halo: the form the plan runs
                self.solver, self.slab, self.slabs = make_rank_solver(
                    self.comm, self.model, self.grid, self.boundary, backend=plan.backend,
                    depth=None if form is None else halo_of(form.chosen), **kw)
            else:
                from ..field.decomposition import whole_slab

                self.solver = make_solver(self.model, self.grid, self.boundary,
                                          backend=plan.backend, **kw)
                self.slab = whole_slab(self.grid.shape[0])
        except (ValueError, RuntimeError) as exc:
            raise UserError(f"{sc.path}: solver: {exc}") from None
        self.warmup_seconds = 0.0     # compilation is start-up (field/warmup.py)
        if solver is None and getattr(self.solver, "backend", None) == "cpu":
            from ..field.warmup import warm_cpu_steps

            self.warmup_seconds = warm_cpu_steps(self.model, self.grid, self.boundary, kw)
        if solver is None:
            self._check_plan(s)
        from ..field.spectrum_cuda import device_spectrum_for

        # where S(k) is computed (the GPU with cuFFT for large one-process CUDA fields)
        #: the radial S(k) at every observation (output.structure_factor): row
        #: "structure_factor" (S per shell, NaN where empty); the shells' mean |k| in
        #: ``structure_factor_k`` (the same at every observation)
        self.radial = bool(spec.output.structure_factor)
        self.structure_factor_k = None
        from ..field.measuring import Measurer

        self.measurer = Measurer(self.model, self.grid, self.boundary)  # the length measures
        self._spectrum, self.spectrum_note = device_spectrum_for(
            self.solver, self.grid, self.boundary, self.comm.size, comm=self.comm,
            slabs=self.slabs, radial=self.radial or self.measurer.wants_radial,
            level=self.measurer.area_level)
        self.spectrum_note += "; " + self.measurer.note
        self.total = self.clock.total
        self.dtype = np.dtype(p.precision)
        #: the adaptive stepper (time.adaptive), else None
        self.adaptive = None
        if self.clock.adaptive:
            # (adaptive rk2/euler on MPI ranks or on a GPU: refused by the plan's integrator row)
            from ..field.timed import AdaptiveDriver

            self.adaptive = AdaptiveDriver(self)
            self.unit = "tick"
        #: the file's dt: one step, or one tick of an adaptive run (time = step·dt)
        self.file_dt = self.clock.unit_dt
        self.t0 = time.perf_counter()
        self.last_ckpt = 0
        self._chunk = 1
        # observation pipelining (one process, own CUDA solver): at a stop where only
        # observables are due, the device part (reductions, the field copied to the host) runs
        # at once and the host part (S(k) and the length scale, ≈ 1–3 ms for 200²) runs after
        # the next steps have been launched, while the GPU computes them (finish_observation)
        self._pipeline = (solver is None and self.comm.size == 1
                          and getattr(self.solver, "backend", None) == "cuda"
                          and p.integrator != "spectral")
        self._pending = None
        # the observation of an observables-only stop, enqueued behind the steps that reach it
        # (solver.observe_async: reductions and the field's host copy run on the GPU right
        # after the steps, with no host round trip in between): (step, AsyncObservation)
        self._enqueued = None
        # run-ahead (the same processes): [(step, AsyncObservation)] of observables-only stops
        # whose steps and observation are already enqueued, beyond the controller's position;
        # (step, host field) of the last such stop taken (an interrupt checkpoints from it)
        self._ahead = []
        self._taken = None
        self._step_seconds = None  # GPU time per step, measured by advance
        self._settled = False            # a stop past step 0 was reached (all compiled)
        self._stepped = _Tally()         # steps and seconds of the pieces after that stop
        # write-behind (the same processes): (output, checkpoint step or None) of a write
        # running in a background thread while the next steps run
        self._writing = None

    def _spectral_solver(self):
        """The spectral solver of the plan (what it cannot run, the plan's integrator row
        refused already: ``field/spectral/rules.py``)."""
        from ..field.decomposition import whole_slab
        from ..field.spectral.solver import SpectralFieldSolver

        p = self.run_plan.problem
        rows = None
        if self.comm.size > 1:  # slabs of axis 0 without halos: the transforms transpose
            from ..field.distributed import rank_slabs

            self.slabs = rank_slabs(self.comm, self.grid.shape[0], self.boundary.kind, 1)
            rows = [(sl.start, sl.stop) for sl in self.slabs]
        solver = SpectralFieldSolver(self.model, self.grid, self.boundary,
                                     precision=p.precision, dt=self.spec.time.dt,
                                     symbol=p.symbol, backend=self.run_plan.backend,
                                     phi_range=self.phi_range, comm=self.comm, rows=rows)
        slab = whole_slab(self.grid.shape[0]) if rows is None else self.slabs[self.comm.rank]
        return solver, slab

    def _check_plan(self, s):
        """The solver runs what the plan says (the same form table; a difference is a bug)."""
        want = self.run_plan.decision("form")
        choice = getattr(self.solver, "plan_choice", None)
        if want is None or choice is None or isinstance(s.block, str):
            return           # no GPU form, or ``block: auto`` (tuned when the solver is built)
        from ..field.plans import stage_kernel

        got = choice.form.name + ("" if choice.fused else "/" + stage_kernel(self.solver.plan))
        if got != want.chosen:
            raise RuntimeError(f"the plan says {want.chosen}, the solver built {got}")

    # ---- controller protocol
    def describe(self, output) -> str:
        ranks = ""
        if self.comm.size > 1 and getattr(self.solver, "integrator", "") == "spectral":
            sizes = [s.owned for s in self.slabs]
            ranks = f", {self.comm.size} slabs of axis 0 ({min(sizes)}–{max(sizes)} rows each)"
        elif self.comm.size > 1:
            sizes = [s.owned for s in self.slabs]
            how = getattr(self.solver.exchange, "describe", None)
            ranks = (f", {self.comm.size} slabs of axis 0 ({min(sizes)}–{max(sizes)} rows each,"
                     f" halo {self.slabs[0].depth}{' by ' + how() if how else ''})")
        summary = getattr(self.solver, "plan_summary", None)  # CUDA: field/plans.py
        plan = f" [plan {summary}]" if summary else ""
        how = getattr(self.solver, "describe", None)  # the spectral solver's words
        how = f" [{how()}]" if how else ""
        if self.adaptive is not None:
            c = self.adaptive.ctrl
            steps = (f"adaptive steps to t = {self.clock.end:g} (tolerance {c.tol:g}, dt from "
                     f"{c.dt:g}{f' up to {c.cap:g}' if c.cap != float('inf') else ''}; "
                     f"{self.total} ticks of {self.clock.unit_dt:g})")
        else:
            steps = f"{self.total} steps"
        law = getattr(self.model, "law", None)
        if law is not None:
            plan += f" [model {law.describe()}]"
        return (f"{self.sc.name}: {steps} of {self.solver.name}{how}{plan} on grid "
                f"{list(self.grid.shape)}{ranks}; {self.spectrum_note} -> {output}")



    def start(self, fresh, ck):
        """Initial state (fresh) or the checkpoint ``ck``; returns (done, elapsed). Each rank
        loads only its own rows."""
        from .. import profile

        if fresh:
            if self.spec.initial.type == "noise" and hasattr(self.solver, "load_rows"):
                self._load_noise_windows()
                return 0, 0.0
            with profile.phase("start-up: initial field"):
                phi = self.initial_field()
            with profile.phase("start-up: initial field loaded into the solver", phi.nbytes):
                self.solver.load(phi)
            return 0, 0.0
        with profile.phase("start-up: checkpoint read"):
            phi = np.ascontiguousarray(self.checkpoint_rows(ck), dtype=self.dtype)
        with profile.phase("start-up: checkpoint loaded into the solver", phi.nbytes):
            self.solver.load(phi)
        self.last_ckpt = ck["done"]
        if getattr(self.model, "noise", None) is not None:
            self.solver.steps = int(ck["done"])     # the noise is keyed by the step number
        if self.adaptive is not None:
            if not ck.get("integrator_state"):
                raise UserError(f"{ck['path']}: the checkpoint has no integrator_state (the "
                                f"adaptive controller's state); cannot resume")
            self.adaptive.load_state(ck["integrator_state"])
        return ck["done"], ck["elapsed"]


    def complete_message(self, done) -> str:
        return f"the run is already complete (step {done} of {self.total}); nothing to do"

    def resume_message(self, done) -> str:
        return f"resuming from the checkpoint at step {done}"

    def next_stop(self, done):
        return self.clock.next_stop(done)

    def advance(self, done, stop, stop_requested, progress):
        """Step from ``done`` towards ``stop`` in pieces sized to ≈0.3 s (:func:`piece_size`);
        returns the new step.
        On ranks the piece size and the decision to stop are agreed (all-reduce), so every rank
        stops after the same step."""
        comm = self.comm
        if self.adaptive is not None:
            return self.adaptive.advance(done, stop, stop_requested, progress)
        if self._ahead:  # enqueued by _run_ahead: the GPU is on its way there already
            if self._ahead[0][0] != stop:
                raise RuntimeError(f"run-ahead out of step: {self._ahead[0][0]} != {stop}")
            progress(stop)
            return stop
        from .. import profile

        profile.mark("first step")
        while done < stop:
            n = min(self._chunk, stop - done)
            t = time.perf_counter()
            self.solver.advance(int(n))
            if self._pipeline and done + n == stop and self.due(stop) == {"obs"}:
                field = self.solver.cells * self.dtype.itemsize
                small = field <= ASYNC_OBSERVE_MAX_BYTES
                if small or self._spectrum is not None:  # S(k) on the GPU: no field copy
                    # ... unless the host needs it: S(k) on the host, or a run-ahead (room for
                    # at least one stop's copy beside this one, _run_ahead)
                    copy = small and (self._spectrum is None
                                      or ASYNC_OBSERVE_MAX_BYTES // max(field, 1) - 2 >= 1)
                    self._enqueued = (stop, self.solver.observe_async(
                        spectrum=self._spectrum, copy_field=copy))
            self.finish_observation()  # host work of the last observation, overlapping the steps
            self.solver.synchronize()  # time the work itself, not its (asynchronous) launch
            done += n
            el = comm.allreduce(time.perf_counter() - t, "max")
            profile.add("steps", el)
            if n >= 100:
                self._step_seconds = el / n
            if self._settled:  # after the first stop past step 0 (compilation, first graphs)
                self._stepped += (n, el)
            self._chunk = piece_size(self._chunk, n, el)
            progress(done)
            if comm.allreduce(bool(stop_requested()), "or"):
                break
        return done







    def failed(self, exc, output):
        try:  # a write-behind still running finishes first: the message names what is on disk
            self._wait_write()
        except OutputError:
            pass
        new = SimulationError(f"{exc}; stopped. The last good checkpoint (step {self.last_ckpt}) "
                              f"is in {output}")
        new.collective = getattr(exc, "collective", False)
        return new

    def finished(self, elapsed, output) -> str:
        n, sec = self._stepped.steps, self._stepped.seconds
        rate = (f" (stepping {1e3 * sec / n:.4g} ms/step over the {n} steps after the first "
                f"stop)" if n else "")
        if self.adaptive is not None:
            return (f"done: t = {self.clock.end:g} in {elapsed:.1f} s "
                    f"({self.adaptive.summary()}) -> {output}")
        return f"done: {self.total} steps in {elapsed:.1f} s{rate} -> {output}"

    # ---- state
    def initial_field(self):
        """This rank's rows of the initial field (the whole field in one process): seeded noise
        drawn for these rows only, or these rows read from the initial-condition file."""
        from ..field.initial import noise_rows

        init = self.spec.initial
        a, b = self.slab.start, self.slab.stop
        if init.type == "file":
            if self.comm.size == 1:
                from ..config.checks import _read_initial_file
                from ..config.loader import Located

                data = _read_initial_file(self.sc, Located(self.sc.data, {}, self.sc.path))
                return np.ascontiguousarray(data, dtype=self.dtype)
            import h5py

            with h5py.File(self.sc.resolve(init.path), "r") as f:
                ds = f[init.dataset]
                rows = ds[-1, a:b] if ds.ndim == self.grid.ndim + 1 else ds[a:b]  # a series: its last
                return np.ascontiguousarray(rows, dtype=self.dtype)
        if init.type in ("expression", "pfhub_bm1"):
            from ..config.checks import initial_formula
            from ..config.loader import Located
            from ..field.expression import evaluate_rows

            tree = initial_formula(self.sc, Located(self.sc.data, {}, self.sc.path))
            return evaluate_rows(tree, self.grid.shape, self.grid.spacing, a, b).astype(
                self.dtype)
        return noise_rows(self.grid.shape, a, b, init.mean, init.amplitude, init.seed, self.dtype)

    def _load_noise_windows(self):
        """The seeded noise of this rank's rows drawn window by window into two pinned host
        buffers (in threads, :func:`~simengine.field.initial.noise_rows`) and copied to the
        device while the next window is drawn: the same field as :meth:`initial_field`, bit
        for bit, without a host copy of the whole field."""
        from numba import cuda

        from .. import profile
        from ..field.initial import noise_rows

        init = self.spec.initial
        a, b = self.slab.start, self.slab.stop
        shape = tuple(self.grid.shape)
        row = int(np.prod(shape[1:], dtype=np.int64)) * self.dtype.itemsize
        per = max(1, min(b - a, INIT_WINDOW_BYTES // max(row, 1)))
        bufs = [cuda.pinned_array((per,) + shape[1:], dtype=self.dtype) for _ in range(2)]
        stream = cuda.stream()
        events = [None, None]
        for i, r in enumerate(range(a, b, per)):
            n = min(per, b - r)
            k = i % 2
            if events[k] is not None:
                events[k].synchronize()  # the copy out of this buffer is done
            with profile.phase("start-up: initial field drawn (threads)", n * row):
                noise_rows(shape, r, r + n, init.mean, init.amplitude, init.seed, self.dtype,
                           out=bufs[k][:n])
            self.solver.load_rows(r - a, bufs[k][:n], stream=stream)
            events[k] = cuda.event()
            events[k].record(stream)
        with profile.phase("start-up: initial field copied to the device (waited)"):
            stream.synchronize()
