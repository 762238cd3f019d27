"""Per-source traversal for few sources: direction-optimising BFS (CPU and GPU) and the SSSP
paths ``auto`` picks, against scipy.sparse.csgraph and the MS-BFS engine on the same graphs."""
import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from simengine.network import generators as gen
from simengine.network.apsp import run_sources
from simengine.network.backends import choose
from simengine.network.cpu.dobfs import DOBFS, dobfs
from simengine.network.graph import CSRGraph
from simengine.network.per_source import CPU_MAX_SOURCES, GPU_MAX_SOURCES, choose_per_source
from simengine.network.statistics import PathStatistics


def scipy_hops(g, s):
    d = csg.shortest_path(g.to_scipy(), unweighted=True, directed=g.directed, indices=s)
    return np.where(np.isfinite(d), d, -1).astype(np.int64)


GRAPHS = {
    "gnm": lambda: gen.erdos_renyi_gnm(400, 1200, seed=1),          # has isolated vertices
    "gnm_directed": lambda: gen.erdos_renyi_gnm(300, 700, seed=2, directed=True),
    "rmat": lambda: gen.rmat(8, seed=3),
    "grid": lambda: gen.grid((15, 15)),                             # long, thin frontiers
    "two_components": lambda: CSRGraph.from_edges(6, [0, 1, 3, 4], [1, 2, 4, 5]),
}


@pytest.mark.parametrize("name", sorted(GRAPHS))
def test_dobfs_cpu_equals_scipy_both_directions(name):
    g = GRAPHS[name]()
    for alpha, beta in ((14, 24), (1, 10**9), (10**9, 1)):   # default; pull early; push only
        b = DOBFS(g, alpha=alpha, beta=beta)
        for s in (0, 1, g.n - 1):
            assert np.array_equal(b.run(s), scipy_hops(g, s)), (name, alpha, beta, s)
    # the default rule really pulls on the expander graphs
    b = DOBFS(g)
    b.run(0)
    if name in ("gnm", "rmat"):
        assert b.pull_levels > 0
    assert np.array_equal(dobfs(g, 2), scipy_hops(g, 2))


def resolve_algorithm(g, alg, num_sources, backend="cpu"):
    return choose(g, alg, backend, num_sources=num_sources).algorithm


def _stats(g, sources, alg, backend="cpu", store=None):
    st = PathStatistics.for_graph(g, planned_sources=len(sources))
    used = run_sources(g, np.asarray(sources), st, alg, backend=backend, store=store)
    return st, used


def assert_same_stats(a, b):
    sa, sb = a.state(), b.state()
    for k in ("done", "row_reach", "col_reach", "row_sum", "row_max", "col_sum"):
        np.testing.assert_array_equal(sa[k], sb[k], err_msg=k)
    np.testing.assert_array_equal(np.trim_zeros(sa["hist"], "b"), np.trim_zeros(sb["hist"], "b"))
    for k in ("row_harm", "col_harm"):
        np.testing.assert_allclose(sa[k], sb[k], rtol=1e-13, err_msg=k)


@pytest.mark.parametrize("name", ["gnm", "gnm_directed", "rmat"])
def test_auto_few_sources_runs_dobfs_and_equals_msbfs(name):
    g = GRAPHS[name]()
    src = [3, 0, 77]
    a, used = _stats(g, src, "auto")
    assert used == "dobfs"
    b, used_b = _stats(g, src, "msbfs")
    assert used_b == "msbfs"
    assert_same_stats(a, b)
    # the stored rows are scipy's distances
    from simengine.network.apsp import store_dtype

    store = np.empty((len(src), g.n), store_dtype(g))
    _stats(g, src, "dobfs", store=store)
    for i, s in enumerate(src):
        want = scipy_hops(g, s)
        got = store[i].astype(np.int64)
        got[store[i] == np.iinfo(store.dtype).max] = -1
        np.testing.assert_array_equal(got, want)


def test_auto_rule_thresholds(monkeypatch):
    from simengine.network.cuda import brandes

    monkeypatch.setattr(brandes, "DEEP_LEVELS", 100)   # the GPU's (the simulator's is 4)
    g = GRAPHS["gnm"]()
    w = gen.random_weights(g, 1, 10, seed=1)
    frac = CSRGraph(w.n, w.indptr, w.indices, w.weights + 0.5, False)
    k = CPU_MAX_SOURCES
    assert resolve_algorithm(g, "auto", num_sources=k) == "dobfs"
    assert resolve_algorithm(g, "auto", num_sources=k + 1) == "msbfs"
    assert resolve_algorithm(w, "auto", num_sources=1) == "dial"
    assert resolve_algorithm(frac, "auto", num_sources=1) == "dijkstra"
    assert resolve_algorithm(g, "auto", GPU_MAX_SOURCES, "cuda") == "dobfs"
    assert resolve_algorithm(g, "auto", GPU_MAX_SOURCES + 1, "cuda") == "msbfs"
    assert choose_per_source(g, GPU_MAX_SOURCES, "cuda") == "dobfs"
    assert choose_per_source(g, GPU_MAX_SOURCES + 1, "cuda") is None
    assert choose_per_source(w, 4, "cuda") == "nearfar"
    # a small dense weighted graph: all sources → Floyd–Warshall, a few → Dial, never FW
    i, j = np.triu_indices(60, 1)
    dense = gen.random_weights(CSRGraph.from_edges(60, i, j), 1, 10, seed=2)
    assert resolve_algorithm(dense, "auto", num_sources=60) == "fw"
    assert resolve_algorithm(dense, "auto", num_sources=2) == "dial"


@pytest.mark.parametrize("frac", [False, True])
def test_weighted_few_sources_equal_scipy(frac):
    g = gen.random_weighted(500, 6, seed=4)
    if frac:
        g = CSRGraph(g.n, g.indptr, g.indices, g.weights * 0.37, False)
    src = np.array([5, 400, 0])
    store = np.empty((len(src), g.n))
    st, used = _stats(g, src, "auto", store=store)
    assert used == ("dijkstra" if frac else "dial")
    D = csg.dijkstra(g.to_scipy(), directed=False, indices=src)
    np.testing.assert_allclose(store, D, rtol=1e-12)
    r = st.results()
    off = np.isfinite(D) & (D > 0)
    assert r["mean_distance"] == pytest.approx(D[off].mean(), rel=1e-12)


def test_dobfs_gpu_equals_cpu_and_scipy():
    from simengine.network.cuda.dobfs import DOBFSBuffers, _prepared, dobfs as gpu_dobfs, \
        dobfs_row

    for name in ("gnm_directed", "rmat", "two_components"):
        g = {"gnm_directed": lambda: gen.erdos_renyi_gnm(120, 300, seed=2, directed=True),
             "rmat": lambda: gen.rmat(6, seed=3)}.get(name, GRAPHS[name])()
        for s in (0, g.n - 1):
            assert np.array_equal(gpu_dobfs(g, s), scipy_hops(g, s)), (name, s)
        dg = _prepared(g)
        buf = DOBFSBuffers(g.n, 1)
        for alpha, beta in ((1, 10**9), (10**9, 1)):            # pull early; push only
            dobfs_row(dg, 0, buf, alpha=alpha, beta=beta)
            d = buf.dist.copy_to_host()[0].astype(np.int64)
            d[d == np.iinfo(np.int32).max] = -1
            assert np.array_equal(d, scipy_hops(g, 0)), (name, alpha, beta)


def test_dobfs_gpu_partials_equal_msbfs():
    g = gen.erdos_renyi_gnm(150, 450, seed=5)
    src = np.array([4, 0, 99])
    assert resolve_algorithm(g, "auto", len(src), "cuda") == "dobfs"
    a = PathStatistics.for_graph(g, planned_sources=len(src))
    store = np.empty((len(src), g.n), np.uint8)
    run_sources(g, src, a, "dobfs", backend="cuda", store=store, batch=2)
    b, _ = _stats(g, src, "msbfs")
    assert_same_stats(a, b)
    for i, s in enumerate(src):
        want = scipy_hops(g, s)
        got = store[i].astype(np.int64)
        got[store[i] == 255] = -1
        np.testing.assert_array_equal(got, want)


def _components_graph(n, parts, arcs_per_vertex, directed, weights, seed):
    """``parts`` disjoint random subgraphs (so many pairs are unreachable), plus isolated vertex
    n − 1; weights None, "int" (1–10) or "float" (0.1–10)."""
    rng = np.random.default_rng(seed)
    size = (n - 1) // parts
    src, dst = [], []
    for c in range(parts):
        lo, hi = c * size, (c + 1) * size
        src.append(rng.integers(lo, hi, arcs_per_vertex * size))
        dst.append(rng.integers(lo, hi, arcs_per_vertex * size))
    src, dst = np.concatenate(src), np.concatenate(dst)
    w = None
    if weights == "int":
        w = rng.integers(1, 11, len(src)).astype(np.float64)
    elif weights == "float":
        w = rng.uniform(0.1, 10.0, len(src))
    return CSRGraph.from_edges(n, src, dst, w, directed=directed)


PER_SOURCE_CASES = {     # graph, the per-source algorithm auto picks on cpu / cuda
    "unweighted_directed": (lambda: _components_graph(61, 3, 2, True, None, 1),
                            ("dobfs", "dobfs")),
    "unweighted_undirected": (lambda: _components_graph(61, 2, 2, False, None, 2),
                              ("dobfs", "dobfs")),
    "int_weights_directed": (lambda: _components_graph(61, 3, 3, True, "int", 3),
                             ("dial", "nearfar")),
    "float_weights_undirected": (lambda: _components_graph(61, 2, 2, False, "float", 4),
                                 ("dijkstra", "nearfar")),
}


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
@pytest.mark.parametrize("case", sorted(PER_SOURCE_CASES))
def test_per_source_auto_on_disconnected_graphs_equals_scipy_and_batch_engines(case, backend):
    """Few sources on directed/undirected, weighted/unweighted graphs with several components
    (and an isolated source): ``auto`` takes the per-source path; its stored rows are scipy's
    distances and its statistics equal a batch engine's on the same sources (MS-BFS unweighted,
    Floyd–Warshall weighted, both on the CPU)."""
    from simengine.network.apsp import store_dtype, unreachable_sentinel

    make, (want_cpu, want_gpu) = PER_SOURCE_CASES[case]
    g = make()
    deg = np.diff(g.indptr)
    half = (g.n - 1) // 2                      # vertices of the first and of the last part
    src = np.array([np.argmax(deg[:10]), half + 10 + np.argmax(deg[half + 10:g.n - 1]), g.n - 1])
    store = np.empty((len(src), g.n), store_dtype(g))
    st = PathStatistics.for_graph(g, planned_sources=len(src), bin_width=0.5)
    used = run_sources(g, src, st, "auto", backend=backend, store=store, batch=2)
    assert used == (want_gpu if backend == "cuda" else want_cpu)
    D = csg.shortest_path(g.to_scipy(), directed=g.directed, unweighted=not g.weighted,
                          indices=src)
    assert np.isinf(D).any() and np.isfinite(D[:2]).sum(axis=1).min() > 5
    got = store.astype(np.float64)
    got[store == unreachable_sentinel(store.dtype)] = np.inf
    np.testing.assert_allclose(got, D, rtol=1e-12)
    ref = PathStatistics.for_graph(g, planned_sources=len(src), bin_width=0.5)
    run_sources(g, src, ref, "fw" if g.weighted else "msbfs", backend="cpu")
    if g.weighted:
        sa, sb = st.state(), ref.state()
        for k in ("done", "row_reach", "col_reach", "hist"):
            np.testing.assert_array_equal(np.trim_zeros(sa[k], "b") if k == "hist" else sa[k],
                                          np.trim_zeros(sb[k], "b") if k == "hist" else sb[k],
                                          err_msg=k)
        for k in ("row_sum", "row_max", "col_sum", "row_harm", "col_harm"):
            np.testing.assert_allclose(sa[k], sb[k], rtol=1e-12, err_msg=k)
    else:
        assert_same_stats(st, ref)


def test_column_accumulation_in_place_equals_two_sum():
    """PathStatistics adds column sums in place (accumulate.py); the result is bit-identical to
    the array form of TwoSum, for add (scalar compensation) and merge (array compensation), and
    integer-valued partials (dobfs on the GPU) leave the compensation untouched."""
    from simengine.network.statistics import ChunkPartial, two_sum

    rng = np.random.default_rng(7)
    n = 1001
    st = PathStatistics(n, False, False, 1.0, False, 6)
    ref_sum, ref_lo, ref_harm, ref_hlo = np.zeros(n), np.zeros(n), np.zeros(n), np.zeros(n)
    ref_reach = np.zeros(n, np.int64)
    for i, scale in enumerate((1.0, 1e12, 1e-9)):
        cs, ch = rng.random(n) * scale, rng.random(n) / 3
        cr = rng.integers(0, 4, n)
        st.add(ChunkPartial(np.array([2 * i, 2 * i + 1]), np.ones(2), np.ones(2, np.int64),
                            np.ones(2), np.ones(2), cs, cr, ch, np.ones(3, np.int64)))
        ref_sum, e = two_sum(ref_sum, cs)
        ref_lo += e + 0.0
        ref_harm, e = two_sum(ref_harm, ch)
        ref_hlo += e + 0.0
        ref_reach += cr
    assert ref_lo.any() and ref_hlo.any()
    other = PathStatistics(n, False, False, 1.0, False, 6)
    oc = rng.random(n) * 1e6
    other.add(ChunkPartial(np.array([100]), np.ones(1), np.ones(1, np.int64), np.ones(1),
                           np.ones(1), oc, np.ones(n, np.int64), oc / 7, np.ones(2, np.int64)))
    other.col_sum_lo[:] = rng.random(n) * 1e-12
    other.col_harm_lo[:] = rng.random(n) * 1e-13
    st.merge(other)
    ref_sum, e = two_sum(ref_sum, other.col_sum)
    ref_lo += e + other.col_sum_lo
    ref_harm, e = two_sum(ref_harm, other.col_harm)
    ref_hlo += e + other.col_harm_lo
    ref_reach += 1
    for got, want in ((st.col_sum, ref_sum), (st.col_sum_lo, ref_lo), (st.col_harm, ref_harm),
                      (st.col_harm_lo, ref_hlo), (st.col_reach, ref_reach)):
        assert np.array_equal(got, want)
    np.testing.assert_array_equal(st.hist, [4, 4, 3])
    ints = PathStatistics(n, False, False, 1.0, False, 6)
    for i in range(2):
        v = rng.integers(0, 50, n).astype(np.float64)
        ints.add(ChunkPartial(np.array([i]), np.ones(1), np.ones(1, np.int64), np.ones(1),
                              np.ones(1), v, np.ones(n, np.int64), v, np.ones(1, np.int64)))
    assert not ints.col_sum_lo.any()
    with pytest.raises(ValueError):
        ints.add(ChunkPartial(np.array([5]), np.ones(1), np.ones(1, np.int64), np.ones(1),
                              np.ones(1), np.ones(n), np.ones(n - 1, np.int64), np.ones(n),
                              np.ones(1, np.int64)))


@pytest.mark.parametrize("directed", [False, True])
def test_dobfs_gpu_levels_and_columns_equal_msbfs(directed):
    """The GPU dobfs takes its row statistics and histogram from the level counts and its column
    sums from one pass over the batch: equal to the CPU MS-BFS on a disconnected graph whose size
    is not a multiple of the block, with repeated batches (buffers reused) and a store."""
    g = _components_graph(77, 3, 2, directed, None, 11)
    src = np.array([76, 0, 40, 5, 60])              # 76 is isolated
    a = PathStatistics.for_graph(g, planned_sources=len(src))
    run_sources(g, src, a, "dobfs", backend="cuda", batch=2)
    b, _ = _stats(g, src, "msbfs")
    assert_same_stats(a, b)
    np.testing.assert_array_equal(a.hist, b.hist[:len(a.hist)])
    c = PathStatistics.for_graph(g, planned_sources=len(src))    # cached buffers, other batch,
    run_sources(g, src, c, "dobfs", backend="cuda", batch=3, persistent=False)  # launch per level
    assert_same_stats(c, b)


ONE_LAUNCH_GRAPHS = {
    "gnm_directed": lambda: gen.erdos_renyi_gnm(70, 170, seed=2, directed=True),
    "grid": lambda: gen.grid((6, 7)),
    "two_components": GRAPHS["two_components"],
}


@pytest.mark.parametrize("name", sorted(ONE_LAUNCH_GRAPHS))
def test_dobfs_gpu_one_launch_equals_launch_per_level(name):
    """The one-launch (cooperative) traversal gives the distances, level counts and pull levels
    of the launch-per-level one, for the default rule, pull-early and push-only; a traversal
    deeper than the level cap falls back to the launch-per-level one."""
    from simengine.network.cuda.dobfs import (UNREACHED, DOBFSBuffers, _prepared, dobfs_row,
                                              dobfs_row_persistent)

    g = ONE_LAUNCH_GRAPHS[name]()
    dg = _prepared(g)
    buf = DOBFSBuffers(g.n, 2)
    pulls = 0
    for alpha, beta in ((14, 24), (1, 10**9), (10**9, 1)):
        for s in (0, g.n - 1):
            want = dobfs_row(dg, s, buf, 0, alpha, beta)
            pulls += want[1]
            want_counts = np.asarray(buf.level_count, np.int64)
            got = dobfs_row_persistent(dg, s, buf, 1, alpha, beta)
            assert got == want, (name, alpha, beta, s)
            np.testing.assert_array_equal(np.asarray(buf.level_count, np.int64), want_counts)
            d = buf.dist.copy_to_host().astype(np.int64)
            assert np.array_equal(d[0], d[1])
            d[d == UNREACHED] = -1
            assert np.array_equal(d[1], scipy_hops(g, s)), (name, alpha, beta, s)
    assert pulls > 0                                # bottom-up levels were exercised
    buf.cap = 3                                     # deeper than 3 levels: the fallback
    assert dobfs_row_persistent(dg, 0, buf, 1) == dobfs_row(dg, 0, buf, 0)
    d = buf.dist.copy_to_host()
    assert np.array_equal(d[0], d[1])


@pytest.mark.parametrize("directed", [False, True])
def test_gpu_auto_runs_bfs_blocks_on_graphs_of_many_levels(directed):
    """On the GPU, ``auto`` runs a thread block per source (``bfs_blocks``) when the probe BFS
    has more than DEEP_LEVELS levels, and says why; its statistics and stored rows equal the
    MS-BFS engine's and scipy's (disconnected: a path plus a separate triangle)."""
    from simengine.network.apsp import store_dtype
    from simengine.network.cuda.brandes import DEEP_LEVELS
    from simengine.network.per_source import should_run

    L = DEEP_LEVELS + 6
    u = list(range(L - 1)) + [L, L + 1, L + 2]
    v = list(range(1, L)) + [L + 1, L + 2, L]
    g = CSRGraph.from_edges(L + 3, u, v, directed=directed)
    p = choose(g, "auto", "cuda", num_sources=g.n)
    assert p.algorithm == "bfs_blocks" and "levels" in p.reason
    assert should_run(g, g.n, "cuda")[0] == "bfs_blocks"
    assert should_run(g, g.n, "cpu") is None
    assert choose(g, "bfs_blocks", "cpu").algorithm == "msbfs"          # GPU only: substituted
    star = CSRGraph.from_edges(20, [0] * 19, list(range(1, 20)), directed=directed)
    assert choose(star, "auto", "cuda", num_sources=20).algorithm == "msbfs"
    src = np.arange(g.n)[::-1].copy()
    store = np.empty((g.n, g.n), store_dtype(g))
    st = PathStatistics.for_graph(g, planned_sources=g.n)
    assert run_sources(g, src, st, "auto", backend="cuda", store=store, batch=5) == "bfs_blocks"
    ref, _ = _stats(g, src, "msbfs")
    assert_same_stats(st, ref)
    r, q = st.results(), ref.results()
    for k in ("mean_distance", "diameter", "radius", "efficiency", "connected"):
        assert r[k] == q[k], k
    for i in (0, 3, g.n - 1):
        want = scipy_hops(g, src[i])
        got = store[i].astype(np.int64)
        got[got == np.iinfo(store.dtype).max] = -1
        assert np.array_equal(got, want)
