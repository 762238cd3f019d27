"""Every memory refusal is decided by simengine.resources.check: one line naming the key, the
estimate and the limit, exit 2, no output file; ``--force`` and ``resources.check: false`` override
each of them the same way.  Sizes nothing can represent (2^63 bytes, header counts beyond the file
or beyond 32-bit ids) stay errors with ``--force``.  Small inputs meet small limits through the test
hooks SIMENGINE_TEST_HOST_MEMORY / SIMENGINE_TEST_GPU_MEMORY."""
import re

import h5py
import pytest

from conftest import run_cli
from simengine import resources
from simengine.config import scenario_from_text
from simengine.errors import UserError

FIELD = ("kind: field\nname: f\ngrid: {shape: [16, 16]}\ntime: {dt: 0.001, steps: 2}\n"
         "output: {snapshot_every: 2}\n")
GNM = ("kind: network\nname: g\ngraph: {generator: {type: gnm, n: 300, m: 900, seed: 1}}\n"
       "metrics: {sources: {sample: 20, seed: 1}}\n")
DIMACS = "p sp 40 80\n" + "".join(f"a {i % 40 + 1} {(7 * i + 3) % 40 + 1} {i % 5 + 1}\n"
                                  for i in range(80))
FILE = ("kind: network\nname: d\ngraph: {file: {path: g.gr}, weights: file}\n"
        "metrics: {sources: all}\n")
STORED = ("kind: network\nname: s\ngraph: {generator: {type: gnm, n: 600, m: 1800, seed: 1}}\n"
          "metrics: {sources: all, store_distances: true}\noutput: {checkpoint_every: 600}\n")
GPU_FIELD = FIELD.replace("grid: {shape: [16, 16]}", "grid: {shape: [8, 8]}") + \
    "solver: {backend: cuda}\n"

#: (scenario, environment, key named, memory kind named)
CASES = {
    "field": (FIELD, {resources.HOST_LIMIT_ENV: "1000"}, "grid.shape", "host memory"),
    "generator": (GNM, {resources.HOST_LIMIT_ENV: "1000"}, None, "host memory"),
    "file": (FILE, {resources.HOST_LIMIT_ENV: "1000"}, None, "host memory"),
    "stored": (STORED, {resources.HOST_LIMIT_ENV: "1000000"}, "metrics.store_distances",
               "host memory"),
    "gpu": (GPU_FIELD, {resources.GPU_LIMIT_ENV: "1000"}, "grid.shape", "GPU memory"),
}


def scenario(tmp_path, text):
    (tmp_path / "g.gr").write_text(DIMACS)
    p = tmp_path / "s.yaml"
    p.write_text(text)
    return p


def refused_once(r, out, tmp_path):
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    assert not out.exists() and not list(tmp_path.glob("*.h5*")), list(tmp_path.iterdir())
    return lines[0]


@pytest.mark.parametrize("case", sorted(CASES))
def test_each_memory_refusal_and_force(tmp_path, monkeypatch, case):
    text, env, key, memory = CASES[case]
    scen = scenario(tmp_path, text)
    out = tmp_path / "o.h5"
    msg = refused_once(run_cli("run", scen, "-o", out, env=env, cwd=tmp_path), out, tmp_path)
    limit = resources.fmt_bytes(int(next(iter(env.values()))))
    m = re.search(rf"s\.yaml: ([\w.]+): the run needs about ([\d.]+ \w+) of {memory} .*"
                  rf"more than the {re.escape(limit)} .*--force", msg)
    assert m, msg
    assert key is None or m.group(1) == key, msg
    # the same estimate in-process, and the scenario key turns the refusal off the same way
    for var, value in env.items():
        monkeypatch.setenv(var, value)
    sc = scenario_from_text(text, str(scen))
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError, match=re.escape(m.group(0)[:60])):
        resources.check(sc)
    resources.check(scenario_from_text(text + "resources: {check: false}\n", str(scen)))
    # --force runs it to the end
    r = run_cli("run", scen, "-o", out, "--force", "-q", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r") as f:
        assert f.attrs["kind"] == text.split("kind: ")[1].split("\n")[0]


def test_validate_refuses_and_force_prints_the_estimates(tmp_path):
    scen = scenario(tmp_path, GNM)
    env = {resources.HOST_LIMIT_ENV: "1000"}
    r = run_cli("validate", scen, env=env, cwd=tmp_path)
    assert r.returncode == 2 and len(r.stderr.strip().splitlines()) == 1, r.stderr
    r = run_cli("validate", scen, "--force", env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert f"of 1000 B available ({resources.HOST_LIMIT_ENV})" in r.stdout


@pytest.mark.parametrize("name,text,what", [
    ("beyond.gr", "p sp 10 100000\na 1 2 3\n", "holds at most"),         # header beyond the file
    ("ids.gr", "p sp 10000000000 1\na 1 2 3\n", "32-bit vertex ids"),     # beyond int32 ids
])
def test_impossible_headers_stay_errors_with_force(tmp_path, name, text, what):
    (tmp_path / name).write_text(text)
    scen = tmp_path / "s.yaml"
    scen.write_text(FILE.replace("g.gr", name))
    out = tmp_path / "o.h5"
    msg = refused_once(run_cli("run", scen, "-o", out, "--force", cwd=tmp_path), out, tmp_path)
    assert f"{name}:1:" in msg and what in msg, msg


@pytest.mark.parametrize("text,key", [
    ("kind: field\nname: a\ngrid: {shape: [2000000000, 2000000000, 2000000000]}\n"
     "time: {dt: 0.001, steps: 1}\n", "grid.shape"),
    ("kind: network\nname: b\n"
     "graph: {generator: {type: gnm, n: 2147483647, m: 2000000000000000000}}\n",
     "graph.generator"),
])
def test_unrepresentable_sizes_stay_errors_with_force(tmp_path, text, key):
    with pytest.raises(UserError, match=rf"{key}: .* more than any allocation can address"):
        scenario_from_text(text + "resources: {check: false}\n", "s.yaml")
    scen = tmp_path / "s.yaml"
    scen.write_text(text)
    out = tmp_path / "o.h5"
    msg = refused_once(run_cli("run", scen, "-o", out, "--force", cwd=tmp_path), out, tmp_path)
    assert key in msg and "2^63" in msg, msg
