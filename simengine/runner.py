"""Controller: one loop for both kinds — scenario -> job; cadence, signals, resume, progress.

A job (:class:`simengine.field.job.FieldJob`, :class:`simengine.network.job.NetworkJob`) owns its
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

Every write is atomic: after a kill at any instant the output file holds the state of the last
completed write, and ``--resume`` continues from its checkpoint, dropping anything written after
it, so the resumed file equals an uninterrupted run's.

Interrupts: SIGINT (Ctrl-C) and SIGTERM (e.g. Slurm preemption) finish the current piece of work,
write a checkpoint and exit with code 130.
"""
from __future__ import annotations

import sys
import time
from pathlib import Path

import numpy as np
import yaml

from . import __version__
from .config import Scenario
from .errors import SimulationError, UserError
from .io import hdf5
from .io.atomic import atomic_update, tmp_path
from .io.reader import open_output
from .progress import Progress
from .signals import checkpointable

#: keys that may differ between the stored scenario and the one used with --resume
RESUME_FREE_KEYS = {("output",), ("description",), ("time", "steps"), ("solver", "backend"),
                    ("solver", "kernel"), ("solver", "block"), ("solver", "tile"),
                    ("solver", "layout"), ("solver", "batch"), ("resources",)}


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


# =============================================================================== writers
class FieldOutput:
    """Buffers observables/snapshots between writes and writes them atomically."""

    SERIES = ("step", "time", "mass", "free_energy", "phi_min", "phi_max", "length", "wall_time")

    def __init__(self, job: FieldJob, path: Path, sc: Scenario, fresh: bool, truncate_to=None):
        self.job, self.path, self.sc = job, path, sc
        self.fresh = fresh
        self.truncate_to = truncate_to
        self.obs = []
        self.snaps = []
        self.ckpt = None
        self.compression = sc.spec.output.compression

    def write(self, complete=False):
        with atomic_update(self.path, fresh=self.fresh) as f:
            if self.fresh:
                self._init(f)
            if self.truncate_to is not None:
                self._truncate(f, self.truncate_to)
                self.truncate_to = None
            if self.obs:
                for k in self.SERIES:
                    hdf5.append(f, f"observables/{k}", [row[k] for row in self.obs],
                                dtype=np.int64 if k == "step" else np.float64, compression=None)
            if self.snaps:
                hdf5.append(f, "fields/phi", np.stack([p for _, p in self.snaps]),
                            compression=self.compression)
                hdf5.append(f, "fields/step", [s for s, _ in self.snaps], dtype=np.int64,
                            compression=None)
                hdf5.append(f, "fields/time", [self.job.time_of(s) for s, _ in self.snaps],
                            dtype=np.float64, compression=None)
            if self.ckpt is not None:
                step, phi = self.ckpt
                hdf5.replace(f, "checkpoint/phi", phi, compression=self.compression,
                             attrs={"step": step, "time": self.job.time_of(step)})
            f.attrs["complete"] = bool(complete)
            f.attrs["steps_total"] = self.job.total
        self.fresh = False
        self.obs, self.snaps, self.ckpt = [], [], None

    def _init(self, f):
        f.attrs["simengine_version"] = __version__
        f.attrs["format_version"] = 1
        f.attrs["kind"] = "field"
        f.attrs["name"] = self.sc.name
        f.attrs["scenario"] = self.sc.as_yaml()
        f.attrs["solver"] = self.job.solver.name
        f.attrs["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        g = f.require_group("fields")
        g.attrs["grid_shape"] = list(self.job.grid.shape)
        g.attrs["spacing"] = self.job.grid.spacing

    @staticmethod
    def _truncate(f, step):
        for group in ("fields", "observables"):
            if f"{group}/step" not in f:
                continue
            steps = f[f"{group}/step"][()]
            keep = int(np.searchsorted(steps, step, side="right"))
            for name in list(f[group].keys()):
                hdf5.truncate(f, f"{group}/{name}", keep)


class NetworkOutput:
    def __init__(self, job: NetworkJob, path: Path, sc: Scenario, fresh: bool, truncate_to=None):
        self.job, self.path, self.sc = job, path, sc
        self.fresh = fresh
        self.truncate_to = truncate_to
        self.compression = sc.spec.output.compression

    def write(self, done, elapsed, results=None):
        job = self.job
        with atomic_update(self.path, fresh=self.fresh) as f:
            if self.fresh:
                self._init(f)
            if self.truncate_to is not None and "distances" in f:
                hdf5.truncate(f, "distances", self.truncate_to)
            self.truncate_to = None
            if job.pending_rows:
                hdf5.append(f, "distances", np.concatenate(job.pending_rows),
                            compression=self.compression)
                job.pending_rows = []
            ck = f.require_group("checkpoint")
            for k, v in job.stats.state().items():
                hdf5.replace(f, f"checkpoint/{k}", v, compression=self.compression)
            ck.attrs["done"] = int(done)
            ck.attrs["total"] = int(job.total)
            ck.attrs["elapsed"] = float(elapsed)
            if results is not None:
                self._results(f, results)
            f.attrs["complete"] = results is not None
        self.fresh = False

    def _init(self, f):
        job = self.job
        g = job.graph
        f.attrs["simengine_version"] = __version__
        f.attrs["format_version"] = 1
        f.attrs["kind"] = "network"
        f.attrs["name"] = self.sc.name
        f.attrs["scenario"] = self.sc.as_yaml()
        f.attrs["created"] = time.strftime("%Y-%m-%dT%H:%M:%S%z")
        f.attrs["algorithm"] = job.algorithm
        f.attrs["backend"] = job.backend
        f.attrs["graph_n"] = g.n
        f.attrs["graph_arcs"] = g.num_arcs
        f.attrs["graph_directed"] = bool(g.directed)
        f.attrs["graph_weighted"] = bool(g.weighted)
        f.attrs["graph_hash"] = g.content_hash()
        hdf5.replace(f, "sources", job.sources, compression=self.compression)
        if g.ids is not None:   # the input's name of vertex i, row i of every /vertex dataset
            import h5py

            ids = g.output_ids()
            ds = hdf5.replace(f, "vertex/id", ids, compression=self.compression) \
                if ids.dtype.kind == "i" else \
                f.create_dataset("vertex/id", data=ids, dtype=h5py.string_dtype())
            ds.attrs["meaning"] = "the input's id of vertex i (row i of /vertex/*, column i of " \
                                  "/distances); /sources holds row numbers"
        if job.store_dtype is not None:
            from .network.statistics import unreachable_sentinel

            ds = hdf5.ensure_series(f, "distances", job.store_dtype, (g.n,), self.compression)
            ds.attrs["unreachable"] = unreachable_sentinel(job.store_dtype)
            ds.attrs["rows"] = "one row per entry of /sources, in order"

    def _results(self, f, res):
        from .network.statistics import select_statistics

        job = self.job
        res = select_statistics(res, job.spec.metrics.statistics)
        f.require_group("statistics").attrs["scope"] = res.get("scope", "all sources")
        scalars = {k: v for k, v in res.items()
                   if np.ndim(v) == 0 and isinstance(v, (int, float, bool, np.integer, np.floating,
                                                         np.bool_))}
        for k, v in scalars.items():
            hdf5.replace(f, f"statistics/{k}", np.asarray(v))
        for k in ("eccentricity", "closeness", "harmonic"):
            if k in res:
                hdf5.replace(f, f"vertex/{k}", np.asarray(res[k], dtype=np.float64),
                             compression=self.compression)
        if "distance_histogram" in res:
            ds = hdf5.replace(f, "distance_histogram", np.asarray(res["distance_histogram"]))
            ds.attrs["bin_width"] = float(res.get("histogram_bin_width", 1.0))
            ds.attrs["meaning"] = "count of ordered pairs s != t with d(s,t) in [i*w, (i+1)*w)"
        for k, v in job_extra_metrics(job).items():
            hdf5.replace(f, f"statistics/{k}", np.asarray(v))



def job_extra_metrics(job) -> dict:
    from .network.job import extra_metrics

    return extra_metrics(job)


def make_job(sc: Scenario, log=None, comm=None):
    """The job for a scenario's kind (builds its engine: validation happens here, before any
    output exists). Errors here are the same on every rank (same input)."""
    try:
        if sc.kind == "field":
            from .field.job import FieldJob

            return FieldJob(sc, log, comm)
        from .network.job import NetworkJob

        return NetworkJob(sc, log, comm)
    except UserError as exc:
        exc.collective = True
        raise


# =============================================================================== the controller
class Runner:
    """Runs one scenario to completion (or to an interrupt), writing ``output``."""

    def __init__(self, sc: Scenario, output=None, resume=False, overwrite=False, progress=True,
                 log=None, comm=None, force=False):
        from .parallel import world

        self.sc = sc
        self.force = force
        self.comm = comm or world()
        self.output = Path(output) if output else default_output(sc)
        self.resume = resume
        self.overwrite = overwrite
        self.progress = progress and self.comm.rank == 0
        log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))
        self.log = log if self.comm.rank == 0 else (lambda msg: None)

    # ---- existing-file policy
    def _prepare(self):
        """Returns (fresh, f_for_restore or None)."""
        out = self.output
        if tmp_path(out).exists():
            tmp_path(out).unlink()  # a write that was killed half-way; the real file is intact
        if not out.exists():
            if self.resume:
                self.log(f"no checkpoint in {out} yet: starting from the beginning")
            return True, None
        if not self.resume:
            if self.overwrite:
                return True, None
            raise UserError(f"{out}: output file exists; pass --resume to continue it or "
                            f"--overwrite to replace it")
        f = open_output(out)
        kind = f.attrs["kind"]
        kind = kind.decode() if isinstance(kind, bytes) else str(kind)
        if kind != self.sc.kind:
            f.close()
            raise UserError(f"{out}: holds a {kind} run, not a {self.sc.kind} run")
        stored = yaml.safe_load(f.attrs.get("scenario", "{}"))
        try:
            _check_compatible(stored, self.sc.data, out)
        except UserError:
            f.close()
            raise
        for msg in resume_changes(stored, self.sc.data):
            self.log(f"{out}: {msg}")
        if "checkpoint" not in f:
            f.close()
            self.log(f"no checkpoint in {out} yet: starting from the beginning")
            return True, None
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
        from .parallel import bind_gpu, on_root

        from .resources import check

        comm = self.comm
        device = bind_gpu(comm) if self.sc.spec.solver.backend in ("auto", "cuda") else None
        # memory estimates against the machine, before any large allocation or output file
        on_root(comm, check, self.sc, comm.size, self.force)
        job = make_job(self.sc, self.log, comm)
        fresh, ck = on_root(comm, self._open, job)
        done, elapsed0 = job.start(fresh, ck)
        if not fresh:
            if done >= job.total:
                self.log(f"{self.output}: {job.complete_message(done)}")
                return 0
            self.log(f"{self.output}: {job.resume_message(done)}")
        out = job.make_output(self.output, fresh, None if fresh else done)
        if comm.size > 1:
            self.log(f"{comm.size} MPI ranks"
                     + (f", one GPU each (rank 0 on GPU {device})" if device is not None else ""))
        self.log(job.describe(self.output))
        t0 = time.perf_counter() - elapsed0
        bar = Progress(job.total, done, unit=job.unit, desc=self.sc.name, enabled=self.progress)
        try:
            with checkpointable() as sig:
                stop_requested = lambda: sig.caught is not None  # noqa: E731
                if fresh:
                    job.at_stop(0, out, 0.0)
                while done < job.total:
                    stop = job.next_stop(done)
                    done = job.advance(done, stop, stop_requested, bar.update)
                    if done == stop:
                        job.at_stop(done, out, time.perf_counter() - t0)
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
        self.log(job.finished(time.perf_counter() - t0, self.output))
        return 0


def run_scenario(sc: Scenario, output=None, resume=False, overwrite=False, progress=True,
                 log=None, comm=None, force=False) -> int:
    return Runner(sc, output, resume, overwrite, progress, log, comm, force).run()
