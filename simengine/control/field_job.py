"""The field job: a Cahn–Hilliard scenario as units of work (time steps) for the controller.

The controller (:mod:`simengine.control.runner`) calls the job protocol: ``describe``, ``make_output``,
``start``, ``next_stop``, ``advance``, ``at_stop``, ``checkpoint``, ``finished``. The job owns the
solver and decides which output events are due at a step; the writer (``FieldOutput``) owns the
file.
"""
from __future__ import annotations

import time

import numpy as np
from numba import njit

from ..errors import OutputError, SimulationError, UserError

#: |φ| above this is treated as a blow-up (φ lives in about [-1, 1])
BLOWUP = 1e6


#: observables-only stops of one-process CUDA runs whose field has at most this many bytes
#: read the field back asynchronously, behind the steps (two pinned host buffers of its size;
#: larger fields read it back at the stop, where the copy is small next to the steps)
ASYNC_OBSERVE_MAX_BYTES = 64 << 20

#: before a one-process CUDA run writes a snapshot/checkpoint, it enqueues the steps and the
#: observations of up to this many following observables-only stops (and at most
#: RUN_AHEAD_SECONDS of steps), so the GPU computes them while the host writes; the controller
#: then takes those stops' results in order (FieldJob._run_ahead)
RUN_AHEAD_STOPS = 32
RUN_AHEAD_SECONDS = 0.25
#: ... and the write then runs in a background thread (write-behind) instead of this one: off —
#: measured slower (H100 host, 200² fp64, a write every 20 000 steps: 3.36–4.63 µs/step against
#: 2.72–3.28 with the write in the launching thread: the writer's GIL holds slowed the thread
#: that takes the stops and tops the queue up)
RUN_AHEAD_WRITE_BEHIND = False

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


@njit(cache=True, nogil=True)
def _unbounded(flat, limit):
    """Whether a value is not finite or |value| > limit (one pass, no temporary arrays)."""
    for i in range(flat.size):
        if not abs(flat[i]) <= limit:  # NaN compares false
            return True
    return False


def _owned(a) -> bool:
    """Whether ``a`` is (a view of) a NumPy array that owns its memory — not of a buffer held
    elsewhere (a pinned host buffer that the next observation reuses)."""
    while isinstance(a.base, np.ndarray):
        a = a.base
    return a.base is None and a.flags.owndata


class _Tally:
    """Steps and seconds added up (``tally += (steps, seconds)``)."""

    def __init__(self):
        self.steps, self.seconds = 0, 0.0

    def __iadd__(self, other):
        self.steps += int(other[0])
        self.seconds += float(other[1])
        return self


class FieldJob:
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
            raise UserError(f"{sc.path}: time: {exc}") from None
        init = spec.initial
        self.phi_range = ((init.mean - init.amplitude, init.mean + init.amplitude)
                          if init.type == "noise" else None)
        s = spec.solver
        kw = dict(kernel=s.kernel, precision=s.precision, integrator=s.integrator,
                  dt=spec.time.dt, tile=s.tile, block=s.block, layout=s.layout,
                  fused=None if s.fused == "auto" else s.fused)
        self.slabs = None
        try:
            if solver is not None:
                from ..field.decomposition import whole_slab

                self.solver, self.slab = solver, whole_slab(self.grid.shape[0])
            elif s.integrator == "spectral":
                self.solver, self.slab = self._spectral_solver(s)
            elif self.comm.size > 1:
                from ..field.distributed import make_rank_solver

                self.solver, self.slab, self.slabs = make_rank_solver(
                    self.comm, self.model, self.grid, self.boundary, backend=s.backend, **kw)
            else:
                from ..field.decomposition import whole_slab

                self.solver = make_solver(self.model, self.grid, self.boundary,
                                          backend=s.backend, **kw)
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
        self.dtype = np.dtype(s.precision)
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
                          and s.integrator != "spectral")
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

    def _spectral_solver(self, s):
        """The spectral solver (what it cannot run, the plan's integrator row refused already:
        ``field/spectral/rules.py``)."""
        from ..field.backends import resolve
        from ..field.decomposition import whole_slab
        from ..field.spectral.solver import SpectralFieldSolver

        backend = resolve(s.backend)
        rows = None
        if self.comm.size > 1:  # slabs of axis 0 without halos: the transforms transpose
            from ..field.distributed import rank_slabs

            self.slabs = rank_slabs(self.comm, self.grid.shape[0], self.boundary.kind, 1)
            rows = [(sl.start, sl.stop) for sl in self.slabs]
        solver = SpectralFieldSolver(self.model, self.grid, self.boundary,
                                     precision=s.precision, dt=self.spec.time.dt,
                                     symbol=s.symbol or "fd", backend=backend,
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
        return (f"{self.sc.name}: {steps} of {self.solver.name}{how}{plan} on grid "
                f"{list(self.grid.shape)}{ranks}; {self.spectrum_note} -> {output}")

    def make_output(self, path, fresh, truncate_to):
        from ..io.field_output import FieldOutput

        return FieldOutput(self, path, self.sc, fresh, truncate_to=truncate_to)

    def read_checkpoint(self, f) -> dict:
        """What resuming needs from the open output ``f`` (runs on rank 0)."""
        ds = f["checkpoint/phi"]
        done = int(ds.attrs["step"])
        obs_wall = f["observables/wall_time"][()] if "observables/wall_time" in f else []
        obs_step = f["observables/step"][()] if "observables/step" in f else []
        wall0 = float(obs_wall[np.searchsorted(obs_step, done, side="right") - 1]) \
            if len(obs_wall) else 0.0
        state = f.attrs.get("integrator_state")
        if isinstance(state, bytes):
            state = state.decode()
        return {"done": done, "elapsed": wall0, "path": str(f.filename),
                "integrator_state": state}

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
        if self.adaptive is not None:
            if not ck.get("integrator_state"):
                raise UserError(f"{ck['path']}: the checkpoint has no integrator_state (the "
                                f"adaptive controller's state); cannot resume")
            self.adaptive.load_state(ck["integrator_state"])
        return ck["done"], ck["elapsed"]

    def checkpoint_rows(self, ck):
        """This rank's rows of the checkpoint in the output, whatever split of blocks wrote it,
        each block's checksum verified (a corrupted block is a one-line error, exit 2)."""
        from ..io.field_store import load_checkpoint

        step, rows = load_checkpoint(ck["path"], self.slab.start, self.slab.stop)
        if step != ck["done"]:
            raise UserError(f"{ck['path']}: the checkpoint changed while resuming (step {step}, "
                            f"expected {ck['done']})")
        return rows

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

    def at_stop(self, done, out, elapsed):
        """Write what is due at step ``done`` (the initial state at 0, everything at the end).
        When only observables are due and the job pipelines observations, the row is completed
        (length scale) and appended by :meth:`finish_observation` during the next steps; rows
        stay in step order and every write includes all rows before it."""
        from .. import profile

        self.finish_observation()
        self._settled = self._settled or done > 0
        due = self.due(done)
        phi = None
        if self._ahead and self._ahead[0][0] == done:
            self._enqueued = self._ahead.pop(0)  # taken by observe
        if due == {"obs"} and self._pipeline:
            row, phi = self.observe(done, elapsed, defer_length=True)
            if row["length"] is None:
                self._pending = (row, phi, out)
            else:  # S(k) came from the GPU with the reductions
                self.last_observation = row
                out.obs.append(row)
            self._taken = (done, phi)
            if phi is not None:
                self._run_ahead(done)  # keep the GPU busy while this thread catches up
            return
        if due:
            with profile.phase("observables at a write stop"):
                row, phi = self.observe(done, elapsed)
            self.last_observation = row         # shown by the controller's progress lines
            if "obs" in due:
                out.obs.append(row)
        if ("snap" in due or "ckpt" in due) and phi is None:
            phi = self._field_to_write()  # S(k) came from the GPU: the field is needed here only
        if ("snap" in due or "ckpt" in due) and isinstance(phi, np.ndarray):
            self.check_state(phi, done)
            if not _owned(phi):  # a view of a buffer that is reused (pinned observations)
                phi = phi.copy()
        # (a field still on the device was checked by observe: its extremes and free energy)
        if "snap" in due:
            out.snaps.append((done, phi))  # the snapshot and the checkpoint share the array
        if "ckpt" in due:
            out.ckpt = (done, phi)
            self._restart_point(out)
        if "snap" in due or "ckpt" in due:
            if self._pipeline and done != self.total:
                self._wait_write(out)
                self._taken = (done, phi)  # the field here (an interrupt may checkpoint it)
                if self._run_ahead(done) and not RUN_AHEAD_WRITE_BEHIND:
                    # the GPU computes the next stops' steps while this thread writes
                    with profile.phase("write (while the GPU runs ahead)"):
                        out.write()
                    if "ckpt" in due:
                        self.last_ckpt = done
                    return
                # write-behind: the write runs in a thread while the next steps run; it is
                # waited for (and its error raised) at the next write, an interrupt, the end
                self._writing = (out, done if "ckpt" in due else None)
                out.write_behind()
                return
            self._wait_write(out)
            with profile.phase("write (synchronous)"):
                out.write(complete=(done == self.total))
        if "ckpt" in due:
            self.last_ckpt = done

    def _field_to_write(self):
        """The field for a snapshot/checkpoint: one process with its own CUDA solver keeps it on
        the device (a copy there, streamed to the part files in windows through pinned buffers
        by the writer, :mod:`simengine.io.part_stream`); otherwise this rank's rows on the host."""
        from .. import profile

        if self._pipeline and hasattr(self.solver, "owned_device"):
            from ..io.part_stream import device_snapshot

            src = device_snapshot(self.solver.owned_device(), self.solver.owned_shape,
                                  self.dtype)
            if src is not None:
                return src
        with profile.phase("snapshot: field copied to the host", self.solver.cells
                           * self.dtype.itemsize):
            return self.solver.state()

    def _run_ahead(self, done) -> int:
        """Top up the enqueued stops: the steps and observations of the observables-only stops
        after ``done`` (or after the last one already enqueued), up to the next stop that
        writes, :data:`RUN_AHEAD_STOPS` stops, RUN_AHEAD_SECONDS of steps beyond ``done`` at
        the measured rate, and pinned host copies within ASYNC_OBSERVE_MAX_BYTES; returns how
        many are enqueued. The GPU then runs on while this thread writes (synchronously: a
        write in a thread holds the GIL for tens of milliseconds and slowed the launches,
        docs/output.md) or computes the previous stops' S(k)."""
        field = self.solver.cells * self.dtype.itemsize
        most = min(RUN_AHEAD_STOPS, ASYNC_OBSERVE_MAX_BYTES // max(field, 1) - 2)
        if self._step_seconds is None or most < 1:
            return 0
        at = self._ahead[-1][0] if self._ahead else done
        budget = RUN_AHEAD_SECONDS - (at - done) * self._step_seconds
        while len(self._ahead) < most:
            nxt = self.next_stop(at)
            cost = (nxt - at) * self._step_seconds
            if nxt >= self.total or self.due(nxt) != {"obs"} or cost > budget:
                break
            self.solver.advance(int(nxt - at))
            self._ahead.append((nxt, self.solver.observe_async(slots=most + 2,
                                                               spectrum=self._spectrum)))
            at, budget = nxt, budget - cost
        return len(self._ahead)

    def _wait_write(self, out=None):
        """Wait for a write-behind (raising its error); its checkpoint becomes the last one."""
        if self._writing is None:
            return
        pending, step = self._writing
        self._writing = None
        from .. import profile

        with profile.phase("wait for the write-behind"):
            pending.wait()
        if step is not None:
            self.last_ckpt = step

    def checkpoint(self, done, out, elapsed):
        """Checkpoint at an interrupt (nothing to do when the last write was one at ``done``)."""
        self.finish_observation()
        self._wait_write()
        if self.last_ckpt == done:
            return
        if self._ahead:  # the GPU is past ``done``: its field is the host copy taken there
            if self._taken is None or self._taken[0] != done:
                raise RuntimeError(f"no host copy of the field at step {done}")
            phi = self._taken[1]  # a host array, or the field kept on the device for a write
            phi = phi.to_host() if hasattr(phi, "to_host") else np.array(phi)
            self._ahead = []
        else:
            phi = self.solver.state()
        self.check_state(phi, done)
        out.ckpt = (done, phi)
        self._restart_point(out)
        out.write()
        self.last_ckpt = done

    def _restart_point(self, out):
        """A checkpoint is a restart of the scheme (a multistep solver takes a start step next)
        and carries the adaptive controller's state, so that a run resumed from it takes the
        steps the uninterrupted run takes."""
        restart = getattr(self.solver, "restart", None)
        if restart is not None:
            restart()
        if self.adaptive is not None and getattr(out, "index", None) is not None:
            out.index.attrs["integrator_state"] = self.adaptive.state()

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

    # ---- events
    def due(self, done):
        return self.clock.due(done)

    def time_of(self, step):
        return self.clock.time_of(step)

    def finish_observation(self):
        """Complete the pending observation (its length scale from the host copy of the field
        taken at its step) and append it to the output's rows; no-op when none is pending."""
        if self._pending is None:
            return
        row, phi, out = self._pending
        self._pending = None
        self._host_spectrum(row, phi)
        self.last_observation = row
        out.obs.append(row)

    def observe(self, step, wall, defer_length=False):
        """Observables of the whole field (reduced over the ranks' slabs) and this rank's rows.
        A blow-up is seen by every rank at once (the reductions are global). ``defer_length``
        (one process): the row's ``length`` is left ``None`` for :meth:`finish_observation`."""
        enqueued, self._enqueued = self._enqueued, None
        sk = None  # (length, radial) from the GPU
        ms = self.measurer
        area = None  # the interface area, where the device or the ranks measured it
        if self.comm.size > 1:
            from ..field.distributed import rank_observables

            red = rank_observables(self.comm, self.solver, self.slabs, self.model, self.grid,
                                   spectrum=self._spectrum,
                                   radial=self.radial or ms.wants_radial, level=ms.area_level)
            phi = red["phi"]
            area = red.get("interface_area")
        elif enqueued is not None and enqueued[0] == step:
            red, phi = enqueued[1].result()  # enqueued by advance behind the steps
            sk = enqueued[1].spectrum_result((red["min"], red["max"]))
            area = enqueued[1].interface_area()
        else:
            red = self.solver.reductions()
            phi = None
            if self._spectrum is not None:
                pending = self._spectrum.enqueue(self.solver.owned_device())
                sk = pending.result((red["min"], red["max"]))
                area = pending.interface_area()
        lo, hi = float(red["min"]), float(red["max"])
        if not (np.isfinite(lo) and np.isfinite(hi) and np.isfinite(red["free_energy"])) \
                or max(abs(lo), abs(hi)) > BLOWUP:
            exc = SimulationError(f"the field blew up (min {lo:.3g}, max {hi:.3g}) by step {step}")
            exc.collective = True
            raise exc
        radial, length = None, None  # None: the host computes it below (or, deferred, later)
        if self.comm.size > 1:
            length = float(red["length"])
            if "structure_factor" in red:
                radial = (red["structure_factor_k"], red["structure_factor"])
        elif sk is not None:
            length = float(sk[0])
            radial = sk[1]
        elif phi is None:
            phi = self.solver.state()
        row = {"step": step, "time": self.time_of(step), "mass": float(red["mass"]),
               "free_energy": float(red["free_energy"]), "phi_min": lo, "phi_max": hi,
               "length": length, "wall_time": wall}
        if length is not None:
            self._radial_row(row, radial, area)
        elif not defer_length:
            self._host_spectrum(row, phi)
        return row, phi

    def _radial_row(self, row, radial, area):
        """The row's stored radial S(k) (``output.structure_factor``) and its coarsening
        measures (:mod:`simengine.field.measuring`)."""
        if radial is not None and self.radial:
            self.structure_factor_k = radial[0]
            row["structure_factor"] = radial[1]
        self.measurer.complete(row, area, radial)

    def _host_spectrum(self, row, phi):
        """The length scale, the radial S(k) and the coarsening measures of a host field into
        ``row``, from one transform."""
        from ..field.observables import length_and_radial

        length, radial = length_and_radial(phi, self.grid.spacing, self.boundary.kind,
                                           radial=self.radial or self.measurer.wants_radial)
        row["length"] = float(length)
        self._radial_row(row, radial, self.measurer.host_area(phi))

    def check_state(self, phi, step):
        from .. import profile

        with profile.phase("snapshot: field checked (finite, bounded)", phi.nbytes):
            bad = _unbounded(phi.reshape(-1), BLOWUP)
        if self.comm.allreduce(bool(bad), "or"):
            exc = SimulationError(f"the field became non-finite or blew up by step {step}")
            exc.collective = True
            raise exc
