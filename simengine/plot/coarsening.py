"""Coarsening figures of a field run: L(t) of every length measure with the fits named
(:mod:`simengine.coarsening`), the local exponent against 1/L, and the dynamic-scaling collapse
L^−d S(k, t) against kL with the Porod tail line."""
from __future__ import annotations

import numpy as np

from .. import analysis, coarsening
from .common import LENGTH_UNIT, TIME_LABEL, Result, _mpl, _spacing, _tstr, readable_log_axis

STYLE = {"energy": ("C3", "o"), "interface": ("C1", "s"), "shell": ("C2", "^"),
         "correlation": ("C4", "v"), "moment": ("C0", "x")}


def length_panel(ax, obs, scenario):
    """L(t) of each measure on log–log axes, the stretch before separation shaded, each
    measure's fit over the stated window (the default measure's drawn bold), or a note saying
    why there is none. Returns the fits."""
    t = np.asarray(obs["time"], dtype=np.float64)
    fits = coarsening.fits(obs, scenario)
    ts = analysis.separation_time(t, obs["phi_min"], obs["phi_max"]) \
        if "phi_min" in obs and "phi_max" in obs else None
    lo, hi = np.inf, 0.0
    for name, (col, words) in coarsening.MEASURES.items():
        if name not in fits:
            continue
        y = np.asarray(obs[col], dtype=np.float64)
        ok = (t > 0) & np.isfinite(y) & (y > 0)
        if not ok.any():
            continue
        color, marker = STYLE[name]
        ax.loglog(t[ok], y[ok], marker=marker, ls="-", ms=3, lw=0.8, color=color, alpha=0.75,
                  label=f"{name}: {words}")
        lo, hi = min(lo, float(y[ok].min())), max(hi, float(y[ok].max()))
        f = fits[name]
        if f.ok:
            tf = np.geomspace(f.t_lo, f.t_hi, 20)
            bold = name == coarsening.DEFAULT
            ax.loglog(tf, f(tf), "-", color="k" if bold else color, lw=2.4 if bold else 1.2,
                      alpha=0.85, label=f"fit ({name}): n = "
                      f"{analysis.format_uncertain(f.exponent, f.stderr)}, t ∈ "
                      f"[{f.t_lo:.3g}, {f.t_hi:.3g}]")
    if not np.isfinite(lo):
        return fits
    t_lo, t_hi = float(t[t > 0].min()), float(t.max())
    if ts and ts > t_lo:
        ax.axvspan(t_lo, ts, color="0.9", zorder=0,
                   label=f"before separation (t < {ts:.3g}): no domain size")
    default = fits.get(coarsening.DEFAULT) or next(iter(fits.values()), None)
    if default is not None and not default.ok:
        ax.text(0.98, 0.03, f"no fit ({default.measure}): {default.note}",
                transform=ax.transAxes, ha="right", va="bottom", fontsize="small",
                color="0.3", wrap=True)
    ax.text(0.02, 0.02, coarsening.RULE, transform=ax.transAxes, ha="left", va="bottom",
            fontsize="x-small", color="0.35")
    ax.set_ylim(lo / 1.15, hi * 1.4)
    readable_log_axis(ax.yaxis, lo / 1.15, hi * 1.4)
    readable_log_axis(ax.xaxis, t_lo, t_hi)
    ax.set_xlabel(TIME_LABEL)
    ax.set_ylabel(f"L ({LENGTH_UNIT})")
    ax.legend(fontsize="x-small", loc="upper left")
    return fits


def _spectra(r: Result):
    """``(times, k, [S rows])`` of the stored radial S(k) rows, else of the snapshots."""
    boundary = ((r.scenario or {}).get("boundary") or {}).get("type", "periodic")
    g = r.file.get("observables")
    if g is not None and "structure_factor" in g and "structure_factor_k" in g:
        return g["time"][()], g["structure_factor_k"][()], g["structure_factor"], None
    return r.snapshot_times, None, None, boundary


def coarsening_figure(r: Result, curves: int = 6):
    """L(t) of each measure with the fits, the local exponent n(t) against 1/L, and the
    scaling collapse of S(k, t) after separation (None without observables)."""
    plt = _mpl()
    obs = r.observables
    if obs.get("time") is None or len(obs["time"]) < 3:
        return None
    fig, axes = plt.subplots(1, 3, figsize=(18, 5.2), layout="constrained")
    fits = length_panel(axes[0], obs, r.scenario)
    axes[0].set_title("length measures L(t) and their fits")
    t = np.asarray(obs["time"], dtype=np.float64)
    ax = axes[1]
    for name, f in fits.items():
        if not f.ok:
            continue
        inv, n = local_exponent_rows(t, obs, f)
        color, marker = STYLE[name]
        ax.plot(inv, n, marker=marker, ls="-", ms=3, lw=0.8, color=color, label=name)
        huse = coarsening.huse_extrapolation(inv, n) if name == coarsening.DEFAULT else None
        if huse is not None:
            x = np.linspace(0, float(np.nanmax(inv)), 20)
            ax.plot(x, huse[0] + huse[2] * x, ":", color=color, lw=1.5,
                    label=f"{name}: n = n∞ + c/L, n∞ = "
                          f"{analysis.format_uncertain(huse[0], huse[1])}")
    ax.axhline(1 / 3, color="0.3", ls="--", lw=1, label="1/3 (Lifshitz–Slyozov)")
    ax.set_xlim(left=0)
    ax.set_xlabel(f"1/L (1/{LENGTH_UNIT})")
    ax.set_ylabel("local exponent n = Δln L / Δln t")
    ax.set_title("local exponent against 1/L (Huse: n = 1/3 − c/L without finite-box slowing)")
    if ax.get_lines():
        ax.legend(fontsize="small")
    collapse_panel(axes[2], r, fits, curves)
    fig.suptitle(f"{r.name}: coarsening", fontsize="medium")
    return fig


def local_exponent_rows(t, obs, f):
    """The local exponent over every second fitted row (5 per decade: less noise)."""
    return coarsening.local_exponent(t, np.asarray(obs[f.column], dtype=np.float64),
                                     f.rows[::2])


def collapse_panel(ax, r: Result, fits, curves):
    """L^−d S(k, t) against kL for up to ``curves`` times after separation, L the default
    measure at each time (interpolated in log t), and the Porod tail ∝ (kL)^−(d+1)."""
    obs = r.observables
    name = coarsening.DEFAULT if coarsening.DEFAULT in fits else next(iter(fits), None)
    ax.set_title("dynamic scaling: L^−d S(k, t) against kL")
    if name is None:
        return
    col = coarsening.MEASURES[name][0]
    t_obs = np.asarray(obs["time"], dtype=np.float64)
    L_obs = np.asarray(obs[col], dtype=np.float64)
    good = (t_obs > 0) & np.isfinite(L_obs) & (L_obs > 0)
    ts = analysis.separation_time(t_obs, obs["phi_min"], obs["phi_max"]) or 0.0
    times, k_all, rows, boundary = _spectra(r)
    if rows is None and not r.snapshot_fits():   # an FFT needs the whole snapshot
        ax.text(0.5, 0.5, "S(k) not drawn: a snapshot is larger than the read cap\n"
                "(SIMENGINE_READ_LIMIT; output.structure_factor: true stores S(k))",
                transform=ax.transAxes, ha="center")
        return
    idx = [i for i in range(len(times)) if times[i] > max(ts, 0)]
    if not idx or not good.any():
        ax.text(0.5, 0.5, "no S(k) after separation", transform=ax.transAxes, ha="center")
        return
    pick = sorted(set(np.linspace(0, len(idx) - 1, min(curves, len(idx))).round().astype(int)))
    idx = [idx[j] for j in pick]
    h = _spacing(r)
    d = len((r.scenario or {}).get("grid", {}).get("shape", [0, 0]))
    cmap = _mpl().get_cmap("viridis")
    last = None
    for j, i in enumerate(idx):
        if rows is not None:
            k, s = k_all, rows[i]
        else:
            k, s = analysis.radial_structure_factor(r.phi[i], h, boundary)
        L = float(np.exp(np.interp(np.log(times[i]), np.log(t_obs[good]), np.log(L_obs[good]))))
        ok = np.isfinite(s) & (s > 0) & np.isfinite(k)
        x, y = k[ok] * L, s[ok] * (h / L) ** d
        ax.loglog(x, y, "-", lw=1.1, color=cmap(j / max(1, len(idx) - 1)),
                  label=f"t = {_tstr(float(times[i]))} (L = {L:.3g})")
        last = (x, y)
    if last is not None and len(last[0]) > 8:
        x, y = last
        peak = float(x[np.argmax(y)])
        tail = (x > 2 * peak) & (x < 4 * peak)  # past the peak, before the interface width
        if tail.any():
            x0 = float(np.exp(np.log(x[tail]).mean()))
            y0 = float(np.exp(np.log(y[tail]).mean()))
            xs = np.geomspace(1.5 * peak, min(12 * peak, float(x.max())), 20)
            ax.loglog(xs, y0 * (xs / x0) ** (-(d + 1)), "--", color="k", lw=1.3,
                      label=f"Porod tail ∝ (kL)^−{d + 1}")
    ax.set_xlabel(f"kL (L: {name})")
    ax.set_ylabel("L^−d S(k, t) (h^d units)")
    lo, hi = ax.get_ylim()
    ax.set_ylim(max(lo, hi * 1e-8), hi)
    ax.legend(fontsize="x-small")
