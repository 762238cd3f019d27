"""`simengine sweep`: listing, running by index and by SLURM_ARRAY_TASK_ID, skip-if-done, resume after
SIGKILL, summary values against direct `simengine run --set` runs, grouped statistics against
NumPy, bad sweep keys, zip mode, the summary plot."""
import csv
import math
import signal
import subprocess
import sys
import time

import h5py
import networkx as nx
import numpy as np
import pytest

from conftest import run_cli
from simengine.cli import main

NET = """\
kind: network
name: net-sweep
graph:
  generator: {type: barabasi_albert, n: 30, m: 2, seed: 1}
metrics:
  sources: all
  statistics: [mean_distance, diameter, radius, eccentricity, distance_histogram, efficiency]
solver: {backend: cpu}
output: {checkpoint_every: 16}
sweep:
SWEEP"""

PRODUCT = """\
  graph.generator.n: [20, 40]
  graph.generator.seed: [1, 2, 3]
"""

FIELD = """\
kind: field
name: field-sweep
grid: {shape: [32, 32]}
boundary: {type: periodic}
model: {mobility: 1.0, kappa: 1.0}
initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}
time: {dt: 0.02, steps: STEPS}
solver: {kernel: texture, backend: cpu, precision: float64}
output: {checkpoint_every: EVERY, observables_every: EVERY}
sweep:
  initial.mean: [0.0, -0.3]
  initial.seed: [1, 2]
  zip: true
"""


def net(tmp_path, sweep=PRODUCT, name="net.yaml"):
    p = tmp_path / name
    p.write_text(NET.replace("SWEEP", sweep))
    return p


def field(tmp_path, steps=40, every=10):
    p = tmp_path / "field.yaml"
    p.write_text(FIELD.replace("STEPS", str(steps)).replace("EVERY", str(every)))
    return p


def read_csv(path):
    with open(path, newline="") as fh:
        return list(csv.DictReader(fh))


def stats(path):
    with h5py.File(path, "r") as f:
        return {k: f["statistics"][k][()].item() for k in f["statistics"]}


def sweep(capsys, *args):
    """Run ``simengine sweep ARGS`` in this process; returns (exit code, stdout, stderr)."""
    rc = main(["sweep", *map(str, args)])
    out, err = capsys.readouterr()
    return rc, out, err


# ----------------------------------------------------------------------------- listing
def test_list_product_and_zip(tmp_path, capsys):
    rc, out, _ = sweep(capsys, net(tmp_path), "--list")
    assert rc == 0
    assert out.splitlines() == [
        f"{i} graph.generator.n={n} graph.generator.seed={s}"
        for i, (n, s) in enumerate((n, s) for n in (20, 40) for s in (1, 2, 3))]
    rc, out, _ = sweep(capsys, field(tmp_path), "--list")
    assert rc == 0
    assert out.splitlines() == ["0 initial.mean=0.0 initial.seed=1",
                                "1 initial.mean=-0.3 initial.seed=2"]


def test_labelled_mapping_values_sweep_a_whole_generator(tmp_path, capsys):
    fam = """\
  graph.generator:
    ring: {type: watts_alpha, k: 4, ring: true}
    ba: {type: barabasi_albert, m: 2}
  graph.generator.n: [20]
  graph.generator.seed: [5]
"""
    p = net(tmp_path, fam)
    rc, out, _ = sweep(capsys, p, "--list")
    assert out.splitlines() == ["0 graph.generator=ring graph.generator.n=20 graph.generator.seed=5",
                                "1 graph.generator=ba graph.generator.n=20 graph.generator.seed=5"]
    d = tmp_path / "out"
    rc, _, err = sweep(capsys, p, "--task", "1", "-d", d, "-q")
    assert rc == 0, err
    with h5py.File(d / "generator=ba_n=20_seed=5.h5", "r") as f:
        import yaml

        assert yaml.safe_load(f.attrs["scenario"])["graph"]["generator"] == \
            {"type": "barabasi_albert", "m": 2, "n": 20, "seed": 5}


# ----------------------------------------------------------------------------- running
def test_task_by_index_and_by_slurm_id_equal_direct_runs(tmp_path, capsys, monkeypatch):
    p = net(tmp_path)
    d = tmp_path / "out"
    rc, _, err = sweep(capsys, p, "--task", "4", "-d", d)
    assert rc == 0, err
    assert [f.name for f in d.glob("*.h5")] == ["n=40_seed=2.h5"]
    monkeypatch.setenv("SLURM_ARRAY_TASK_ID", "2")
    rc, _, err = sweep(capsys, p, "--task", "-d", d, "-q")
    assert rc == 0, err
    assert sorted(f.name for f in d.glob("*.h5")) == ["n=20_seed=3.h5", "n=40_seed=2.h5"]
    # the same numbers as `simengine run --set ...` on the scenario
    for name, sets in (("n=40_seed=2", ["graph.generator.n=40", "graph.generator.seed=2"]),
                       ("n=20_seed=3", ["graph.generator.n=20", "graph.generator.seed=3"])):
        direct = tmp_path / f"direct-{name}.h5"
        args = ["run", str(p), "-o", str(direct), "-q"]
        for s in sets:
            args += ["--set", s]
        assert main(args) == 0
        a, b = stats(d / f"{name}.h5"), stats(direct)
        timing = ("elapsed", "normalized_time")
        assert {k: v for k, v in a.items() if k not in timing} == \
               {k: v for k, v in b.items() if k not in timing}
    monkeypatch.delenv("SLURM_ARRAY_TASK_ID")
    rc, _, err = sweep(capsys, p, "--task", "-d", d)
    assert rc == 2 and "SLURM_ARRAY_TASK_ID" in err
    rc, _, err = sweep(capsys, p, "--task", "6", "-d", d)
    assert rc == 2 and "out of range" in err and "0-5" in err


def test_slurm_array_task_in_a_subprocess(tmp_path):
    p = net(tmp_path)
    d = tmp_path / "out"
    r = run_cli("sweep", p, "--task", "-d", d, env={"SLURM_ARRAY_TASK_ID": "5"})
    assert r.returncode == 0, r.stderr
    assert "sweep task 5 of 6" in r.stderr
    assert [f.name for f in d.glob("*.h5")] == ["n=40_seed=3.h5"]


def test_run_all_skips_finished_tasks(tmp_path, capsys):
    p = net(tmp_path)
    d = tmp_path / "out"
    assert sweep(capsys, p, "--task", "0", "-d", d, "-q")[0] == 0
    first = (d / "n=20_seed=1.h5").stat().st_mtime_ns
    rc, _, err = sweep(capsys, p, "-d", d)
    assert rc == 0, err
    assert "6 tasks" in err and "1 already done" in err
    assert len(list(d.glob("*.h5"))) == 6
    assert (d / "n=20_seed=1.h5").stat().st_mtime_ns == first
    mtimes = {f: f.stat().st_mtime_ns for f in d.glob("*.h5")}
    rc, _, err = sweep(capsys, p, "-d", d)
    assert rc == 0 and "6 already done" in err and "0 run" in err
    assert mtimes == {f: f.stat().st_mtime_ns for f in d.glob("*.h5")}
    rc, out, _ = sweep(capsys, p, "-d", d, "--list", "--unfinished")
    assert rc == 0 and out == ""
    # a changed body: collect says which outputs are stale
    rc, out, _ = sweep(capsys, p, "-d", d, "--collect", "--set", "metrics.statistics=[diameter]")
    rows = read_csv(d / "net-sweep-summary.csv")
    assert all(r["status"] == "done" and "metrics.statistics differs" in r["message"] for r in rows)


def test_jobs_run_worker_processes_with_the_same_results(tmp_path, capsys):
    p = net(tmp_path)
    seq, par = tmp_path / "seq", tmp_path / "par"
    assert sweep(capsys, p, "-d", seq, "-q")[0] == 0
    rc, _, err = sweep(capsys, p, "-d", par, "--jobs", "3")
    assert rc == 0, err
    assert len(list((par / "logs").glob("n=*.log"))) == 6
    assert "0 already done" in err and err.count(": done in") == 6
    assert "done: mean distance" in (par / "logs" / "n=40_seed=3.log").read_text()
    for f in seq.glob("*.h5"):
        a, b = stats(f), stats(par / f.name)
        a.pop("elapsed"), b.pop("elapsed")
        a.pop("normalized_time"), b.pop("normalized_time")
        assert a == b


def _checkpoint_step(path):
    try:
        with h5py.File(path, "r") as f:
            return int(f["checkpoint/phi"].attrs["step"])
    except (OSError, KeyError):
        return -1


def test_sigkilled_task_resumes_and_equals_an_uninterrupted_run(tmp_path, capsys):
    p = field(tmp_path, steps=1500, every=10)
    d = tmp_path / "out"
    target = d / "mean=-0.3_seed=2.h5"
    proc = subprocess.Popen([sys.executable, "-m", "simengine", "sweep", str(p), "--task", "1",
                             "-d", str(d), "-q"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    t0 = time.time()
    while _checkpoint_step(target) < 50:
        assert proc.poll() is None, "the task finished before it could be killed"
        assert time.time() - t0 < 300
        time.sleep(0.005)
    proc.send_signal(signal.SIGKILL)
    proc.communicate(timeout=60)
    killed_at = _checkpoint_step(target)
    assert 50 <= killed_at < 1500
    rc, out, _ = sweep(capsys, p, "-d", d, "--list", "--failed")
    assert out.splitlines() == ["1 initial.mean=-0.3 initial.seed=2"]
    rc, _, err = sweep(capsys, p, "-d", d, "--collect")
    rows = read_csv(d / "field-sweep-summary.csv")
    assert [r["status"] for r in rows] == ["missing", "incomplete"]
    rc, _, err = sweep(capsys, p, "-d", d)
    assert rc == 0, err
    assert "resuming" in err
    direct = tmp_path / "direct.h5"
    assert main(["run", str(p), "-o", str(direct), "-q", "--set", "initial.mean=-0.3",
                 "--set", "initial.seed=2"]) == 0
    with h5py.File(target, "r") as a, h5py.File(direct, "r") as b:
        np.testing.assert_array_equal(a["checkpoint/phi"][()], b["checkpoint/phi"][()])
        for k in ("step", "mass", "free_energy", "length"):
            np.testing.assert_array_equal(a[f"observables/{k}"][()], b[f"observables/{k}"][()])
        assert a.attrs["complete"] and b.attrs["complete"]


def test_sigterm_to_a_parallel_sweep_checkpoints_and_the_rerun_resumes(tmp_path, capsys):
    p = field(tmp_path, steps=1500, every=10)
    d = tmp_path / "out"
    outs = [d / "mean=0.0_seed=1.h5", d / "mean=-0.3_seed=2.h5"]
    proc = subprocess.Popen([sys.executable, "-m", "simengine", "sweep", str(p), "-d", str(d),
                             "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    t0 = time.time()
    while min(_checkpoint_step(o) for o in outs) < 50:
        assert proc.poll() is None, "the sweep finished before it could be interrupted"
        assert time.time() - t0 < 300
        time.sleep(0.005)
    proc.send_signal(signal.SIGTERM)
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert err.count("interrupted (checkpoint kept") == 2
    assert all(50 <= _checkpoint_step(o) < 1500 for o in outs)
    rc, out, _ = sweep(capsys, p, "-d", d, "--list", "--failed", "--indices")
    assert out.strip() == "0-1"
    rc, _, err = sweep(capsys, p, "-d", d, "--jobs", "2")
    assert rc == 0, err
    assert all("resuming" in (d / "logs" / (o.stem + ".log")).read_text() for o in outs)
    direct = tmp_path / "direct.h5"
    assert main(["run", str(p), "-o", str(direct), "-q"]) == 0   # the body: mean 0.0, seed 1
    with h5py.File(outs[0], "r") as a, h5py.File(direct, "r") as b:
        np.testing.assert_array_equal(a["checkpoint/phi"][()], b["checkpoint/phi"][()])
        np.testing.assert_array_equal(a["observables/free_energy"][()],
                                      b["observables/free_energy"][()])


# ----------------------------------------------------------------------------- collect
def test_collect_summary_equals_direct_runs_and_grouped_equals_numpy(tmp_path, capsys):
    p = net(tmp_path)
    d = tmp_path / "out"
    assert sweep(capsys, p, "-d", d, "-q")[0] == 0
    rc, out, _ = sweep(capsys, p, "-d", d, "--collect")
    assert rc == 0 and "6 done" in out
    rows = read_csv(d / "net-sweep-summary.csv")
    assert list(rows[0])[:6] == ["task", "graph.generator.n", "graph.generator.seed", "name",
                                 "status", "message"]
    from simengine.network.generators import generate

    for r in rows:
        n, s = int(r["graph.generator.n"]), int(r["graph.generator.seed"])
        direct = tmp_path / f"direct-{n}-{s}.h5"
        assert main(["run", str(p), "-o", str(direct), "-q", "--set", f"graph.generator.n={n}",
                     "--set", f"graph.generator.seed={s}"]) == 0
        st = stats(direct)
        for k in ("mean_distance", "diameter", "radius", "efficiency", "reachable_pairs"):
            assert float(r[k]) == st[k], k
        assert int(r["n"]) == n and r["status"] == "done"
        g = generate({"type": "barabasi_albert", "n": n, "m": 2, "seed": s})
        G = nx.Graph()
        G.add_nodes_from(range(n))
        for u in range(n):
            G.add_edges_from((u, int(v)) for v in g.indices[g.indptr[u]:g.indptr[u + 1]])
        assert math.isclose(float(r["mean_distance"]), nx.average_shortest_path_length(G),
                            rel_tol=1e-12)
    grouped = read_csv(d / "net-sweep-grouped.csv")
    assert [g["graph.generator.n"] for g in grouped] == ["20", "40"]
    for g in grouped:
        vals = np.array([stats(d / f"n={g['graph.generator.n']}_seed={s}.h5")["mean_distance"]
                         for s in (1, 2, 3)])
        assert int(g["count"]) == 3 and int(g["not_done"]) == 0
        assert math.isclose(float(g["mean_distance_mean"]), vals.mean(), rel_tol=1e-12)
        assert math.isclose(float(g["mean_distance_std"]), vals.std(ddof=1), rel_tol=1e-12)
        assert math.isclose(float(g["mean_distance_se"]), vals.std(ddof=1) / math.sqrt(3),
                            rel_tol=1e-12)


def test_collect_field_results_and_missing_tasks(tmp_path, capsys):
    p = field(tmp_path)
    d = tmp_path / "out"
    assert sweep(capsys, p, "--task", "0", "-d", d, "-q")[0] == 0
    rc, out, _ = sweep(capsys, p, "-d", d, "--collect")
    assert rc == 0 and "1 done, 1 missing" in out and "task 1 mean=-0.3_seed=2: missing" in out
    rows = read_csv(d / "field-sweep-summary.csv")
    assert [r["status"] for r in rows] == ["done", "missing"]
    with h5py.File(d / "mean=0.0_seed=1.h5", "r") as f:
        obs = {k: f["observables"][k][-1] for k in f["observables"]}
    r = rows[0]
    assert int(r["steps"]) == 40
    for k in ("mass", "free_energy", "length", "wall_time", "phi_max"):
        assert float(r[k]) == float(obs[k]), k
    assert rows[1]["mass"] == ""
    grouped = read_csv(d / "field-sweep-grouped.csv")   # over initial.seed, by initial.mean
    assert [(g["initial.mean"], g["count"], g["not_done"]) for g in grouped] == \
        [("0.0", "1", "0"), ("-0.3", "0", "1")]
    assert float(grouped[0]["mass_mean"]) == float(r["mass"]) and grouped[0]["mass_std"] == ""


def test_failed_task_is_recorded_and_listed(tmp_path, capsys):
    # valid for `simengine validate`, refused when the job starts (a BFS on a weighted graph)
    bad = """\
  graph.weights:
    ok: none
    w: {type: uniform_int, low: 1, high: 9, seed: 1}
"""
    p = tmp_path / "net.yaml"
    p.write_text(NET.replace("  sources: all\n", "  sources: all\n  algorithm: bfs\n")
                 .replace("SWEEP", bad))
    d = tmp_path / "out"
    rc, _, err = sweep(capsys, p, "-d", d)
    assert rc == 1 and "FAILED" in err
    assert "ignores weights" in (d / "weights=w.failed").read_text()
    rc, out, _ = sweep(capsys, p, "-d", d, "--list", "--failed", "--indices")
    assert out.strip() == "1"
    rc, out, _ = sweep(capsys, p, "-d", d, "--collect")
    assert "task 1 weights=w: failed" in out and "ignores weights" in out
    rows = read_csv(d / "net-sweep-summary.csv")
    assert [r["status"] for r in rows] == ["done", "failed"]


# ----------------------------------------------------------------------------- bad input
@pytest.mark.parametrize("block, needle", [
    ("  graph.generatr.n: [10, 20]\n", "sweep: graph.generatr.n=10 (task 0): graph.generatr: unknown key"),
    ("  metrics.algorithm: [bfs, fastest]\n", "sweep: metrics.algorithm=fastest (task 1)"),
    ("  graph.generator.nn: [3]\n", "sweep: graph.generator.nn=3 (task 0)"),
    ("  graph.generator.n: 50\n", "sweep: graph.generator.n: expected a non-empty list"),
    ("  graph.generator.n: [20, 30]\n  graph.generator.seed: [1]\n  zip: true\n",
     "sweep.zip: true needs lists of equal length"),
    ("  time.steps: [10]\n", "sweep: time.steps=10 (task 0): time: unknown key"),
])
def test_bad_sweep_keys_exit_2_before_any_task_runs(tmp_path, block, needle):
    p = net(tmp_path, block)
    d = tmp_path / "out"
    r = run_cli("sweep", p, "-d", d)
    assert r.returncode == 2, r.stderr
    assert needle in r.stderr and "Traceback" not in r.stderr
    assert r.stderr.startswith(f"simengine: error: {p}:")
    assert len(r.stderr.strip().splitlines()) == 1
    assert not d.exists()


def test_run_on_a_sweep_file_runs_the_body(tmp_path, capsys):
    p = net(tmp_path)
    out = tmp_path / "body.h5"
    assert main(["run", str(p), "-o", str(out)]) == 0
    err = capsys.readouterr().err
    assert "has a sweep block (6 tasks)" in err and "runs the scenario as written" in err
    import yaml

    with h5py.File(out, "r") as f:
        stored = yaml.safe_load(f.attrs["scenario"])
        assert int(f.attrs["graph_n"]) == 30
    assert "sweep" not in stored and stored["graph"]["generator"]["n"] == 30


# ----------------------------------------------------------------------------- plot
def test_plot_of_a_summary(tmp_path, capsys):
    p = net(tmp_path, "  graph.generator.n: [16, 32, 64, 128]\n  graph.generator.seed: [1, 2]\n")
    d = tmp_path / "out"
    assert sweep(capsys, p, "-d", d, "-q")[0] == 0
    assert sweep(capsys, p, "-d", d, "--collect")[0] == 0
    summary = d / "net-sweep-summary.csv"
    assert main(["plot", str(summary), "--out", str(tmp_path / "plots")]) == 0
    png = tmp_path / "plots" / "vs_graph_generator_n.png"
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10000
    slopes = {r["result"]: r for r in read_csv(tmp_path / "plots" / "slopes.csv")}
    rows = read_csv(summary)
    ns = np.array([16, 32, 64, 128], float)
    means = [np.mean([float(r["mean_distance"]) for r in rows if int(r["graph.generator.n"]) == n])
             for n in ns]
    expected = np.polyfit(np.log(ns), np.log(means), 1)[0]
    assert math.isclose(float(slopes["mean_distance"]["slope"]), expected, rel_tol=1e-9)
    assert slopes["mean_distance"]["points"] == "4"


def test_shipped_seed_families_sweep(root, tmp_path, capsys):
    scen = root / "scenarios" / "sweep-seed-families.yaml"
    rc, out, _ = sweep(capsys, scen, "--list")
    lines = out.splitlines()
    assert rc == 0 and len(lines) == 3 * 7 * 10
    assert lines[0] == "0 graph.generator=watts-ring graph.generator.n=250 graph.generator.seed=1"
    assert lines[-1] == "209 graph.generator=ba graph.generator.n=16000 graph.generator.seed=10"
    d = tmp_path / "out"
    rc, _, err = sweep(capsys, scen, "--task", "70", "-d", d, "-q")   # watts, n = 250, seed 1
    assert rc == 0, err
    assert sweep(capsys, scen, "-d", d, "--collect")[0] == 0
    rows = read_csv(d / "sweep-seed-families-summary.csv")
    done = [r for r in rows if r["status"] == "done"]
    assert [(r["task"], r["graph.generator"], r["n"]) for r in done] == [("70", "watts", "250")]
    from simengine.network.generators import generate

    g = generate({"type": "watts_alpha", "k": 10, "ring": False, "n": 250, "seed": 1})
    G = nx.Graph()
    G.add_nodes_from(range(g.n))
    for u in range(g.n):
        G.add_edges_from((u, int(v)) for v in g.indices[g.indptr[u]:g.indptr[u + 1]])
    assert math.isclose(float(done[0]["mean_distance"]), nx.average_shortest_path_length(G),
                        rel_tol=1e-12)


def test_a_sweep_block_beyond_the_task_limit_is_counted_not_built(tmp_path):
    """Issue 37 class 9: a 1000 × 1000 block kept validate and sweep --list busy for minutes
    with no output; it is now counted before any task is built and refused in one line."""
    import subprocess
    import sys

    from simengine.sweep import MAX_TASKS

    block = ("  graph.generator.seed: [" + ", ".join(str(i) for i in range(1000)) + "]\n"
             "  graph.generator.n: [" + ", ".join(str(i + 10) for i in range(1000)) + "]\n")
    p = net(tmp_path, block)
    for argv in (["validate", str(p)], ["sweep", str(p), "--list"]):
        r = subprocess.run([sys.executable, "-m", "simengine", *argv], capture_output=True,
                           text=True, timeout=120)
        assert r.returncode == 2 and r.stdout == "", r.stderr
        assert r.stderr.count("\n") == 1 and "Traceback" not in r.stderr
        assert f"1000 × 1000 = 1,000,000 tasks, more than the {MAX_TASKS:,}" in r.stderr
