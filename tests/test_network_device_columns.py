"""Column sums kept on the GPU (network/cuda/columns.py) equal the per-batch host accumulation.

Runs on the GPU or, without one, under numba's CUDA simulator (tiny graphs)."""
from __future__ import annotations

import numpy as np
import pytest

from simengine.network.graph import CSRGraph
from simengine.network.apsp import run_sources
from simengine.network.statistics import PathStatistics

ALGS = [("msbfs", False), ("dobfs", False), ("bfs", False), ("frontier", True),
        ("nearfar", True), ("fw", True), ("bfs_blocks", False)]


def _graph(weighted):
    """40 vertices, 70 random edges; real weights (their sums round: compensation terms)."""
    rng = np.random.default_rng(3)
    a, b = rng.integers(0, 40, 70), rng.integers(0, 40, 70)
    w = rng.uniform(0.1, 3.0, 70) if weighted else None
    return CSRGraph.from_edges(40, a, b, weights=w)


@pytest.mark.parametrize("alg,weighted", ALGS)
def test_device_columns_equal_host_columns(alg, weighted):
    g = _graph(weighted)
    src = np.array([3, 0, 17, 5, 39, 22, 8, 11, 30])
    host = PathStatistics.for_graph(g, bin_width=0.5)
    dev = PathStatistics.for_graph(g, bin_width=0.5)
    kw = {"batch": 2} if alg in ("dobfs", "bfs", "frontier", "nearfar", "fw",
                                 "bfs_blocks") else {}
    run_sources(g, src, host, alg, backend="cuda", columns=None, **kw)
    # two calls split at a batch boundary (msbfs: one batch each way), so the batches match
    cut = 4 if kw else len(src)
    run_sources(g, src[:cut], dev, alg, backend="cuda", **kw)
    run_sources(g, src[cut:], dev, alg, backend="cuda", **kw)
    holder = dev.deferred_columns(("cuda", None), lambda: None)
    assert holder is not None and holder.batches > 0      # the columns stayed on the device
    assert not dev.col_reach.any()                        # ... until the accumulator is read
    a, b = host.state(), dev.state()                      # state() flushes
    assert holder.batches == 0
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)   # bit for bit
    # a second flush adds nothing; more work after a flush accumulates again
    c = dev.state()
    for k in a:
        np.testing.assert_array_equal(a[k], c[k], err_msg=k)


def test_flush_between_batches_merges_exactly():
    """A checkpoint between calls (flush, then more batches) gives the same sums: integer sums
    exactly, the compensated float sums to rounding."""
    g = _graph(True)
    src = np.arange(12)
    one = PathStatistics.for_graph(g)
    run_sources(g, src, one, "frontier", backend="cuda", batch=3, columns=None)
    two = PathStatistics.for_graph(g)
    run_sources(g, src[:5], two, "frontier", backend="cuda", batch=3)
    two.state()
    run_sources(g, src[5:], two, "frontier", backend="cuda", batch=3)
    r1, r2 = one.results(), two.results()
    np.testing.assert_array_equal(one.col_reach, two.col_reach)
    np.testing.assert_allclose(r2["closeness"], r1["closeness"], rtol=1e-14)
    np.testing.assert_allclose(r2["harmonic"], r1["harmonic"], rtol=1e-14)
    assert r1["mean_distance"] == pytest.approx(r2["mean_distance"], rel=1e-15)


def test_merge_and_take_flush_the_other_accumulator():
    g = _graph(False)
    a = PathStatistics.for_graph(g)
    run_sources(g, np.arange(0, 20), a, "msbfs", backend="cuda")
    b = PathStatistics.for_graph(g)
    run_sources(g, np.arange(20, 40), b, "msbfs", backend="cuda")
    ref = PathStatistics.for_graph(g)
    run_sources(g, np.arange(40), ref, "msbfs", backend="cpu")
    a.merge(b)
    np.testing.assert_array_equal(a.col_reach, ref.col_reach)
    np.testing.assert_array_equal(a.column_sums[0], ref.column_sums[0])
    c = PathStatistics.for_graph(g)
    d = PathStatistics.for_graph(g)
    run_sources(g, np.arange(40), d, "msbfs", backend="cuda")
    c.take(d)
    np.testing.assert_array_equal(c.col_reach, ref.col_reach)
