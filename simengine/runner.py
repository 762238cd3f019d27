"""Controller: scenario -> job; progress; cadence of observables, snapshots and checkpoints; resume.

A job (:class:`FieldJob`, :class:`NetworkJob`) owns a solver and knows its unit of work (time steps
or sources). The :class:`Runner` decides when output is written and makes every write atomic
(:mod:`simengine.io.atomic`): after a kill at any instant the output file holds the state of the
last completed write, and ``--resume`` continues from its checkpoint, dropping anything written
after it, so the resumed file equals an uninterrupted run's.

Interrupts: SIGINT (Ctrl-C) and SIGTERM (e.g. Slurm preemption) finish the current piece of work,
write a checkpoint and exit with code 130.
"""
from __future__ import annotations

import signal
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

#: |φ| above this is treated as a blow-up (φ lives in about [-1, 1])
BLOWUP = 1e6
#: keys that may differ between the stored scenario and the one used with --resume
RESUME_FREE_KEYS = {("output",), ("description",), ("time", "steps"), ("solver", "backend"),
                    ("solver", "kernel"), ("solver", "block"), ("solver", "tile"),
                    ("solver", "layout"), ("solver", "batch"), ("resources",)}


def default_output(sc: Scenario) -> Path:
    return Path("outputs") / f"{sc.name}.h5"


class Interrupted(Exception):
    """Raised after a checkpoint was written in response to SIGINT/SIGTERM."""


class _Signals:
    """Turn SIGINT/SIGTERM into a flag checked between pieces of work."""

    def __init__(self):
        self.caught = None
        self._old = {}

    def __enter__(self):
        for sig in (signal.SIGINT, signal.SIGTERM):
            try:
                self._old[sig] = signal.signal(sig, self._handler)
            except ValueError:  # not the main thread
                pass
        return self

    def _handler(self, signum, frame):
        if self.caught is not None and signum == signal.SIGINT:
            raise KeyboardInterrupt  # a second Ctrl-C: give up at once
        self.caught = signum

    def __exit__(self, *exc):
        for sig, old in self._old.items():
            signal.signal(sig, old)


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


# =============================================================================== field runs
class FieldJob:
    unit = "step"

    def __init__(self, sc: Scenario):
        from .config.checks import field_problem
        from .field.solver import make_solver

        spec = sc.spec
        self.sc = sc
        self.spec = spec
        self.model, self.grid, self.boundary = field_problem(spec)
        s = spec.solver
        try:
            self.solver = make_solver(self.model, self.grid, self.boundary, backend=s.backend,
                                      kernel=s.kernel, precision=s.precision,
                                      integrator=s.integrator, dt=spec.time.dt, tile=s.tile,
                                      block=s.block, layout=s.layout)
        except (ValueError, RuntimeError) as exc:
            raise UserError(f"{sc.path}: solver: {exc}") from None
        self.total = int(spec.time.steps)
        self.dtype = np.dtype(s.precision)
        o = spec.output
        self.cadence = {"obs": o.observables_every, "snap": o.snapshot_every,
                        "ckpt": o.checkpoint_every}

    # ---- state
    def initial_field(self):
        from .config.checks import _read_initial_file
        from .field.initial import noise

        init = self.spec.initial
        if init.type == "file":
            from .config.loader import Located

            data = _read_initial_file(self.sc, Located(self.sc.data, {}, self.sc.path))
            return np.ascontiguousarray(data, dtype=self.dtype)
        return noise(self.grid.shape, init.mean, init.amplitude, init.seed, self.dtype)

    def start_fresh(self):
        self.solver.load(self.initial_field())

    def restore(self, f):
        ds = f["checkpoint/phi"]
        self.solver.load(np.ascontiguousarray(ds[()], dtype=self.dtype))
        return int(ds.attrs["step"])

    def advance(self, n):
        self.solver.advance(int(n))

    # ---- events
    def due(self, done):
        kinds = {k for k, every in self.cadence.items() if every and done % every == 0}
        if done == 0 or done == self.total:
            kinds |= {"obs", "snap", "ckpt"}
        return kinds

    def next_event(self, done):
        nxt = self.total
        for every in self.cadence.values():
            if every:
                nxt = min(nxt, (done // every + 1) * every)
        return nxt

    def time_of(self, step):
        return step * float(self.spec.time.dt)

    def observe(self, step, wall):
        from .field.observables import characteristic_length

        red = self.solver.reductions()
        lo, hi = float(red["min"]), float(red["max"])
        if not (np.isfinite(lo) and np.isfinite(hi) and np.isfinite(red["free_energy"])) \
                or max(abs(lo), abs(hi)) > BLOWUP:
            raise SimulationError(f"the field blew up (min {lo:.3g}, max {hi:.3g}) by step {step}")
        phi = self.solver.state()
        return {"step": step, "time": self.time_of(step), "mass": float(red["mass"]),
                "free_energy": float(red["free_energy"]), "phi_min": lo, "phi_max": hi,
                "length": float(characteristic_length(phi, self.grid.spacing)),
                "wall_time": wall}, phi

    def check_state(self, phi, step):
        if not np.all(np.isfinite(phi)) or np.abs(phi).max() > BLOWUP:
            raise SimulationError(f"the field became non-finite or blew up by step {step}")


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


# =============================================================================== network runs
class NetworkJob:
    unit = "source"

    def __init__(self, sc: Scenario, log=None):
        from .network.apsp import choose_sources, resolve_algorithm
        from .network.statistics import PathStatistics

        self.sc = sc
        self.spec = spec = sc.spec
        self.log = log or (lambda msg: None)
        self.graph = self._build_graph()
        m = spec.metrics
        if isinstance(m.sources, list):
            bad = [s for s in m.sources if s >= self.graph.n]
            if bad:
                raise UserError(f"{sc.path}: metrics.sources: vertex {bad[0]} is out of range "
                                f"(the graph has {self.graph.n} vertices)")
            src_spec = list(m.sources)
        elif m.sources == "all":
            src_spec = "all"
        else:
            src_spec = {"sample": m.sources.sample, "seed": m.sources.seed}
        self.backend = self._backend(spec.solver.backend)
        try:
            sources, self.sampled = choose_sources(self.graph.n, src_spec)
            self.sources = np.asarray(sources, dtype=np.int64)
            if self.backend == "cuda":
                from .network.cuda.apsp import resolve_algorithm_cuda

                self.algorithm = resolve_algorithm_cuda(self.graph, m.algorithm,
                                                        num_sources=len(self.sources))
            else:
                if m.algorithm in ("frontier_sssp", "near_far"):
                    raise UserError(f"metrics.algorithm: {m.algorithm} runs on the GPU only "
                                    f"(solver.backend: cuda)")
                self.algorithm = resolve_algorithm(self.graph, m.algorithm,
                                                   num_sources=len(self.sources))
        except UserError as exc:
            raise UserError(f"{sc.path}: {exc}") from None
        except ValueError as exc:
            raise UserError(f"{sc.path}: metrics: {exc}") from None
        self.total = len(self.sources)
        self.bin_width = float(m.histogram_bin_width or 1.0)
        self.stats = PathStatistics.for_graph(self.graph, bin_width=self.bin_width,
                                              sampled=self.sampled, planned_sources=self.total)
        self.every = int(spec.output.checkpoint_every)
        self.batch = int(spec.solver.batch or (8192 if self.backend == "cuda" else 2048))
        self.batch = max(1, min(self.batch, self.every))
        self.store_dtype = self._store_dtype() if m.store_distances else None
        self.pending_rows = []
        self.elapsed_before = 0.0

    # ---- graph
    def _build_graph(self):
        from .network import generators, readers, weights_setting

        g = self.spec.graph
        sc = self.sc
        try:
            if g.generator is not None:
                spec = dict(g.generator)
                if g.directed:
                    spec.setdefault("directed", True)
                    if not generators.makes_directed(spec["type"]):
                        raise UserError(f"{sc.path}: graph.directed: generator {spec['type']!r} "
                                        f"makes undirected graphs; set graph.directed: false")
                graph = generators.generate(spec)
            else:
                path = sc.resolve(g.file.path)
                graph = readers.read_graph(path, g.file.format, directed=g.directed,
                                           weights=weights_setting.file_reader_weights(g.weights))
        except UserError:
            raise
        except (ValueError, TypeError, KeyError) as exc:
            what = "graph.generator" if g.generator is not None else "graph.file"
            raise UserError(f"{sc.path}: {what}: {exc}") from None
        source = (f"generator {g.generator['type']!r}" if g.generator is not None
                  else str(g.file.path))
        graph = weights_setting.apply_setting(graph, g.weights, source, self.log)
        weights_setting.check_weight_values(graph, f"{sc.path}: graph.weights ({source})")
        return graph

    def _backend(self, backend):
        if backend == "auto":
            from numba import config, cuda

            return "cuda" if (not config.ENABLE_CUDASIM and cuda.is_available()) else "cpu"
        return backend

    def _store_dtype(self):
        from .network.apsp import store_dtype

        return store_dtype(self.graph)

    # ---- work
    def start_fresh(self):
        return 0

    def restore(self, f):
        from .network.statistics import PathStatistics

        ck = f["checkpoint"]
        state = {k: v[()] for k, v in ck.items()}
        self.stats = PathStatistics.from_state(state)
        self.elapsed_before = float(ck.attrs.get("elapsed", 0.0))
        return int(ck.attrs["done"])

    def work(self, start, stop):
        from .network.apsp import run_sources

        store = None
        if self.store_dtype is not None:
            store = np.empty((stop - start, self.graph.n), dtype=self.store_dtype)
        try:
            run_sources(self.graph, self.sources[start:stop], self.stats, algorithm=self.algorithm,
                        backend=self.backend, store=store)
        except ValueError as exc:
            raise UserError(f"{self.sc.path}: {exc}") from None
        if store is not None:
            self.pending_rows.append(store)


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
        if job.store_dtype is not None:
            from .network.statistics import unreachable_sentinel

            ds = hdf5.ensure_series(f, "distances", job.store_dtype, (g.n,), self.compression)
            ds.attrs["unreachable"] = unreachable_sentinel(job.store_dtype)
            ds.attrs["rows"] = "one row per entry of /sources, in order"

    def _results(self, f, res):
        job = self.job
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


def job_extra_metrics(job: NetworkJob) -> dict:
    """Components and spanning-forest weight, when the scenario asks for them."""
    from .network import components, mst

    out = {}
    wanted = set(job.spec.metrics.statistics)
    if "components" in wanted:
        summary = components.component_summary(job.graph)
        out["components"] = summary["weak_components"]
        out.update(summary)
    if "mst_weight" in wanted and not job.graph.directed:
        out["mst_weight"] = mst.minimum_spanning_forest_weight(job.graph)
    return out


# =============================================================================== the runner
class Runner:
    """Runs one scenario to completion (or to an interrupt), writing ``output``."""

    def __init__(self, sc: Scenario, output=None, resume=False, overwrite=False, progress=True,
                 log=None, force=False):
        self.sc = sc
        self.force = force
        self.output = Path(output) if output else default_output(sc)
        self.resume = resume
        self.overwrite = overwrite
        self.progress = progress
        self.log = log or (lambda msg: print(msg, file=sys.stderr, flush=True))

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
        if "checkpoint" not in f:
            f.close()
            self.log(f"no checkpoint in {out} yet: starting from the beginning")
            return True, None
        return False, f

    def run(self) -> int:
        from .resources import check

        check(self.sc, force=self.force)   # before any large allocation or output file
        if self.sc.kind == "field":
            return self._run_field()
        return self._run_network()

    # ---- field
    def _run_field(self):
        job = FieldJob(self.sc)
        fresh, f = self._prepare()
        if fresh:
            job.start_fresh()
            done, wall0 = 0, 0.0
        else:
            try:
                done = job.restore(f)
                obs_wall = f["observables/wall_time"][()] if "observables/wall_time" in f else []
                obs_step = f["observables/step"][()] if "observables/step" in f else []
                wall0 = float(obs_wall[np.searchsorted(obs_step, done, side="right") - 1]) \
                    if len(obs_wall) else 0.0
            finally:
                f.close()
            if done >= job.total:
                self.log(f"{self.output}: the run is already complete (step {done} of "
                         f"{job.total}); nothing to do")
                return 0
            self.log(f"resuming {self.output} from the checkpoint at step {done}")
        out = FieldOutput(job, self.output, self.sc, fresh, truncate_to=None if fresh else done)
        self.log(f"{self.sc.name}: {job.total} steps of {job.solver.name} on grid "
                 f"{list(job.grid.shape)} -> {self.output}")
        t0 = time.perf_counter() - wall0
        bar = Progress(job.total, done, unit="step", desc=self.sc.name, enabled=self.progress)
        last_ckpt = done
        try:
            with _Signals() as sig:
                if fresh:
                    self._field_events(job, out, 0, t0)
                chunk = 1
                while done < job.total:
                    target = job.next_event(done)
                    while done < target:
                        n = min(chunk, target - done)
                        t = time.perf_counter()
                        job.advance(n)
                        done += n
                        el = time.perf_counter() - t
                        chunk = max(1, min(int(chunk * 2) if el < 0.2 else int(n * 0.3 / max(el, 1e-9)),
                                           100000))
                        bar.update(done)
                        if sig.caught is not None:
                            break
                    if done == target:
                        if self._field_events(job, out, done, t0):
                            last_ckpt = done
                    if sig.caught is not None and done < job.total:
                        phi = job.solver.state()
                        job.check_state(phi, done)
                        out.ckpt = (done, phi)
                        out.write()
                        raise Interrupted(f"interrupted at step {done}: checkpoint written to "
                                          f"{self.output}; continue with --resume")
        except SimulationError as exc:
            raise SimulationError(f"{exc}; stopped. The last good checkpoint (step {last_ckpt}) "
                                  f"is in {self.output}") from None
        finally:
            bar.close()
        self.log(f"done: {job.total} steps in {time.perf_counter() - t0:.1f} s -> {self.output}")
        return 0

    def _field_events(self, job, out, step, t0):
        """Handle the events due at ``step``; returns True when a checkpoint was written."""
        due = job.due(step)
        phi = None
        if due:
            row, phi = job.observe(step, time.perf_counter() - t0)
            if "obs" in due:
                out.obs.append(row)
        if "snap" in due:
            job.check_state(phi, step)
            out.snaps.append((step, phi.copy()))
        if "ckpt" in due:
            job.check_state(phi, step)
            out.ckpt = (step, phi)
        if "snap" in due or "ckpt" in due:
            out.write(complete=(step == job.total))
        return "ckpt" in due

    # ---- network
    def _run_network(self):
        job = NetworkJob(self.sc, self.log)
        fresh, f = self._prepare()
        if fresh:
            done = job.start_fresh()
        else:
            try:
                stored_hash = f.attrs.get("graph_hash")
                if stored_hash is not None and str(stored_hash) != job.graph.content_hash():
                    raise UserError(f"{self.output}: cannot resume: the graph differs from the one "
                                    f"in the file (content hash mismatch)")
                complete = bool(f.attrs.get("complete", False))
                done = job.restore(f)
            finally:
                f.close()
            if complete or done >= job.total:
                self.log(f"{self.output}: the run is already complete ({done} of {job.total} "
                         f"sources); nothing to do")
                return 0
            self.log(f"resuming {self.output} from the checkpoint after {done} sources")
        out = NetworkOutput(job, self.output, self.sc, fresh, truncate_to=None if fresh else done)
        g = job.graph
        self.log(f"{self.sc.name}: {job.total} sources, {job.algorithm} on {job.backend}, graph "
                 f"n={g.n} arcs={g.num_arcs}{' directed' if g.directed else ''}"
                 f"{' weighted' if g.weighted else ''} -> {self.output}")
        t0 = time.perf_counter() - job.elapsed_before
        bar = Progress(job.total, done, unit="source", desc=self.sc.name, enabled=self.progress)
        try:
            with _Signals() as sig:
                if fresh:
                    out.write(0, 0.0)
                while done < job.total:
                    chunk_end = min(job.total, (done // job.every + 1) * job.every)
                    while done < chunk_end:
                        stop = min(chunk_end, (done // job.batch + 1) * job.batch)
                        job.work(done, stop)
                        done = stop
                        bar.update(done)
                        if sig.caught is not None:
                            break
                    elapsed = time.perf_counter() - t0
                    if done >= job.total:
                        res = job.stats.results(elapsed=elapsed)
                        out.write(done, elapsed, results=res)
                    else:
                        out.write(done, elapsed)
                    if sig.caught is not None and done < job.total:
                        raise Interrupted(f"interrupted after {done} sources: checkpoint written "
                                          f"to {self.output}; continue with --resume")
        finally:
            bar.close()
        res = job.stats.results(elapsed=time.perf_counter() - t0)
        md = res.get("mean_distance", float("nan"))
        se = res.get("mean_distance_se")
        self.log(f"done: mean distance {md:.6g}" + (f" ± {se:.2g}" if se is not None else "") +
                 f", diameter {res.get('diameter')}, in {time.perf_counter() - t0:.1f} s -> "
                 f"{self.output}")
        return 0


def run_scenario(sc: Scenario, output=None, resume=False, overwrite=False, progress=True,
                 log=None, force=False) -> int:
    return Runner(sc, output, resume, overwrite, progress, log, force).run()
