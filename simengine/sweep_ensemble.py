"""``simengine sweep --ensemble`` / ``sweep: {ensemble: true}``: sweep tasks that differ only in
their initial field run together as ensembles (:mod:`simengine.control.ensemble_run`).

:func:`plan_groups` splits the tasks to run into groups (same :func:`ensemble_key`, at most
``cap`` members and what fits in memory) and single tasks (no partner, or no ensemble form); the
groups run one after another in the sweep process (:func:`run_groups`), each writing every
task's normal output file, ``.failed`` marker and log lines; the single tasks run as usual.
"""
from __future__ import annotations

from pathlib import Path

from .errors import OutputError, UserError

#: share of the free host / GPU memory one ensemble may fill
MEMORY_SHARE = 0.5


def parse_setting(value, where) -> int | None:
    """The ``ensemble`` setting: ``false``/absent -> None (off), ``true`` -> 0 (no size cap), an
    integer ≥ 2 -> that many members at most per ensemble."""
    if value is None or value is False:
        return None
    if value is True:
        return 0
    if isinstance(value, int) and not isinstance(value, bool) and value >= 2:
        return int(value)
    raise UserError(f"{where}: sweep.ensemble: expected true, false or a number of members >= 2, "
                    f"got {value!r}")


def _memory_cap(sc) -> int:
    """Members that fit in ``MEMORY_SHARE`` of the free host (and GPU) memory; 0 = unknown."""
    from .field.backends import resolve
    from .control.ensemble_run import member_bytes
    from .resources import gpu_available, host_available

    host_b, dev_b = member_bytes(sc)
    caps = []
    try:
        free_host, _ = host_available()
        caps.append(int(free_host * MEMORY_SHARE // max(host_b, 1)))
    except Exception:  # pragma: no cover - unreadable /proc
        pass
    if resolve(sc.spec.solver.backend) == "cuda":
        free = gpu_available()
        if free:
            caps.append(int(free * MEMORY_SHARE // max(dev_b, 1)))
    return max(1, min(caps)) if caps else 0


def plan_groups(sweep, tasks, cap: int):
    """(groups, singles): ``groups`` lists of ≥ 2 tasks that share an ensemble (at most ``cap``
    members each when ``cap`` > 0, and what fits in memory), ``singles`` the other tasks, both in
    task order."""
    from .config import load_scenario
    from .control.ensemble_run import ensemble_key
    from .sweep_status import body_of

    by_key, order, singles, scs = {}, [], [], {}
    for task in tasks:
        if sweep.kind != "field":
            singles.append(task)
            continue
        sc = body_of(load_scenario(sweep.path, task.sets))
        key = ensemble_key(sc)
        if key is None:
            singles.append(task)
            continue
        scs[task.index] = sc
        if key not in by_key:
            by_key[key] = []
            order.append(key)
        by_key[key].append(task)
    groups = []
    for key in order:
        members = by_key[key]
        size = len(members)
        mem = _memory_cap(scs[members[0].index])
        for limit in (cap, mem):
            if limit:
                size = min(size, limit)
        for i in range(0, len(members), max(size, 1)):
            part = members[i:i + size]
            if len(part) >= 2:
                groups.append(part)
            else:
                singles.extend(part)
    singles.sort(key=lambda t: t.index)
    return groups, singles, scs


def run_groups(sweep, groups, scs, out_dir, quiet=False, log=None) -> dict:
    """Run each group as one ensemble; returns ``{task index: exit code}``. Stops after an
    interrupted group (exit code 130 for it and every later group's tasks)."""
    import time

    from .control.ensemble_run import run_ensemble
    from .sweep_status import failed_marker, mark_failed, output_path, task_label

    out_dir = Path(out_dir)
    codes = {}
    for n, group in enumerate(groups):
        if any(rc == 130 for rc in codes.values()):
            codes.update({t.index: 130 for t in group})
            continue
        t0 = time.perf_counter()
        log(f"{sweep.name}: ensemble {n + 1} of {len(groups)}: tasks "
            f"{', '.join(str(t.index) for t in group)} in one solver")
        for t in group:
            failed_marker(out_dir, t).unlink(missing_ok=True)
        try:
            results = run_ensemble([scs[t.index] for t in group],
                                   [output_path(out_dir, t) for t in group],
                                   log=log, progress=not quiet)
        except (UserError, OutputError) as exc:
            rc = 2 if isinstance(exc, UserError) else 1
            results = [(rc, f"error: {exc}")] * len(group)
            log(f"simengine: error: {exc}")
        took = time.perf_counter() - t0
        for t, (rc, message) in zip(group, results):
            codes[t.index] = rc
            if rc == 0:
                log(f"{task_label(sweep, t)}: done (ensemble of {len(group)}, {took:.1f} s)")
            elif rc == 130:
                log(f"{task_label(sweep, t)}: interrupted; rerun the sweep to resume")
            else:
                mark_failed(out_dir, t, rc, message)
                log(f"{task_label(sweep, t)}: FAILED (exit {rc}); see {failed_marker(out_dir, t)}")
    return codes
