"""The distribution figures' P(X ≥ x) against an empirical CCDF (issue 48, item 3: the
betweenness curve levelled off at the fraction of vertices with B = 0)."""
import matplotlib
import numpy as np

from simengine.plot import network as netplot

matplotlib.use("Agg")


class _Result:
    name = "g"
    graph = {"directed": False}
    statistics = {"betweenness_normalized": False}
    attrs = {}

    def __init__(self, b):
        self.vertex = {"betweenness": b}


def _empirical(x, population):
    return np.array([np.mean(population >= v) for v in x])


def test_betweenness_ccdf_is_the_empirical_one():
    rng = np.random.default_rng(4)
    b = np.concatenate([np.zeros(460), rng.pareto(1.5, 540) * 10, [7.0, 7.0, 7.0]])
    fig = netplot.betweenness_figure(_Result(b))
    x, y = fig.axes[0].lines[0].get_data()
    np.testing.assert_allclose(y, _empirical(x, b), rtol=1e-12)
    # the tail falls to one vertex in the population, not to the share of zeros
    assert y.min() == 1 / len(b) and y.max() == np.mean(b > 0)
    import matplotlib.pyplot as plt
    plt.close(fig)


def test_ccdf_helper_with_ties():
    v = np.array([1, 1, 2, 5, 5, 5])
    x, y = netplot.ccdf(v)
    assert list(x) == [1, 2, 5]
    np.testing.assert_allclose(y, _empirical(x, v))
    x, y = netplot.ccdf(v, total=12)
    np.testing.assert_allclose(y, _empirical(x, v) / 2)
