"""Figures are rendered from real (small) outputs; their axes are labelled and physically scaled."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import numpy as np  # noqa: E402
import pytest  # noqa: E402

import simengine  # noqa: E402
from conftest import run_cli  # noqa: E402
from simengine import analysis, plot  # noqa: E402

FIELD = {
    "kind": "field", "name": "tiny-field",
    "grid": {"shape": [24, 32], "spacing": 0.5},
    "boundary": {"type": "periodic"},
    "model": {"mobility": 1.0, "kappa": 0.25, "potential": {"b": 1.0, "u": 1.0}},
    "initial": {"type": "noise", "mean": 0.0, "amplitude": 0.1, "seed": 3},
    "time": {"dt": 0.004, "steps": 600},
    "solver": {"backend": "cpu"},
    "output": {"snapshot_every": 150, "checkpoint_every": 300, "observables_every": 30},
}
NETWORK = {
    "kind": "network", "name": "tiny-net",
    "graph": {"generator": {"type": "barabasi_albert", "n": 120, "m": 2, "seed": 5}},
    "metrics": {"sources": "all", "store_distances": True},
    "solver": {"backend": "cpu"},
}


@pytest.fixture(scope="module")
def field_out(tmp_path_factory):
    return simengine.run(FIELD, tmp_path_factory.mktemp("f") / "f.h5")


@pytest.fixture(scope="module")
def net_out(tmp_path_factory):
    return simengine.run(NETWORK, tmp_path_factory.mktemp("n") / "n.h5")


def data_axes(fig):
    """Visible axes that are not colour bars."""
    return [ax for ax in fig.axes if ax.get_visible() and ax.get_label() != "<colorbar>"]


def assert_labelled(fig):
    axes = data_axes(fig)
    assert axes
    for ax in axes:
        assert ax.get_xlabel().strip() and ax.get_ylabel().strip(), ax.get_title()


def tick_texts(axis, fig):
    fig.canvas.draw()
    lo, hi = sorted(axis.get_view_interval())
    return [t.get_text() for t, v in zip(axis.get_ticklabels(), axis.get_ticklocs())
            if lo <= v <= hi and t.get_text()]


def test_field_figure_physical_axes_time_and_data_colour_range(field_out):
    with simengine.open(field_out) as r:
        fig = plot.field_figure(r)
        assert_labelled(fig)
        ax = data_axes(fig)[0]
        assert "t = 2.4" in ax.get_title() and "step 600" in ax.get_title()
        im = ax.get_images()[0]
        # cell centres at x = i·h (h = 0.5): 32 columns span [-h/2, 31.5·h]
        assert im.get_extent() == pytest.approx([-0.25, 15.75, -0.25, 11.75])
        phi = r.final_field
        vmin, vmax = im.get_clim()
        m = np.abs(phi).max()
        assert phi.min() < 0 < phi.max() and (vmin, vmax) == pytest.approx((-m, m))
        plt.close(fig)


def test_colour_range_rules():
    assert plot.color_range(np.array([-0.2, 0.7])) == (-0.7, 0.7, "RdBu_r")
    lo, hi, cmap = plot.color_range(np.array([0.1, 0.3]), np.array([0.2, 0.5]))
    assert (lo, hi, cmap) == (0.1, 0.5, "viridis")


def test_observables_figure_fit_guide_and_readable_log_ticks(field_out):
    with simengine.open(field_out) as r:
        fig = plot.observables_figure(r)
        assert_labelled(fig)
        ax = data_axes(fig)[2]
        labels = [line.get_label() for line in ax.get_lines()]
        # one curve per coarsening measure, the energy length among them
        assert any(s.startswith("energy:") for s in labels)
        assert any(s.startswith("moment:") for s in labels)
        # t ends at 2.4 here: less than a decade after separation, so a note instead of a fit
        assert not any(s.startswith("fit (") for s in labels)
        assert any(t.get_text().startswith("no fit (energy): t spans") for t in ax.texts)
        lo, hi = ax.get_ylim()
        assert hi / lo < 10              # L spans less than a decade here ...
        assert len(tick_texts(ax.yaxis, fig)) >= 2   # ... and the y axis still has numbers
        assert "− -" not in data_axes(fig)[1].get_title()   # the old "mean φ − -0.5" title
        plt.close(fig)


def test_readable_log_axis_over_several_decades():
    fig, ax = plt.subplots()
    ax.loglog([1, 300], [1, 300])
    plot.readable_log_axis(ax.yaxis, 1, 300)
    assert {"1", "10", "100"} <= set(tick_texts(ax.yaxis, fig))
    plt.close(fig)


def test_structure_factor_montage_histogram_and_gif(field_out, tmp_path):
    with simengine.open(field_out) as r:
        sf = plot.structure_factor_figure(r)
        assert_labelled(sf)
        assert len(data_axes(sf)[0].get_lines()) == 4          # snapshots at t > 0
        mont = plot.snapshot_montage_figure(r)
        assert len(data_axes(mont)) == 5 and all("t = " in ax.get_title() for ax in data_axes(mont))
        assert_labelled(mont)
        hist = plot.phi_histogram_figure(r)
        assert_labelled(hist)
        gif = plot.snapshot_gif(r, tmp_path / "s.gif")
        from PIL import Image
        with Image.open(gif) as im:
            assert im.n_frames == 5
        for f in (sf, mont, hist):
            plt.close(f)


def test_radial_structure_factor_against_brute_force():
    rng = np.random.default_rng(0)
    phi = rng.standard_normal((12, 10))
    h = 0.7
    k, s = analysis.radial_structure_factor(phi, h)
    full = np.abs(np.fft.fftn(phi - phi.mean())) ** 2 / phi.size
    dk = max(2 * np.pi / (12 * h), 2 * np.pi / (10 * h))
    shells = {}
    for i in range(12):
        for j in range(10):
            kx = 2 * np.pi * np.fft.fftfreq(12, h)[i]
            ky = 2 * np.pi * np.fft.fftfreq(10, h)[j]
            km = np.hypot(kx, ky)
            if km == 0 or km > np.pi / h + 1e-12:
                continue
            shells.setdefault(int(np.floor(km / dk + 0.5 + 1e-9)), []).append((km, full[i, j]))
    ref = [(np.mean([a for a, _ in v]), np.mean([b for _, b in v])) for _, v in sorted(shells.items())]
    np.testing.assert_allclose(k, [a for a, _ in ref], rtol=1e-12)
    np.testing.assert_allclose(s, [b for _, b in ref], rtol=1e-12)


def test_power_law_fit_and_late_window():
    t = np.linspace(0, 100, 51)
    L = 3.0 * np.where(t > 0, t, 1) ** 0.31
    win = analysis.late_window(t)                       # √(2·100) ≈ 14.1 ≤ t ≤ 100
    assert t[win].min() == pytest.approx(16.0) and t[win].max() == 100
    assert t[analysis.late_window(t, t_start=25)].min() == pytest.approx(50.0)
    spread = np.minimum(1.0, 0.01 * np.exp(t / 5))        # the φ range saturates at t ≈ 23
    assert analysis.separation_time(t, -spread, spread) == pytest.approx(24.0)
    fit = analysis.power_law_fit(t[win], L[win])
    assert fit.exponent == pytest.approx(0.31, abs=1e-12) and fit.prefactor == pytest.approx(3.0)
    assert analysis.power_law_fit([1, 2], [1, 2]) is None


def test_degree_power_law_recovers_exponent():
    rng = np.random.default_rng(2)
    u = rng.random(20000)     # discrete power law, alpha = 2.5, k >= 5 (Clauset et al. App. D)
    k = np.floor(4.5 * (1 - u) ** (-1 / 1.5) + 0.5)
    k = np.concatenate([k, rng.integers(1, 5, 4000)])   # a head that is not a power law
    fit = analysis.degree_power_law(k)
    assert 5 <= fit.k_min <= 8 and fit.alpha == pytest.approx(2.5, abs=0.05)   # head excluded


def test_network_figures_centred_bins_log_y_and_degrees(net_out):
    with simengine.open(net_out) as r:
        fig = plot.distance_histogram_figure(r)
        assert_labelled(fig)
        ax = data_axes(fig)[0]
        assert ax.get_yscale() == "log"
        hist = r.distance_histogram
        centres = sorted(p.get_x() + p.get_width() / 2 for p in ax.patches)
        assert centres == pytest.approx(np.flatnonzero(hist))   # bar d is centred on d
        assert ax.get_xlim()[1] < len(hist)                      # no empty bin past the diameter
        plt.close(fig)

        fig = plot.vertex_metrics_figure(r)
        assert_labelled(fig)
        assert {"closeness centrality", "eccentricity (hops)"} <= {
            a.get_xlabel().split(" (1/")[0] for a in data_axes(fig)}
        plt.close(fig)

        deg, how = plot.graph_degrees(r)
        assert "rebuilt" in how
        D = r.distances[()]
        np.testing.assert_array_equal(deg, (D == 1).sum(axis=1))  # neighbours at distance 1
        for make in (plot.degree_distribution_figure, plot.metric_vs_degree_figure):
            fig = make(r, deg)
            assert_labelled(fig)
            assert all(ax.get_xscale() == "log" for ax in data_axes(fig))
            plt.close(fig)


def test_sampled_run_says_sampled_vertices(tmp_path):
    sc = dict(NETWORK, name="sampled", metrics={"sources": {"sample": 30, "seed": 1}})
    out = simengine.run(sc, tmp_path / "s.h5")
    with simengine.open(out) as r:
        fig = plot.vertex_metrics_figure(r)
        ecc = [ax for ax in data_axes(fig) if ax.get_xlabel().startswith("eccentricity")][0]
        assert "sampled vertices" in ecc.get_title() and "sampled" in ecc.get_ylabel()
        assert "30 of 120 sources" in fig.get_suptitle()
        plt.close(fig)


def test_plot_cli_writes_every_figure(field_out, net_out, tmp_path):
    r = run_cli("plot", field_out, "--out", tmp_path / "f")
    assert r.returncode == 0, r.stderr
    names = {"field.png", "observables.png", "structure_factor.png", "snapshots.png",
             "phi_histogram.png", "snapshots.gif", "coarsening.png"}
    assert names == {p.name for p in (tmp_path / "f").iterdir()}
    r = run_cli("plot", net_out, "--out", tmp_path / "n", "--no-gif")
    assert r.returncode == 0, r.stderr
    assert {"distance_histogram.png", "vertex_metrics.png", "degree_distribution.png",
            "metric_vs_degree.png"} == {p.name for p in (tmp_path / "n").iterdir()}
