"""Figures of an output file (``simengine plot FILE.h5``).

Each ``*_figure`` function takes an open :class:`~simengine.io.reader.Result` and returns a
matplotlib ``Figure`` (or ``None`` when the file lacks what it shows); :func:`plot_file` saves them
all as PNGs (and an animated GIF of the snapshots when Pillow is installed).

Field runs: ``field.png`` (latest φ on physical axes x = i·h), ``observables.png`` (F, mass drift,
L(t) with the coarsening exponent fitted over at least a decade of t after separation, else a note,
and a t^{1/3} guide), ``structure_factor.png`` (S(k, t) at
the snapshot times), ``snapshots.png`` (+ ``snapshots.gif``), ``phi_histogram.png``.
Network runs: ``distance_histogram.png``, ``vertex_metrics.png``, ``degree_distribution.png``,
``metric_vs_degree.png``, ``clustering_vs_degree.png`` (runs with the ``clustering`` statistic),
``betweenness.png`` (when the run computed betweenness). Degrees come from ``/vertex/degree`` when
the file has it, otherwise the graph is rebuilt from the stored scenario (generator, or the graph
file if it is still at its path) and checked against the file's vertex and arc counts (and content
hash where possible).
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from . import analysis
from .figure_backend import pyplot as _mpl
from .io.reader import Result

SPACE = {1: ("x",), 2: ("y", "x"), 3: ("z", "y", "x")}
TIME_LABEL = "time t (model units)"
LENGTH_UNIT = "model units"


FORMATS = ("png", "svg", "pdf")


def plot_file(path, out_dir=None, gif=True, log=None, fmt="png", dpi=120) -> list:
    """Write the figures for ``path`` into ``out_dir`` (default ``<stem>_plots/`` beside it).

    Returns the paths written. ``gif=False`` skips the animated snapshot GIF; ``log`` (a callable
    taking a message) hears about figures that cannot be drawn, e.g. degrees without a graph.
    ``fmt``: png | svg | pdf; ``dpi``: resolution of PNGs (and of raster parts of SVG/PDF).
    """
    path = Path(path)
    if fmt not in FORMATS:
        from .errors import UserError

        raise UserError(f"--format: expected one of {', '.join(FORMATS)}, got {fmt!r}")
    if path.suffix.lower() == ".csv":   # a sweep summary (simengine sweep --collect)
        from .summary_plot import plot_summary

        return plot_summary(path, out_dir, fmt=fmt, dpi=dpi)
    from .io.output_write import check_target, prepare_dir, save_figure

    out = prepare_dir(Path(out_dir) if out_dir else path.with_name(path.stem + "_plots"),
                      (path,), "plot folder")
    plt = _mpl()
    log = log or (lambda msg: None)
    written = []

    def save(name, fig):
        if fig is not None:
            written.append(save_figure(fig, out / f"{name}.{fmt}", dpi, (path,)))
            plt.close(fig)

    with Result(path) as r:
        if r.kind == "field":
            save("field", field_figure(r))
            save("observables", observables_figure(r))
            save("structure_factor", structure_factor_figure(r))
            save("snapshots", snapshot_montage_figure(r))
            save("phi_histogram", phi_histogram_figure(r))
            if gif:
                check_target(out / "snapshots.gif", (path,), "figure")  # PIL writes it itself
                p = snapshot_gif(r, out / "snapshots.gif")
                if p is not None:
                    written.append(p)
        else:
            save("distance_histogram", distance_histogram_figure(r))
            save("vertex_metrics", vertex_metrics_figure(r))
            degrees, how = graph_degrees(r)
            save("betweenness", betweenness_figure(r, degrees))
            if degrees is None:
                log(f"{path}: no degree figures: {how}")
            else:
                save("degree_distribution", degree_distribution_figure(r, degrees))
                save("metric_vs_degree", metric_vs_degree_figure(r, degrees))
                save("clustering_vs_degree", clustering_vs_degree_figure(r, degrees))
    return written


# =============================================================================== helpers
def color_range(*arrays):
    """(vmin, vmax, cmap): symmetric about 0 with a diverging map when the data straddle 0."""
    lo = min(float(np.nanmin(a)) for a in arrays)
    hi = max(float(np.nanmax(a)) for a in arrays)
    if lo < 0 < hi:
        m = max(-lo, hi)
        return -m, m, "RdBu_r"
    if lo == hi:
        lo, hi = lo - 0.5, hi + 0.5
    return lo, hi, "viridis"


def readable_log_axis(axis, lo, hi):
    """Log-scaled ``axis`` with numbers on it even when [lo, hi] spans less than a decade.

    Under one decade, plain 'nice' ticks (e.g. 20, 30, 40) are placed on the log scale; otherwise
    matplotlib's decade ticks, with the 2 and 5 multiples labelled when under three decades.
    """
    from matplotlib.ticker import (FixedLocator, FuncFormatter, LogLocator, MaxNLocator,
                                   NullFormatter, NullLocator)

    fmt = FuncFormatter(lambda v, _: f"{v:g}")
    if not (np.isfinite(lo) and np.isfinite(hi)) or lo <= 0 or hi <= lo:
        return
    decades = np.log10(hi / lo)
    if decades < 1:
        ticks = [v for v in MaxNLocator(nbins=5, steps=[1, 2, 2.5, 5, 10]).tick_values(lo, hi)
                 if v > 0]
        axis.set_major_locator(FixedLocator(ticks))
        axis.set_major_formatter(fmt)
        axis.set_minor_locator(NullLocator())
        axis.set_minor_formatter(NullFormatter())
    elif decades < 3:
        axis.set_major_locator(LogLocator(base=10, subs=(1.0, 2.0, 5.0)))
        axis.set_major_formatter(fmt)
        axis.set_minor_formatter(NullFormatter())


def _field_time(r):
    """(phi, step, time) of the latest stored field."""
    phi = r.final_field
    ck = r.checkpoint
    steps, times = r.snapshot_steps, r.snapshot_times
    if ck is not None and (len(steps) == 0 or ck[1] >= steps[-1]):
        return phi, ck[1], ck[2]
    return phi, int(steps[-1]), float(times[-1])


def _spacing(r):
    if "fields" in r.file and "spacing" in r.file["fields"].attrs:
        return float(r.file["fields"].attrs["spacing"])
    return float(r.scenario.get("grid", {}).get("spacing", 1.0))


def _plane(phi):
    """A 2D view of a 2D or 3D field: 3D fields give the mid-plane along the first axis."""
    if phi.ndim == 3:
        k = phi.shape[0] // 2
        return phi[k], k
    return phi, None


def _extent(shape2d, h):
    ny, nx = shape2d
    return (-0.5 * h, (nx - 0.5) * h, -0.5 * h, (ny - 0.5) * h)


def _image(ax, img, h, vmin, vmax, cmap):
    im = ax.imshow(img, cmap=cmap, vmin=vmin, vmax=vmax, origin="lower", interpolation="nearest",
                   extent=_extent(img.shape, h))
    ax.set_xlabel(f"x ({LENGTH_UNIT})")
    ax.set_ylabel(f"y ({LENGTH_UNIT})")
    return im


def _tstr(t):
    return f"{t:.4g}"


# =============================================================================== field figures
def field_figure(r: Result):
    """The latest stored field: image (2D), mid-plane slice (3D) or line (1D)."""
    plt = _mpl()
    if r.final_field is None:
        return None
    phi, step, t = _field_time(r)
    h = _spacing(r)
    fig, ax = plt.subplots(figsize=(6.4, 5.2), layout="constrained")
    if phi.ndim == 1:
        ax.plot(np.arange(len(phi)) * h, phi, lw=1)
        ax.set_xlabel(f"x ({LENGTH_UNIT})")
        ax.set_ylabel("φ")
        ax.set_title(f"φ at t = {_tstr(t)} (step {step})")
    else:
        img, k = _plane(phi)
        vmin, vmax, cmap = color_range(img)
        im = _image(ax, img, h, vmin, vmax, cmap)
        fig.colorbar(im, ax=ax, label="φ", shrink=0.9)
        where = "" if k is None else f", mid-plane z = {k * h:g}"
        ax.set_title(f"φ at t = {_tstr(t)} (step {step}{where})")
    fig.suptitle(r.name, fontsize="small", color="0.35")
    return fig


def observables_figure(r: Result):
    """F(t), mass drift and L(t) (log–log, fitted late-time exponent, t^{1/3} guide)."""
    plt = _mpl()
    obs = r.observables
    t = obs.get("time")
    if t is None or len(t) < 2:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(16, 4.6), layout="constrained")
    ax = axes[0]
    ax.plot(t, obs["free_energy"], lw=1.2)
    ax.set_ylabel("free energy F (model units)")
    ax.set_title("free energy")
    ax = axes[1]
    m0 = float(obs["mass"][0])
    ax.plot(t, obs["mass"] - m0, lw=1.2)
    ax.set_ylabel("mass drift  ⟨φ⟩(t) − ⟨φ⟩(0)")
    ax.set_title(f"mass drift (⟨φ⟩(0) = {m0:.6g})")
    ax.ticklabel_format(axis="y", style="sci", scilimits=(-3, 3), useOffset=False)
    ax = axes[2]
    length = np.asarray(obs["length"], dtype=np.float64)
    ok = (t > 0) & np.isfinite(length) & (length > 0)
    ax.set_title("characteristic length L(t) = 2π/k₁")
    if ok.any():
        _length_panel(ax, t, length, ok, obs)
    ax.set_ylabel(f"L ({LENGTH_UNIT})")
    for ax in axes:
        ax.set_xlabel(TIME_LABEL)
    fig.suptitle(f"{r.name}: observables", fontsize="medium")
    return fig


def _length_panel(ax, t, length, ok, obs):
    """L(t) on log–log axes: the stretch before separation shaded, a power-law fit only over at
    least a decade of t after it (else a note says why not), a t^(1/3) guide through the late
    points, all in view."""
    ax.loglog(t[ok], length[ok], "o-", ms=3, lw=1, label="L(t)")
    ts = analysis.separation_time(t, obs["phi_min"], obs["phi_max"]) \
        if "phi_min" in obs and "phi_max" in obs else None
    t_lo, t_hi = float(t[ok].min()), float(t[ok].max())
    if ts and ts > t_lo:
        ax.axvspan(t_lo, ts, color="0.9", zorder=0,
                   label=f"before separation (t < {ts:.3g}): L is no domain size")
    win, note = analysis.coarsening_window(t, ts)
    fit = analysis.power_law_fit(t[win & ok], length[win & ok]) if win is not None else None
    lo, hi = float(length[ok].min()), float(length[ok].max())
    late = ok & (t >= (ts or t_lo))
    tt = np.geomspace(float(t[late].min()), t_hi, 20) if late.any() else np.geomspace(t_lo, t_hi, 20)
    if fit is not None:
        tf = np.geomspace(fit.x_min, fit.x_max, 20)
        ax.loglog(tf, fit(tf), "-", color="C3", lw=2.2, alpha=0.8,
                  label=f"fit over t ∈ [{fit.x_min:.3g}, {fit.x_max:.3g}] ({fit.points} rows): "
                        f"L ∝ $t^{{{analysis.format_uncertain(fit.exponent, fit.stderr)}}}$"
                        .replace("±", "\\pm"))
        anchor_t, anchor_l = fit.x_max, float(fit(fit.x_max))
    else:
        ax.text(0.98, 0.03, note, transform=ax.transAxes, ha="right", va="bottom",
                fontsize="small", color="0.3", wrap=True)
        anchor_t, anchor_l = t_hi, float(length[ok][np.argmax(t[ok])])
    guide = anchor_l * (tt / anchor_t) ** (1 / 3)
    ax.loglog(tt, guide, "--", color="0.3", lw=1.2, label="guide ∝ $t^{1/3}$ (Lifshitz–Slyozov)")
    lo, hi = min(lo, float(guide.min())), max(hi, float(guide.max()))
    ax.set_ylim(lo / 1.08, hi * 1.08)
    readable_log_axis(ax.yaxis, lo / 1.08, hi * 1.08)
    readable_log_axis(ax.xaxis, t_lo, t_hi)
    ax.legend(fontsize="small", loc="upper left")


def _pick(n, at_most):
    """Up to ``at_most`` indices spread evenly over range(n), always with the first and last."""
    if n <= at_most:
        return list(range(n))
    return sorted(set(np.linspace(0, n - 1, at_most).round().astype(int).tolist()))


def structure_factor_figure(r: Result, curves: int = 8):
    """Radially averaged S(k) at (up to ``curves``) times t > 0: the stored rows of
    ``observables/structure_factor`` when the run kept them (``output.structure_factor``), else
    computed from the snapshots; the boundary's transform (cosines for mirror walls)."""
    plt = _mpl()
    boundary = ((r.scenario or {}).get("boundary") or {}).get("type", "periodic")
    g = r.file.get("observables")
    stored = g is not None and "structure_factor" in g and "structure_factor_k" in g
    if stored:
        times = g["time"][()]
        k_all = g["structure_factor_k"][()]
        rows = g["structure_factor"]
    else:
        times = r.snapshot_times
    idx = [i for i in range(len(times)) if times[i] > 0]
    if not idx:
        return None
    idx = [idx[j] for j in _pick(len(idx), curves)]
    h = _spacing(r)
    fig, ax = plt.subplots(figsize=(6.8, 5), layout="constrained")
    cmap = plt.get_cmap("viridis")
    for j, i in enumerate(idx):
        if stored:
            k, s = k_all, rows[i]
        else:
            k, s = analysis.radial_structure_factor(r.phi[i], h, boundary)
        ok = np.isfinite(s) & (s > 0)
        ax.loglog(k[ok], s[ok], "-", lw=1.2, color=cmap(j / max(1, len(idx) - 1)),
                  label=f"t = {_tstr(float(times[i]))}")
    lo, hi = ax.get_ylim()
    ax.set_ylim(max(lo, hi * 1e-9), hi)     # early, smooth fields fall to round-off at large k
    ax.set_xlabel(f"wavenumber |k| (rad / {LENGTH_UNIT})")
    form = "⟨X(k)²⟩ (cosine transform, mirror walls)" if boundary == "mirror" else \
        "⟨|FFT(φ − ⟨φ⟩)|²⟩ / N"
    ax.set_ylabel(f"S(k, t) = {form}")
    where = "stored at the observation times" if stored else "at the snapshot times"
    ax.set_title(f"{r.name}: structure factor {where}")
    ax.legend(fontsize="small", ncol=2)
    return fig


def snapshot_montage_figure(r: Result, panels: int = 9):
    """The stored snapshots side by side (shared colour range; a panel whose range is under a
    tenth of it, like the initial noise, gets its own scale and says so), or lines in 1D."""
    plt = _mpl()
    times = r.snapshot_times
    if not len(times):
        return None
    idx = _pick(len(times), panels)
    h = _spacing(r)
    frames = [r.phi[i] for i in idx]
    if frames[0].ndim == 1:
        fig, ax = plt.subplots(figsize=(8, 4.5), layout="constrained")
        cmap = plt.get_cmap("viridis")
        x = np.arange(len(frames[0])) * h
        for j, (i, p) in enumerate(zip(idx, frames)):
            ax.plot(x, p, lw=1, color=cmap(j / max(1, len(idx) - 1)),
                    label=f"t = {_tstr(float(times[i]))}")
        ax.set_xlabel(f"x ({LENGTH_UNIT})")
        ax.set_ylabel("φ")
        ax.legend(fontsize="small", ncol=2)
        ax.set_title(f"{r.name}: snapshots")
        return fig
    planes = [_plane(p)[0] for p in frames]
    vmin, vmax, cmap = color_range(*planes)
    ncol = min(3, len(planes))
    nrow = -(-len(planes) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol + 1, 3.4 * nrow), squeeze=False,
                             layout="constrained")
    for ax in axes.ravel()[len(planes):]:
        ax.set_visible(False)
    shared = None
    for ax, i, img in zip(axes.ravel(), idx, planes):
        lo, hi, own = color_range(img)
        faint = (hi - lo) < 0.1 * (vmax - vmin)       # e.g. the initial noise: blank on the shared scale
        im = _image(ax, img, h, *((lo, hi, own) if faint else (vmin, vmax, cmap)))
        if faint:
            fig.colorbar(im, ax=ax, shrink=0.7)
        else:
            shared = im
        ax.set_title(f"t = {_tstr(float(times[i]))}" + (" (own colour scale)" if faint else ""),
                     fontsize="medium")
    if shared is not None:
        fig.colorbar(shared, ax=axes.ravel().tolist(), label="φ", shrink=0.8)
    k = _plane(frames[0])[1]
    where = "" if k is None else f" (mid-plane z = {k * h:g})"
    fig.suptitle(f"{r.name}: snapshots{where}")
    return fig


def snapshot_gif(r: Result, path, max_frames: int = 60, fps: int = 4):
    """Animated GIF of the snapshots (needs Pillow); returns the path or None."""
    try:
        import PIL  # noqa: F401
    except ImportError:
        return None
    from matplotlib.animation import PillowWriter

    plt = _mpl()
    times = r.snapshot_times
    if len(times) < 2:
        return None
    idx = _pick(len(times), max_frames)
    h = _spacing(r)
    first = r.phi[idx[0]]
    fig, ax = plt.subplots(figsize=(5.6, 4.6), layout="constrained")
    if first.ndim == 1:
        allv = [r.phi[i] for i in idx]
        lo, hi, _ = color_range(*allv)
        (line,) = ax.plot(np.arange(len(first)) * h, first, lw=1)
        ax.set_ylim(lo, hi)
        ax.set_xlabel(f"x ({LENGTH_UNIT})")
        ax.set_ylabel("φ")
        update = line.set_ydata
    else:
        planes = [_plane(r.phi[i])[0] for i in idx]
        vmin, vmax, cmap = color_range(*planes)
        im = _image(ax, planes[0], h, vmin, vmax, cmap)
        fig.colorbar(im, ax=ax, label="φ", shrink=0.9)
        update = im.set_data
    writer = PillowWriter(fps=fps)
    path = Path(path)
    with writer.saving(fig, str(path), dpi=80):
        for j, i in enumerate(idx):
            data = r.phi[i]
            update(data if data.ndim == 1 else _plane(data)[0])
            ax.set_title(f"{r.name}: φ at t = {_tstr(float(times[i]))}")
            writer.grab_frame()
    plt.close(fig)
    return path


def equilibrium_phases(scenario: dict):
    """(φ₋, φ₊) = ±√(b/u) for the classic potential, else None."""
    pot = (scenario.get("model") or {}).get("potential") or {"b": 1.0, "u": 1.0}
    if "b" in pot and "u" in pot and float(pot["b"]) > 0 and float(pot["u"]) > 0:
        v = float(np.sqrt(float(pot["b"]) / float(pot["u"])))
        return -v, v
    return None


def phi_histogram_figure(r: Result, curves: int = 4):
    """Distribution of φ over the grid at a few snapshot times, with the equilibrium phases."""
    plt = _mpl()
    times = r.snapshot_times
    if not len(times):
        return None
    idx = _pick(len(times), curves)
    frames = [np.asarray(r.phi[i], dtype=np.float64).ravel() for i in idx]
    lo = min(float(f.min()) for f in frames)
    hi = max(float(f.max()) for f in frames)
    bins = np.linspace(lo, hi if hi > lo else lo + 1e-9, 101)
    fig, ax = plt.subplots(figsize=(6.8, 4.6), layout="constrained")
    cmap = plt.get_cmap("viridis")
    for j, (i, f) in enumerate(zip(idx, frames)):
        ax.hist(f, bins=bins, density=True, histtype="step", lw=1.4,
                color=cmap(j / max(1, len(idx) - 1)), label=f"t = {_tstr(float(times[i]))}")
    eq = equilibrium_phases(r.scenario)
    if eq is not None:
        for v in eq:
            ax.axvline(v, color="0.4", ls=":", lw=1)
        ax.plot([], [], color="0.4", ls=":", label=f"equilibrium φ = ±{eq[1]:.3g}")
    ax.set_yscale("log")
    ax.set_xlabel("φ")
    ax.set_ylabel("probability density")
    ax.set_title(f"{r.name}: distribution of φ over the grid")
    ax.legend(fontsize="small")
    return fig


# =============================================================================== network figures
def _dist_unit(r):
    return "edge-weight units" if r.graph.get("weighted") else "hops"


def _source_note(r):
    """'' for all-source runs, else e.g. ' (from 2000 of 50000 sources)'."""
    st = r.statistics
    n = r.graph.get("n")
    k = st.get("sources_done")
    if n is None or k is None or int(k) >= int(n):
        return ""
    return f" (from {int(k)} of {int(n)} sources)"


def _hops(r):
    hist = r.file["distance_histogram"] if "distance_histogram" in r.file else None
    w = float(hist.attrs.get("bin_width", 1.0)) if hist is not None else 1.0
    return not r.graph.get("weighted") and w == 1.0 and (hist is None or len(hist) <= 4096)


def distance_histogram_figure(r: Result):
    """Ordered pairs by distance: centred integer bars for hops, [i·w, (i+1)·w) bins otherwise."""
    from matplotlib.ticker import MaxNLocator

    plt = _mpl()
    hist = r.distance_histogram
    if hist is None or hist.sum() == 0:
        return None
    w = float(r.file["distance_histogram"].attrs.get("bin_width", 1.0))
    if len(hist) > 4096:  # at most 4096 bars: merge neighbouring bins (a 2^22-bin file)
        m = -(-len(hist) // 4096)
        hist = np.pad(hist, (0, -len(hist) % m)).reshape(-1, m).sum(axis=1)
        w *= m
    fig, ax = plt.subplots(figsize=(6.8, 4.6), layout="constrained")
    d = np.arange(len(hist))
    if _hops(r):
        nz = hist > 0
        ax.bar(d[nz], hist[nz], width=0.8, align="center", color="C0")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(-0.6 if hist[0] else 0.4, d[nz].max() + 0.6)
        ax.set_xlabel("distance d (hops)")
    else:
        ax.bar(d * w, hist, width=w, align="edge", color="C0", edgecolor="white", lw=0.3)
        ax.set_xlabel(f"distance d ({_dist_unit(r)}), bins [i·w, (i+1)·w), w = {w:g}")
    pos = hist[hist > 0]
    if len(pos) > 1:                    # one bar: a linear count axis from 0
        ax.set_yscale("log")
        ax.set_ylim(pos.min() / 1.6, pos.max() * 1.6)
        readable_log_axis(ax.yaxis, pos.min() / 1.6, pos.max() * 1.6)
    st = r.statistics
    if "mean_distance" in st:
        ax.axvline(st["mean_distance"], color="k", ls="--", lw=1,
                   label=f"mean distance {st['mean_distance']:.4g}")
        ax.legend()
    ax.set_ylabel("ordered pairs (s, t), s ≠ t")
    ax.set_title(f"{r.name}: distance distribution{_source_note(r)}")
    return fig


def _units_of(r, path, default=""):
    ds = r.file[path] if path in r.file else None
    u = ds.attrs.get("units") if ds is not None else None
    u = (u.decode() if isinstance(u, bytes) else str(u)) if u is not None else default
    return "" if u in ("", "1") else f" ({u})"


METRIC_LABEL = {"eccentricity": "eccentricity", "closeness": "closeness centrality",
                "harmonic": "harmonic centrality", "degree": "degree"}


def vertex_metrics_figure(r: Result):
    """Histograms of the per-vertex metrics (eccentricity over sampled vertices when sampled)."""
    plt = _mpl()
    vert = {k: v for k, v in r.vertex.items() if k in METRIC_LABEL and k != "degree"}
    if not vert:
        return None
    names = sorted(vert)
    fig, axes = plt.subplots(1, len(names), figsize=(5.2 * len(names), 4.3), squeeze=False,
                             layout="constrained")
    note = _source_note(r)
    ids = r.vertex_ids
    for ax, k in zip(axes[0], names):
        v = vert[k][np.isfinite(vert[k])]
        label = METRIC_LABEL[k] + _units_of(r, f"vertex/{k}")
        if k == "eccentricity" and len(v) and np.all(v == np.rint(v)) and v.max() - v.min() <= 200:
            lo, hi = int(v.min()), int(v.max())
            counts = np.bincount(v.astype(np.int64) - lo)
            ax.bar(np.arange(lo, hi + 1), counts, width=0.8, align="center")
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        else:
            ax.hist(v, bins=40)
        if sum(p.get_height() > 0 for p in ax.patches) > 1:    # one bar: a linear count axis
            ax.set_yscale("log")
        ax.set_xlabel(label)
        sampled = k == "eccentricity" and note
        ax.set_ylabel("sampled vertices (the sources)" if sampled else "vertices")
        title = f"{METRIC_LABEL[k]}: {len(v)} " + ("sampled vertices" if sampled else "vertices")
        if k == "eccentricity":         # an isolated vertex (eccentricity 0) is no centre
            ecc = np.where(vert[k] > 0, vert[k], np.nan)
            i = int(np.nanargmin(ecc)) if np.isfinite(ecc).any() else None
        else:
            i = int(np.nanargmax(vert[k])) if len(v) else None
        if i is not None:               # the input's id of the extreme vertex
            title += f"\n{'min' if k == 'eccentricity' else 'max'} at vertex {str(ids[i])[:20]}"
        ax.set_title(title)
    fig.suptitle(f"{r.name}: per-vertex metrics{note}")
    return fig


def graph_degrees(r: Result):
    """(degrees, how) for a network output: ``/vertex/degree``, or the rebuilt graph's degrees.

    ``how`` says where they came from, or why there are none (degrees is then None).
    """
    if "vertex/degree" in r.file:
        return r.file["vertex/degree"][()], "stored /vertex/degree"
    sc = r.scenario
    g = sc.get("graph") or {}
    a = r.graph
    n = r.vertex_count  # sizes from the data: a rebuilt graph must match it before it is built
    spec = g.get("generator") if isinstance(g.get("generator"), dict) else {}
    if n is None or not isinstance(spec.get("n", n), int) or spec.get("n", n) != n:
        return None, "the stored graph description does not match the file's per-vertex data"
    try:
        from .network import generators, readers

        if g.get("generator"):
            spec = dict(g["generator"])
            if g.get("directed"):
                spec.setdefault("directed", True)
            graph = generators.generate(spec)
            how = "graph rebuilt from the stored generator scenario"
        elif g.get("file"):
            p = Path(g["file"]["path"])
            if not p.is_absolute() and not p.exists():
                p = r.path.parent / p
            graph = readers.read_graph(p, g["file"].get("format"), directed=g.get("directed"))
            how = f"graph re-read from {p}"
        else:
            return None, "no graph description in the stored scenario"
    except Exception as exc:  # noqa: BLE001 - a figure is optional; say why it is missing
        return None, f"cannot rebuild the graph: {exc}"
    if a.get("n") is not None and (graph.n != int(a["n"]) or graph.num_arcs != int(a.get("arcs", -1))):
        return None, "the rebuilt graph differs from the one in the file (vertex/arc counts)"
    if not a.get("weighted") and a.get("hash") and graph.weights is None \
            and graph.content_hash() != str(a["hash"]):
        return None, "the rebuilt graph differs from the one in the file (content hash)"
    return graph.degree(), how


def degree_distribution_figure(r: Result, degrees):
    """P(k) (log-binned) and P(K ≥ k) on log–log axes with the fitted power-law tail."""
    plt = _mpl()
    k = np.asarray(degrees)
    k = k[k > 0]
    if not len(k):
        return None
    directed = bool(r.graph.get("directed"))
    what = "out-degree" if directed else "degree"
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 4.6), layout="constrained")
    vals, counts = np.unique(k, return_counts=True)
    ax0.loglog(vals, counts / len(k), "o", ms=3, alpha=0.35, color="C0", label="P(k)")
    if vals.max() > vals.min():
        edges = np.unique(np.geomspace(vals.min(), vals.max() + 1, 25).astype(np.int64))
        hc, _ = np.histogram(k, bins=edges)
        widths = np.diff(edges)
        centres = np.sqrt(edges[:-1] * np.maximum(edges[1:] - 1, edges[:-1]))
        ok = hc > 0
        ax0.loglog(centres[ok], hc[ok] / widths[ok] / len(k), "s-", ms=4, color="C1",
                   label="log-binned")
    readable_log_axis(ax0.xaxis, float(vals.min()), float(vals.max()))
    readable_log_axis(ax1.xaxis, float(vals.min()), float(vals.max()))
    ax0.set_xlabel(f"{what} k")
    ax0.set_ylabel("P(k): fraction of vertices")
    ax0.set_title("degree distribution")
    ccdf = 1.0 - np.concatenate([[0], np.cumsum(counts)[:-1]]) / len(k)
    ax1.loglog(vals, ccdf, ".", ms=4, color="C0", label="P(K ≥ k)")
    fit = analysis.degree_power_law(k) if vals.max() >= 10 * max(vals.min(), 1) else None
    if fit is not None and vals.max() >= 10 * fit.k_min:
        kk = np.geomspace(fit.k_min, vals.max(), 30)
        ax1.loglog(kk, fit.ccdf(kk), "-", color="C3", lw=2,
                   label=f"power-law tail k ≥ {fit.k_min}: α = {fit.alpha:.2f} ± {fit.stderr:.2f}")
        ax0.loglog(kk, fit.pmf(kk), "-", color="C3", lw=1.5,
                   label=f"P(k) ∝ k^−{fit.alpha:.2f}")
        ttl = f"CCDF; MLE fit (KS-chosen k_min = {fit.k_min}, {fit.tail} vertices)"
    else:
        ttl = ("CCDF (no power-law fit: the degrees above the KS-chosen k_min span less than "
               "a decade)")
    ax1.set_xlabel(f"{what} k")
    ax1.set_ylabel("P(K ≥ k)")
    ax1.set_title(ttl, fontsize="medium")
    ax0.legend(fontsize="small")
    ax1.legend(fontsize="small")
    fig.suptitle(f"{r.name}: {what} distribution, n = {len(degrees)}, mean {np.mean(degrees):.3g}")
    return fig


def plot_bin_means(ax, k, v):
    """The mean of ``v`` per log-spaced bin of the degrees ``k`` (16 edges), as a line."""
    if len(k) and k.max() > k.min():
        edges = np.geomspace(k.min(), k.max() * 1.0001, 16)
        which = np.digitize(k, edges)
        means = [(k[which == b].mean(), v[which == b].mean()) for b in np.unique(which)]
        ax.plot(*zip(*means), "o-", color="C3", ms=4, label="bin mean")
        ax.legend(fontsize="small")


def metric_vs_degree_figure(r: Result, degrees):
    """Each per-vertex metric against degree (points and the mean per log-spaced degree bin)."""
    plt = _mpl()
    vert = {k: v for k, v in r.vertex.items() if k in METRIC_LABEL and k != "degree"}
    deg = np.asarray(degrees, dtype=np.float64)
    if not vert or len(deg) != len(next(iter(vert.values()))):
        return None
    names = sorted(vert)
    fig, axes = plt.subplots(1, len(names), figsize=(5.2 * len(names), 4.3), squeeze=False,
                             layout="constrained")
    note = _source_note(r)
    what = "out-degree" if r.graph.get("directed") else "degree"
    for ax, name in zip(axes[0], names):
        v = vert[name]
        ok = np.isfinite(v) & (deg > 0)
        ax.plot(deg[ok], v[ok], ".", ms=2, alpha=0.25, color="C0", rasterized=True)
        plot_bin_means(ax, deg[ok], v[ok])
        ax.set_xscale("log")
        if ok.any():
            readable_log_axis(ax.xaxis, float(deg[ok].min()), float(deg[ok].max()))
        ax.set_xlabel(f"{what} k")
        ax.set_ylabel(METRIC_LABEL[name] + _units_of(r, f"vertex/{name}"))
        sampled = name == "eccentricity" and note
        ax.set_title(f"{METRIC_LABEL[name]} vs {what}" + (" (sampled vertices)" if sampled else ""))
    fig.suptitle(f"{r.name}: per-vertex metrics against {what}{note}")
    return fig


def clustering_vs_degree_figure(r: Result, degrees):
    """C(k) on log-log axes: each vertex's clustering coefficient (``/vertex/clustering``, the
    ``clustering`` statistic) against its degree, the mean of C per log-spaced degree bin (zeros
    included) and a k^-1 guide; None when the file has no clustering."""
    if "vertex/clustering" not in r.file:
        return None
    plt = _mpl()
    c = r.file["vertex/clustering"][()]
    deg = np.asarray(degrees, dtype=np.float64)
    if len(deg) != len(c):
        return None
    what = "out-degree" if r.graph.get("directed") else "degree"
    fig, ax = plt.subplots(figsize=(5.6, 4.4), layout="constrained")
    ok = (deg > 0) & (c > 0)
    ax.plot(deg[ok], c[ok], ".", ms=2, alpha=0.25, color="C0", rasterized=True,
            label=f"vertices with C > 0 ({int(ok.sum())} of {len(c)})")
    has = deg > 0
    if has.any() and deg[has].max() > deg[has].min():
        edges = np.geomspace(deg[has].min(), deg[has].max() * 1.0001, 16)
        which = np.digitize(deg[has], edges)
        kb = np.array([deg[has][which == b].mean() for b in np.unique(which)])
        cb = np.array([c[has][which == b].mean() for b in np.unique(which)])
        pos = cb > 0
        ax.plot(kb[pos], cb[pos], "o-", color="C3", ms=4, label="bin mean C(k)")
        if pos.any():
            k0, c0 = kb[pos][0], cb[pos][0]
            ax.plot(kb[pos], c0 * k0 / kb[pos], "--", color="0.5", lw=1, label="∝ 1/k")
    if ok.any():
        ax.set_xscale("log")
        ax.set_yscale("log")
        readable_log_axis(ax.xaxis, float(deg[ok].min()), float(deg[ok].max()))
        ax.legend(fontsize="small")
    ax.set_xlabel(f"{what} k")
    ax.set_ylabel("clustering coefficient C")
    st = r.statistics
    avg = st.get("average_clustering")
    ax.set_title(f"{r.name}: clustering vs {what}" +
                 (f"\naverage C = {avg:.4g}, transitivity = {st.get('transitivity', 0):.4g}"
                  if avg is not None else ""))
    return fig


def betweenness_figure(r: Result, degrees=None):
    """Betweenness: its distribution P(B ≥ b) and, with the degrees, B against degree (log–log,
    vertices with B > 0; the mean per log-spaced degree bin)."""
    b = r.vertex.get("betweenness")
    if b is None:
        return None
    plt = _mpl()
    b = np.asarray(b, dtype=np.float64)
    deg = None if degrees is None else np.asarray(degrees, dtype=np.float64)
    fig, axes = plt.subplots(1, 1 if deg is None else 2, figsize=(5.6 if deg is None else 11.5,
                             4.4), squeeze=False, layout="constrained")
    pos = np.sort(b[np.isfinite(b) & (b > 0)])
    ax = axes[0][0]
    if len(pos):
        ax.loglog(pos, 1.0 - np.arange(len(pos)) / len(b), ".", ms=3, color="C0")
    ax.set_xlabel("betweenness B")
    ax.set_ylabel("P(B ≥ b): fraction of vertices")
    ax.set_title(f"betweenness distribution ({len(b) - len(pos)} of {len(b)} vertices have B = 0)",
                 fontsize="medium")
    if deg is not None and len(deg) == len(b):
        ax = axes[0][1]
        ok = np.isfinite(b) & (b > 0) & (deg > 0)
        ax.loglog(deg[ok], b[ok], ".", ms=2, alpha=0.3, color="C0", rasterized=True)
        plot_bin_means(ax, deg[ok], b[ok])
        what = "out-degree" if r.graph.get("directed") else "degree"
        ax.set_xlabel(f"{what} k")
        ax.set_ylabel("betweenness B")
        ax.set_title(f"betweenness vs {what}")
    what = ["normalised"] if r.statistics.get("betweenness_normalized") else []
    what += [_source_note(r).strip(" ()")] if _source_note(r) else []
    fig.suptitle(f"{r.name}: betweenness centrality" + (f" ({', '.join(what)})" if what else ""))
    return fig
