"""Honest power-law fits (Clauset–Shalizi–Newman, simengine/tail_fits.py): the same numbers as
the ``powerlaw`` package (a test dependency), a goodness-of-fit p-value, and a line drawn only
where the law is not rejected."""
import matplotlib

matplotlib.use("Agg")

import matplotlib.pyplot as plt  # noqa: E402
import networkx as nx  # noqa: E402
import numpy as np  # noqa: E402
import powerlaw  # noqa: E402
import pytest  # noqa: E402

from simengine import plot, tail_fits  # noqa: E402


class _Stub:
    name = "synthetic"
    path = "synthetic.h5"
    graph = {"directed": False}


def _ba_degrees():
    g = nx.barabasi_albert_graph(3000, 3, seed=1)
    return np.array([d for _, d in g.degree()])


def _heavy_not_power_law():
    """A heavy-tailed degree sequence that is no power law (lognormal, like wiki-Vote's
    curved CCDF): 6000 vertices."""
    rng = np.random.default_rng(3)
    return np.maximum(1, np.round(rng.lognormal(1.5, 1.3, 6000))).astype(np.int64)


@pytest.mark.parametrize("make", [_ba_degrees, _heavy_not_power_law])
def test_fit_and_comparisons_equal_the_powerlaw_package(make):
    k = make()
    v = tail_fits.judge(k, sets=20)
    at = powerlaw.Fit(k, discrete=True, xmin=v.fit.k_min, estimate_discrete=True, verbose=False)
    assert at.power_law.alpha == pytest.approx(v.fit.alpha, rel=1e-12)
    assert at.power_law.D == pytest.approx(v.fit.ks_distance, abs=0.005)
    if make is _ba_degrees:   # the same k_min from the KS scan
        ref = powerlaw.Fit(k, discrete=True, estimate_discrete=True, verbose=False)
        assert ref.xmin == v.fit.k_min
    assert [c.alternative for c in v.comparisons] == ["lognormal", "exponential"]
    for c in v.comparisons:
        z, p = at.distribution_compare("power_law", c.alternative, normalized_ratio=True)
        assert c.normalized == pytest.approx(z, rel=2e-3), c.alternative
        assert c.p == pytest.approx(p, rel=5e-3, abs=1e-6), c.alternative


def test_gof_p_value_keeps_a_true_power_law_and_rejects_a_lognormal():
    rng = np.random.default_rng(5)
    u = rng.random(4000)
    true = np.floor(4.5 * (1 - u) ** (-1 / 1.5) + 0.5)        # α = 2.5, k_min = 5
    assert tail_fits.judge(true, sets=50).p >= tail_fits.REJECT_BELOW
    v = tail_fits.judge(_heavy_not_power_law(), sets=50)
    assert v.p < tail_fits.REJECT_BELOW and not v.plausible


def test_ba_graph_figure_draws_the_law():
    said = []
    fig = plot.degree_distribution_figure(_Stub(), _ba_degrees(), log=said.append)
    labels = [ln.get_label() for ax in fig.axes[:2] for ln in ax.get_lines()]
    assert any(lb.startswith("power-law tail") for lb in labels), labels
    assert len(said) == 1 and "power law not rejected" in said[0] and "p = " in said[0]
    plt.close(fig)


def test_heavy_tailed_non_power_law_gets_no_line_and_says_why():
    said = []
    fig = plot.degree_distribution_figure(_Stub(), _heavy_not_power_law(), log=said.append)
    labels = [ln.get_label() for ax in fig.axes[:2] for ln in ax.get_lines()]
    assert not any(lb.startswith(("power-law", "P(k) ∝")) for lb in labels), labels
    notes = [t.get_text() for t in fig.axes[1].texts]
    assert len(notes) == 1 and notes[0].startswith("no power law") and "rejected" in notes[0]
    assert "lognormal" in notes[0] and "exponential" in notes[0]
    assert len(said) == 1 and said[0].endswith(notes[0].replace("\n", " "))
    plt.close(fig)


def test_too_few_vertices_say_so():
    v = tail_fits.judge(np.arange(1, 30))
    assert not v.plausible and v.reason.startswith("no power-law fit")


def test_without_scipy_the_line_says_the_comparisons_are_missing(monkeypatch):
    def no_scipy(*a, **k):
        raise ImportError("No module named 'scipy'")

    monkeypatch.setattr(tail_fits, "compare", no_scipy)
    v = tail_fits.judge(_ba_degrees(), sets=20)
    assert v.plausible == (v.p >= tail_fits.REJECT_BELOW) and v.comparisons == []
    assert "need scipy" in v.reason and "simengine[fits]" in v.reason
