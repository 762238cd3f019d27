"""Graph files through scenarios and the CLI: direction, format, ids, sources, validate, info."""
import gzip

import h5py
import networkx as nx
import numpy as np
import pytest

import simengine
from conftest import run_cli

ARCS = [(1, 2, 1), (2, 3, 1), (3, 4, 1), (4, 5, 1), (1, 3, 5)]      # 5 DIMACS arcs (the issue)


def dimacs_text(arcs=ARCS, n=5):
    return f"c five arcs\np sp {n} {len(arcs)}\n" + "".join(f"a {u} {v} {w}\n" for u, v, w in arcs)


def scenario(tmp_path, graph, metrics="", name="s"):
    p = tmp_path / f"{name}.yaml"
    sources = "" if "sources:" in metrics else "  sources: all\n"  # a duplicate key is an error
    p.write_text(f"kind: network\nname: {name}\ngraph:\n{graph}\nmetrics:\n{sources}"
                 f"{metrics}solver: {{backend: cpu}}\n")
    return p


def run(tmp_path, scen, *extra):
    out = tmp_path / (scen.stem + ".h5")
    r = run_cli("run", scen, "-o", out, "--overwrite", *extra)
    assert r.returncode == 0, r.stderr
    return out, r.stderr


def stats(out):
    with h5py.File(out, "r") as f:
        return {k: f["statistics"][k][()] for k in f["statistics"]}


def reference_mean(G, weight="weight"):
    d = [x for s, row in nx.shortest_path_length(G, weight=weight) for t, x in row.items()
         if t != s]
    return sum(d) / len(d)


def test_dimacs_is_directed_unless_the_scenario_says_otherwise(tmp_path):
    (tmp_path / "g.gr").write_text(dimacs_text())
    G = nx.DiGraph()
    G.add_weighted_edges_from(ARCS)
    scen = scenario(tmp_path, "  file: {path: g.gr}\n  weights: file")
    out, err = run(tmp_path, scen)
    st = stats(out)
    with h5py.File(out, "r") as f:
        assert f.attrs["graph_directed"] and f.attrs["graph_arcs"] == 5
        assert f["vertex/id"][()].tolist() == [1, 2, 3, 4, 5]
    assert st["mean_distance"] == pytest.approx(reference_mean(G), rel=1e-12)
    assert "treating" not in err
    scen = scenario(tmp_path, "  file: {path: g.gr, format: dimacs}\n  directed: false\n"
                    "  weights: file", name="u")
    out, err = run(tmp_path, scen)
    assert "treating the 5 directed arcs of this DIMACS file as undirected edges" in err
    assert stats(out)["mean_distance"] == pytest.approx(reference_mean(G.to_undirected()),
                                                        rel=1e-12)


def test_general_mtx_gzipped_without_format_is_directed(tmp_path):
    with gzip.open(tmp_path / "m.mtx.gz", "wt") as f:
        f.write("%%MatrixMarket matrix coordinate pattern general\n10 10 3\n1 2\n2 3\n3 4\n")
    out, _ = run(tmp_path, scenario(tmp_path, "  file: {path: m.mtx.gz}"))
    G = nx.DiGraph([(1, 2), (2, 3), (3, 4)])
    G.add_nodes_from(range(1, 11))
    st = stats(out)
    with h5py.File(out, "r") as f:
        assert f.attrs["graph_n"] == 10 and f.attrs["graph_directed"]
    eff = sum(1 / x for s, row in nx.shortest_path_length(G) for t, x in row.items() if t != s)
    assert st["efficiency"] == pytest.approx(eff / 90, rel=1e-12)
    assert st["mean_distance"] == pytest.approx(reference_mean(G, None), rel=1e-12)


def test_snap_ids_are_stored_and_used_for_sources_info_plot_and_reader(tmp_path):
    edges = [(10, 20), (20, 30), (30, 40), (40, 50), (50, 60), (60, 70), (20, 60)]
    (tmp_path / "snap.txt").write_text("# SNAP\n" + "".join(f"{u}\t{v}\n" for u, v in edges))
    scen = scenario(tmp_path, "  file: {path: snap.txt}",
                    "  sources: [10, 70]\n  store_distances: true\n")
    out, err = run(tmp_path, scen)
    assert "over 2 listed sources" in err
    G = nx.Graph(edges)
    clo = nx.closeness_centrality(G)
    with simengine.open(out) as r:
        ids = r.vertex_ids
        assert ids.tolist() == [10, 20, 30, 40, 50, 60, 70]
        assert r.source_ids.tolist() == [10, 70] and r.scope == "over 2 listed sources"
        c = r.per_vertex("closeness")
        assert c[10] == pytest.approx(clo[10]) and c[70] == pytest.approx(clo[70])
        assert np.isnan(c[40]) and "id" not in r.vertex
        st = r.statistics
        assert st["connected"] and st["diameter_is_lower_bound"] and st["listed"]
        D = r.distances[()]
        for row, s in zip(D, r.source_ids):
            d = nx.single_source_shortest_path_length(G, int(s))
            assert row.tolist() == [d[int(t)] for t in ids]
    info = run_cli("info", out)
    assert info.returncode == 0
    lines = info.stdout.splitlines()
    assert "statistics: over 2 listed sources" in lines
    assert sum(1 for ln in lines if "complete" in ln) == 1           # one "complete", the run's
    assert any("from the input (10, 20, 30, …)" in ln for ln in lines)
    plot = run_cli("plot", out, "--out", tmp_path / "plots")
    assert plot.returncode == 0, plot.stderr
    assert (tmp_path / "plots" / "vertex_metrics.png").exists()


def test_string_labels_and_sources_by_label(tmp_path):
    (tmp_path / "people.csv").write_text("source,target\nalice,bob\nbob,carol\ncarol,dave\n")
    out, err = run(tmp_path, scenario(tmp_path, "  file: {path: people.csv}",
                                      "  sources: [dave]\n"))
    assert "skipped a column header line 'source,target'" in err
    with simengine.open(out) as r:
        assert r.vertex_ids.tolist() == ["alice", "bob", "carol", "dave"]
        assert r.source_ids.tolist() == ["dave"]
        assert r.per_vertex("eccentricity")["dave"] == 3.0
    scen = scenario(tmp_path, "  file: {path: people.csv}", "  sources: [erin]\n", name="bad")
    r = run_cli("run", scen, "-o", tmp_path / "bad.h5")
    assert r.returncode == 2 and "metrics.sources: vertex 'erin' is not in the graph" in r.stderr
    assert not (tmp_path / "bad.h5").exists()


def test_validate_parses_the_graph_file(tmp_path):
    (tmp_path / "g.txt").write_text("0 1 2\n1 2 3\n2 3 x\n")
    scen = scenario(tmp_path, "  file: {path: g.txt}\n  weights: file")
    r = run_cli("validate", scen)
    assert r.returncode == 2 and "g.txt:3: expected a numeric weight, got 'x'" in r.stderr
    (tmp_path / "g.txt").write_text("0 1 2\n1 2 -3\n")
    r = run_cli("validate", scen)
    assert r.returncode == 2 and "g.txt:2: negative weight -3" in r.stderr
    (tmp_path / "g.txt").write_text("0 1 2\n1 2 3\n")
    r = run_cli("validate", scen)
    assert r.returncode == 0 and "edge list file" in r.stdout and "n = 3, 2 edges" in r.stdout
    (tmp_path / "t.gr").write_text(dimacs_text()[:-8])                     # truncated
    r = run_cli("validate", scenario(tmp_path, "  file: {path: t.gr}", name="t"))
    assert r.returncode == 2 and "t.gr:2: the problem line promises m = 5 arcs" in r.stderr
    r = run_cli("validate", scenario(tmp_path, "  file: {path: g.txt}", "  sources: [7]\n",
                                     name="v"))
    assert r.returncode == 2 and "vertex 7 is not in the graph (its vertices are 0..2)" in r.stderr


def test_validate_stops_early_on_huge_files_and_says_so(tmp_path):
    from simengine.config import load_scenario
    from simengine.config.checks import check_graph_file

    (tmp_path / "big.txt").write_text("".join(f"{i} {i + 1}\n" for i in range(500)))
    sc = load_scenario(scenario(tmp_path, "  file: {path: big.txt}"))
    msg = check_graph_file(sc, max_lines=100)
    assert "the first 100 lines are well-formed" in msg and "the run reads the rest" in msg
    assert "n = 501, 500 edges" in check_graph_file(sc)


@pytest.mark.parametrize("path", ["DIR", "/dev/zero", "/proc/self/environ", "FIFO", "PLAIN.gz"])
def test_hostile_graph_paths_are_one_line_exit_2(tmp_path, path):
    import os

    if path == "DIR":
        (tmp_path / "d").mkdir()
        path = str(tmp_path / "d")
    elif path == "FIFO":
        os.mkfifo(tmp_path / "f.txt")
        path = str(tmp_path / "f.txt")
    elif path == "PLAIN.gz":
        (tmp_path / "p.txt.gz").write_text("0 1\n")
        path = str(tmp_path / "p.txt.gz")
    scen = scenario(tmp_path, f"  file: {{path: '{path}'}}")
    for cmd in ("validate", "run"):
        r = run_cli(cmd, scen, *(["-o", tmp_path / "o.h5"] if cmd == "run" else []), timeout=60)
        assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
        assert len(r.stderr.strip().splitlines()) == 1 and path in r.stderr
        assert "PATH=" not in r.stderr
    assert not (tmp_path / "o.h5").exists()


def test_small_ones_fw_set_statistics_and_resume_notes(tmp_path):
    (tmp_path / "g.gr").write_text(dimacs_text())
    scen = scenario(tmp_path, "  file: {path: g.gr}\n  weights: file",
                    "  algorithm: fw\n  statistics: [mean_distance, closeness]\n")
    out, err = run(tmp_path, scen)
    assert "fw on cpu" in err
    with h5py.File(out, "r") as f:
        assert "mean_distance" in f["statistics"] and "diameter" not in f["statistics"]
        assert "closeness" in f["vertex"] and "eccentricity" not in f["vertex"]
        assert "distance_histogram" not in f
    r = run_cli("validate", scen, "--set", "metrics.algorithm=dijkstraa")
    assert r.returncode == 2
    assert r.stderr.startswith("simengine: error: --set 'metrics.algorithm=dijkstraa'"), r.stderr
    field = tmp_path / "f.yaml"
    field.write_text("kind: field\nname: f\ngrid: {shape: [8, 8]}\ntime: {dt: 0.01, steps: 2}\n"
                     "solver: {backend: cpu}\n")
    fo = tmp_path / "f.h5"
    assert run_cli("run", field, "-o", fo, "-q").returncode == 0
    r = run_cli("run", field, "-o", fo, "--resume", "--set", "time.steps=4")
    assert r.returncode == 0, r.stderr
    assert "resuming with time.steps = 4 (the run was started with 2)" in r.stderr
