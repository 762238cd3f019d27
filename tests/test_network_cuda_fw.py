"""Min-plus Floyd–Warshall on the GPU (simengine.network.cuda.floyd_warshall) against scipy.

Under the CUDA simulator the tiles are 8 wide (n = 37 and 70 are not multiples); on a GPU the
production tiles (128; 64 for float64) run on n = 300 and 600."""
import numpy as np
import pytest
import scipy.sparse as sp
from scipy.sparse.csgraph import csgraph_from_dense, floyd_warshall as scipy_fw

from simengine.network.cuda import simulator
from simengine.network.graph import CSRGraph

SIM = simulator()
SIZES = (37, 70) if SIM else (300, 600)


def _graph(n, density, directed, weights, seed):
    """Random graph: ``weights`` = 'int0' (0..3, many zeros and ties), 'int' (1..9), 'real'."""
    rng = np.random.default_rng(seed)
    A = rng.random((n, n)) < density
    np.fill_diagonal(A, False)
    if not directed:
        A = np.triu(A, 1)
    r, c = np.nonzero(A)
    if weights == "int0":
        w = rng.integers(0, 4, len(r)).astype(float)
    elif weights == "int":
        w = rng.integers(1, 10, len(r)).astype(float)
    else:
        w = rng.uniform(0.5, 2.0, len(r))
    if not directed:
        r, c, w = np.concatenate([r, c]), np.concatenate([c, r]), np.concatenate([w, w])
    M = sp.csr_matrix((w, (r, c)), shape=(n, n))
    M.sort_indices()
    return CSRGraph(n, M.indptr.astype(np.int64), M.indices.astype(np.int32), M.data.copy(),
                    directed)


def _reference(g):
    D = np.full((g.n, g.n), np.inf)
    s, t = g.arcs()
    D[s, t] = g.weights
    np.fill_diagonal(D, 0.0)
    return scipy_fw(csgraph_from_dense(D, null_value=np.inf), directed=g.directed)


def _check_paths(g, D, P, rtol=1e-12, step=None):
    """Every reachable pair's path rebuilt from P (rows 0, step, 2·step, ...; default about 12
    rows) has D's length (``rtol``: float32 sums) and uses arcs of g, with no cycle."""
    W = {}
    for u, v, w in zip(*g.arcs(), g.weights):
        W[(u, v)] = min(w, W.get((u, v), np.inf))
    n = g.n
    assert np.all(P[np.arange(n), np.arange(n)] == -1)
    assert np.all(P[~np.isfinite(D)] == -1)
    for i in range(0, n, step or max(1, n // 12)):
        for j in range(n):
            if i == j or not np.isfinite(D[i, j]):
                continue
            length, v, hops = 0.0, j, 0
            while v != i:
                u = P[i, v]
                assert u >= 0 and (u, v) in W, (i, j, u, v)
                length += W[(u, v)]
                v = u
                hops += 1
                assert hops < n, "predecessor cycle"
            assert np.isclose(length, D[i, j], rtol=rtol, atol=0), (i, j)


# (weights, directed, density, n, predecessor mode)
CASES = [("int0", True, 0.08, SIZES[0], "inline"), ("int", False, 0.05, SIZES[0], "recover"),
         ("real", True, 0.3, SIZES[0], "inline"), ("int0", False, 0.03, SIZES[1], "recover")]


@pytest.mark.parametrize("weights,directed,density,n,mode", CASES)
def test_distances_and_predecessors_match_scipy(weights, directed, density, n, mode):
    from simengine.network.cuda.floyd_warshall import choose_dtype, floyd_warshall

    g = _graph(n, density, directed, weights, seed=n)
    ref = _reference(g)
    D2, P = floyd_warshall(g, predecessors=mode)
    D = floyd_warshall(g) if n == SIZES[0] else D2
    if weights == "real":
        assert choose_dtype(g) == np.float64
        np.testing.assert_allclose(D, ref, rtol=1e-12)
    else:
        assert np.array_equal(D, ref)
    assert np.array_equal(D2, D)
    assert P.dtype == np.int32 and P.shape == (n, n)
    _check_paths(g, D2, P)


@pytest.mark.parametrize("dtype", ["int32", "float64"])
def test_every_distance_type_is_exact_on_integer_weights(dtype):
    from simengine.network.cuda.floyd_warshall import floyd_warshall

    g = _graph(SIZES[0], 0.1, True, "int0", seed=5)
    ref = _reference(g)
    D, P = floyd_warshall(g, predecessors=True, dtype=dtype)
    assert np.array_equal(D, ref)
    _check_paths(g, D, P)


def test_float32_on_real_weights_is_close():
    from simengine.network.cuda.floyd_warshall import floyd_warshall

    g = _graph(SIZES[0], 0.2, False, "real", seed=3)
    np.testing.assert_allclose(floyd_warshall(g, dtype="float32"), _reference(g), rtol=1e-5)


@pytest.mark.skipif(SIM, reason="DPX needs a GPU of compute capability >= 9.0")
def test_dpx_path_matches_plain_int32():
    from numba import cuda
    from simengine.network.cuda.floyd_warshall import floyd_warshall

    if cuda.get_current_device().compute_capability < (9, 0):
        pytest.skip("no DPX before sm_90")
    g = _graph(SIZES[1], 0.05, True, "int", seed=9)
    assert np.array_equal(floyd_warshall(g, dtype="int32", dpx=True), _reference(g))


def test_transitive_closure_is_reachability():
    from simengine.network.cuda.floyd_warshall import transitive_closure

    g = _graph(SIZES[0], 0.03, True, "int", seed=11)
    R = transitive_closure(g)
    assert R.dtype == bool and R.shape == (g.n, g.n)
    assert np.array_equal(R, np.isfinite(_reference(g)))


def test_too_large_is_refused_with_the_estimate(monkeypatch):
    from simengine.errors import UserError
    from simengine.network.cuda import floyd_warshall as fw

    monkeypatch.setattr(fw, "simulator", lambda: False)

    class Ctx:
        def get_memory_info(self):
            return 1 << 20, 1 << 30

    monkeypatch.setattr(fw.cuda, "current_context", lambda: Ctx())
    with pytest.raises(UserError, match="needs 4.0 GiB|needs 4 GiB|GiB of GPU memory"):
        fw.check_memory(32768, np.float32, False, 128)
    assert fw.matrix_bytes(32768, np.float32, True) == 32768 * 32768 * 8


def test_engine_rows_equal_cpu_engine():
    """The engine's fw path (cached matrix, float32-exact for integer weights) gives the CPU
    engine's statistics and stored rows."""
    from simengine.network.apsp import run_sources, store_dtype
    from simengine.network.statistics import PathStatistics

    g = _graph(SIZES[0], 0.1, False, "int", seed=2)
    src = np.arange(0, g.n, 3, dtype=np.int64)
    out = {}
    for backend, alg in (("cuda", "fw"), ("cpu", "dijkstra")):
        st = PathStatistics.for_graph(g, planned_sources=len(src))
        store = np.empty((len(src), g.n), store_dtype(g))
        run_sources(g, src, st, alg, backend=backend, store=store)
        out[backend] = (st.state(), store)
    assert np.array_equal(out["cuda"][1], out["cpu"][1])
    for k in ("row_reach", "col_reach", "hist", "row_sum", "col_sum", "row_max"):
        assert np.array_equal(out["cuda"][0][k], out["cpu"][0][k]), k


def test_kernel_note_names_the_kernels_and_why():
    """The start-up log's Floyd–Warshall line names the distance type and the kernels; where the
    CUDA C++ kernels cannot run it says why (under the simulator: numba kernels only)."""
    from simengine.network.cuda import minplus_nvrtc
    from simengine.network.cuda.floyd_warshall import choose_dtype, kernel_note

    g = _graph(20, 0.3, True, "int", 5)
    note = kernel_note(g)
    assert choose_dtype(g).name in note
    if minplus_nvrtc.available():
        assert note.startswith("CUDA C++ min-plus")
    else:
        assert note.startswith("numba min-plus") and minplus_nvrtc.unavailable_reason() in note
        assert minplus_nvrtc.unavailable_reason()


def test_rounds_stop_when_the_run_asks_and_run_on_when_it_does_not():
    """A run's stop check (simengine.network.interrupt) is asked after each synchronised round
    (numba kernels under the simulator; the CUDA C++ look-ahead rounds on a GPU with CuPy)."""
    from simengine.network import interrupt
    from simengine.network.cuda.floyd_warshall import floyd_warshall

    g = _graph(SIZES[0], 0.1, True, "int", seed=4)
    asked = []
    with interrupt.stop_check(lambda: asked.append(1) or False):
        assert np.array_equal(floyd_warshall(g), _reference(g))
    assert len(asked) >= 2                          # every round but the last
    with interrupt.stop_check(lambda: True):
        with pytest.raises(interrupt.RoundsStopped) as ei:
            floyd_warshall(g)
    assert ei.value.done == 1 and ei.value.total == len(asked) + 1
