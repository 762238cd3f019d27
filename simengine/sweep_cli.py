"""``simengine sweep``: its command line (list, run one task or all, collect), over the sweep of
:mod:`simengine.sweep`."""
from __future__ import annotations

import argparse
import os

from .errors import UserError
from .sweep import compress_indices, load_sweep, run_all, run_task, select, worker_loop


def task_from_env() -> int:
    raw = os.environ.get("SLURM_ARRAY_TASK_ID")
    if raw is None or not raw.strip():
        raise UserError("--task without a number needs SLURM_ARRAY_TASK_ID (set by sbatch --array)"
                        "; give the task index, e.g. --task 3")
    try:
        return int(raw)
    except ValueError:
        raise UserError(f"SLURM_ARRAY_TASK_ID: expected a task index, got {raw!r}") from None


def add_parser(sub):
    s = sub.add_parser("sweep", help="run, list or collect the tasks of a scenario's sweep block")
    s.add_argument("scenario", help="scenario YAML file with a sweep: block")
    s.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a scenario key for every task (repeatable)")
    s.add_argument("--output-dir", "-d", help="folder of the task outputs (default outputs/<name>/)")
    what = s.add_mutually_exclusive_group()
    what.add_argument("--list", action="store_true",
                      help="print one line per task: index, then key=value pairs")
    what.add_argument("--task", nargs="?", const="slurm", metavar="I",
                      help="run task I only (0-based); without I, from SLURM_ARRAY_TASK_ID")
    what.add_argument("--collect", action="store_true",
                      help="write <output-dir>/<name>-summary.csv (and -grouped.csv over seeds)")
    s.add_argument("--failed", action="store_true",
                   help="with --list: only tasks that failed or were interrupted")
    s.add_argument("--unfinished", action="store_true",
                   help="with --list: only tasks that are not done (failed, incomplete, missing)")
    s.add_argument("--indices", action="store_true",
                   help="with --list: print the indices as one sbatch --array list, e.g. 0-3,7")
    s.add_argument("--jobs", "-j", type=int, default=1, metavar="J",
                   help="tasks run at once when running them all (one GPU each where present)")
    s.add_argument("--ensemble", nargs="?", const="true", metavar="N",
                   help="run field tasks that differ only in their initial field together, in "
                        "ensembles of at most N (default: all) on one GPU or CPU")
    s.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    s.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    return s


def command(args, run_cli) -> int:
    """``simengine sweep``; ``run_cli``: the command line's ``main`` (runs a task's
    ``simengine run`` in this process)."""
    if (args.failed or args.unfinished or args.indices) and not args.list:
        raise UserError("--failed, --unfinished and --indices go with --list")
    if args.jobs < 1:
        raise UserError(f"--jobs: expected a number >= 1, got {args.jobs}")
    sweep = load_sweep(args.scenario, args.overrides)
    out_dir = sweep.output_dir(args.output_dir)
    from .io.output_write import prepare_dir

    prepare_dir(out_dir, (args.scenario,), "sweep output folder", create=False)  # one line
    if args.list:
        only = None
        if args.unfinished:
            only = {"failed", "incomplete", "missing"}
        elif args.failed:
            only = {"failed", "incomplete"}
        tasks = select(sweep, out_dir, only)
        if args.indices:
            print(compress_indices(t.index for t in tasks))
        else:
            for t in tasks:
                print(f"{t.index} {t.describe()}")
        return 0
    if args.worker:
        return worker_loop(sweep, out_dir, run_cli)
    if args.collect:
        from .summary import collect

        return collect(sweep, out_dir)
    log = (lambda m: None) if args.quiet else None
    if args.task is not None:
        if args.task == "slurm":
            index = task_from_env()
        else:
            try:
                index = int(args.task)
            except ValueError:
                raise UserError(f"--task: expected a task index, got {args.task!r}") from None
        task = sweep.task(index)
        return run_task(sweep, task, out_dir, run_cli, quiet=args.quiet, log=log)
    ensemble = None
    if args.ensemble is not None:
        from .sweep_ensemble import parse_setting

        raw = args.ensemble.strip().lower()
        try:
            value = True if raw == "true" else False if raw == "false" else int(raw)
        except ValueError:
            value = raw
        ensemble = parse_setting(value, "--ensemble")
        ensemble = False if ensemble is None else ensemble
    return run_all(sweep, out_dir, run_cli, jobs=args.jobs, quiet=args.quiet, log=log,
                   ensemble=ensemble)
