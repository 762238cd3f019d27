"""Command line: ``simengine run|validate|info|plot|report|sweep|mv|cp``.

Exit codes: 0 success, 2 user error (one line on stderr, no traceback), 1 internal or simulation
error, 130 interrupted (SIGINT/SIGTERM: in the run loop after writing a checkpoint, in start-up at
once; see :mod:`simengine.signals`).
"""
from __future__ import annotations

import argparse
import sys
from pathlib import Path

from .version import __version__
from .errors import OutputError, SimulationError, UserError
from .signals import Stopped, stop_on_signals


class _Parser(argparse.ArgumentParser):
    def error(self, message):  # argparse's own errors: one line, exit 2
        self.print_usage(sys.stderr)
        print(f"simengine: error: {message}", file=sys.stderr)
        sys.exit(2)


def build_parser():
    p = _Parser(prog="simengine", description="Run Cahn–Hilliard field and shortest-path "
                "network scenarios from YAML files.")
    p.add_argument("--version", action="version", version=f"simengine {__version__}")
    sub = p.add_subparsers(dest="command", required=True, parser_class=_Parser)

    r = sub.add_parser("run", help="run a scenario")
    r.add_argument("scenario", help="scenario YAML file")
    r.add_argument("--output", "-o", help="output HDF5 file (default outputs/<name>.h5)")
    r.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE",
                   help="override a scenario key, e.g. --set time.steps=500 (repeatable)")
    r.add_argument("--resume", action="store_true",
                   help="continue from the output file's last checkpoint")
    r.add_argument("--overwrite", action="store_true", help="replace an existing output file")
    r.add_argument("--quiet", "-q", action="store_true", help="no progress output")
    r.add_argument("--force", action="store_true",
                   help="run even when the memory estimate exceeds what the machine has")
    r.add_argument("--threads", metavar="N", help="numba CPU threads per process (default: the "
                   "node's cores shared among its MPI ranks; NUMBA_NUM_THREADS works too)")
    r.add_argument("--device", metavar="N[,M..]", help="GPUs to use (as nvidia-smi numbers them, "
                   "or within CUDA_VISIBLE_DEVICES); ranks take them in turn")

    v = sub.add_parser("validate", help="check a scenario without running it")
    v.add_argument("scenario")
    v.add_argument("--set", dest="overrides", action="append", default=[], metavar="KEY.PATH=VALUE")
    v.add_argument("--force", action="store_true",
                   help="report memory estimates above the limits without failing")

    i = sub.add_parser("info", help="summarise an output file")
    i.add_argument("file")
    i.add_argument("--verify", action="store_true",
                   help="read every byte and check every checksum (exit 2 if anything is bad)")

    pl = sub.add_parser("plot", help="write PNG figures of an output file or a sweep summary CSV")
    pl.add_argument("file")
    pl.add_argument("--out", help="folder for the PNGs (default: beside the file, <name>_plots/)")
    pl.add_argument("--no-gif", action="store_true", help="skip the animated GIF of the snapshots")
    pl.add_argument("--format", default="png", choices=("png", "svg", "pdf"),
                    help="figure file format (default png)")
    pl.add_argument("--dpi", type=int, default=None, help="resolution of PNG figures (default 120)")

    rp = sub.add_parser("report", help="write one self-contained HTML page of an output file "
                        "or a sweep summary CSV (figures, scenario, provenance, statistics)")
    rp.add_argument("file", help="OUT.h5 or NAME-summary.csv")
    rp.add_argument("--out", help="the HTML file (default: beside the input, <stem>-report.html)")
    rp.add_argument("--format", default="png", choices=("png", "svg"),
                    help="how figures are embedded (default png)")

    for name, verb in (("mv", "move"), ("cp", "copy")):
        m = sub.add_parser(name, help=f"{verb} an output with its parts (index, .parts/, .xdmf) "
                           f"and rewrite its mappings for the new name (docs/output.md)")
        m.add_argument("source", help="the output's index, e.g. outputs/run.h5")
        m.add_argument("target", help="the new name (must not exist; "
                       + ("the same name: rewrite the mappings of a pair renamed by hand)"
                          if name == "mv" else "another directory is fine)"))

    sub.add_parser("schema", help="print the JSON Schema of scenario files (for editors: "
                   "# yaml-language-server: $schema=FILE)")

    from .sweep_cli import add_parser as add_sweep_parser

    add_sweep_parser(sub)
    return p


def _cmd_run(args):
    from .config import load_scenario
    from .parallel.threads import apply_devices, apply_threads
    from .control.runner import Interrupted, run_scenario

    if args.output is not None and not args.output.strip():
        raise UserError(f"--output: {args.output!r} is an empty path; give a file name such as "
                        f"outputs/run.h5 (or leave the option out for outputs/<name>.h5)")
    apply_threads(args.threads)            # logged by the runner at start-up
    if args.device:
        apply_devices(args.device)
    if args.resume:       # a changed parameter is named before the validation it breaks
        from . import resume_rules
        from .config.loader import apply_overrides, load_scenario_file

        raw = apply_overrides(load_scenario_file(args.scenario), args.overrides)
        if "sweep" not in raw:                # a sweep's task: the runner checks it
            resume_rules.precheck(raw, args.output)
    sc = load_scenario(args.scenario, args.overrides)
    if "sweep" in sc.data:
        from .sweep_status import body_of

        sc = body_of(sc, log=None if args.quiet else
                     (lambda m: print(f"simengine: {m}", file=sys.stderr, flush=True)))
    args._loaded = True
    try:
        return run_scenario(sc, args.output, resume=args.resume, overwrite=args.overwrite,
                            progress=not args.quiet,
                            log=(lambda m: None) if args.quiet else None, force=args.force)
    except Interrupted as exc:
        return _fail(exc, 130, str(exc))


def _before_mpi(args) -> bool:
    """True while the scenario was still being loaded: every rank reads the same file and fails
    the same way, so the error is collective."""
    return not getattr(args, "_loaded", False)


def _cmd_validate(args):
    from .validate import command

    return command(args)


def _reading(path):
    """Errors of h5py on a damaged output (a truncated part read by a figure, ...) as one line."""
    from contextlib import contextmanager

    from .io.integrity import DAMAGE, reason

    @contextmanager
    def guard():
        try:
            yield
        except DAMAGE as exc:
            raise UserError(f"{path}: damaged or unreadable output ({reason(exc)}); "
                            f"'simengine info --verify {path}' lists what is damaged") from None
        except MemoryError:
            raise UserError(f"{path}: a dataset is too large to read into this process's "
                            f"memory") from None
    return guard()


def _cmd_info(args):
    with _reading(args.file):
        rc, text = _info(args)
    if text:  # written after the file is read: a failing stdout never blames the file
        print(text)
    return rc


def _info(args):
    from .io.reader import Result

    if args.verify:
        from .io.verify import verify_file

        problems, ndata, nparts = verify_file(args.file)
        if not problems:             # the summary `info` prints, then the verdict
            with Result(args.file) as r:
                print(r.summary())
        for line in problems:
            print(f"simengine: error: {line}", file=sys.stderr)
        if problems:
            return 2, None
        return 0, f"{args.file}: verified ({ndata} datasets, {nparts} parts)"
    with Result(args.file) as r:
        return 0, "\n".join([r.summary(), *_fit_lines(r)])


def _fit_lines(r) -> list:
    """The coarsening fits of a field run, one line per length measure (simengine.coarsening)."""
    if r.kind != "field":
        return []
    from .coarsening import fit_lines

    return fit_lines(r.observables, r.scenario, rule=True)


def _cmd_plot(args):
    from .io.reader import check_input_file
    from .plot import plot_file

    extra = {"dpi": args.dpi} if args.dpi else {}
    if args.dpi is not None and not 10 <= args.dpi <= 2400:
        raise UserError(f"--dpi: expected 10..2400, got {args.dpi}")
    check_input_file(args.file)
    with _reading(args.file):
        paths = plot_file(args.file, args.out, gif=not args.no_gif, fmt=args.format,
                          log=lambda msg: print(f"simengine: {msg}", file=sys.stderr), **extra)
    from .io.reader import Result

    with _reading(args.file):
        if Path(args.file).suffix.lower() != ".csv":
            with Result(args.file) as r:
                for line in _fit_lines(r):
                    print(line)
    for path in paths:
        print(path)
    return 0


def _cmd_report(args):
    from .report import write_report

    print(write_report(args.file, args.out, fmt=args.format,
                       log=lambda msg: print(f"simengine: {msg}", file=sys.stderr)))
    return 0


def _cmd_relocate(args):
    from .io import relocate

    if args.command == "mv":
        changed = relocate.move(args.source, args.target)
        print(f"{args.target}: moved from {args.source}" if changed and args.source != args.target
              else f"{args.target}: mappings rewritten" if changed else
              f"{args.target}: already names its own parts (nothing to do)")
    else:
        relocate.copy(args.source, args.target)
        print(f"{args.target}: copied from {args.source}")
    return 0


def _cmd_schema(args):
    import json

    from .config.json_schema import scenario_schema

    print(json.dumps(scenario_schema(), indent=1, ensure_ascii=False))
    return 0


def _cmd_sweep(args):
    from .sweep_cli import command

    return command(args, main)


COMMANDS = {"run": _cmd_run, "validate": _cmd_validate, "info": _cmd_info, "plot": _cmd_plot,
            "sweep": _cmd_sweep, "schema": _cmd_schema,
            "report": _cmd_report, "mv": _cmd_relocate, "cp": _cmd_relocate}


def _rank():
    """(rank, size) from the MPI launcher's environment, without initialising MPI."""
    import os

    from .parallel.comm import launched_size

    size = launched_size()
    for var in ("OMPI_COMM_WORLD_RANK", "PMI_RANK", "PMIX_RANK", "SLURM_PROCID"):
        v = os.environ.get(var)
        if v and v.isdigit():
            return int(v), size
    return 0, size


def _fail(exc, code, text):
    """Report a failure. On MPI ranks an error that every rank raised together (``collective``)
    is printed by rank 0 only; an error of one rank is printed with its rank and aborts all ranks
    so none of them waits forever for it."""
    from .signals import absorb

    absorb()  # reporting: a second signal must not interrupt the one line
    rank, size = _rank()
    collective = getattr(exc, "collective", False)
    if size > 1 and not collective:
        print(f"simengine: rank {rank}: {text}", file=sys.stderr, flush=True)
        try:
            import time

            from mpi4py import MPI

            time.sleep(0.5)  # the launcher forwards the line before the abort ends its readers
            MPI.COMM_WORLD.Abort(code)
        except ImportError:
            pass
        return code
    if rank == 0:
        print(f"simengine: {text}", file=sys.stderr, flush=True)
    return code


def main(argv=None):
    """The command line (``argv=None``: ``sys.argv``, the process ends after it, so signals stay
    absorbed after the command; tests pass a list and get their handlers back)."""
    import warnings

    import numpy as np

    from .library_warnings import install

    install()                 # numba/numpy warnings: dropped or one line (library_warnings.py)
    from .stdout_guard import guarded_stdout

    with guarded_stdout() as stdout:   # a closed or full stdout: one outcome, never an input's
        return stdout.finish(_main(argv, np, warnings))


def _main(argv, np, warnings):
    # numpy's floating-point warnings are never shown: a blow-up or a bad value is reported by
    # its one line. The signal handlers come last, right before the try that catches what they
    # raise (a signal between the two would otherwise escape as a traceback)
    with np.errstate(all="ignore"), warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        with stop_on_signals(keep_absorbing=argv is None):  # before any start-up work
            from .stdout_guard import StdoutFailed

            try:
                return _dispatch(argv)
            except Stopped as exc:  # SIGINT/SIGTERM outside a checkpointing loop
                return _fail(exc, 130, str(exc))
            except StdoutFailed as exc:  # a reader that closed the pipe, a full device
                return exc.exit_code()


def _dispatch(argv):
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except UserError as exc:
        if args.command in ("run", "validate") and not hasattr(exc, "collective"):
            exc.collective = _before_mpi(args)
        return _fail(exc, 2, f"error: {exc}")
    except SimulationError as exc:
        return _fail(exc, 1, f"simulation failed: {exc}")
    except OutputError as exc:
        return _fail(exc, 1, f"error: {exc}")
    except Stopped:
        raise  # main() names the signal
    except KeyboardInterrupt as exc:
        return _fail(exc, 130, "interrupted")


if __name__ == "__main__":
    sys.exit(main())
