"""One table for a sweep: ``simengine sweep FILE --collect``.

``<output-dir>/<name>-summary.csv`` has one row per task.  Its columns, in order: ``task`` (the
index), the swept keys (one column each, the value or label of the task), ``name`` (the task's
file name), ``status`` (done | failed | incomplete | missing), ``message`` (why a task failed), then
every scalar result of the run: for networks each ``/statistics/*`` scalar plus ``n``, ``arcs``,
``algorithm``, ``backend``; for fields the last observables row (``mass``, ``free_energy``,
``length``, the coarsening measures ``length_energy``, ``length_interface``, ``length_shell``,
``length_correlation``, ``phi_min``, ``phi_max``, ``steps``, ``time``, ``wall_time``), ``solver``
and, per length measure with a fit (:mod:`simengine.coarsening`), ``exponent_<measure>``,
``exponent_<measure>_se``, ``K_<measure>`` and ``K_<measure>_se`` (the L³ rate).  Results are
filled for done tasks only.

When a key whose last part is ``seed`` is swept, ``<name>-grouped.csv`` groups the done tasks by
the other swept keys: ``count`` (done tasks), ``not_done``, then ``<result>_mean``, ``_std``
(sample standard deviation, ddof = 1), ``_se`` (std / sqrt(count)) for every numeric result.
For field sweeps, ``<name>-structure-factor.csv`` holds S(k, t) averaged over the seeds
(:mod:`simengine.summary_sk`).
"""
from __future__ import annotations

import csv
import math
from pathlib import Path

import numpy as np

from .errors import UserError
from .sweep_status import output_path, scenario_difference, task_status

FIELD_RESULTS = ("mass", "free_energy", "length", "length_energy", "length_interface",
                 "length_shell", "length_correlation", "phi_min", "phi_max", "step", "time",
                 "wall_time")
BOOKKEEPING = ("task", "name", "status", "message")


def task_results(path) -> dict:
    """Scalar results of one complete output file (attributes and small datasets only)."""
    from .io.reader import Result

    out = {}
    with Result(path) as r:
        attrs = r.file.attrs
        if r.kind == "network":
            out["n"] = int(attrs.get("graph_n", 0))
            out["arcs"] = int(attrs.get("graph_arcs", 0))
            for k in ("algorithm", "backend"):
                if k in attrs:
                    out[k] = _text(attrs[k])
            if "statistics" in r.file:
                for k, ds in r.file["statistics"].items():
                    if ds.shape == ():
                        out[k] = ds[()].item() if hasattr(ds[()], "item") else ds[()]
        else:
            obs = r.file["observables"] if "observables" in r.file else {}
            for k in FIELD_RESULTS:
                if k in obs and len(obs[k]):
                    v = obs[k][-1]
                    out["steps" if k == "step" else k] = v.item() if hasattr(v, "item") else v
            if "solver" in attrs:
                out["solver"] = _text(attrs["solver"])
            out.update(coarsening_results(r))
    return out


def coarsening_results(r) -> dict:
    """``exponent_<measure>``, ``exponent_<measure>_se``, ``K_<measure>``, ``K_<measure>_se``
    of each length measure's fits (:mod:`simengine.coarsening`; None where there is no fit)."""
    from .coarsening import fits

    out = {}
    for name, f in fits(r.observables, r.scenario).items():
        ok = f.ok
        out[f"exponent_{name}"] = f.exponent if ok else None
        out[f"exponent_{name}_se"] = f.stderr if ok else None
        out[f"K_{name}"] = f.rate if ok else None
        out[f"K_{name}_se"] = f.rate_stderr if ok else None
    return out


def _text(v):
    return v.decode() if isinstance(v, bytes) else str(v)


def _cell(v) -> str:
    if v is None:
        return ""
    if isinstance(v, (bool, np.bool_)):
        return "true" if v else "false"
    if isinstance(v, (float, np.floating)):
        return repr(float(v))
    return str(v)


def number(text):
    """A CSV cell as a float (true/false as 1/0), or None."""
    if text in ("true", "false"):
        return 1.0 if text == "true" else 0.0
    try:
        return float(text)
    except (TypeError, ValueError):
        return None


def summary_rows(sweep, out_dir):
    """(columns, rows as dicts of strings) of the summary table."""
    rows, results = [], []
    for task in sweep.tasks:
        status, message = task_status(out_dir, task)
        res = {}
        if status == "done":
            stale = scenario_difference(output_path(out_dir, task), task)
            if stale is not None:
                message = (f"made from another scenario ({stale} differs); run the sweep again "
                           f"to update it")
            try:
                res = task_results(output_path(out_dir, task))
            except Exception as exc:  # unreadable despite 'complete': report, do not drop
                status, message = "failed", f"cannot read results: {exc}"
        row = {"task": str(task.index)}
        row.update({k: task.labels[k] for k in sweep.keys})
        row.update(name=task.name, status=status, message=message)
        rows.append(row)
        results.append(res)
    result_cols, taken = [], set(BOOKKEEPING) | set(sweep.keys)
    for res in results:
        result_cols += [k for k in res if k not in result_cols and k not in taken]
    for row, res in zip(rows, results):
        row.update({k: _cell(res.get(k)) for k in result_cols})
    return ["task", *sweep.keys, "name", "status", "message", *result_cols], rows


def numeric_columns(columns, rows, keys):
    """Result columns whose every non-empty cell of a done row is a number."""
    out = []
    for c in columns:
        if c in BOOKKEEPING or c in keys:
            continue
        cells = [r[c] for r in rows if r.get("status") == "done" and r.get(c, "") != ""]
        if cells and all(number(x) is not None for x in cells):
            out.append(c)
    return out


def seed_keys(keys):
    return [k for k in keys if k.split(".")[-1] == "seed"]


def grouped(columns, rows, keys):
    """(columns, rows) of the table over seeds: mean, std, se and count per group of other keys."""
    seeds = seed_keys(keys)
    by = [k for k in keys if k not in seeds]
    metrics = numeric_columns(columns, rows, keys)
    groups = {}
    for r in rows:
        groups.setdefault(tuple(r[k] for k in by), []).append(r)
    out = []
    for gkey, members in groups.items():
        done = [m for m in members if m["status"] == "done"]
        row = dict(zip(by, gkey))
        row["count"] = str(len(done))
        row["not_done"] = str(len(members) - len(done))
        for m in metrics:
            vals = np.array([number(d[m]) if d[m] != "" else math.nan for d in done], dtype=float)
            mean, std, se = group_stats(vals)
            row[f"{m}_mean"], row[f"{m}_std"], row[f"{m}_se"] = map(_cell, (mean, std, se))
        out.append(row)
    cols = [*by, "count", "not_done"] + [f"{m}_{s}" for m in metrics for s in ("mean", "std", "se")]
    return cols, out


def group_stats(vals):
    """(mean, sample std, standard error) of ``vals``; std and se are None below two values."""
    n = len(vals)
    if n == 0:
        return None, None, None
    mean = float(np.mean(vals))
    if n < 2:
        return mean, None, None
    std = float(np.std(vals, ddof=1))
    return mean, std, std / math.sqrt(n)


def write_csv(path, columns, rows):
    import io

    from .io.output_write import write_file

    fh = io.StringIO(newline="")
    w = csv.DictWriter(fh, fieldnames=columns, extrasaction="ignore")
    w.writeheader()
    w.writerows(rows)
    write_file(path, fh.getvalue().encode("utf-8"), what="CSV file")


def read_csv(path):
    """(columns, rows) of a CSV file; one-line UserError for a file that is not a regular file
    (a FIFO is never opened), not UTF-8 or not CSV."""
    from .io.reader import check_input_file

    check_input_file(path, "a CSV file")
    try:
        with open(path, newline="", encoding="utf-8") as fh:
            r = csv.DictReader(fh)
            return list(r.fieldnames or []), list(r)
    except UnicodeDecodeError as exc:
        raise UserError(f"{path}: not UTF-8 text (byte {exc.start}: "
                        f"{exc.object[exc.start:exc.start + 1]!r}); expected a CSV file written "
                        f"by 'simengine sweep --collect'") from None
    except csv.Error as exc:
        raise UserError(f"{path}: not a readable CSV file ({exc})") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None


def summary_paths(out_dir, name):
    out_dir = Path(out_dir)
    return out_dir / f"{name}-summary.csv", out_dir / f"{name}-grouped.csv"


def collect(sweep, out_dir, log=print) -> int:
    """Write the summary (and grouped) CSV of ``sweep``; list tasks that are not done."""
    out_dir = Path(out_dir)
    out_dir.mkdir(parents=True, exist_ok=True)
    columns, rows = summary_rows(sweep, out_dir)
    summary, grouped_path = summary_paths(out_dir, sweep.name)
    write_csv(summary, columns, rows)
    counts = {s: sum(r["status"] == s for r in rows) for s in ("done", "failed", "incomplete",
                                                               "missing")}
    log(f"{summary}: {len(rows)} tasks: " + ", ".join(f"{n} {s}" for s, n in counts.items() if n))
    for r in rows:
        if r["status"] != "done":
            log(f"  task {r['task']} {r['name']}: {r['status']}"
                + (f" - {r['message']}" if r["message"] else ""))
    if seed_keys(sweep.keys):
        gcols, grows = grouped(columns, rows, sweep.keys)
        write_csv(grouped_path, gcols, grows)
        log(f"{grouped_path}: {len(grows)} groups over {', '.join(seed_keys(sweep.keys))}")
        from .summary_sk import seed_averaged_structure_factor

        sk = seed_averaged_structure_factor(sweep, out_dir, rows)
        if sk is not None and sk[1]:
            target = out_dir / f"{sweep.name}-structure-factor.csv"
            write_csv(target, *sk)
            log(f"{target}: S(k, t) averaged over {', '.join(seed_keys(sweep.keys))}")
    return 0
