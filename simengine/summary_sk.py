"""S(k, t) averaged over a field sweep's seeds (``simengine sweep --collect``).

For every group of done tasks that differ only in their ``seed`` keys, the circularly averaged
structure factor S(k) (:func:`simengine.analysis.radial_structure_factor`) of each snapshot is
averaged over the group's members at the snapshot steps they all have:
``<name>-structure-factor.csv`` holds, per group (the other swept keys' labels), ``step``, ``time``,
``k`` (angular wavenumber, in 1/length units of ``grid.spacing``), ``S_mean``, ``S_se`` (standard
error over the members; empty below two) and ``count``.
"""
from __future__ import annotations

import math

import numpy as np

def _cell(v) -> str:
    return repr(float(v))


def _spectra(path):
    """{step: (time, k, S)} of every snapshot of one field output (None for a network output)."""
    import simengine

    from .analysis import radial_structure_factor

    with simengine.open(path) as r:
        if r.kind != "field" or r.phi is None:
            return None
        h = float(r.file["fields"].attrs.get("spacing", 1.0)) if "fields" in r.file else 1.0
        out = {}
        for i, (step, t) in enumerate(zip(r.snapshot_steps, r.snapshot_times)):
            k, s = radial_structure_factor(r.phi[i], h)
            out[int(step)] = (float(t), k, s)
        return out


def seed_averaged_structure_factor(sweep, out_dir, rows):
    """(columns, rows) of the table, or None when the sweep is not a field sweep over seeds."""
    from .sweep_status import output_path

    seeds = [k for k in sweep.keys if k.split(".")[-1] == "seed"]
    if not seeds:
        return None
    by = [k for k in sweep.keys if k not in seeds]
    tasks = {str(t.index): t for t in sweep.tasks}
    groups = {}
    for r in rows:
        if r["status"] == "done":
            groups.setdefault(tuple(r[k] for k in by), []).append(tasks[r["task"]])
    out = []
    for gkey, members in groups.items():
        spectra = [_spectra(output_path(out_dir, t)) for t in members]
        if any(s is None for s in spectra):
            return None
        common = sorted(set.intersection(*(set(s) for s in spectra)))
        for step in common:
            t, k, _ = spectra[0][step]
            if any(len(s[step][1]) != len(k) for s in spectra):
                continue                      # members on different grids: nothing to average
            stack = np.array([s[step][2] for s in spectra])
            mean = stack.mean(axis=0)
            se = stack.std(axis=0, ddof=1) / math.sqrt(len(stack)) if len(stack) > 1 else None
            for j, kj in enumerate(k):
                row = dict(zip(by, gkey))
                row.update(step=str(step), time=_cell(t), k=_cell(kj), S_mean=_cell(mean[j]),
                           S_se=_cell(se[j]) if se is not None else "", count=str(len(stack)))
                out.append(row)
    return [*by, "step", "time", "k", "S_mean", "S_se", "count"], out
