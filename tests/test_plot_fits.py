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
