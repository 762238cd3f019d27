"""A sweep's task files and their status (no running): where a task's output, failure marker and
log go, whether a task is done, failed, incomplete or missing, whether an output holds the task's
scenario, and the scenario without its ``sweep:`` block. Shared by the sweep runner
(:mod:`simengine.sweep`), its ensemble grouping (:mod:`simengine.sweep_ensemble`), the summaries
(:mod:`simengine.summary`) and ``simengine run`` (which ignores a sweep block)."""
from __future__ import annotations

import math
import os
import time
from pathlib import Path

import yaml

SWEEP_KEY = "sweep"
#: the task a ``simengine run`` belongs to (set by the sweep runner, logged by the run)
TASK_ENV = "SIMENGINE_SWEEP_TASK"


def body_of(sc, log=None):
    """The scenario without its ``sweep:`` block (what ``simengine run`` runs); logs that it did so."""
    from .config import Scenario

    if SWEEP_KEY not in sc.data:
        return sc
    if log is not None:
        task = os.environ.get(TASK_ENV)
        if task:
            log(f"sweep task {task}")
        else:
            n = _count_tasks(sc.data[SWEEP_KEY])
            log(f"{sc.path}: has a sweep block{f' ({n} tasks)' if n else ''}; simengine run "
                f"ignores it and runs the scenario as written (with any --set). Run the tasks "
                f"with: simengine sweep {sc.path}")
    data = {k: v for k, v in sc.data.items() if k != SWEEP_KEY}
    spec = sc.spec.model_copy(update={SWEEP_KEY: None}) if hasattr(sc.spec, SWEEP_KEY) else sc.spec
    return Scenario(spec, data, sc.path, list(sc.overrides))


def _count_tasks(block):
    try:
        sizes = [len(v) for k, v in block.items() if k != "zip" and isinstance(v, (list, dict))]
        if block.get("zip"):
            return sizes[0] if sizes else 0
        return math.prod(sizes) if sizes else 0
    except (AttributeError, TypeError):
        return 0


# =============================================================================== status
def output_path(out_dir, task) -> Path:
    return Path(out_dir) / f"{task.name}.h5"


def failed_marker(out_dir, task) -> Path:
    return Path(out_dir) / f"{task.name}.failed"


def log_path(out_dir, task) -> Path:
    return Path(out_dir) / "logs" / f"{task.name}.log"


def task_status(out_dir, task):
    """(status, message): done | failed | incomplete | missing."""
    import h5py

    out, marker = output_path(out_dir, task), failed_marker(out_dir, task)
    note = ""
    if marker.exists():
        lines = [ln for ln in marker.read_text(errors="replace").splitlines() if ln.strip()]
        note = lines[-1].strip() if lines else "failed"
    if not out.exists():
        return ("failed", note) if marker.exists() else ("missing", "")
    try:
        with h5py.File(out, "r") as f:
            complete = bool(f.attrs.get("complete", False))
    except OSError as exc:
        return "failed", f"{out}: unreadable ({str(exc).split('(')[0].strip()})"
    if complete:
        return "done", ""
    return ("failed", note) if marker.exists() else ("incomplete", "")


def _flat(d, prefix=()):
    out = {}
    for k, v in (d or {}).items():
        if isinstance(v, dict) and v:
            out.update(_flat(v, prefix + (str(k),)))
        else:
            out[prefix + (str(k),)] = v
    return out


def scenario_difference(out, task):
    """None when ``out`` holds this task's scenario exactly, else the first key that differs."""
    import h5py

    try:
        with h5py.File(out, "r") as f:
            stored = f.attrs.get("scenario", "")
            stored = stored.decode() if isinstance(stored, bytes) else str(stored)
    except OSError:
        return "(unreadable file)"
    a = _flat(yaml.safe_load(stored))
    b = _flat(yaml.safe_load(yaml.safe_dump(task.data, sort_keys=False)))
    diff = sorted(".".join(k) for k in set(a) | set(b) if a.get(k) != b.get(k))
    return diff[0] if diff else None


def _same_scenario(out, task) -> bool:
    """Whether ``out`` is complete and was run with exactly this task's scenario."""
    return task_status(out.parent, task)[0] == "done" and scenario_difference(out, task) is None


def mark_failed(out_dir, task, rc, text):
    failed_marker(out_dir, task).write_text(
        f"task {task.index} ({task.describe()}) exited with code {rc} at "
        f"{time.strftime('%Y-%m-%dT%H:%M:%S')}\n{text.strip()}\n", encoding="utf-8")


def task_label(sweep, task):
    return f"task {task.index} of {len(sweep.tasks)} ({task.name})"
