"""Backend registry of the network engine: one vocabulary, plans with reasons, no silent
substitution, explicit devices, per-device caches, the CPU Floyd–Warshall computed once."""
import pickle
import warnings

import numpy as np
import pytest
from numba import cuda

from conftest import run_cli
from simengine.config import schema
from simengine.errors import UserError
from simengine.network import algorithms, backends
from simengine.network import generators as gen
from simengine.network.apsp import run_sources
from simengine.network.backends import AlgorithmSubstitution, can_run, choose, get_backend
from simengine.network.graph import CSRGraph
from simengine.network.statistics import PathStatistics

HAS_CUDA = cuda.is_available()


def _weighted(n=40, seed=1):
    return gen.random_weighted(n, 4, seed=seed)


def test_one_vocabulary():
    lit = schema.MetricsSpec.model_fields["algorithm"].annotation.__args__
    assert tuple(lit) == algorithms.NAMES
    for name in algorithms.NAMES:
        a = algorithms.canonical(name)
        assert a == "auto" or a in algorithms.ALGORITHMS
    assert algorithms.canonical("Floyd_Warshall") == "fw"
    assert algorithms.canonical("near_far") == "nearfar"
    with pytest.raises(UserError, match="expected one of"):
        algorithms.canonical("sssp")
    runs = set(get_backend("cpu").runs) | set(backends._BACKENDS["cuda"].runs)
    assert runs == set(algorithms.ALGORITHMS)


def test_plan_auto_and_reasons():
    g = gen.ring_lattice(30, 4)
    p = choose(g, "auto", "cpu")
    assert (p.backend, p.algorithm, p.requested, p.substituted) == ("cpu", "msbfs", "auto", False)
    assert "auto -> msbfs" in p.note and "unweighted" in p.note
    assert choose(g, "floyd_warshall", "cpu").algorithm == "fw"
    w = _weighted()
    assert choose(w, "auto", "cpu").algorithm == "fw"            # small and dense enough
    assert choose(gen.random_weighted(3000, 4, seed=1), "auto", "cpu").algorithm == "dial"
    with pytest.raises(UserError, match="ignores weights"):
        choose(w, "msbfs", "cpu")
    with pytest.raises(UserError, match="unknown backend"):
        choose(g, "auto", "gpu")


def test_cpu_substitutes_gpu_only_algorithms_and_says_so():
    w = _weighted()
    for name in ("frontier", "frontier_sssp", "nearfar", "near_far"):
        p = choose(w, name, "cpu")
        assert p.substituted and p.algorithm == "dial" and p.requested in ("frontier", "nearfar")
        assert "instead of" in p.note and "same distances" in p.note
    frac = CSRGraph(w.n, w.indptr, w.indices, w.weights + 0.25, False)
    assert choose(frac, "nearfar", "cpu").algorithm == "dijkstra"
    # the substituted run gives the distances of the one it stands for
    a, b = PathStatistics.for_graph(w), PathStatistics.for_graph(w)
    said = []
    assert run_sources(w, np.arange(w.n), a, "nearfar", log=said.append) == "dial"
    assert len(said) == 1 and "cpu runs dial instead of nearfar" in said[0]
    run_sources(w, np.arange(w.n), b, "dial")
    for k, v in a.state().items():
        assert np.array_equal(v, b.state()[k]), k
    with pytest.warns(AlgorithmSubstitution, match="instead of frontier"):
        run_sources(w, [0], PathStatistics.for_graph(w), "frontier")


def test_can_run():
    g, w = gen.ring_lattice(30, 4), _weighted()
    assert can_run(g, "msbfs", "cpu") and can_run(g, "auto", "cpu") and can_run(w, "dial", "cpu")
    assert not can_run(w, "msbfs", "cpu")
    assert not can_run(w, "nearfar", "cpu")           # runs, but only by substituting
    assert "no nearfar" in get_backend("cpu").why_not(w, "nearfar")
    frac = CSRGraph(w.n, w.indptr, w.indices, w.weights + 0.25, False)
    assert not can_run(frac, "dial", "cpu") and can_run(frac, "dijkstra", "cpu")
    if HAS_CUDA:
        assert can_run(w, "frontier", "cuda") and can_run(w, "fw", "cuda")
        assert not can_run(w, "dijkstra", "cuda") and not can_run(w, "dial", "cuda")


def test_cpu_backend_has_no_devices():
    g = gen.ring_lattice(20, 2)
    with pytest.raises(ValueError, match="no devices"):
        run_sources(g, [0], PathStatistics.for_graph(g), device=0)
    assert get_backend("cpu").device_count() == 0


def test_cpu_floyd_warshall_runs_once_per_graph(monkeypatch):
    from simengine.network.cpu import floyd_warshall as fw_mod

    calls = []
    real = fw_mod.floyd_warshall
    monkeypatch.setattr(fw_mod, "floyd_warshall", lambda g, *a: calls.append(1) or real(g, *a))
    w = _weighted(50)
    st = PathStatistics.for_graph(w)
    for lo in range(0, w.n, 10):                      # five calls, like five checkpoint chunks
        run_sources(w, np.arange(lo, lo + 10), st, "fw", batch=4)
    assert len(calls) == 1
    ref = PathStatistics.for_graph(w)
    run_sources(w, np.arange(w.n), ref, "dijkstra")
    assert np.array_equal(st.row_sum, ref.row_sum) and np.array_equal(st.hist, ref.hist)
    w.weights = w.weights * 2                         # new weights array: closure recomputed
    run_sources(w, [0], PathStatistics.for_graph(w), "fw")
    assert len(calls) == 2
    # engine caches stay in the process that made them
    back = pickle.loads(pickle.dumps(w))
    assert not [k for k in back.__dict__ if k.startswith("_simengine_")]
    assert back.content_hash() == w.content_hash()


@pytest.mark.skipif(not HAS_CUDA, reason="numba.cuda is not available")
def test_cuda_device_argument_progress_and_per_device_cache():
    from simengine.network import cuda as ncuda

    g = gen.ring_lattice(24, 4)
    seen = []
    st = PathStatistics.for_graph(g)
    assert run_sources(g, np.arange(g.n), st, "bfs", backend="cuda", device=0, batch=8,
                       progress=seen.append) == "bfs"
    assert seen == [8, 16, 24]                        # progress reaches the CUDA engine
    cache = g.__dict__["_simengine_cuda_cache"]
    assert list(cache) == [0] and "graph" in cache[0]
    assert cache[0]["graph"].device == 0
    ref = PathStatistics.for_graph(g)
    run_sources(g, np.arange(g.n), ref, "bfs")
    for k in ("row_sum", "row_reach", "col_reach", "hist"):
        assert np.array_equal(st.state()[k], ref.state()[k]), k
    with pytest.raises(ValueError, match="does not exist"):
        run_sources(g, [0], PathStatistics.for_graph(g), "bfs", backend="cuda",
                    device=ncuda.device_count())
    ncuda.clear_cache(g, 0)
    assert g.__dict__["_simengine_cuda_cache"] == {}


@pytest.mark.skipif(not HAS_CUDA, reason="numba.cuda is not available")
def test_cuda_substitutes_dijkstra_and_says_so():
    w = _weighted(20)
    p = choose(w, "dijkstra", "cuda")
    assert p.substituted and p.algorithm == "frontier" and "same distances" in p.reason
    said = []
    a = PathStatistics.for_graph(w)
    assert run_sources(w, np.arange(8), a, "dial", backend="cuda", log=said.append) == "frontier"
    assert said and "cuda runs frontier instead of dial" in said[0]
    with warnings.catch_warnings():
        warnings.simplefilter("error")                # an exact request substitutes nothing
        run_sources(w, np.arange(8), PathStatistics.for_graph(w), "frontier", backend="cuda")


def test_runner_logs_the_substitution(tmp_path):
    scen = tmp_path / "w.yaml"
    scen.write_text("""\
kind: network
name: w
graph:
  generator: {type: random_weighted, n: 60, avg_degree: 4, seed: 1}
  weights: {type: uniform_int, low: 1, high: 9, seed: 2}
metrics: {algorithm: near_far, statistics: [mean_distance]}
solver: {backend: cpu}
""")
    out = tmp_path / "w.h5"
    r = run_cli("run", scen, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "cpu runs dial instead of nearfar" in r.stderr
