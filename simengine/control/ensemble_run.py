"""Running field scenarios that differ only in their initial field as one ensemble.

:func:`run_ensemble` takes M scenarios and M output paths and does for every member what
``simengine run SCENARIO --output PATH --resume`` does — lock, skip if complete, resume from the
checkpoint, the same observables / snapshots / checkpoints at the same steps, written through the
member's own :class:`~simengine.control.field_job.FieldJob` and output writer — but advances all members
with one :class:`~simengine.field.ensemble.EnsembleSolver`. Every member's file equals that of its
single run (the fields and observables bit for bit; only ``wall_time`` and the creation time
differ), so analysis, ``--collect`` and a later single ``--resume`` read it unchanged.

:func:`ensemble_key` is the grouping rule: two scenarios can share an ensemble when they are equal
apart from their ``initial`` block, are field runs, and the backend's ensemble form is the kernel a
single run of them would use (CPU: every kernel; CUDA: ``global``/``texture`` in 1-D and 2-D —
3-D single runs default to the marching form, which has no ensemble form).

Resume: members whose outputs are complete are skipped; the others are started or resumed from
their own checkpoints. Members whose checkpoints are at different steps (a kill while the members
of one checkpoint step were being written one after another) run as separate sub-ensembles, one
per starting step, each to the end — every member continues from its own checkpoint, so each
result is still that of an uninterrupted single run.
"""
from __future__ import annotations

import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from ..errors import OutputError, SimulationError, UserError
from .field_job import piece_size


# =============================================================================== grouping rule
def ensemble_key(sc):
    """A hashable key equal for scenarios that can run in one ensemble, or ``None`` when this
    scenario has no ensemble form (then it runs singly)."""
    if sc.kind != "field":
        return None
    from ..field.backends import resolve

    spec = sc.spec
    s = spec.solver
    if s.integrator == "spectral" or spec.time.adaptive or any(
            getattr(spec.output, f"{k}_dt") for k in ("snapshot", "checkpoint", "observables")):
        return None  # the ensemble steps every member with one fixed-step stencil solver
    try:
        backend = resolve(s.backend)
    except ValueError:
        return None
    if backend == "cuda":
        from ..field.cuda.ensemble import default_single_form

        if not default_single_form(s.kernel, spec.grid.shape, s.precision):
            return None
        if isinstance(s.block, str):      # block: auto tunes per run; no ensemble form
            return None
    rest = {k: v for k, v in sc.data.items() if k not in ("initial", "sweep")}
    return backend, yaml.safe_dump(rest, sort_keys=True)


def member_bytes(sc) -> tuple:
    """(host bytes, device bytes) one member adds to an ensemble: three fields of the grid in
    the precision (the solver's buffers) plus one host copy for output."""
    import numpy as np

    spec = sc.spec
    cells = int(np.prod([int(n) for n in spec.grid.shape]))
    item = np.dtype(spec.solver.precision).itemsize
    return 4 * cells * item, 3 * cells * item


# =============================================================================== the driver
@dataclass
class _Member:
    index: int
    sc: object
    output: Path
    runner: object = None
    view: object = None
    job: object = None
    fresh: bool = True
    ck: dict = None
    start_step: int = 0
    out: object = None
    t0: float = 0.0
    rc: int = None
    message: str = ""
    extra: list = field(default_factory=list)


def run_ensemble(scenarios, outputs, *, log=None, progress=False, force=False) -> list:
    """Run (or resume, or skip) every scenario into its output as one ensemble; returns one
    ``(exit code, message)`` per member: 0 done, 1 simulation or output failure, 2 bad input,
    130 interrupted (checkpoint written). All scenarios must have one :func:`ensemble_key`."""
    from ..resources import check

    log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    scenarios, outputs = list(scenarios), [Path(p) for p in outputs]
    if len(scenarios) != len(outputs) or not scenarios:
        raise ValueError("run_ensemble needs one output per scenario (and at least one)")
    keys = {ensemble_key(sc) for sc in scenarios}
    if None in keys or len(keys) != 1:
        raise UserError(f"{scenarios[0].path}: these scenarios cannot share an ensemble (they "
                        f"must be field runs equal apart from 'initial', with an ensemble form "
                        f"of their solver)")
    members = [_Member(i, sc, out) for i, (sc, out) in enumerate(zip(scenarios, outputs))]
    try:
        check(scenarios[0], 1, force)   # one member against the machine, as a single run
        for m in members:
            _open(m, log)
        pending = [m for m in members if m.rc is None]
        steps = sorted({m.start_step for m in pending})
        if len(steps) > 1:
            log(f"ensemble: members resume from {len(steps)} different checkpoint steps "
                f"({', '.join(map(str, steps))}); one sub-ensemble per step")
        for step in steps:
            group = [m for m in pending if m.start_step == step]
            if any(m.rc == 130 for m in members):
                for m in group:
                    m.rc, m.message = 130, "interrupted before it started"
                continue
            _run_group(group, log, progress)
    finally:
        for m in members:
            if m.runner is not None and m.runner._lock is not None:
                m.runner._lock.release()
                m.runner._lock = None
    return [(m.rc, m.message) for m in members]


def _open(m, log):
    """Lock the member's output and decide: fresh, resume from its checkpoint, or complete."""
    from .runner import Runner
    from ..field.ensemble import MemberSolver
    from .field_job import FieldJob

    try:
        m.runner = Runner(m.sc, m.output, resume=True, progress=False, log=log)
        m.view = MemberSolver()
        m.job = FieldJob(m.sc, log, solver=m.view)
        m.fresh, m.ck = m.runner._open(m.job)
    except UserError as exc:
        m.rc, m.message = 2, f"error: {exc}"
        log(f"simengine: {m.message}")
        return
    except OutputError as exc:
        m.rc, m.message = 1, f"error: {exc}"
        log(f"simengine: {m.message}")
        return
    m.start_step = 0 if m.fresh else int(m.ck["done"])
    if not m.fresh and m.start_step >= m.job.total:
        log(f"{m.output}: {m.job.complete_message(m.start_step)}")
        m.rc, m.message = 0, "already complete"


def _run_group(group, log, progress):
    from ..progress import Progress
    from ..signals import checkpointable
    from ..field.ensemble import EnsembleSolver

    job0 = group[0].job
    s = job0.spec.solver
    try:
        ens = EnsembleSolver(job0.model, job0.grid, job0.boundary, len(group), backend=s.backend,
                             kernel=s.kernel, precision=s.precision, integrator=s.integrator,
                             dt=job0.spec.time.dt, tile=s.tile, block=s.block, layout=s.layout)
    except (ValueError, RuntimeError) as exc:
        for m in group:
            m.rc, m.message = 2, f"error: {m.sc.path}: solver: {exc}"
        log(f"simengine: {group[0].message}")
        return
    done = group[0].start_step
    now = time.perf_counter()
    active = []
    for i, m in enumerate(group):
        m.view.bind(ens, i)
        try:
            d, elapsed0 = m.job.start(m.fresh, m.ck)
            if not m.fresh:
                log(f"{m.output}: {m.job.resume_message(d)}")
            m.out = m.job.make_output(m.output, m.fresh, None if m.fresh else d)
        except (UserError, OutputError) as exc:
            _fail(m, 2 if isinstance(exc, UserError) else 1, f"error: {exc}", log)
            continue
        m.t0 = now - elapsed0
        active.append(m)
    if not active:
        return
    log(f"ensemble of {len(active)} members: {job0.total} steps of {ens.member_name} on grid "
        f"{list(job0.grid.shape)}" + (f", from step {done}" if done else ""))
    bar = Progress(job0.total, done, unit="step", desc=f"{group[0].sc.name} x{len(active)}",
                   enabled=progress)
    chunk = 1
    try:
        with checkpointable() as sig:
            if done == 0:
                active = _at_stop(active, 0, log, fresh_start=True)
            while active and done < job0.total:
                stop = job0.next_stop(done)
                while done < stop:
                    n = min(chunk, stop - done)
                    t = time.perf_counter()
                    ens.advance(int(n))
                    ens.synchronize()   # time the work, not its asynchronous launch
                    done += n
                    el = time.perf_counter() - t
                    chunk = piece_size(chunk, n, el)
                    bar.update(done)
                    if sig.caught is not None:
                        break
                if done == stop:
                    active = _at_stop(active, done, log)
                if sig.caught is not None and done < job0.total:
                    for m in active:
                        try:
                            m.job.checkpoint(done, m.out, time.perf_counter() - m.t0)
                        except (SimulationError, OutputError) as exc:
                            _fail(m, 1, str(exc), log)
                            continue
                        m.rc = 130
                        m.message = (f"interrupted after {done} steps: checkpoint written to "
                                     f"{m.output}; continue with --resume")
                        log(f"simengine: {m.message}")
                    return
    finally:
        bar.close()
    for m in active:
        m.rc, m.message = 0, m.job.finished(time.perf_counter() - m.t0, m.output)
        log(m.message)


def _at_stop(active, done, log, fresh_start=False):
    """Every active member writes what is due at ``done``; a member that fails (a blow-up, an
    output error) is dropped from the ensemble's bookkeeping (its output keeps its last
    checkpoint, as a failed single run's does)."""
    keep = []
    for m in active:
        try:
            m.job.at_stop(done, m.out, 0.0 if fresh_start else time.perf_counter() - m.t0)
        except SimulationError as exc:
            _fail(m, 1, f"simulation failed: {m.job.failed(exc, m.output)}", log)
            continue
        except OutputError as exc:
            _fail(m, 1, f"error: {exc}", log)
            continue
        keep.append(m)
    return keep


def _fail(m, rc, message, log):
    m.rc, m.message = rc, message
    log(f"simengine: {m.output}: {message}")
