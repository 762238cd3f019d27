"""Result-versus-parameter figures of a sweep summary (``simengine plot NAME-summary.csv``).

For every swept parameter with numeric values (seeds excepted) one PNG holds a panel per result.
Tasks that differ only in a ``seed`` key are averaged: the points are the group means and the error
bars their standard errors (the numbers of ``NAME-grouped.csv``, computed by the same function).
The other swept keys (a graph family, say) give one line each.  When the parameter is a size (a key
ending in ``.n`` or ``shape``, or positive values spanning at least a decade) the axes are
log-log; only for a size (where a power law y ∝ xⁿ is what one asks about) and a result that
changes with it, each line's least-squares slope of log y against log x is printed in the legend
and written to ``slopes.csv`` — the exponent n with its standard error from the residuals.  Axes
carry the results' names and units (:data:`LABELS`).
"""
from __future__ import annotations

import csv
import io
import math
from pathlib import Path

import numpy as np
import yaml

from .errors import UserError
from .summary import group_stats, number, numeric_columns, read_csv, seed_keys

#: results shown when present (in this order); any other numeric result is left out
PREFERRED = ("mean_distance", "diameter", "radius", "efficiency", "elapsed", "normalized_time",
             "length", "free_energy", "mass", "phi_max", "wall_time")


#: axis labels (with units) of the results a summary holds; other columns are shown as named
LABELS = {
    "mean_distance": "mean distance ⟨d⟩ (hops or weight units)",
    "diameter": "diameter (hops or weight units)", "radius": "radius (hops or weight units)",
    "efficiency": "global efficiency (1/distance units)",
    "elapsed": "work time (s, compilation excluded)",
    "wall_time": "wall time (s)",
    "normalized_time": "work time per hop: elapsed / mean distance (s per hop)",
    "startup_compile_seconds": "start-up: compile or load kernels (s)",
    "startup_graph_seconds": "start-up: build the graph (s)",
    "length": "length scale L (model units)", "free_energy": "free energy F (model units)",
    "mass": "mean φ (mass)", "phi_max": "max φ", "phi_min": "min φ", "n": "vertices n",
    "arcs": "arcs", "time": "time t (model units)", "step": "steps",
}


def label_of(column: str) -> str:
    return LABELS.get(column, column.replace("_", " "))


def _x_label(key: str, cells: bool) -> str:
    last = key.split(".")[-1]
    if cells:
        return f"{key} (cells)"
    if last == "n" and "graph" in key:
        return f"{key} (vertices)"
    return key


def _x_value(cell):
    """(number or None, is_cell_count) for one parameter cell; grid shapes count cells."""
    try:
        v = yaml.safe_load(cell)
    except yaml.YAMLError:
        return None, False
    if isinstance(v, bool):
        return None, False
    if isinstance(v, (int, float)):
        return float(v), False
    if isinstance(v, list) and v and all(isinstance(e, (int, float)) and not isinstance(e, bool)
                                         for e in v):
        return float(math.prod(v)), True
    if isinstance(cell, str) and "x" in cell:          # a shape written 64x64 in a file name
        parts = cell.split("x")
        if all(p.isdigit() for p in parts):
            return float(math.prod(int(p) for p in parts)), True
    return None, False


def is_size(key, xs) -> bool:
    last = key.split(".")[-1]
    xs = np.asarray(xs, dtype=float)
    if last in ("n", "shape"):
        return bool(np.all(xs > 0))
    return bool(np.all(xs > 0) and xs.max() >= 10 * xs.min())


def power_law_meaningful(key, means) -> bool:
    """A fitted exponent is shown only against a size key and for a result that changes with it
    (a constant result would print 'slope 0 ± 0')."""
    last = key.split(".")[-1]
    means = np.asarray(means, float)
    return (last in ("n", "shape", "size") and len(means) >= 2 and bool(np.all(means > 0))
            and float(means.max() - means.min()) > 1e-9 * float(means.max()))


def fit_slope(x, y):
    """(slope, standard error) of the least-squares line log y = a + slope·log x (se nan below 3 points)."""
    lx, ly = np.log(np.asarray(x, float)), np.log(np.asarray(y, float))
    sxx = float(np.sum((lx - lx.mean()) ** 2))
    slope = float(np.sum((lx - lx.mean()) * (ly - ly.mean())) / sxx)
    if len(lx) < 3:
        return slope, math.nan
    resid = ly - (ly.mean() + slope * (lx - lx.mean()))
    return slope, math.sqrt(float(np.sum(resid ** 2)) / (len(lx) - 2) / sxx)


def _summary_of(path: Path):
    columns, rows = read_csv(path)
    if "status" in columns and "task" in columns and "name" in columns:
        return columns, rows
    if path.name.endswith("-grouped.csv"):
        beside = path.with_name(path.name[:-len("-grouped.csv")] + "-summary.csv")
        if beside.exists():
            return read_csv(beside)
    raise UserError(f"{path}: not a sweep summary (expected the columns task, <swept keys>, name, "
                    f"status, ... written by simengine sweep --collect)")


def plot_summary(path, out_dir=None, fmt="png", dpi=110) -> list:
    """Write the figures of a summary CSV into ``out_dir``; returns the paths written."""
    from .figure_backend import pyplot as _mpl

    path = Path(path)
    if not path.exists():
        raise UserError(f"{path}: no such file")
    columns, rows = _summary_of(path)
    keys = columns[columns.index("task") + 1:columns.index("name")]
    seeds = seed_keys(keys)
    params = [k for k in keys if k not in seeds]
    done = [r for r in rows if r["status"] == "done"]
    if not done:
        raise UserError(f"{path}: no task is done yet; nothing to plot")
    numeric = numeric_columns(columns, rows, keys)
    metrics = [m for m in PREFERRED if m in numeric] or numeric
    metrics = [m for m in metrics if len({r[m] for r in done}) > 1] or metrics[:1]
    if not metrics:
        raise UserError(f"{path}: no numeric results to plot")
    from .io.output_write import prepare_dir, save_figure, write_file

    out = prepare_dir(Path(out_dir) if out_dir else path.with_name(path.stem + "_plots"),
                      (path,), "plot folder")
    plt = _mpl()
    written, slopes = [], []
    xkeys = [k for k in params if all(_x_value(r[k])[0] is not None for r in done)
             and len({r[k] for r in done}) > 1]
    if not xkeys and params:
        xkeys = [params[0]]          # categorical: one point (or bar of points) per label
    if not xkeys:
        xkeys = seeds[:1]            # only seeds were swept: show the spread over seeds
    for xkey in xkeys:
        series_keys = [k for k in params if k != xkey]
        numeric_x = all(_x_value(r[xkey])[0] is not None for r in done)
        cells = any(_x_value(r[xkey])[1] for r in done)
        groups = {}
        for r in done:
            groups.setdefault(tuple(r[k] for k in series_keys), {}).setdefault(r[xkey], []).append(r)
        if numeric_x:
            allx = [_x_value(r[xkey])[0] for r in done]
            loglog = is_size(xkey, allx)
        else:
            labels = list(dict.fromkeys(r[xkey] for r in done))
            loglog = False
        ncol = min(3, len(metrics))
        nrow = math.ceil(len(metrics) / ncol)
        fig, axes = plt.subplots(nrow, ncol, figsize=(5.2 * ncol, 4.2 * nrow), squeeze=False)
        for ax, m in zip(axes.flat, metrics):
            for skey, by_x in groups.items():
                xs, means, ses = [], [], []
                for xcell, members in by_x.items():
                    vals = np.array([number(r[m]) if r[m] != "" else math.nan for r in members])
                    mean, _std, se = group_stats(vals)
                    xs.append(_x_value(xcell)[0] if numeric_x else labels.index(xcell))
                    means.append(mean)
                    ses.append(se if se is not None else 0.0)
                order = np.argsort(xs)
                xs, means, ses = (np.asarray(a, float)[order] for a in (xs, means, ses))
                name = ", ".join(f"{k.split('.')[-1]}={v}" for k, v in zip(series_keys, skey))
                label = name or label_of(m).split(" (")[0]
                ok = np.isfinite(means)
                if loglog and ok.sum() >= 2 and power_law_meaningful(xkey, means[ok]):
                    slope, se = fit_slope(xs[ok], means[ok])
                    label += f": slope {slope:.3g}" + (f" ± {se:.2g}" if np.isfinite(se) else "")
                    slopes.append({"parameter": xkey, "result": m, "series": name,
                                   "slope": repr(slope), "slope_se": repr(se),
                                   "points": str(int(ok.sum()))})
                ax.errorbar(xs, means, yerr=ses if np.any(ses > 0) else None,
                            fmt="o" if xkey in seeds or not numeric_x else "o-", ms=4,
                            capsize=3, label=label)
            if loglog:
                from matplotlib.ticker import NullFormatter

                ax.set_xscale("log")
                if max(allx) >= 10 * min(allx):      # labelled decades: no minor labels
                    ax.xaxis.set_minor_formatter(NullFormatter())
                ys = [number(r[m]) for r in done]
                if all(y is not None and y > 0 for y in ys):
                    ax.set_yscale("log")
                    if max(ys) >= 10 * min(ys):
                        ax.yaxis.set_minor_formatter(NullFormatter())
            if not numeric_x:
                ax.set_xticks(range(len(labels)))
                ax.set_xticklabels(labels)
                ax.set_xlim(-0.5, len(labels) - 0.5)
            ax.set_xlabel(_x_label(xkey, cells))
            ax.set_ylabel(label_of(m))
            over = [k for k in seeds if k != xkey]
            ax.set_title(label_of(m).split(" (")[0] + (" (mean ± s.e. over " + ", ".join(over) + ")" if over else ""),
                         fontsize=9)
            ax.legend(fontsize=7)
        for ax in list(axes.flat)[len(metrics):]:
            ax.set_visible(False)
        fig.suptitle(f"{path.stem.removesuffix('-summary')}: results vs {xkey}")
        fig.tight_layout()
        target = out / f"vs_{xkey.replace('.', '_')}.{fmt}"
        save_figure(fig, target, dpi, (path,))
        plt.close(fig)
        written.append(target)
    if slopes:
        target = out / "slopes.csv"
        fh = io.StringIO()
        w = csv.DictWriter(fh, fieldnames=list(slopes[0]), lineterminator="\n")
        w.writeheader()
        w.writerows(slopes)
        written.append(write_file(target, fh.getvalue().encode("utf-8"), (path,), "CSV file",
                                  sync=False))
    return written
