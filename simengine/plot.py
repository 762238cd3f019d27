"""PNG figures of an output file (``simengine plot FILE.h5``)."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .io.reader import Result


def _mpl():
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt


def plot_file(path, out_dir=None) -> list:
    """Write the figures for ``path`` into ``out_dir``; returns the PNG paths."""
    path = Path(path)
    if path.suffix.lower() == ".csv":   # a sweep summary (simengine sweep --collect)
        from .summary_plot import plot_summary

        return plot_summary(path, out_dir)
    out = Path(out_dir) if out_dir else path.with_name(path.stem + "_plots")
    out.mkdir(parents=True, exist_ok=True)
    with Result(path) as r:
        return _plot_field(r, out) if r.kind == "field" else _plot_network(r, out)


def _plot_field(r: Result, out: Path) -> list:
    plt = _mpl()
    written = []
    phi = r.final_field
    steps = r.snapshot_steps
    step = int(steps[-1]) if len(steps) else (r.checkpoint[1] if r.checkpoint else 0)
    if phi is not None:
        fig, ax = plt.subplots(figsize=(6, 5))
        if phi.ndim == 1:
            ax.plot(np.arange(len(phi)), phi)
            ax.set_xlabel("cell")
            ax.set_ylabel("φ")
            where = ""
        else:
            img = phi if phi.ndim == 2 else phi[phi.shape[0] // 2]
            where = "" if phi.ndim == 2 else f", mid-plane slice z={phi.shape[0] // 2}"
            im = ax.imshow(img, cmap="RdBu_r", vmin=-1, vmax=1, origin="lower",
                           interpolation="nearest")
            fig.colorbar(im, ax=ax, label="φ")
        ax.set_title(f"{r.name}: φ at step {step}{where}")
        written.append(out / "field.png")
        fig.savefig(written[-1], dpi=120, bbox_inches="tight")
        plt.close(fig)
    obs = r.observables
    if obs.get("time") is not None and len(obs["time"]) > 1:
        t = obs["time"]
        fig, axes = plt.subplots(1, 3, figsize=(15, 4))
        axes[0].plot(t, obs["free_energy"])
        axes[0].set_title("free energy F")
        m0 = obs["mass"][0]
        axes[1].plot(t, obs["mass"] - m0)
        axes[1].set_title(f"mass drift: mean φ − {m0:.6g}")
        ok = (t > 0) & np.isfinite(obs["length"])
        if ok.any():
            from matplotlib.ticker import NullFormatter

            axes[2].loglog(t[ok], obs["length"][ok], "o-", ms=3)
            axes[2].xaxis.set_minor_formatter(NullFormatter())
            axes[2].yaxis.set_minor_formatter(NullFormatter())
        axes[2].set_title("characteristic length L(t)")
        for ax in axes:
            ax.set_xlabel("t")
        written.append(out / "observables.png")
        fig.savefig(written[-1], dpi=120, bbox_inches="tight")
        plt.close(fig)
    return written


def _plot_network(r: Result, out: Path) -> list:
    plt = _mpl()
    written = []
    hist = r.distance_histogram
    if hist is not None and hist.sum() > 0:
        w = float(r.file["distance_histogram"].attrs.get("bin_width", 1.0))
        fig, ax = plt.subplots(figsize=(6, 4))
        ax.bar(np.arange(len(hist)) * w, hist, width=w, align="edge")
        st = r.statistics
        if "mean_distance" in st:
            ax.axvline(st["mean_distance"], color="k", ls="--", label=f"mean {st['mean_distance']:.3g}")
            ax.legend()
        ax.set_xlabel("distance")
        ax.set_ylabel("ordered pairs")
        ax.set_title(f"{r.name}: distance distribution")
        written.append(out / "distance_histogram.png")
        fig.savefig(written[-1], dpi=120, bbox_inches="tight")
        plt.close(fig)
    vert = r.vertex
    if vert:
        fig, axes = plt.subplots(1, len(vert), figsize=(5 * len(vert), 4))
        axes = np.atleast_1d(axes)
        ids = r.vertex_ids
        for ax, (k, v) in zip(axes, sorted(vert.items())):
            ok = np.isfinite(v)
            ax.hist(v[ok], bins=40)
            title = k
            if ok.any():                 # the input's id of the extreme vertex
                i = int(np.nanargmin(v) if k == "eccentricity" else np.nanargmax(v))
                title += f" ({'min' if k == 'eccentricity' else 'max'} at vertex {str(ids[i])[:20]})"
            ax.set_title(title)
            ax.set_yscale("log")
        written.append(out / "vertex_metrics.png")
        fig.savefig(written[-1], dpi=120, bbox_inches="tight")
        plt.close(fig)
    return written
