"""Big inputs: memory estimates and refusals before allocation (exit 2, one line, no file left),
the graph.weights default, and input validated before the output file is created."""
import h5py
import numpy as np
import pytest
import scipy.sparse.csgraph as csg

from conftest import run_cli
from simengine import resources
from simengine.config import scenario_from_text
from simengine.errors import UserError
from simengine.network import generators as gen


def refused(tmp_path, text, *extra, name="s", names=None):
    """Run a scenario that must be refused: exit 2, one line naming the scenario file (or
    ``names``, the input file at fault), no output."""
    scen = tmp_path / f"{name}.yaml"
    scen.write_text(text)
    out = tmp_path / f"{name}.h5"
    r = run_cli("run", scen, "-o", out, *extra, cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert (names or scen.name) in lines[0]
    assert not out.exists() and not list(tmp_path.glob("*.h5*")), list(tmp_path.iterdir())
    return lines[0]


FIELD_4096 = "kind: field\nname: big\ngrid: {shape: [4096, 4096, 4096]}\ntime: {dt: 0.001, steps: 1}\n"


def test_refuses_huge_field_before_allocating(tmp_path):
    # far beyond any machine: refused while the scenario is checked (physical memory) or by the
    # resource estimate, either way one line naming grid.shape
    msg = refused(tmp_path, FIELD_4096)
    assert "grid.shape" in msg and "memory" in msg
    r = run_cli("validate", tmp_path / "s.yaml")
    assert r.returncode == 2 and "grid.shape" in r.stderr


def test_refuses_field_above_available_memory(tmp_path):
    # a grid whose estimate is 1.2 × this machine's available memory: the resource check
    # refuses it (and says how to override), --force / resources.check: false let validate pass
    avail, _ = resources.host_available()
    base = "kind: field\nname: a\ngrid: {shape: [N, 1024]}\ntime: {dt: 0.001, steps: 1}\n"
    per_row = resources.estimate(scenario_from_text(base.replace("N", "8"))).host / 8
    rows = int(1.2 * avail / per_row)
    text = base.replace("N", str(rows))
    msg = refused(tmp_path, text)
    assert "grid.shape" in msg and "available" in msg and "--force" in msg
    assert run_cli("validate", tmp_path / "s.yaml", "--force").returncode == 0
    (tmp_path / "off.yaml").write_text(text + "resources: {check: false}\n")
    r = run_cli("validate", tmp_path / "off.yaml")
    assert r.returncode == 0 and "memory: host about" in r.stdout


def test_refuses_absurd_graph_header(tmp_path):
    (tmp_path / "g.gr").write_text("c one arc, ten billion vertices\np sp 10000000000 1\na 1 2 3\n")
    msg = refused(tmp_path, "kind: network\nname: d\n"
                            "graph: {file: {path: g.gr, format: dimacs}, weights: file}\n")
    assert "g.gr" in msg or "GiB" in msg


def test_refuses_huge_generated_graph_and_validate_prints_work(tmp_path):
    msg = refused(tmp_path, "kind: network\nname: h\n"
                            "graph: {generator: {type: random_weighted, n: 1000000000, seed: 1}}\n")
    assert "memory" in msg
    (tmp_path / "v.yaml").write_text("kind: network\nname: v\n"
                                     "graph: {generator: {type: random_weighted, n: 10000000, "
                                     "seed: 1}}\n"
                                     "solver: {backend: cpu}\n")   # the line asserted: any machine
    r = run_cli("validate", tmp_path / "v.yaml", "--force")
    assert r.returncode == 0, r.stderr
    assert "60,000,000 arcs, weighted" in r.stdout
    assert ("traversal work 7e+14 vertex and arc visits (10,000,000 sources × (10,000,000 "
            "vertices + 60,000,000 arcs))") in r.stdout
    assert "with dial on cpu" in r.stdout and "assumed" in r.stdout


def test_refuses_stored_distances(tmp_path):
    text = ("kind: network\nname: st\n"
            "graph: {generator: {type: gnm, n: 3000000, m: 3000000, seed: 1}}\n"
            "metrics: {store_distances: true}\noutput: {checkpoint_every: 1000000}\n")
    msg = refused(tmp_path, text)
    assert "metrics.store_distances" in msg


def test_force_and_scenario_key_skip_the_refusal(monkeypatch):
    sc = scenario_from_text("kind: network\nname: f\n"
                            "graph: {generator: {type: gnm, n: 1000, m: 3000, seed: 1}}\n")
    plan = resources.estimate(sc)
    csr = next(i for i in plan.items if "CSR" in i.what)
    assert csr.host == 8 * 1001 + 4 * 6000
    monkeypatch.setattr(resources, "host_available", lambda: (1000, "test limit"))
    with pytest.raises(UserError, match="more than the 1000 B available"):
        resources.check(sc)
    assert resources.check(sc, force=True).host == plan.host
    off = scenario_from_text("kind: network\nname: f\nresources: {check: false}\n"
                             "graph: {generator: {type: gnm, n: 1000, m: 3000, seed: 1}}\n")
    resources.check(off)


def test_estimates_per_backend_precision_and_rank():
    base = "kind: field\nname: f\ngrid: {shape: [100, 200]}\ntime: {dt: 0.01, steps: 1}\n"
    cpu64 = resources.estimate(scenario_from_text(base + "solver: {backend: cpu}\n"))
    cpu32 = resources.estimate(scenario_from_text(
        base + "solver: {backend: cpu, precision: float32}\n"))
    gpu = resources.estimate(scenario_from_text(base + "solver: {backend: cuda}\n"))
    assert cpu64.items[0].host == 3 * 8 * 20000 and cpu32.items[0].host == 3 * 4 * 20000
    assert gpu.items[0].device >= 3 * 8 * 20000 and gpu.items[0].host == 0
    half = resources.estimate(scenario_from_text(base + "solver: {backend: cpu}\n"), ranks=2)
    assert half.items[0].host == 3 * 8 * (10000 + 4 * 200)
    # network: sources split over ranks, stored rows follow
    net = ("kind: network\nname: n\ngraph: {generator: {type: gnm, n: 1000, m: 3000, seed: 1}}\n"
           "metrics: {store_distances: true}\n")
    one = resources.estimate(scenario_from_text(net))
    two = resources.estimate(scenario_from_text(net), ranks=2)
    st1 = next(i for i in one.items if i.key == "metrics.store_distances")
    st2 = next(i for i in two.items if i.key == "metrics.store_distances")
    assert st1.host == 2 * 1000 * 1000 * 2 and st2.host == 2 * 500 * 1000 * 2
    assert one.disk == 1000 * 1000 * 2


def test_host_limit_is_sane():
    avail, src = resources.host_available()
    assert 0 < avail < 1 << 50 and src


# ---------------------------------------------------------------------------- weights
NET = """\
kind: network
name: w
graph:
  generator: {type: random_weighted, n: 300, avg_degree: 4, seed: 2}
WEIGHTS
metrics: {sources: {sample: 5, seed: 1}, store_distances: true}
solver: {backend: cpu}
"""


def _run(tmp_path, weights_line, name):
    scen = tmp_path / f"{name}.yaml"
    scen.write_text(NET.replace("WEIGHTS", weights_line))
    out = tmp_path / f"{name}.h5"
    r = run_cli("run", scen, "-o", out, cwd=tmp_path)
    return r, out


def test_generator_weights_kept_by_default_and_logged(tmp_path):
    g = gen.random_weighted(300, 4, seed=2)
    r, out = _run(tmp_path, "", "default")
    assert r.returncode == 0, r.stderr
    assert "graph.weights not set: using the weights of generator 'random_weighted'" in r.stderr
    with h5py.File(out, "r") as f:
        assert f.attrs["graph_weighted"] and f.attrs["algorithm"] == "dial"
        src, dist = f["sources"][()], f["distances"][()]
    np.testing.assert_array_equal(dist, csg.dijkstra(g.to_scipy(), directed=False, indices=src))
    r, out = _run(tmp_path, "  weights: none", "none")
    assert r.returncode == 0, r.stderr
    assert "graph.weights: none: ignoring the weights of generator 'random_weighted'" in r.stderr
    with h5py.File(out, "r") as f:
        assert not f.attrs["graph_weighted"] and f.attrs["algorithm"] == "dobfs"
        src, dist = f["sources"][()], f["distances"][()]
    hops = csg.shortest_path(g.to_scipy(), unweighted=True, directed=False, indices=src)
    np.testing.assert_array_equal(np.where(np.isfinite(hops), hops, 65535), dist)
    r, out = _run(tmp_path, "  weights: {type: uniform_int, low: 1, high: 2, seed: 1}", "repl")
    assert r.returncode == 0 and "replaces the weights of generator" in r.stderr
    r, out = _run(tmp_path, "  weights: file", "file")
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1
    assert "graph.weights" in r.stderr and "leave graph.weights out" in r.stderr
    assert not out.exists()


def test_unweighted_generator_default_is_unweighted(tmp_path):
    scen = tmp_path / "u.yaml"
    scen.write_text("kind: network\nname: u\ngraph: {generator: {type: gnm, n: 50, m: 100, "
                    "seed: 1}}\nsolver: {backend: cpu}\n")
    r = run_cli("run", scen, "-o", tmp_path / "u.h5", cwd=tmp_path)
    assert r.returncode == 0 and "has no weights, the graph is unweighted" in r.stderr


@pytest.mark.parametrize("value", ["inf", "nan", "-2.5"])
def test_bad_file_weights_fail_before_the_output_exists(tmp_path, value):
    (tmp_path / "g.mtx").write_text("%%MatrixMarket matrix coordinate real general\n3 3 2\n"
                                    f"1 2 1.5\n2 3 {value}\n")
    msg = refused(tmp_path, "kind: network\nname: m\n"
                            "graph: {file: {path: g.mtx, format: mtx}, weights: file}\n",
                  name=f"m_{value.strip('-.')}", names="g.mtx")
    assert "finite" in msg or "negative" in msg
