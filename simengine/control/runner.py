"""Controller: one loop for both kinds — scenario -> job; cadence, signals, resume, progress.

A job (:class:`simengine.control.field_job.FieldJob`, :class:`simengine.control.network_job.NetworkJob`) owns its
engine and knows its unit of work (time steps or sources). The controller only speaks the job
protocol:

* ``total``, ``unit`` — how much work there is and what one unit is called;
* ``start(fresh, f) -> (done, elapsed)`` — initial state, or restore from the open output ``f``;
* ``make_output(path, fresh, truncate_to)`` — the writer for the output file;
* ``next_stop(done)`` — the next amount of done work at which output is due;
* ``advance(done, stop, stop_requested, progress) -> done`` — work in pieces towards ``stop``,
  returning early when ``stop_requested()``;
* ``at_stop(done, out, elapsed)`` — write what is due (everything at the end);
* ``checkpoint(done, out, elapsed)`` — a checkpoint at an interrupt;
* ``describe``/``resume_message``/``complete_message``/``finished`` — log lines,
  ``failed(exc, output)`` — the error to report after a simulation failure.

Every write is atomic (:mod:`simengine.io.layout`): after a kill at any instant the output holds the
state of the last committed write, and ``--resume`` continues from its checkpoint, dropping
anything written after it, so the resumed file equals an uninterrupted run's. One run per output:
the output's lock is taken before anything is written (:mod:`simengine.io.lock`).

Interrupts: SIGINT (Ctrl-C) and SIGTERM (e.g. Slurm preemption) finish the current piece of work,
write a checkpoint and exit with code 130.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import yaml

from .. import resume_rules
from ..config import Scenario
from ..errors import SimulationError, UserError
from ..io import output_files
from ..io.integrity import DAMAGE, reason
from ..io.reader import open_output
from ..progress import Progress
from ..signals import checkpointable

#: keys that may differ between the stored scenario and the one used with --resume
RESUME_FREE_KEYS = {("output",), ("description",), ("time", "steps"), ("solver", "backend"),
                    ("solver", "kernel"), ("solver", "block"), ("solver", "tile"),
                    ("solver", "layout"), ("solver", "batch"), ("solver", "fused"),
                    ("resources",)}


def default_output(sc: Scenario) -> Path:
    return Path("outputs") / f"{sc.name}.h5"


class Interrupted(Exception):
    """Raised after a checkpoint was written in response to SIGINT/SIGTERM."""


def _flatten(d, prefix=()):
    out = {}
    for k, v in (d or {}).items():
        key = prefix + (k,)
        if isinstance(v, dict):
            out.update(_flatten(v, key))
        else:
            out[key] = v
    return out


def _check_compatible(stored: dict, current: dict, path):
    a, b = _flatten(stored), _flatten(current)
    for key in sorted(set(a) | set(b), key=str):
        if any(key[:len(free)] == free for free in RESUME_FREE_KEYS):
            continue
        if a.get(key) != b.get(key):
            k = ".".join(map(str, key))
            raise UserError(f"{path}: cannot resume: {k} is {a.get(key)!r} in the file but "
                            f"{b.get(key)!r} in the scenario")


def resume_changes(stored: dict, current: dict) -> list:
    """What a ``--resume`` changes among the keys it may change (steps, cadence, backend)."""
    a, b = _flatten(stored), _flatten(current)
    out = []
    for key in sorted(set(a) | set(b), key=str):
        if key[:1] == ("description",) or a.get(key) == b.get(key):
            continue
        k = ".".join(map(str, key))
        was = "unset" if key not in a else repr(a[key])
        now = "unset" if key not in b else repr(b[key])
        out.append(f"resuming with {k} = {now} (the run was started with {was})")
    return out


def make_job(sc: Scenario, log=None, comm=None, plan=None, graph=None):
    """The job for a scenario's kind (builds its engine: validation happens here, before any
    output exists). Errors here are the same on every rank (same input). ``plan``: the run's
    one plan, from the resource check (a network run's: from its built graph, ``graph`` = (graph,
    seconds it took))."""
    try:
        if sc.kind == "field":
            from .field_job import FieldJob

            return FieldJob(sc, log, comm, plan=plan)
        from .network_job import NetworkJob

        graph, seconds = graph or (None, 0.0)
        return NetworkJob(sc, log, comm, plan=plan, graph=graph, graph_seconds=seconds)
    except UserError as exc:
        exc.collective = True
        raise


def plan_network(sc: Scenario, comm, force=False, output=None, log=None):
    """A network run's one plan: the memory check of the predicted shape (before a graph too
    large is built), the graph built on every rank (the same graph, checked by its hash), then
    :func:`simengine.resources.check` with it on rank 0.  Returns (plan, (graph, seconds to
    build it))."""
    from .. import profile
    from ..parallel import on_root
    from ..resources import check, check_before_graph
    from .network_job import build_timed

    with profile.phase("start-up: resources checked (the predicted graph)"):
        on_root(comm, check_before_graph, sc, comm.size, force, output)
    try:
        with profile.phase("start-up: graph built"):
            built = build_timed(sc, log, comm)
    except UserError as exc:
        exc.collective = True
        raise
    with profile.phase("start-up: resources checked (the run's plan)"):
        return on_root(comm, check, sc, comm.size, force, output, built[0]), built


def start_job(sc: Scenario, comm, force=False, output=None, log=None):
    """The run's start-up before any output exists: the resource check and the run's one plan
    (on rank 0, broadcast), then the job built from it (``simengine validate`` makes the same
    plan the same way, :func:`simengine.validate.network_plan`)."""
    from .. import profile
    from ..parallel import on_root
    from ..resources import check

    graph = None
    if sc.kind == "network":       # the one plan reads the built graph
        plan, graph = plan_network(sc, comm, force, output, log)
    else:
        with profile.phase("start-up: resources checked"):
            plan = on_root(comm, check, sc, comm.size, force, output)
    with profile.phase("start-up: solver set-up"):
        return make_job(sc, log, comm, plan, graph)


# =============================================================================== the controller
class Runner:
    """Runs one scenario to completion (or to an interrupt), writing ``output``."""

    def __init__(self, sc: Scenario, output=None, resume=False, overwrite=False, progress=True,
                 log=None, comm=None, force=False):
        from ..parallel import world

        self.sc = sc
        self.force = force
        self.comm = comm or world()
        self.output = Path(output) if output else default_output(sc)
        if self.output.is_symlink():  # locked, written and replaced as the file it names
            self.output = self.output.resolve()
        self.resume = resume
        self.overwrite = overwrite
        self.progress = progress and self.comm.rank == 0
        log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.log = log if self.comm.rank == 0 else (lambda msg: None)
        self._lock = None

    # ---- existing-file policy
    def _inputs(self):
        """The files this run reads (scenario, graph file, initial field): never its output."""
        out = [getattr(self.sc, "path", None)]
        d = self.sc.data
        for spec in ((d.get("graph") or {}).get("file"), (d.get("initial") or {})):
            if isinstance(spec, dict) and isinstance(spec.get("path"), str):
                try:
                    out.append(self.sc.resolve(spec["path"]))
                except Exception:  # noqa: BLE001 - an odd path is the readers' to report
                    pass
        return [p for p in out if p is not None]

    def _prepare(self):
        """Lock the output, then returns (fresh, f_for_restore or None)."""
        out = self.output
        self._lock = output_files.lock_output(out, self._inputs())
        if not out.exists():
            if self.resume:
                self.log(f"no checkpoint in {out} yet: starting from the beginning")
            output_files.remove_output(out)  # parts of a run killed before its first commit
            return True, None
        if not self.resume:
            if self.overwrite:
                output_files.remove_output(out)
                return True, None
            raise UserError(f"{out}: output file exists; pass --resume to continue it or "
                            f"--overwrite to replace it")
        f = open_output(out, relinked=True)  # a pair renamed by hand reads its own parts
        try:
            kind = f.attrs["kind"]
            kind = kind.decode() if isinstance(kind, bytes) else str(kind)
            stored = yaml.safe_load(f.attrs.get("scenario", "{}"))
            if not isinstance(stored, dict):
                raise ValueError("the stored scenario is not a mapping")
        except (*DAMAGE, yaml.YAMLError) as exc:
            f.close()
            raise UserError(f"{out}: damaged output ({reason(exc)}); cannot resume") from None
        if kind != self.sc.kind:
            f.close()
            raise UserError(f"{out}: holds a {kind} run, not a {self.sc.kind} run")
        try:
            msg = resume_rules.physics_change(stored, self.sc.data, out)
            if msg:
                raise UserError(msg)
            _check_compatible(stored, self.sc.data, out)
            output_files.check_resumable(out, kind)
            resume_rules.check(stored, self.sc.data, out, f)
        except UserError:
            f.close()
            raise
        for msg in resume_changes(stored, self.sc.data):
            self.log(f"{out}: {msg}")
        return False, f

    def _open(self, job):
        """Rank 0: existing-file policy and the checkpoint to resume from (picklable)."""
        fresh, f = self._prepare()
        if fresh:
            return True, None
        try:
            return False, job.read_checkpoint(f)
        finally:
            f.close()

    def run(self) -> int:
        try:
            return self._run()
        finally:
            if self._lock is not None:  # rank 0 holds the output's lock
                self._lock.release()
                self._lock = None

    def _run(self) -> int:
        from .. import profile
        from ..parallel import bind_gpu, on_root

        profile.mark("run started")
        comm = self.comm
        with profile.phase("start-up: GPU bound"):
            device = bind_gpu(comm) if self.sc.spec.solver.backend in ("auto", "cuda") else None
        # memory estimates against the machine, before any large allocation or output file
        job = start_job(self.sc, comm, self.force, self.output, self.log)
        self.log(job.run_plan.line)       # rank 0; the same line as simengine validate
        with profile.phase("start-up: output opened"):
            fresh, ck = on_root(comm, self._open, job)
        done, elapsed0 = job.start(fresh, ck)
        if not fresh:
            if done >= job.total:
                self.log(f"{self.output}: {job.complete_message(done)}")
                return 0
            self.log(f"{self.output}: {job.resume_message(done)}")
        with profile.phase("start-up: output writer made"):
            out = job.make_output(self.output, fresh, None if fresh else done)
        if comm.size > 1:
            gpus = comm.allgather(device)  # every rank's GPU (a rank left unbound says so)
            self.log(f"{comm.size} MPI ranks" + (
                f", one GPU each (GPUs of ranks 0..{comm.size - 1}: "
                f"{', '.join('none' if g is None else str(g) for g in gpus)})"
                if any(g is not None for g in gpus) else ""))
        from ..parallel.threads import decided

        if decided():                      # simengine run: numba threads, --device
            self.log(decided())
        self.log(job.describe(self.output))
        t0 = time.perf_counter() - elapsed0
        work = None
        bar = Progress(job.total, done, unit=job.unit, desc=self.sc.name, enabled=self.progress)
        try:
            with checkpointable() as sig:
                stop_requested = lambda: sig.caught is not None  # noqa: E731
                if fresh:
                    job.at_stop(0, out, 0.0)
                    bar.observe(getattr(job, "last_observation", None))
                    # the initial output is start-up: the work timer starts after it (a network
                    # run's empty checkpoint cost a quarter of a 0.75 s GPU job, on one rank)
                    t0 = time.perf_counter() - elapsed0
                while done < job.total:
                    stop = job.next_stop(done)
                    done = job.advance(done, stop, stop_requested, bar.update)
                    if done == stop:
                        work = time.perf_counter() - t0   # the work time, as stored
                        job.at_stop(done, out, work)
                        bar.observe(getattr(job, "last_observation", None))
                    if comm.allreduce(bool(stop_requested()), "or") and done < job.total:
                        job.checkpoint(done, out, time.perf_counter() - t0)
                        exc = Interrupted(f"interrupted after {done} {job.unit}s: checkpoint "
                                          f"written to {self.output}; continue with --resume")
                        exc.collective = True
                        raise exc
        except SimulationError as exc:
            raise job.failed(exc, self.output) from None
        finally:
            bar.close()
        self.log(job.finished(work if done == job.total and work is not None
                              else time.perf_counter() - t0, self.output))
        profile.mark("run ended")
        for line in profile.report():
            self.log(line)
        return 0


def run_scenario(sc: Scenario, output=None, resume=False, overwrite=False, progress=True,
                 log=None, comm=None, force=False) -> int:
    return Runner(sc, output, resume, overwrite, progress, log, comm, force).run()
