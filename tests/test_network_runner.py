"""`kind: network` scenarios end to end: statistics vs networkx, HDF5 contract, kill and resume."""
import signal
import subprocess
import sys
import time

import h5py
import networkx as nx
import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from conftest import run_cli
from simengine.network.graph import CSRGraph

BA = """\
kind: network
name: ba-small
graph:
  generator: {type: barabasi_albert, n: N, m: 3, seed: 1}
  directed: false
  weights: WEIGHTS
metrics:
  sources: all
  algorithm: auto
  statistics: [mean_distance, diameter, radius, eccentricity, distance_histogram, closeness,
               harmonic, efficiency, components, mst_weight]
  store_distances: STORE
solver: {backend: cpu}
output: {checkpoint_every: EVERY}
"""


def scenario(tmp_path, n=200, weights="none", store="true", every=64, name="net.yaml"):
    p = tmp_path / name
    p.write_text(BA.replace("N", str(n)).replace("WEIGHTS", weights)
                 .replace("STORE", store).replace("EVERY", str(every)))
    return p


def load_graph(out):
    """Rebuild the graph the run used from its scenario (same generator, same seed)."""
    import yaml
    from simengine.network import generators

    with h5py.File(out, "r") as f:
        sc = yaml.safe_load(f.attrs["scenario"])
    g = generators.generate(sc["graph"]["generator"])
    w = sc["graph"]["weights"]
    if isinstance(w, dict):
        g = generators.random_weights(g, w["low"], w["high"], w["seed"])
    return g


@pytest.mark.parametrize("weights", ["none", "{type: uniform_int, low: 1, high: 10, seed: 3}"])
def test_network_run_matches_networkx(tmp_path, weights):
    scen = scenario(tmp_path, weights=weights)
    out = tmp_path / "net.h5"
    r = run_cli("run", scen, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    g = load_graph(out)
    G = g.to_networkx()
    wkey = "weight" if g.weighted else None
    with h5py.File(out, "r") as f:
        st = {k: f["statistics"][k][()] for k in f["statistics"]}
        ecc = f["vertex/eccentricity"][()]
        clo = f["vertex/closeness"][()]
        har = f["vertex/harmonic"][()]
        dist = f["distances"][()]
        assert f.attrs["complete"] and f.attrs["graph_n"] == g.n
        assert f.attrs["graph_hash"] == g.content_hash()
        hist = f["distance_histogram"][()]
    assert st["mean_distance"] == pytest.approx(nx.average_shortest_path_length(G, weight=wkey), rel=1e-12)
    e = nx.eccentricity(G, weight=wkey)
    np.testing.assert_allclose(ecc, [e[v] for v in range(g.n)])
    assert st["diameter"] == max(e.values()) and st["radius"] == min(e.values())
    c = nx.closeness_centrality(G, distance=wkey)
    np.testing.assert_allclose(clo, [c[v] for v in range(g.n)], rtol=1e-12)
    if not g.weighted:
        h = nx.harmonic_centrality(G)
        np.testing.assert_allclose(har, [h[v] for v in range(g.n)], rtol=1e-12)
        assert st["efficiency"] == pytest.approx(nx.global_efficiency(G), rel=1e-12)
    D = csg.shortest_path(g.to_scipy(), directed=False, unweighted=not g.weighted)
    np.testing.assert_array_equal(dist, D.astype(dist.dtype))
    assert hist.sum() == g.n * (g.n - 1)
    assert st["components"] == 1 and st["unreachable_pairs"] == 0
    if g.weighted:
        T = nx.minimum_spanning_tree(G)
        assert st["mst_weight"] == pytest.approx(T.size(weight="weight"))


def test_sampled_sources_give_estimates(tmp_path):
    scen = scenario(tmp_path, n=400, store="false")
    out = tmp_path / "s.h5"
    r = run_cli("run", scen, "-o", out, "-q", "--set", "metrics.sources={sample: 100, seed: 2}")
    assert r.returncode == 0, r.stderr
    g = load_graph(out)
    exact = nx.average_shortest_path_length(g.to_networkx())
    with h5py.File(out, "r") as f:
        est, se = f["statistics/mean_distance"][()], f["statistics/mean_distance_se"][()]
        assert f["statistics/estimate"][()] and len(f["sources"]) == 100
    assert 0 < se < 0.2 and abs(est - exact) < 5 * se


def test_bad_graph_file_names_file_and_line(tmp_path):
    (tmp_path / "g.txt").write_text("# comment\n0 1\n1 2\n2 x\n")
    scen = tmp_path / "f.yaml"
    scen.write_text("kind: network\nname: f\ngraph: {file: {path: g.txt, format: edgelist}}\n")
    r = run_cli("run", scen, "-o", tmp_path / "f.h5")
    assert r.returncode == 2 and "Traceback" not in r.stderr
    assert "g.txt:4" in r.stderr, r.stderr
    scen.write_text("kind: network\nname: f\ngraph: {file: {path: nothere.txt}}\n")
    r = run_cli("validate", scen)
    assert r.returncode == 2 and "graph.file.path" in r.stderr and "f.yaml:3" in r.stderr


def test_unknown_generator_is_a_user_error(tmp_path):
    scen = tmp_path / "u.yaml"
    scen.write_text("kind: network\nname: u\ngraph: {generator: {type: small_world, n: 10}}\n")
    r = run_cli("run", scen, "-o", tmp_path / "u.h5")
    assert r.returncode == 2 and "small_world" in r.stderr and "Traceback" not in r.stderr


def _done(out):
    try:
        with h5py.File(out, "r") as f:
            return int(f["checkpoint"].attrs["done"])
    except (OSError, KeyError):
        return -1


def _stats(out):
    with h5py.File(out, "r") as f:
        st = {k: f["statistics"][k][()] for k in f["statistics"]
              if k not in ("elapsed", "normalized_time")}
        for k in ("vertex/eccentricity", "vertex/closeness", "vertex/harmonic",
                  "distance_histogram", "distances", "sources"):
            st[k] = f[k][()]
    return st


@pytest.mark.parametrize("sig", [signal.SIGKILL, signal.SIGINT])
def test_network_kill_and_resume_identical(tmp_path, sig):
    n = 5000
    scen = scenario(tmp_path, n=n, store="true", every=256)
    ref = tmp_path / "ref.h5"
    r = run_cli("run", scen, "-o", ref, "-q")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "run.h5"
    proc = subprocess.Popen([sys.executable, "-m", "simengine", "run", str(scen), "-o", str(out),
                             "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while _done(out) < 512 and proc.poll() is None and time.time() - t0 < 300:
        time.sleep(0.005)
    assert proc.poll() is None, "the run finished before it could be killed"
    proc.send_signal(sig)
    _, err = proc.communicate()
    if sig == signal.SIGINT:  # Ctrl-C: stops cleanly after writing a checkpoint
        assert proc.returncode == 130 and "checkpoint written" in err, err
    assert 0 < _done(out) < n
    r = run_cli("run", scen, "-o", out, "--resume", "-q")
    assert r.returncode == 0, r.stderr
    a, b = _stats(ref), _stats(out)
    assert a.keys() == b.keys()
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
