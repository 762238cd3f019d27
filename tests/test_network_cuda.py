"""CUDA network engine (simengine.network.cuda) against scipy and the CPU engine.

Runs in both modes: under the CUDA simulator (CI: NUMBA_ENABLE_CUDASIM=1) on graphs of tens of
vertices, and on a real GPU at thousands of vertices (directed, weighted, disconnected graphs, and
Martín et al.'s counterexample repeated many times).
"""
import numpy as np
import pytest
from numba import config, cuda

if not cuda.is_available():  # pragma: no cover
    pytest.skip("numba.cuda is not available", allow_module_level=True)

import scipy.sparse.csgraph as csg  # noqa: E402

from simengine.errors import UserError  # noqa: E402
from simengine.network import generators as gen  # noqa: E402
from simengine.network.apsp import run_sources, store_dtype  # noqa: E402
from simengine.network.graph import CSRGraph  # noqa: E402
from simengine.network.statistics import PathStatistics, reduce_block  # noqa: E402

SIM = bool(config.ENABLE_CUDASIM)
N = 40 if SIM else 3000            # "real size" on a GPU
REPEATS = 2 if SIM else 200        # counterexample runs
FIELDS = ("row_sum", "row_reach", "row_max", "row_harm", "col_sum", "col_reach", "col_harm",
          "hist")


def _random_graph(n, m, directed, weighted, seed, float_weights=False, components=1):
    """Random graph with ``components`` disjoint parts (disconnected when > 1)."""
    rng = np.random.default_rng(seed)
    src, dst = [], []
    size = n // components
    for c in range(components):
        lo, hi = c * size, (n if c == components - 1 else (c + 1) * size)
        k = m // components
        src.append(rng.integers(lo, hi, k))
        dst.append(rng.integers(lo, hi, k))
    src, dst = np.concatenate(src), np.concatenate(dst)
    w = None
    if weighted:
        w = rng.uniform(0.1, 10.0, len(src)) if float_weights else \
            rng.integers(1, 11, len(src)).astype(np.float64)
    return CSRGraph.from_edges(n, src, dst, w, directed=directed)


def _scipy(g, sources=None):
    """scipy's distances (rows ``sources``, all rows by default)."""
    return csg.shortest_path(g.to_scipy(), directed=g.directed, unweighted=not g.weighted,
                             indices=sources)


def _compare_partial(p, r, exact=True):
    assert np.array_equal(p.sources, r.sources)
    for f in FIELDS:
        a, b = getattr(p, f), getattr(r, f)
        assert a.shape == b.shape, f
        if f in ("row_reach", "col_reach", "hist") or (exact and f in ("row_sum", "col_sum",
                                                                         "row_max")):
            assert np.array_equal(a, b), f
        else:
            np.testing.assert_allclose(a, b, rtol=1e-12, atol=0, err_msg=f)


def _graphs():
    n = N
    return {
        "undirected": _random_graph(n, 3 * n, False, False, 1),
        "directed_disconnected": _random_graph(n, 3 * n, True, False, 2, components=3),
        "ring": gen.ring_lattice(n, 4),                        # long paths: push steps
        "dense": _random_graph(n, n * n // 4, False, False, 3),  # big frontiers: pull steps
    }


def _sources(n, k, seed=0):
    return np.sort(np.random.default_rng(seed).choice(n, size=min(n, k), replace=False))


# ------------------------------------------------------------------------------- single kernels
@pytest.mark.parametrize("sort_by_degree", [False, True])
def test_bfs_matches_scipy(sort_by_degree):
    from simengine.network.cuda.bfs import bfs_many

    for name, g in _graphs().items():
        src = _sources(g.n, 5 if SIM else 300, 1)
        d = bfs_many(g, src, sort_by_degree=sort_by_degree, batch=3 if SIM else 64)
        d = np.where(d < 0, np.inf, d)
        assert np.array_equal(d, _scipy(g, src)), name


@pytest.mark.parametrize("method", ["frontier", "nearfar"])
@pytest.mark.parametrize("directed", [False, True])
def test_sssp_matches_scipy(method, directed):
    from simengine.network.cuda.sssp import sssp_many

    n = N
    g = _random_graph(n, 3 * n, directed, True, 4, components=2)
    src = _sources(n, 4 if SIM else 200, 2)
    d = sssp_many(g, src, method, batch=2 if SIM else 64)
    assert np.array_equal(d, _scipy(g)[src])          # integer weights: exact
    gf = _random_graph(n, 3 * n, directed, True, 5, float_weights=True)
    d = sssp_many(gf, src, method, batch=4 if SIM else 64)
    np.testing.assert_allclose(d, _scipy(gf)[src], rtol=1e-12)


def _counterexample(n, directed):
    """Martín et al. §4.5: 0 → i (w=1), i → n-1 (w=i) for 1 ≤ i ≤ n-2; d(0, n-1) = 2."""
    i = np.arange(1, n - 1)
    src = np.concatenate([np.zeros(n - 2, np.int64), i])
    dst = np.concatenate([i, np.full(n - 2, n - 1)])
    w = np.concatenate([np.ones(n - 2), i.astype(np.float64)])
    return CSRGraph.from_edges(n, src, dst, w, directed=directed)


@pytest.mark.parametrize("directed", [True, False])
def test_sssp_counterexample(directed):
    from simengine.network.cuda import device_graph
    from simengine.network.cuda.sssp import SSSPBuffers, sssp_batch

    n = 1024 if not SIM else 64
    g = _counterexample(n, directed)
    ref = _scipy(g)[0]
    dg = device_graph(g)
    buf = SSSPBuffers(n, 1)
    for rep in range(REPEATS):
        for method in ("frontier", "nearfar"):
            sssp_batch(dg, [0], buf, method)
            d = buf.dist.copy_to_host()[0]
            assert d[n - 1] == 2.0, (rep, method, d[n - 1])
            assert np.array_equal(d, ref)


def test_floyd_warshall_matches_scipy():
    from simengine.network.cuda.floyd_warshall import floyd_warshall

    n = 13 if SIM else 700      # not a multiple of the tile
    g = _random_graph(n, 4 * n, True, True, 6, components=2)
    assert np.array_equal(floyd_warshall(g), _scipy(g))
    if not SIM:
        gu = _random_graph(1100, 50000, False, True, 7, float_weights=True)
        np.testing.assert_allclose(floyd_warshall(gu), _scipy(gu), rtol=1e-12)


# ------------------------------------------------------------------------------- statistics
@pytest.mark.parametrize("persistent", [True, False])
def test_msbfs_partials_match_reduce_block(persistent):
    from simengine.network.cuda.msbfs import msbfs_partials

    for name, g in _graphs().items():
        src = _sources(g.n, 40 if SIM else 700, 3)     # > one 32·W batch in both modes
        ref = _scipy(g, src)
        parts = list(msbfs_partials(g, src, words=1 if SIM else 4, persistent=persistent))
        lo = 0
        for p in parts:
            s = src[lo:lo + len(p.sources)]
            _compare_partial(p, reduce_block(ref[lo:lo + len(s)], s, False), exact=True)
            lo += len(s)
        assert lo == len(src), name


def test_msbfs_deterministic():
    from simengine.network.cuda.msbfs import msbfs_partials

    g = _graphs()["dense"]
    src = _sources(g.n, 32 if SIM else 1000, 4)
    a = list(msbfs_partials(g, src))
    b = list(msbfs_partials(g, src))
    for p, q in zip(a, b):
        for f in FIELDS:
            assert np.array_equal(getattr(p, f), getattr(q, f)), f


def _stats_equal(a: PathStatistics, b: PathStatistics, integer_distances=True):
    """Integer data exactly; floating sums (and float-weighted distances) to 1e-12 relative."""
    sa, sb = a.state(), b.state()
    exact = ("done", "row_reach", "col_reach", "hist")
    if integer_distances:
        exact += ("row_max",)
    for k in exact:
        assert np.array_equal(sa[k], sb[k]), k
    for k in ("row_sum", "col_sum", "row_harm", "col_harm", "row_max"):
        np.testing.assert_allclose(sa[k], sb[k], rtol=1e-12, atol=0, err_msg=k)


@pytest.mark.parametrize("case", ["unweighted", "directed_disconnected", "weighted",
                                  "weighted_directed_float"])
def test_run_sources_cuda_matches_cpu(case):
    n = (20 if case.startswith("weighted") else 30) if SIM else 2500
    if case == "unweighted":
        g, algs = _random_graph(n, 3 * n, False, False, 8), ["auto", "bfs"]
    elif case == "directed_disconnected":
        g, algs = _random_graph(n, 2 * n, True, False, 9, components=4), ["msbfs", "bfs"]
    elif case == "weighted":
        g, algs = _random_graph(n, 3 * n, False, True, 10, components=2), \
            ["frontier", "nearfar", "fw"]
    else:
        g, algs = _random_graph(n, 3 * n, True, True, 11, float_weights=True), \
            ["frontier", "fw"]
    src = _sources(n, 12 if SIM else n, 5)
    cpu = PathStatistics.for_graph(g, bin_width=0.5)
    run_sources(g, src, cpu, "dijkstra" if g.weighted else "msbfs", backend="cpu")
    st_cpu = np.zeros((len(src), n), store_dtype(g))
    run_sources(g, src, PathStatistics.for_graph(g, bin_width=0.5),
                "dijkstra" if g.weighted else "bfs", backend="cpu", store=st_cpu)
    for alg in algs:
        gpu = PathStatistics.for_graph(g, bin_width=0.5)
        st = np.zeros((len(src), n), store_dtype(g))
        run_sources(g, src, gpu, alg, backend="cuda", store=st, batch=8 if SIM else None)
        _stats_equal(gpu, cpu, integer_distances=not case.endswith("float"))
        if g.weighted and case.endswith("float"):
            np.testing.assert_allclose(st, st_cpu, rtol=1e-12)
        else:
            assert np.array_equal(st, st_cpu), alg


def test_results_match_cpu_on_seed_family():
    """Leist's family (2) (α-model without substrate): full APSP results, CPU vs CUDA."""
    n = 40 if SIM else 2000
    g = gen.watts_alpha(n, k=6 if SIM else 10, ring=False, seed=3)
    src = np.arange(n)
    a, b = PathStatistics.for_graph(g), PathStatistics.for_graph(g)
    run_sources(g, src, a, "auto", backend="cpu")
    run_sources(g, src, b, "auto", backend="cuda")
    ra, rb = a.results(), b.results()
    for k in ("reachable_pairs", "diameter", "radius", "connected"):
        assert ra[k] == rb[k], k
    assert np.array_equal(ra["distance_histogram"], rb["distance_histogram"])
    for k in ("mean_distance", "efficiency"):
        assert rb[k] == pytest.approx(ra[k], rel=1e-12)
    np.testing.assert_allclose(rb["closeness"], ra["closeness"], rtol=1e-12)
    np.testing.assert_allclose(rb["harmonic"], ra["harmonic"], rtol=1e-12)


def test_negative_weights_rejected():
    g = CSRGraph.from_edges(3, [0, 1], [1, 2], [1.0, -2.0], directed=True)
    st = PathStatistics.for_graph(g)
    for alg in ("auto", "frontier", "nearfar", "fw"):
        with pytest.raises(UserError):
            run_sources(g, [0], st, alg, backend="cuda")


def test_unknown_and_mismatched_algorithms():
    g = _random_graph(10, 20, False, True, 12)
    st = PathStatistics.for_graph(g)
    with pytest.raises(UserError):
        run_sources(g, [0], st, "msbfs", backend="cuda")
    with pytest.raises(UserError):
        run_sources(g, [0], st, "nope", backend="cuda")
