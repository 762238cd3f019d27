"""What ``--resume`` may change, beyond the keys :data:`simengine.control.runner.RESUME_FREE_KEYS` frees.

The rule (docs/output.md, "Resuming with other settings"):

* physics, grid, initial state, graph, metrics: never (``runner._check_compatible``);
* ``output.snapshot_every``, ``output.observables_every`` and ``output.structure_factor``
  (field): never — the file's series would mix two cadences, or rows with and without S(k);
* ``output.checkpoint_every``, ``output.compression``, solver hints, ``resources``: freely (they
  change how the file is written, not what it means; compression is per part);
* ``output.snapshot_dt``, ``output.observables_dt`` (field; and ``output.checkpoint_dt`` of an
  adaptive run, whose checkpoints are restart points on the run's time grid): never;
* ``time.steps``: may grow, or shrink down to the checkpoint's step; not below it (those steps
  are done), and a complete run cannot be shortened. Extending a complete run keeps the snapshot
  and observables row its old last step wrote.
"""
from __future__ import annotations

from .errors import UserError

#: the scenario keys a field run's physics is made of: a resume never changes them
PHYSICS = ("model", "grid", "boundary", "initial", "kind")
#: names users know some keys by
SYMBOLS = {("model", "kappa"): "κ", ("model", "mobility"): "M"}


def _flat(d, prefix=()):
    out = {}
    for k, v in (d or {}).items():
        key = prefix + (k,)
        if isinstance(v, dict) and v:
            out.update(_flat(v, key))
        else:
            out[key] = v
    return out


def physics_change(stored: dict, current: dict, path):
    """The one-line message for a ``--resume`` whose scenario changes the stored run's physics
    (model, grid, boundary, initial state; a network run's graph and metrics), else None."""
    field = current.get("kind", stored.get("kind")) == "field"
    tops = PHYSICS if field else ("graph", "metrics", "kind")
    a, b = _flat({k: stored.get(k) for k in tops if k in stored}), \
        _flat({k: current.get(k) for k in tops if k in current})
    for key in sorted(set(a) | set(b), key=str):
        if a.get(key) == b.get(key):
            continue
        name = ".".join(map(str, key))
        if key in SYMBOLS:
            name += f" ({SYMBOLS[key]})"
        was = "unset" if key not in a else repr(a[key])
        now = "unset" if key not in b else repr(b[key])
        if field:
            return (f"{path}: cannot resume: {name} differs from the stored run ({was} → {now}): "
                    f"a resume continues the same physics; start a new run from this output's "
                    f"last field with initial: {{type: file, path: {path}, dataset: fields/phi, "
                    f"time_from_file: true}} (docs/scenarios.md)")
        return (f"{path}: cannot resume: {name} differs from the stored run ({was} → {now}): a "
                f"resume continues the same graph and metrics; run again with --overwrite or "
                f"another --output")
    return None


def precheck(located, output, overrides=()) -> None:
    """Before the scenario is validated (``simengine run --resume``): a changed parameter is
    named as such, not as the validation error it leads to (a changed κ moves the stability
    limit below time.dt). No-op when the output has no stored scenario to compare with."""
    from pathlib import Path

    import yaml

    from .io.reader import open_output

    name = located.get("name")
    out = Path(output) if output else (Path("outputs") / f"{name}.h5" if isinstance(name, str)
                                       else None)
    if out is None or not out.is_file():
        return
    try:
        f = open_output(out)
    except Exception:   # a damaged output: the runner's own checks say what is wrong
        return
    try:
        stored = yaml.safe_load(f.attrs.get("scenario", "{}"))
    except Exception:
        return
    finally:
        f.close()
    if isinstance(stored, dict):
        msg = physics_change(stored, dict(located), out)
        if msg:
            raise UserError(msg)

#: field keys whose change would make the file's series mix meanings
FIXED_CADENCE = ("snapshot_every", "observables_every", "structure_factor", "snapshot_dt",
                 "observables_dt")


def check(stored: dict, current: dict, path, f) -> None:
    """UserError (one line) for a resume the rule above refuses; ``f`` is the open output."""
    if current.get("kind") != "field":
        return
    old, new = stored.get("output") or {}, current.get("output") or {}
    fixed = FIXED_CADENCE
    if (current.get("time") or {}).get("adaptive"):
        # an adaptive run's checkpoints are restart points on its time grid (field/clock.py)
        fixed = fixed + ("checkpoint_dt",)
    for key in fixed:
        a, b = old.get(key, 0) or 0, new.get(key, 0) or 0
        if a != b:
            raise UserError(f"{path}: cannot resume: output.{key} is {a!r} in the file but {b!r} "
                            f"in the scenario (one file holds one cadence; keep {a!r}, or run "
                            f"again with --overwrite)")
    time_ = current.get("time") or {}
    if time_.get("adaptive"):  # the file counts ticks (field/clock.py); time.end is fixed
        return
    steps = time_.get("steps")
    if steps is None and time_.get("end") is not None and time_.get("dt"):
        steps = round(float(time_["end"]) / float(time_["dt"]))
    steps = int(steps or 0)
    ck = int(f["checkpoint/phi"].attrs["step"])
    total = int(f.attrs["steps_total"])
    if bool(f.attrs["complete"]) and steps < total:
        raise UserError(f"{path}: cannot resume: the run is complete at step {total}; "
                        f"time.steps = {steps} would shorten it")
    if steps < ck:
        raise UserError(f"{path}: cannot resume: time.steps = {steps} is before the checkpoint "
                        f"at step {ck}")
