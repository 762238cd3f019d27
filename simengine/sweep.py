"""Parameter sweeps and ensembles: a scenario's ``sweep:`` block expanded into tasks.

A ``sweep:`` block maps dotted scenario keys to lists of values::

    sweep:
      graph.generator.n: [1000, 5000]
      graph.generator.seed: [1, 2, 3]
      zip: false            # true: pair the lists element-wise instead of the Cartesian product

A value list may also be a mapping ``label: value`` (the label names the task and fills the
summary column), which is how a whole sub-mapping such as a graph generator is swept.  Keys are
applied shortest path first, so ``graph.generator: {...}`` is set before ``graph.generator.n``.

Each task is one ordinary run: ``simengine run FILE --set KEY=VALUE ... --output DIR/TASK.h5
--resume``.  A task whose output is complete is skipped, an interrupted one resumes, and a task
that failed leaves ``DIR/TASK.failed`` (exit code and the last lines of its messages) until it
succeeds.  ``--jobs J`` runs J worker processes, each running tasks one after another in itself
(one GPU each when GPUs are present).
"""
from __future__ import annotations

import contextlib
import itertools
import math
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from .errors import UserError
from .sweep_status import (SWEEP_KEY, TASK_ENV, _same_scenario, body_of,  # noqa: F401
                           failed_marker, log_path, mark_failed, output_path, task_label,
                           task_status)

#: environment variable that tells ``simengine run`` it is running a sweep task (for its log line)
STATUSES = ("done", "failed", "incomplete", "missing")
#: the most tasks one ``sweep:`` block may expand to (docs/sweeps.md); counted before expansion
MAX_TASKS = 10_000
_LABEL = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.+-]*$")


# =============================================================================== expansion
@dataclass
class Task:
    """One point of a sweep."""

    index: int
    values: dict                      # dotted key -> value applied to the scenario
    labels: dict                      # dotted key -> text for listings, CSV columns, file names
    name: str = ""                    # file-safe task name (output DIR/NAME.h5)
    sets: list = field(default_factory=list)   # the --set arguments of this task (user's first)
    data: dict = field(default_factory=dict)   # the scenario as run (sweep block removed)

    def describe(self) -> str:
        return " ".join(f"{k}={v}" for k, v in self.labels.items())


@dataclass
class Sweep:
    path: Path
    name: str
    kind: str
    keys: list
    zip: bool
    tasks: list
    overrides: list
    #: ``sweep.ensemble``: None = off, 0 = ensembles of any size, N = at most N members each
    ensemble: int = None

    def output_dir(self, given=None) -> Path:
        return Path(given) if given else Path("outputs") / self.name

    def task(self, index) -> Task:
        if not 0 <= index < len(self.tasks):
            raise UserError(f"{self.path}: task {index} is out of range: the sweep has "
                            f"{len(self.tasks)} tasks (0-{len(self.tasks) - 1})")
        return self.tasks[index]

    def seed_keys(self) -> list:
        return [k for k in self.keys if k.split(".")[-1] == "seed"]


def render_value(value) -> str:
    """``value`` as YAML text that ``--set KEY=TEXT`` parses back to the same value."""
    if isinstance(value, (dict, list)):
        text = yaml.safe_dump(value, default_flow_style=True, width=1 << 30, sort_keys=False)
    else:
        text = yaml.safe_dump(value, width=1 << 30)
    text = text.strip()
    if text.endswith("\n..."):
        text = text[:-4].strip()
    elif text.endswith("..."):
        text = text[:-3].strip()
    return text


def _label_text(value) -> str:
    if isinstance(value, list) and value and all(isinstance(v, (int, float)) and
                                                 not isinstance(v, bool) for v in value):
        return "x".join(render_value(v) for v in value)          # grid.shape [64, 64] -> 64x64
    return render_value(value)


def _file_part(text) -> str:
    return re.sub(r"[^A-Za-z0-9.+-]+", "-", text) or "_"


def _short_keys(keys):
    """Shortest unique dotted suffix of every key (``graph.generator.n`` -> ``n``)."""
    parts = {k: k.split(".") for k in keys}
    depth = {k: 1 for k in keys}
    while True:
        short = {k: ".".join(parts[k][-depth[k]:]) for k in keys}
        clash = [k for k in keys if list(short.values()).count(short[k]) > 1
                 and depth[k] < len(parts[k])]
        if not clash:
            return short
        for k in clash:
            depth[k] += 1


def _axis(key, raw, where):
    """[(label, file-name part, value), ...] for one swept key."""
    if isinstance(raw, dict):
        if not raw:
            raise UserError(f"{where}: sweep: {key}: expected a non-empty list of values or a "
                            f"mapping label: value")
        out = []
        for label, value in raw.items():
            label = str(label)
            if not _LABEL.match(label):
                raise UserError(f"{where}: sweep: {key}: label {label!r} must be letters, digits "
                                f"and _ . + - (it names output files)")
            out.append((label, label, value))
    else:
        if not isinstance(raw, list) or not raw:
            raise UserError(f"{where}: sweep: {key}: expected a non-empty list of values (or a "
                            f"mapping label: value), got {raw!r}")
        out = []
        for i, value in enumerate(raw):
            text = _label_text(value)
            out.append((text, str(i) if isinstance(value, dict) else _file_part(text), value))
    for *_, value in out:
        if yaml.safe_load(render_value(value)) != value:
            raise UserError(f"{where}: sweep: {key}: value {value!r} cannot be passed as --set "
                            f"{key}=...")
    return out


def parse_block(block, located):
    """(keys, axes, zip) of a ``sweep:`` mapping; axes[key] = [(label, part, value), ...]."""
    if not isinstance(block, dict):
        raise UserError(f"{located.where((SWEEP_KEY,))}: sweep: expected a mapping of dotted keys "
                        f"to lists of values")
    zipped = block.get("zip", False)
    if not isinstance(zipped, bool):
        raise UserError(f"{located.where((SWEEP_KEY, 'zip'))}: sweep.zip: expected true or false, "
                        f"got {zipped!r}")
    axes = {}
    for key, raw in block.items():
        if key in ("zip", "ensemble"):
            continue
        where = located.where((SWEEP_KEY, key))
        if not isinstance(key, str) or not key or any(not p for p in key.split(".")):
            raise UserError(f"{where}: sweep: key {key!r}: expected a dotted scenario key such as "
                            f"graph.generator.n")
        if key.split(".")[0] in ("kind", SWEEP_KEY):
            raise UserError(f"{where}: sweep: {key}: this key cannot be swept")
        axes[key] = _axis(key, raw, where)
    if not axes:
        raise UserError(f"{located.where((SWEEP_KEY,))}: sweep: expected at least one key with "
                        f"a list of values")
    keys = list(axes)
    if zipped:
        lengths = {k: len(v) for k, v in axes.items()}
        if len(set(lengths.values())) > 1:
            raise UserError(f"{located.where((SWEEP_KEY, 'zip'))}: sweep.zip: true needs lists of "
                            f"equal length, got " + ", ".join(f"{k}: {n}" for k, n in lengths.items()))
    count = len(next(iter(axes.values()))) if zipped else \
        math.prod(len(v) for v in axes.values())  # counted before any task is built
    if count > MAX_TASKS:
        sizes = " × ".join(str(len(v)) for v in axes.values())
        raise UserError(f"{located.where((SWEEP_KEY,))}: sweep: {sizes} = {count:,} tasks, more "
                        f"than the {MAX_TASKS:,} one sweep may expand to (each task is validated "
                        f"and gets its own output); split it into several sweeps or use zip: true")
    return keys, axes, zipped


def _task_sets(values):
    """--set arguments for one task, parents before children (graph.generator before .n)."""
    order = sorted(values, key=lambda k: len(k.split(".")))
    return [f"{k}={render_value(values[k])}" for k in order]


def _where_prefix(path):
    """A validation message's location: ``FILE[:LINE]: `` or ``--set 'K=V' (over FILE): ``."""
    p = re.escape(str(path))
    return r"^(?:--set .*? \(over " + p + r"\)|" + p + r"(?::\d+)?): "


def _error_key(msg, path):
    """The dotted key named by a validation message ``FILE[:LINE]: key.path: ...`` (or None)."""
    m = re.match(_where_prefix(path) + r"([A-Za-z0-9_.]+):", msg)
    return m.group(1) if m else None


def _related(a, b):
    pa, pb = a.split("."), b.split(".")
    n = min(len(pa), len(pb))
    return pa[:n] == pb[:n]


def load_sweep(path, overrides=None) -> Sweep:
    """Read ``path``, expand its sweep block and validate every task; UserError on the first bad one."""
    from .config import validate_located
    from .config.loader import apply_overrides, load_scenario_file

    base = load_scenario_file(path)
    located = apply_overrides(base, overrides)
    if SWEEP_KEY not in located:
        raise UserError(f"{located.path}: no 'sweep:' block (expected e.g. sweep: "
                        f"{{graph.generator.seed: [1, 2, 3]}})")
    keys, axes, zipped = parse_block(located[SWEEP_KEY], located)
    from .sweep_ensemble import parse_setting

    ensemble = parse_setting(located[SWEEP_KEY].get("ensemble"),
                             located.where((SWEEP_KEY, "ensemble")))
    combos = zip(*(axes[k] for k in keys)) if zipped else itertools.product(*(axes[k] for k in keys))
    short = _short_keys(keys)
    tasks, names = [], {}
    for i, combo in enumerate(combos):
        values = {k: c[2] for k, c in zip(keys, combo)}
        labels = {k: c[0] for k, c in zip(keys, combo)}
        name = "_".join(f"{short[k]}={c[1]}" for k, c in zip(keys, combo))
        if name in names:
            raise UserError(f"{located.where((SWEEP_KEY,))}: sweep: tasks {names[name]} and {i} "
                            f"would both write {name}.h5 (repeated values?)")
        names[name] = i
        task = Task(i, values, labels, name, list(overrides or ()) + _task_sets(values))
        task_located = apply_overrides(base, task.sets)
        try:
            sc = validate_located(task_located)
        except UserError as exc:
            msg = str(exc)
            bad = _error_key(msg, located.path)
            culprits = [k for k in keys if bad is not None and _related(k, bad)]
            if culprits:
                k = culprits[-1]
                inner = re.sub(_where_prefix(located.path), "", msg)
                raise UserError(f"{located.where((SWEEP_KEY, k))}: sweep: {k}={labels[k]} "
                                f"(task {i}): {inner}") from None
            raise
        task.data = body_of(sc).data
        tasks.append(task)
    return Sweep(located.path, str(located.get("name")), str(located.get("kind")), keys, zipped,
                 tasks, list(overrides or ()), ensemble)


# =============================================================================== running
def run_argv(sweep, task, out_dir, quiet=False) -> list:
    """The ``simengine run`` arguments of one task."""
    argv = ["run", str(sweep.path)]
    for s in task.sets:
        argv += ["--set", s]
    argv += ["--output", str(output_path(out_dir, task)), "--resume"]
    return argv + (["--quiet"] if quiet else [])


class _Tail:
    """A text stream that passes everything on and keeps the last lines (for the .failed note)."""

    def __init__(self, stream, keep=20):
        self.stream, self.keep, self.lines, self._part = stream, keep, [], ""

    def write(self, text):
        self.stream.write(text)
        self._part += text
        *done, self._part = re.split(r"[\r\n]", self._part)
        self.lines = (self.lines + [d for d in done if d.strip()])[-self.keep:]
        return len(text)

    def flush(self):
        self.stream.flush()

    def isatty(self):
        return self.stream.isatty()

    def fileno(self):
        return self.stream.fileno()

    def text(self):
        return "\n".join(self.lines + ([self._part] if self._part.strip() else []))


def run_task(sweep, task, out_dir, run_cli, quiet=False, log=None) -> int:
    """Run one task in this process (``simengine run ... --resume`` through ``run_cli``, the
    command line's ``main``); returns its exit code."""

    log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    out = output_path(out_dir, task)
    if _same_scenario(out, task):
        failed_marker(out_dir, task).unlink(missing_ok=True)
        log(f"{task_label(sweep, task)}: already done, skipped")
        return 0
    failed_marker(out_dir, task).unlink(missing_ok=True)
    old_env = os.environ.get(TASK_ENV)
    os.environ[TASK_ENV] = f"{task.index} of {len(sweep.tasks)}: {task.describe()} -> {out}"
    tail = _Tail(sys.stderr)
    try:
        with contextlib.redirect_stderr(tail):
            rc = run_cli(run_argv(sweep, task, out_dir, quiet))
    except Exception as exc:  # an internal error: note it, and let the other tasks go on
        import traceback

        traceback.print_exc()
        tail.lines.append(f"internal error: {type(exc).__name__}: {exc}")
        rc = 1
    finally:
        if old_env is None:
            os.environ.pop(TASK_ENV, None)
        else:
            os.environ[TASK_ENV] = old_env
    if rc in (1, 2):
        mark_failed(out_dir, task, rc, tail.text())
    return rc


def visible_gpus() -> list:
    """GPU ids to hand out one per job: CUDA_VISIBLE_DEVICES, else what nvidia-smi lists."""
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        return []
    cvd = os.environ.get("CUDA_VISIBLE_DEVICES")
    if cvd is not None:
        ids = [d.strip() for d in cvd.split(",") if d.strip()]
        return [] if ids and ids[0].startswith("-") else ids
    smi = shutil.which("nvidia-smi")
    if not smi:
        return []
    try:
        out = subprocess.run([smi, "-L"], capture_output=True, text=True, timeout=20).stdout
    except (OSError, subprocess.SubprocessError):
        return []
    return [str(i) for i, ln in enumerate(ln for ln in out.splitlines() if ln.startswith("GPU "))]


def worker_loop(sweep, out_dir, run_cli) -> int:
    """``simengine sweep FILE --worker``: run the task indices read from stdin (one per line) in
    this process, each with its messages in ``D/logs/TASK.log``; answer ``INDEX EXITCODE`` per task
    on stdout. One long-lived worker per job saves the interpreter and numba start-up per task."""
    answers = os.fdopen(os.dup(sys.stdout.fileno()), "w", buffering=1)
    os.dup2(sys.stderr.fileno(), sys.stdout.fileno())   # stray prints must not mix with answers
    for line in sys.stdin:
        if not line.strip():
            continue
        task = sweep.task(int(line))
        path = log_path(out_dir, task)
        path.parent.mkdir(parents=True, exist_ok=True)
        with open(path, "a", encoding="utf-8") as fh:
            fh.write(f"--- {time.strftime('%Y-%m-%dT%H:%M:%S')} "
                     f"{'GPU ' + os.environ['CUDA_VISIBLE_DEVICES'] + ' ' if os.environ.get('CUDA_VISIBLE_DEVICES') else ''}"
                     f"simengine {' '.join(run_argv(sweep, task, out_dir))}\n")
            fh.flush()
            with contextlib.redirect_stdout(fh), contextlib.redirect_stderr(fh):
                rc = run_task(sweep, task, out_dir, run_cli,
                              log=lambda m: print(m, file=fh, flush=True))
        answers.write(f"{task.index} {rc}\n")
        if rc == 130:          # SIGTERM/SIGINT while running: the checkpoint is written; stop
            return 130
    return 0


class _Worker:
    def __init__(self, sweep, out_dir, slot, env):
        argv = [sys.executable, "-m", "simengine", "sweep", str(sweep.path), "--output-dir",
                str(out_dir), "--worker"]
        for s in sweep.overrides:
            argv += ["--set", s]
        self.slot, self.task, self.t0 = slot, None, 0.0
        self.errlog = open(Path(out_dir) / "logs" / f"worker-{slot}.log", "a", encoding="utf-8")
        self.proc = subprocess.Popen(argv, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                     stderr=self.errlog, env=env, text=True, bufsize=1,
                                     start_new_session=True)

    def give(self, task):
        self.task, self.t0 = task, time.perf_counter()
        self.proc.stdin.write(f"{task.index}\n")
        self.proc.stdin.flush()

    def finish(self):
        with contextlib.suppress(OSError):
            self.proc.stdin.close()


def _run_parallel(sweep, todo, out_dir, jobs, log) -> dict:
    """Run ``todo`` on ``jobs`` worker processes (one GPU each where there are GPUs)."""
    import selectors
    from collections import deque

    gpus = visible_gpus()
    if gpus and jobs > len(gpus):
        log(f"note: {jobs} jobs share {len(gpus)} GPUs")
    threads = max(1, (os.cpu_count() or 1) // jobs)
    (out_dir / "logs").mkdir(parents=True, exist_ok=True)
    pending = deque(todo)
    codes, stop = {}, {"sig": None}
    sel = selectors.DefaultSelector()
    workers = {}

    def start(slot):
        env = dict(os.environ)
        env.setdefault("NUMBA_NUM_THREADS", str(threads))
        if gpus:
            env["CUDA_VISIBLE_DEVICES"] = gpus[slot % len(gpus)]
        w = workers[slot] = _Worker(sweep, out_dir, slot, env)
        sel.register(w.proc.stdout, selectors.EVENT_READ, slot)

    def feed(w):
        if pending and stop["sig"] is None:
            task = pending.popleft()
            failed_marker(out_dir, task).unlink(missing_ok=True)
            w.give(task)
            log(f"{task_label(sweep, task)}: started" + (f" on GPU {gpus[w.slot % len(gpus)]}"
                                                    if gpus else ""))
        else:
            w.task = None
            w.finish()

    def report(task, rc, took):
        codes[task.index] = rc
        if rc == 0:
            log(f"{task_label(sweep, task)}: done in {took:.1f} s")
        elif rc == 130:
            log(f"{task_label(sweep, task)}: interrupted (checkpoint kept; rerun to resume)")
        else:
            note = task_status(out_dir, task)[1]
            log(f"{task_label(sweep, task)}: FAILED (exit {rc}){': ' + note if note else ''}")

    def on_signal(signum, frame):
        stop["sig"] = signum
        for w in workers.values():
            with contextlib.suppress(ProcessLookupError):
                w.proc.send_signal(signal.SIGTERM)

    old = {s: signal.signal(s, on_signal) for s in (signal.SIGINT, signal.SIGTERM)}
    try:
        for slot in range(min(jobs, len(pending))):
            start(slot)
            feed(workers[slot])
        while workers:
            for key, _ in sel.select(timeout=0.5):
                w = workers[key.data]
                line = w.proc.stdout.readline()
                if line.strip():
                    index, rc = map(int, line.split())
                    report(sweep.tasks[index], rc, time.perf_counter() - w.t0)
                    feed(w)
                    continue
                sel.unregister(w.proc.stdout)       # end of file: the worker has exited
                rc = w.proc.wait()
                w.errlog.close()
                del workers[w.slot]
                if w.task is not None:              # it died inside a task
                    rc = 130 if stop["sig"] is not None else (1 if rc == 0 else rc)
                    if rc != 130:
                        tail = log_path(out_dir, w.task)
                        text = tail.read_text(errors="replace") if tail.exists() else ""
                        mark_failed(out_dir, w.task, rc, "\n".join(text.splitlines()[-20:]) +
                              f"\nthe worker process ended with code {w.proc.returncode}")
                    report(w.task, rc, time.perf_counter() - w.t0)
                    if pending and stop["sig"] is None:
                        start(w.slot)
                        feed(workers[w.slot])
    finally:
        for sg, h in old.items():
            signal.signal(sg, h)
    if stop["sig"] is not None:
        for task in pending:
            codes.setdefault(task.index, 130)
    return codes


def run_all(sweep, out_dir, run_cli, jobs=1, quiet=False, log=None, ensemble=None) -> int:
    """Run every task that is not done; returns 0, 1 (some failed) or 130 (interrupted).
    ``ensemble`` (default: the sweep block's setting): group field tasks that differ only in
    their initial field into ensembles (:mod:`simengine.sweep_ensemble`), run before the rest."""
    log = log or (lambda m: print(m, file=sys.stderr, flush=True))
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    todo = []
    for task in sweep.tasks:
        if _same_scenario(output_path(out_dir, task), task):
            failed_marker(out_dir, task).unlink(missing_ok=True)
        else:
            todo.append(task)
    skipped = len(sweep.tasks) - len(todo)
    log(f"{sweep.name}: {len(sweep.tasks)} tasks -> {out_dir}/ ({skipped} already done"
        f"{f', {len(todo)} to run with {jobs} jobs' if jobs > 1 and todo else ''})")
    codes = {}
    t0 = time.perf_counter()
    ensemble = sweep.ensemble if ensemble is None else ensemble
    if ensemble is not None and ensemble is not False and todo:
        from .sweep_ensemble import plan_groups, run_groups

        groups, todo, scs = plan_groups(sweep, todo, ensemble)
        log(f"{sweep.name}: {sum(map(len, groups))} tasks in {len(groups)} ensemble(s), "
            f"{len(todo)} run singly")
        codes = run_groups(sweep, groups, scs, out_dir, quiet=quiet, log=log)
        if any(rc == 130 for rc in codes.values()):
            todo = []
    if jobs > 1 and todo:
        codes.update(_run_parallel(sweep, todo, out_dir, jobs, log))
    else:
        for task in todo:
            t = time.perf_counter()
            rc = codes[task.index] = run_task(sweep, task, out_dir, run_cli, quiet=quiet,
                                              log=log)
            if rc == 0:
                log(f"{task_label(sweep, task)}: done in {time.perf_counter() - t:.1f} s")
            elif rc == 130:
                log(f"{task_label(sweep, task)}: interrupted; rerun the sweep to resume")
                break
            else:
                log(f"{task_label(sweep, task)}: FAILED (exit {rc}); see {failed_marker(out_dir, task)}")
    failed = [i for i, rc in codes.items() if rc not in (0, 130)]
    interrupted = any(rc == 130 for rc in codes.values())
    log(f"{sweep.name}: {len(codes) - len(failed) - sum(rc == 130 for rc in codes.values())} "
        f"run, {skipped} skipped, {len(failed)} failed in {time.perf_counter() - t0:.1f} s"
        + (f"; failed tasks: {compress_indices(failed)}" if failed else ""))
    return 130 if interrupted else (1 if failed else 0)


# =============================================================================== listing
def compress_indices(indices) -> str:
    """[0, 1, 2, 5, 7, 8] -> '0-2,5,7-8' (the form of sbatch --array)."""
    out, run = [], []
    for i in sorted(set(indices)):
        if run and i == run[-1] + 1:
            run.append(i)
            continue
        if run:
            out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
        run = [i]
    if run:
        out.append(f"{run[0]}-{run[-1]}" if len(run) > 1 else str(run[0]))
    return ",".join(out)


def select(sweep, out_dir, only=None) -> list:
    """Tasks whose status is in ``only`` (all tasks when None)."""
    if not only:
        return list(sweep.tasks)
    return [t for t in sweep.tasks if task_status(out_dir, t)[0] in only]
