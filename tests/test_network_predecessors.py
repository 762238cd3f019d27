"""``/predecessors`` and ``simengine.shortest_path``: every predecessor is on a shortest path
(d[p] + w(p, v) == d[v], against scipy's distances), paths rebuild to the distance, the result
depends on the distances only (every algorithm and the GPU kernels under the simulator give the
same rows), Floyd–Warshall is routed through the plan, runs checkpoint and resume, memory
estimates count the matrix."""
import networkx as nx
import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from simengine.network.apsp import run_sources, store_dtype
from simengine.network.graph import CSRGraph
from simengine.network.statistics import PathStatistics, unreachable_sentinel

CPU_ALGS = {False: ["msbfs", "bfs", "dobfs", "dijkstra", "dial"], True: ["dijkstra", "dial"]}


def random_graph(directed, weights, seed=0, n=30, m=50):
    """Disconnected (the last 3 vertices isolated), with repeated and zero weights when asked."""
    rng = np.random.default_rng(seed)
    src, dst = rng.integers(0, n - 3, m), rng.integers(0, n - 3, m)
    w = {"none": None, "int": rng.integers(1, 5, m).astype(float),
         "zero": rng.integers(0, 3, m).astype(float),
         "float": rng.uniform(0.1, 2.0, m)}[weights]
    return CSRGraph.from_edges(n, src, dst, w, directed)


def predecessors(g, alg, backend="cpu", sources=None, log=None):
    S = np.arange(g.n) if sources is None else np.asarray(sources)
    store = np.empty((len(S), g.n), store_dtype(g))
    P = np.empty((len(S), g.n), np.int32)
    run_sources(g, S, PathStatistics.for_graph(g), alg, backend, store=store, predecessors=P,
                log=log)
    return store, P


def check_rows(g, S, P):
    """Each predecessor is tight against scipy's distances; following it rebuilds the distance."""
    A = g.to_scipy()
    W = A.toarray()
    D = csg.shortest_path(A, directed=g.directed, unweighted=not g.weighted)
    for i, s in enumerate(S):
        for v in range(g.n):
            p = P[i, v]
            if v == s or not np.isfinite(D[s, v]):
                assert p == -1, (s, v)
                continue
            assert D[s, p] + (W[p, v] if g.weighted else 1) == D[s, v], (s, v)
            x, total, steps = v, 0.0, 0
            while x != s:
                q = P[i, x]
                total += W[q, x] if g.weighted else 1
                x, steps = q, steps + 1
                assert steps < g.n
            assert total == pytest.approx(D[s, v], rel=1e-12), (s, v)


@pytest.mark.parametrize("directed", [False, True], ids=["undirected", "directed"])
@pytest.mark.parametrize("weights", ["none", "int", "zero", "float"])
def test_predecessors_are_shortest_and_the_same_for_every_algorithm(directed, weights):
    g = random_graph(directed, weights, seed=3 if directed else 4)
    algs = CPU_ALGS[g.weighted] if weights != "float" else ["dijkstra"]
    rows = [predecessors(g, a)[1] for a in algs]
    check_rows(g, np.arange(g.n), rows[0])
    for a, P in zip(algs[1:], rows[1:]):
        np.testing.assert_array_equal(P, rows[0], err_msg=a)
    np.testing.assert_array_equal(predecessors(g, algs[0])[1], rows[0])   # deterministic


def test_zero_weight_cycles_give_no_predecessor_cycles():
    # s -> x (1), x -> b (0), a <-> b (0): a and b at distance 1, a's only tight in-neighbour is b
    g = CSRGraph.from_edges(4, [0, 3, 1, 2], [3, 2, 2, 1], [1.0, 0.0, 0.0, 0.0], directed=True)
    _, P = predecessors(g, "dial", sources=[0])
    assert P[0].tolist() == [-1, 2, 3, 0]
    check_rows(g, [0], P)


@pytest.mark.parametrize("weights", ["none", "int", "float"])
def test_gpu_predecessors_equal_the_cpu_rows(weights):
    g = random_graph(True, weights, seed=5, n=14, m=26)
    S = np.array([0, 3, 7, 13])
    _, ref = predecessors(g, "dijkstra" if g.weighted else "bfs", sources=S)
    for alg in (["frontier", "nearfar"] if g.weighted else ["bfs", "dobfs", "msbfs"]):
        _, P = predecessors(g, alg, "cuda", sources=S)
        np.testing.assert_array_equal(P, ref, err_msg=alg)


@pytest.mark.parametrize("backend,alg", [("cpu", "dijkstra"), ("cuda", "frontier")])
def test_floyd_warshall_on_real_weights_is_routed_through_the_plan(backend, alg):
    g = random_graph(False, "float", seed=1, n=10, m=20)
    said = []
    _, P = predecessors(g, "fw", backend, sources=[0, 4], log=said.append)
    assert len(said) == 1 and f"runs {alg} instead of fw" in said[0]
    assert "store_predecessors" in said[0]
    check_rows(g, [0, 4], P)


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
@pytest.mark.parametrize("weights", ["int", "zero"])
def test_floyd_warshall_on_integer_weights_gives_the_rows_of_every_algorithm(backend, weights):
    """Exact distances: fw keeps running (no substitution) and its rows give Dijkstra's
    predecessors."""
    g = random_graph(True, weights, seed=2, n=14, m=30)
    S = [0, 5, 13]
    said = []
    _, P = predecessors(g, "fw", backend, sources=S, log=said.append)
    assert said == []
    np.testing.assert_array_equal(P, predecessors(g, "dijkstra", sources=S)[1])
    check_rows(g, S, P)


def test_run_sources_checks_the_arrays():
    g = random_graph(False, "none", n=8, m=10)
    st = PathStatistics.for_graph(g)
    with pytest.raises(ValueError, match="store="):
        run_sources(g, [0], st, "bfs", predecessors=np.empty((1, 8), np.int32))
    with pytest.raises(ValueError, match="int32"):
        run_sources(g, [0], st, "bfs", store=np.empty((1, 8), np.uint8),
                    predecessors=np.empty((1, 8), np.int64))


def _scenario(path, labels=True):
    """Edge list with string labels and an unreachable pair (a directed, weighted graph)."""
    path.write_text("a b 2\nb c 1\na c 5\nc d 1\nd a 1\ne f 1\nb d 3\n")
    return {"kind": "network", "name": "paths",
            "graph": {"file": {"path": str(path)}, "directed": True, "weights": "file"},
            "metrics": {"sources": "all", "algorithm": "dijkstra", "store_distances": True,
                        "store_predecessors": labels},
            "output": {"checkpoint_every": 2}, "solver": {"backend": "cpu", "batch": 1}}


def test_run_checkpoint_resume_and_shortest_path(tmp_path, monkeypatch):
    import signal

    import h5py
    import simengine
    from simengine.errors import UserError
    from simengine.control.network_job import NetworkJob

    scen = _scenario(tmp_path / "g.txt")
    ref = simengine.run(scen, tmp_path / "ref.h5")
    at_stop = NetworkJob.at_stop

    def interrupt_once(self, done, out, elapsed):
        at_stop(self, done, out, elapsed)
        if done == 2:
            signal.raise_signal(signal.SIGINT)
    monkeypatch.setattr(NetworkJob, "at_stop", interrupt_once)
    with pytest.raises(BaseException, match="interrupted after 2"):
        simengine.run(scen, tmp_path / "cut.h5")
    with h5py.File(tmp_path / "cut.h5") as f:
        assert f["predecessors"].shape == (2, 6)
    monkeypatch.setattr(NetworkJob, "at_stop", at_stop)
    out = simengine.run(scen, tmp_path / "cut.h5", resume=True)
    with h5py.File(ref) as a, h5py.File(out) as b:
        np.testing.assert_array_equal(a["predecessors"][()], b["predecessors"][()])
        assert b["predecessors"].dtype == np.int32 and b["predecessors"].attrs["none"] == -1
        ids = [x.decode() for x in b["vertex/id"][()]]
        row_a = b["predecessors"][list(b["sources"][()]).index(ids.index("a"))]
        assert [ids[p] if p >= 0 else None for p in row_a] == [None, "a", "b", "c", None, None]
    assert simengine.shortest_path(out, "a", "d") == ["a", "b", "c", "d"]
    assert simengine.shortest_path(out, "d", "c") == ["d", "a", "b", "c"]
    with simengine.open(out) as r:
        assert simengine.shortest_path(r, "a", "a") == ["a"]
    for args, what in [(("a", "e"), "no path"), (("z", "a"), "not a vertex id")]:
        with pytest.raises(UserError, match=what):
            simengine.shortest_path(out, *args)
    plain = simengine.run(_scenario(tmp_path / "h.txt", labels=False), tmp_path / "plain.h5")
    with pytest.raises(UserError, match="store_predecessors"):
        simengine.shortest_path(plain, "a", "d")


def test_predecessors_need_distances_and_are_counted_in_memory(tmp_path, monkeypatch):
    import simengine
    from simengine import resources
    from simengine.config import scenario_from_text
    from simengine.errors import UserError

    text = ("kind: network\nname: p\ngraph: {generator: {type: gnm, n: 600, m: 1800, seed: 1}}\n"
            "metrics: {sources: all, store_distances: true, store_predecessors: true}\n"
            "output: {checkpoint_every: 600}\n")
    implied = simengine.load(text.replace("store_distances: true, ", "")).spec.metrics
    assert implied.store_distances and "implies metrics.store_distances" in implied.implied_note()
    sc = scenario_from_text(text, str(tmp_path / "p.yaml"))
    item = next(i for i in resources.estimate(sc).items if i.key == "metrics.store_predecessors")
    assert item.host >= 2 * 600 * 600 * 4
    monkeypatch.setenv(resources.HOST_LIMIT_ENV, "3000000")
    with pytest.raises(UserError, match="metrics.store_predecessors"):
        resources.check(sc)
    # a dense integer-weighted graph: auto runs Floyd-Warshall, with predecessors too (its exact
    # rows give them; real weights, from a file, would run a per-source engine)
    dense = text.replace("n: 600, m: 1800, seed: 1}", "n: 100, m: 2000, seed: 1, "
                         "weights: {type: uniform_int, low: 1, high: 9, seed: 1}}")
    whats = lambda t: [i.what for i in resources.estimate(  # noqa: E731
        scenario_from_text(t, str(tmp_path / "d.yaml"))).items]
    assert any("Floyd" in w for w in whats(dense.replace(", store_predecessors: true", "")))
    assert any("Floyd" in w for w in whats(dense))


def test_predecessors_on_a_real_weighted_graph():
    g = CSRGraph.from_networkx(nx.les_miserables_graph())   # co-appearance counts as lengths
    S = np.arange(0, g.n, 7)
    _, P = predecessors(g, "dijkstra", sources=S)
    check_rows(g, S, P)
    _, Q = predecessors(g, "dial", sources=S)
    np.testing.assert_array_equal(P, Q)
