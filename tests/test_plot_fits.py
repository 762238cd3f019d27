"""Fitted lines drawn in the figures are the fitted laws (evaluated on the plotted points)."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

from simengine import analysis, plot  # noqa: E402


class _Stub:
    """The two attributes the degree figure reads from a Result."""
    name = "synthetic"
    graph = {"directed": False}


def _power_law_degrees(alpha=2.5, kmin=5, n=20000, seed=2):
    rng = np.random.default_rng(seed)
    u = rng.random(n)
    return np.floor((kmin - 0.5) * (1 - u) ** (-1 / (alpha - 1)) + 0.5).astype(np.int64)


def _fit_line(ax):
    lines = [ln for ln in ax.get_lines() if ln.get_label().startswith(("P(k) ∝", "power-law"))]
    assert len(lines) == 1, [ln.get_label() for ln in ax.get_lines()]
    return lines[0].get_xdata(), lines[0].get_ydata()


def test_pk_fit_line_is_the_fitted_law_and_meets_the_data():
    k = _power_law_degrees()
    fit = analysis.degree_power_law(k)
    fig = plot.degree_distribution_figure(_Stub(), k)
    ax0, ax1 = fig.axes[:2]
    x, y = _fit_line(ax0)
    # P(k) of the fitted law: the negative derivative of the fitted CCDF (numerically)
    h = 1e-4
    want = -(fit.ccdf(x + h) - fit.ccdf(x - h)) / (2 * h)
    np.testing.assert_allclose(y, want, rtol=1e-6)
    slope = np.diff(np.log(y)) / np.diff(np.log(x - 0.5))
    np.testing.assert_allclose(slope, -fit.alpha, rtol=1e-9)        # CCDF slope − 1
    xc, yc = _fit_line(ax1)
    np.testing.assert_allclose(yc, fit.ccdf(xc), rtol=1e-12)
    # against the data: the empirical P(k) at the fitted range's decade is within 25 %
    vals, counts = np.unique(k, return_counts=True)
    for kq in (10, 30):
        emp = counts[vals == kq][0] / len(k)
        assert fit.pmf(kq) == pytest.approx(emp, rel=0.25)
    plt.close(fig)


class _Field:
    name = "synthetic-field"

    def __init__(self, t_end, rows=60, alpha=0.31, t_sep=5.0):
        t = np.concatenate([[0.0], np.geomspace(0.5, t_end, rows)])
        spread = np.minimum(1.0, np.where(t < t_sep, 0.01 * np.exp(np.minimum(t, t_sep)), 1.0))
        rng = np.random.default_rng(1)
        length = 3.0 * np.maximum(t, 1e-9) ** alpha * np.exp(0.01 * rng.standard_normal(len(t)))
        self.observables = {"time": t, "free_energy": -t, "mass": 0 * t, "length": length,
                            "phi_min": -spread, "phi_max": spread}


def _length_axes(fig):
    return fig.axes[2]


def test_length_fit_needs_a_decade_after_separation_and_is_the_fitted_law():
    fig = plot.observables_figure(_Field(t_end=30.0))          # separated at t ≈ 4.6 (the first row at 90 % of the final spread)
    ax = _length_axes(fig)
    assert not any(ln.get_label().startswith("fit (") for ln in ax.get_lines())
    assert [t.get_text() for t in ax.texts][0] == (
        "no fit (moment): t spans 0.81 decades after separation (t ≈ 4.61), less than the 1 "
        "needed")
    assert "log-spaced rows per decade" in ax.texts[1].get_text()   # the window rule, stated
    plt.close(fig)

    fig = plot.observables_figure(_Field(t_end=3000.0))        # 5 → 3000: a fit
    ax = _length_axes(fig)
    fit_line = [ln for ln in ax.get_lines() if ln.get_label().startswith("fit (moment)")][0]
    x = fit_line.get_xdata()
    assert x.min() >= 3000.0 / 100 * (1 - 1e-12) and x.max() == pytest.approx(3000.0)
    slope = np.diff(np.log(fit_line.get_ydata())) / np.diff(np.log(x))
    np.testing.assert_allclose(slope, slope[0], rtol=1e-9)
    assert slope[0] == pytest.approx(0.31, abs=0.01)
    assert "n = 0.31" in fit_line.get_label()
    lo, hi = ax.get_ylim()
    assert lo <= fit_line.get_ydata().min() and fit_line.get_ydata().max() <= hi
    plt.close(fig)


def test_uncertainty_formatting():
    assert analysis.format_uncertain(0.17712, 0.0213) == "0.177 ± 0.021"
    assert analysis.format_uncertain(0.333333, 0.0021) == "0.3333 ± 0.0021"
    assert analysis.format_uncertain(2.96, 0.14) == "2.96 ± 0.14"
    assert analysis.format_uncertain(2.5, float("nan")) == "2.5"


def _net(tmp_path, name, gen):
    import simengine

    sc = {"kind": "network", "name": name, "graph": {"generator": gen},
          "metrics": {"sources": "all"}, "solver": {"backend": "cpu"}}
    return simengine.open(simengine.run(sc, tmp_path / f"{name}.h5", log=lambda m: None))


def test_one_bar_histograms_are_linear_and_min_eccentricity_skips_isolated(tmp_path):
    with _net(tmp_path, "complete", {"type": "gnp", "n": 6, "p": 1.0, "seed": 1}) as r:
        fig = plot.distance_histogram_figure(r)              # every distance is 1: one bar
        assert fig.axes[0].get_yscale() == "linear"
        plt.close(fig)
        fig = plot.vertex_metrics_figure(r)
        ecc = [a for a in fig.axes if a.get_xlabel().startswith("eccentricity")][0]
        assert ecc.get_yscale() == "linear"
        plt.close(fig)
    with _net(tmp_path, "sparse", {"type": "gnm", "n": 12, "m": 5, "seed": 3}) as r:
        e = r.vertex["eccentricity"]
        assert (e == 0).any() and (e > 0).any()             # isolated vertices and others
        fig = plot.vertex_metrics_figure(r)
        ax = [a for a in fig.axes if a.get_xlabel().startswith("eccentricity")][0]
        vid = int(ax.get_title().rsplit("min at vertex ", 1)[1])
        i = list(r.vertex_ids).index(vid)
        assert e[i] == e[e > 0].min()
        assert fig.axes[0].get_yscale() == "log" or ax.get_yscale() == "log"
        plt.close(fig)


def _summary(tmp_path, key, xs):
    from simengine.summary import write_csv

    cols = ["task", key, "graph.generator.seed", "name", "status", "message", "mean_distance",
            "radius", "elapsed"]
    rows = []
    for i, x in enumerate(xs):
        for seed in (1, 2):
            rows.append({"task": str(len(rows)), key: str(x), "graph.generator.seed": str(seed),
                         "name": f"t{len(rows)}", "status": "done", "message": "",
                         "mean_distance": repr(2.0 * x ** 0.5 * (1 + 0.01 * seed)),
                         "radius": "3", "elapsed": repr(0.1 + 0.01 * i)})
    p = tmp_path / "s-summary.csv"
    write_csv(p, cols, rows)
    return p


def test_summary_plots_fit_slopes_only_against_sizes_and_label_units(tmp_path):
    from simengine.summary import read_csv
    from simengine.summary_plot import plot_summary

    written = plot_summary(_summary(tmp_path, "graph.generator.n", [100, 1000, 10000]),
                           tmp_path / "a")
    slopes = tmp_path / "a" / "slopes.csv"
    assert slopes in written
    text = slopes.read_text()
    assert text.endswith("\n") and "\r" not in text
    rows = read_csv(slopes)[1]
    assert [r["result"] for r in rows] == ["mean_distance", "elapsed"]   # not the constant radius
    assert float(rows[0]["slope"]) == pytest.approx(0.5, abs=1e-9)
    written = plot_summary(_summary(tmp_path, "model.kappa", [0.1, 1.0, 10.0]), tmp_path / "b")
    assert not (tmp_path / "b" / "slopes.csv").exists()                 # kappa is not a size


def test_summary_axes_name_results_with_units(tmp_path, monkeypatch):
    from simengine import summary_plot

    seen = []
    real = plt.Figure.savefig

    def keep(fig, *a, **k):
        seen.append({ax.get_ylabel() for ax in fig.axes if ax.get_visible()})
        return real(fig, *a, **k)

    monkeypatch.setattr(plt.Figure, "savefig", keep)
    summary_plot.plot_summary(_summary(tmp_path, "graph.generator.n", [100, 1000]), tmp_path / "c")
    assert {"mean distance ⟨d⟩ (hops or weight units)", "work time (s, compilation excluded)"} \
        <= seen[0]


def test_plot_formats_and_dpi(tmp_path, capsys):
    from simengine.cli import main

    with _net(tmp_path, "fmt", {"type": "barabasi_albert", "n": 60, "m": 2, "seed": 1}) as r:
        out = r.path
    for fmt, magic in (("svg", b"<?xml"), ("pdf", b"%PDF")):
        assert main(["plot", str(out), "--out", str(tmp_path / fmt), "--format", fmt]) == 0
        files = sorted((tmp_path / fmt).iterdir())
        assert files and all(p.suffix == f".{fmt}" for p in files)
        assert all(p.read_bytes().startswith(magic) for p in files)
    assert main(["plot", str(out), "--out", str(tmp_path / "d"), "--dpi", "40"]) == 0
    from PIL import Image

    width = Image.open(tmp_path / "d" / "distance_histogram.png").size[0]
    assert width == pytest.approx(6.8 * 40, abs=2)           # a 6.8-inch figure at 40 dpi
    capsys.readouterr()
    assert main(["plot", str(out), "--dpi", "0"]) == 2
    assert capsys.readouterr().err.strip() == "simengine: error: --dpi: expected 10..2400, got 0"


def _legend_lists_every_line(fig):
    for ax in fig.axes:
        leg = ax.get_legend()
        if leg is None:
            continue
        drawn = [a.get_label() for a in ax.get_lines() + ax.collections + ax.patches
                 if not a.get_label().startswith("_")]
        assert sorted(t.get_text() for t in leg.get_texts()) == sorted(drawn)


def test_montage_draws_every_snapshot_on_one_colour_scale_or_names_those_left_out(tmp_path):
    import simengine

    def run(steps, name):
        return simengine.run({"kind": "field", "name": name, "grid": {"shape": [24, 24]},
                              "initial": {"type": "noise", "amplitude": 0.02, "seed": 1},
                              "time": {"dt": 0.02, "steps": steps}, "solver": {"backend": "cpu"},
                              "output": {"snapshot_every": 100, "observables_every": 50,
                                         "structure_factor": True}},
                             tmp_path / f"{name}.h5", log=lambda m: None)

    with simengine.open(run(1500, "m")) as r:                 # 16 snapshots: all drawn
        fig = plot.snapshot_montage_figure(r)
        titles = [ax.get_title() for ax in fig.axes if ax.get_title()]
        assert len([t for t in titles if t.startswith("t = ")]) == len(r.snapshot_times) == 16
        assert titles[0].startswith("t = 0 (φ in [")               # the faint noise says its range
        clims = {im.get_clim() for ax in fig.axes for im in ax.images}
        assert len(clims) == 1                                      # one colour scale
        assert len([ax for ax in fig.axes if ax.get_label() == "<colorbar>"]) == 1
        plt.close(fig)
        for make in (plot.structure_factor_figure, plot.observables_figure):
            fig = make(r)
            _legend_lists_every_line(fig)
            plt.close(fig)
    said = []
    with simengine.open(run(3000, "many")) as r:              # 31 snapshots: 24 drawn, 7 named
        fig = plot.snapshot_montage_figure(r, log=said.append)
        drawn = [ax for ax in fig.axes if ax.images]
        assert len(drawn) == 24
        assert "24 of 31 snapshots drawn" in fig._suptitle.get_text() and "left out: t = " in \
            fig._suptitle.get_text()
        assert len(said) == 1 and "24 of 31 snapshots drawn" in said[0]
        plt.close(fig)
