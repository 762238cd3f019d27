"""The CUDA C++ min-plus kernels (simengine/network/cuda/minplus_tiles.cu through
minplus_nvrtc.py) against scipy, on a GPU that runs them (compute capability >= 9.0 and CuPy);
the numba twins are tested in test_network_cuda_fw.py (also under the simulator).

n = 300 (3 rounds of 128, padded) and 700 (6 rounds: every phase, panels with several blocks);
dense and sparse, directed and undirected, weights 0–3 (zeros and ties), 1–9 and real."""
import numpy as np
import pytest

from test_network_cuda_fw import _check_paths, _graph, _reference


def _available():
    from simengine.network.cuda import minplus_nvrtc

    return minplus_nvrtc.available()


pytestmark = pytest.mark.skipif(not _available(),
                                reason="the CUDA C++ kernels need a GPU of compute capability "
                                       ">= 9.0 and CuPy (the numba kernels run everywhere else)")

# (weights, directed, density, n, dtype, dpx)
CASES = [("int0", True, 0.08, 300, "int32", True), ("int0", False, 0.01, 700, "int32", True),
         ("int", True, 0.3, 300, "float32", None), ("int", False, 0.004, 700, "float32", None),
         ("int", True, 0.02, 700, "int32", False), ("int0", True, 0.5, 300, "float32", None)]


@pytest.mark.parametrize("weights,directed,density,n,dtype,dpx", CASES)
def test_cxx_distances_and_predecessors_match_scipy(weights, directed, density, n, dtype, dpx):
    from simengine.network.cuda import floyd_warshall as fw

    g = _graph(n, density, directed, weights, seed=n + int(100 * density))
    ref = _reference(g)
    D = fw.floyd_warshall(g, dtype=dtype, dpx=dpx)
    assert fw.last_kernel.startswith("CUDA C++")
    assert np.array_equal(D, ref)
    D2, P = fw.floyd_warshall(g, predecessors=True, dtype=dtype)
    assert fw.last_kernel.startswith("CUDA C++")
    assert np.array_equal(D2, ref)
    _check_paths(g, D2, P)


@pytest.mark.parametrize("float_mode", ["chunk-search", "select"])
def test_cxx_float_and_select_predecessors(monkeypatch, float_mode):
    """float32 real weights with predecessors (chunk record and search; compare and select), and
    int32 beyond the packed range (select)."""
    from simengine.network.cuda import floyd_warshall as fw, minplus_nvrtc as mn

    monkeypatch.setattr(mn, "FLOAT_PRED_MODE", float_mode)
    g = _graph(700, 0.02, True, "real", seed=4)
    ref = _reference(g)
    D, P = fw.floyd_warshall(g, predecessors=True, dtype="float32")
    assert f"mode {float_mode}" in fw.last_kernel
    np.testing.assert_allclose(D, ref, rtol=1e-5)
    assert np.array_equal(fw.floyd_warshall(g, dtype="float32"), D)
    W = {(u, v): w for u, v, w in zip(*g.arcs(), g.weights)}
    for i in range(0, g.n, 50):            # float32 sums: the last arc and its length
        assert P[i, i] == -1
        for j in np.nonzero(np.isfinite(D[i]))[0]:
            if j != i:
                u = int(P[i, j])
                assert (u, int(j)) in W
                assert np.isclose(D[i, u] + W[(u, int(j))], D[i, j], rtol=1e-5)
    gi = _graph(300, 0.05, False, "int", seed=6)
    gi.weights[:] = gi.weights * 40000     # (n-1)·max w >= 2^22: no packing
    Dr, Pr = fw.floyd_warshall(gi, predecessors=True, dtype="int32")
    assert "mode select" in fw.last_kernel
    assert np.array_equal(Dr, _reference(gi))
    _check_paths(gi, Dr, Pr)
    assert mn.mode_for(np.int32, True, True, mn.PACK_LIMIT - 1) == "int-packed"


def test_cxx_transitive_closure_and_engine_rows():
    from simengine.network.cuda import floyd_warshall as fw

    g = _graph(300, 0.01, True, "int", seed=12)
    assert np.array_equal(fw.transitive_closure(g), np.isfinite(_reference(g)))
    assert fw.last_kernel.startswith("CUDA C++")


def test_cxx_lookahead_and_plain_rounds_agree(monkeypatch):
    """The two-stream look-ahead schedule and the plain one give scipy's distances."""
    from simengine.network.cuda import floyd_warshall as fw, minplus_nvrtc as mn

    g = _graph(700, 0.01, True, "int", seed=21)
    ref = _reference(g)
    for la in (True, False):
        monkeypatch.setattr(mn, "LOOKAHEAD", la)
        D, P = fw.floyd_warshall(g, predecessors=True, dtype="int32")
        assert fw.last_kernel.endswith("look-ahead") == la
        assert np.array_equal(D, ref)
        _check_paths(g, D, P)
        assert np.array_equal(fw.floyd_warshall(g, dtype="float32"), ref)
