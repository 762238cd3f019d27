"""Figures of a field run: the last field, observables (F, mass drift, L(t) with its fit), S(k, t),
the snapshot montage and GIF, the φ histogram."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import analysis
from .coarsening import length_panel
from .common import (LENGTH_UNIT, TIME_LABEL, Result, _field_time, _image, _mpl,
                     _spacing, _strided, _tstr, color_range)


def field_figure(r: Result):
    """The latest stored field: image (2D), mid-plane slice (3D) or line (1D)."""
    plt = _mpl()
    if r._latest() is None:
        return None
    phi, k, stride, step, t = _field_time(r)
    h = _spacing(r) * stride
    fig, ax = plt.subplots(figsize=(6.4, 5.2), layout="constrained")
    if phi.ndim == 1:
        ax.plot(np.arange(len(phi)) * h, phi, lw=1)
        ax.set_xlabel(f"x ({LENGTH_UNIT})")
        ax.set_ylabel("φ")
        ax.set_title(f"φ at t = {_tstr(t)} (step {step}{_strided(stride)})")
    else:
        img = phi
        vmin, vmax, cmap = color_range(img)
        im = _image(ax, img, h, vmin, vmax, cmap)
        fig.colorbar(im, ax=ax, label="φ", shrink=0.9)
        where = "" if k is None else f", mid-plane z = {k * _spacing(r):g}"
        ax.set_title(f"φ at t = {_tstr(t)} (step {step}{where}{_strided(stride)})")
    fig.suptitle(r.name, fontsize="small", color="0.35")
    return fig


def observables_figure(r: Result):
    """F(t), mass drift and L(t) of every length measure (log–log, the fits of
    :mod:`simengine.coarsening`; the energy length's drawn bold)."""
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
    ax.set_title("length measures L(t) (fit: energy length)")
    length_panel(ax, obs, getattr(r, "scenario", None))
    for ax in axes:
        ax.set_xlabel(TIME_LABEL)
    fig.suptitle(f"{r.name}: observables", fontsize="medium")
    return fig


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
        if len(times) and not r.snapshot_fits():   # an FFT needs the whole snapshot
            return None
    idx = [i for i in range(len(times)) if times[i] > 0]
    if not idx:
        return None
    idx = [idx[j] for j in _pick(len(idx), curves)]
    h = _spacing(r)
    fig, ax = plt.subplots(figsize=(6.8, 5), layout="constrained")
    cmap = plt.get_cmap("viridis")
    empty = []
    for j, i in enumerate(idx):
        if stored:
            k, s = k_all, rows[i]
        else:
            k, s = analysis.radial_structure_factor(r.phi[i], h, boundary)
        ok = np.isfinite(s) & (s > 0)
        if not ok.any():                    # nothing to draw on log axes: said, not listed
            empty.append(_tstr(float(times[i])))
            continue
        ax.loglog(k[ok], s[ok], "-", lw=1.2, color=cmap(j / max(1, len(idx) - 1)),
                  label=f"t = {_tstr(float(times[i]))}")
    lo, hi = ax.get_ylim()
    ax.set_ylim(max(lo, hi * 1e-9), hi)     # early, smooth fields fall to round-off at large k
    ax.set_xlabel(f"wavenumber |k| (rad / {LENGTH_UNIT})")
    form = "⟨X(k)²⟩ (cosine transform, mirror walls)" if boundary == "mirror" else \
        "⟨|FFT(φ − ⟨φ⟩)|²⟩ / N"
    ax.set_ylabel(f"S(k, t) = {form}")
    where = "stored at the observation times" if stored else "at the snapshot times"
    drawn = len(idx) - len(empty)
    of = f"{drawn} of {len(times)} times t > 0" if drawn < len(times) else f"{drawn} times"
    ax.set_title(f"{r.name}: structure factor {where} ({of})"
                 + (f"\nno positive S(k) at t = {', '.join(empty)}" if empty else ""),
                 fontsize="medium")
    lines = ax.get_lines()                  # every line drawn is in the legend
    ax.legend(lines, [ln.get_label() for ln in lines], fontsize="small",
              ncol=2 if len(lines) <= 12 else 3)
    return fig


#: the most panels the montage draws; beyond, evenly spaced snapshots, the others named
MONTAGE_PANELS = 24


def montage_pick(times, panels: int = MONTAGE_PANELS):
    """(indices drawn, the note naming the snapshots left out — '' when every one is drawn)."""
    n = len(times)
    if n <= panels:
        return list(range(n)), ""
    idx = _pick(n, panels)
    left = [i for i in range(n) if i not in set(idx)]
    shown = ", ".join(_tstr(float(times[i])) for i in left[:6]) + (", …" if len(left) > 6 else "")
    return idx, (f"{len(idx)} of {n} snapshots drawn (evenly spaced, at most {panels} panels); "
                 f"left out: t = {shown}")


def snapshot_montage_figure(r: Result, panels: int = MONTAGE_PANELS, log=None):
    """Every stored snapshot side by side on one colour scale (at most ``panels``: then evenly
    spaced ones, and a note on the figure and to ``log`` names those left out), or lines in 1D.
    A panel whose own range is under a tenth of the scale (the initial noise) says its range
    in its title."""
    plt = _mpl()
    times = r.snapshot_times
    if not len(times):
        return None
    idx, note = montage_pick(times, panels)
    if note and log is not None:
        log(f"{getattr(r, 'path', r.name)}: snapshot montage: {note}")
    views = [r.plane(i) for i in idx]   # 3D: each mid-plane read alone; a stride past the cap
    frames = [v for v, _, _ in views]
    stride = views[0][2]
    h = _spacing(r) * stride
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
        ax.set_title(f"{r.name}: snapshots" + (f"\n{note}" if note else ""), fontsize="medium")
        return fig
    planes = frames
    vmin, vmax, cmap = color_range(*planes)
    ncol = min(4 if len(planes) > 9 else 3, len(planes))
    nrow = -(-len(planes) // ncol)
    fig, axes = plt.subplots(nrow, ncol, figsize=(3.6 * ncol + 1, 3.4 * nrow), squeeze=False,
                             layout="constrained")
    for ax in axes.ravel()[len(planes):]:
        ax.set_visible(False)
    im = None
    for ax, i, img in zip(axes.ravel(), idx, planes):
        lo, hi, _ = color_range(img)
        faint = (hi - lo) < 0.1 * (vmax - vmin)       # e.g. the initial noise: say its range
        im = _image(ax, img, h, vmin, vmax, cmap)
        ax.set_title(f"t = {_tstr(float(times[i]))}"
                     + (f" (φ in [{float(img.min()):.2g}, {float(img.max()):.2g}])" if faint
                        else ""), fontsize="medium")
    fig.colorbar(im, ax=axes.ravel().tolist(), label="φ (one scale for every panel)",
                 shrink=0.8)
    k = views[0][1]
    where = "" if k is None else f" (mid-plane z = {k * _spacing(r):g}{_strided(stride)})"
    if k is None and stride > 1:
        where = f" ({_strided(stride)[2:]})"
    fig.suptitle(f"{r.name}: snapshots{where}" + (f"\n{note}" if note else ""))
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
    first, _, stride = r.plane(idx[0])
    h = _spacing(r) * stride
    fig, ax = plt.subplots(figsize=(5.6, 4.6), layout="constrained")
    if first.ndim == 1:
        allv = [r.plane(i)[0] for i in idx]
        lo, hi, _ = color_range(*allv)
        (line,) = ax.plot(np.arange(len(first)) * h, first, lw=1)
        ax.set_ylim(lo, hi)
        ax.set_xlabel(f"x ({LENGTH_UNIT})")
        ax.set_ylabel("φ")
        update = line.set_ydata
    else:
        planes = [r.plane(i)[0] for i in idx]
        vmin, vmax, cmap = color_range(*planes)
        im = _image(ax, planes[0], h, vmin, vmax, cmap)
        fig.colorbar(im, ax=ax, label="φ", shrink=0.9)
        update = im.set_data
    writer = PillowWriter(fps=fps)
    path = Path(path)
    with writer.saving(fig, str(path), dpi=80):
        for j, i in enumerate(idx):
            update(r.plane(i)[0])
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
    # every point, or a stride: the samples held together, and np.histogram's copy of one,
    # within the read cap
    samples = [r.sample(i, 1.0 / (len(idx) + 1)) for i in idx]
    frames = [v for v, _ in samples]
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
    ax.set_title(f"{r.name}: distribution of φ over the grid{_strided(samples[0][1])}")
    ax.legend(fontsize="small")
    return fig
