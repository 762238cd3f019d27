"""Compilation is start-up, never work: numba's disk cache and where it lives, and the stored
work time of a run that compiled its kernels (simengine/numba_env.py, control/network_job.py)."""
import os

import h5py
from conftest import run_cli
from simengine import numba_env

NET = """\
kind: network
name: tiny
graph:
  generator: {type: watts_strogatz, n: 60, k: 4, p: 0.1, seed: 2}
  weights: none
metrics:
  sources: all
  statistics: [mean_distance, diameter, closeness, betweenness]
solver: {backend: cpu}
"""


def test_read_only_package_caches_under_the_users_cache(tmp_path, monkeypatch):
    monkeypatch.setattr(numba_env, "in_tree_writable", lambda package=None: False)
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    chosen = numba_env.settle_cache(env)
    assert chosen == str(tmp_path / "xdg" / "simengine" / "numba")
    assert env["NUMBA_CACHE_DIR"] == chosen and os.path.isdir(chosen)
    # SIMENGINE_CACHE_DIR first, and a NUMBA_CACHE_DIR the user set wins over everything
    env = {"SIMENGINE_CACHE_DIR": str(tmp_path / "mine"), "XDG_CACHE_HOME": str(tmp_path / "x")}
    assert numba_env.settle_cache(env) == str(tmp_path / "mine" / "numba")
    env = {"NUMBA_CACHE_DIR": "/somewhere", "XDG_CACHE_HOME": str(tmp_path / "x")}
    assert numba_env.settle_cache(env) is None and env["NUMBA_CACHE_DIR"] == "/somewhere"


def test_unwritable_candidates_fall_through_to_the_next(tmp_path, monkeypatch):
    blocker = tmp_path / "file"
    blocker.write_text("not a folder")
    env = {"SIMENGINE_CACHE_DIR": str(blocker), "XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert numba_env.cache_dir(env) == tmp_path / "xdg" / "simengine" / "numba"


def test_writable_tree_keeps_numbas_in_tree_cache(tmp_path):
    pkg = tmp_path / "pkg"
    pkg.mkdir()
    env = {"XDG_CACHE_HOME": str(tmp_path / "xdg")}
    assert numba_env.settle_cache(env, package=pkg) is None and "NUMBA_CACHE_DIR" not in env


def test_cold_cache_compilation_is_start_up_and_cached_on_disk(tmp_path):
    scen = tmp_path / "tiny.yaml"
    scen.write_text(NET)
    cache = tmp_path / "cache"
    env = {"NUMBA_CACHE_DIR": str(cache)}
    out = tmp_path / "a.h5"
    r = run_cli("run", scen, "-o", out, env=env)
    assert r.returncode == 0, r.stderr
    assert "not in the work time" in r.stderr + r.stdout
    with h5py.File(out, "r") as f:
        elapsed = float(f["statistics/elapsed"][()])
        compile_cold = float(f.attrs["startup_compile_seconds"])
        assert float(f.attrs["startup_graph_seconds"]) >= 0
    # a cold cache compiles for seconds; the 60-vertex work is milliseconds and excludes it
    assert compile_cold > 1.0 and elapsed < compile_cold / 4, (elapsed, compile_cold)
    cached = {p.name for p in cache.rglob("*.nbi")}
    assert any("brandes" in n for n in cached), sorted(cached)[:20]
    r = run_cli("run", scen, "-o", tmp_path / "b.h5", "-q", env=env)
    assert r.returncode == 0, r.stderr
    with h5py.File(tmp_path / "b.h5", "r") as f:
        compile_warm = float(f.attrs["startup_compile_seconds"])
    assert compile_warm < compile_cold / 2, (compile_warm, compile_cold)


def test_summary_plot_says_what_normalized_time_is():
    from simengine.summary_plot import label_of

    assert "per hop" in label_of("normalized_time") and "mean distance" in label_of(
        "normalized_time")
    assert "compilation excluded" in label_of("elapsed")


def test_passive_wait_policy_unless_the_user_set_one(monkeypatch):
    env = {}
    done = numba_env.settle_threads(env)
    assert env["OMP_WAIT_POLICY"] == "passive" and env["KMP_BLOCKTIME"] == "0"
    assert done["OMP_WAIT_POLICY"] == "passive"
    env = {"OMP_WAIT_POLICY": "active", "KMP_BLOCKTIME": "200"}
    numba_env.settle_threads(env)
    assert env["OMP_WAIT_POLICY"] == "active" and env["KMP_BLOCKTIME"] == "200"


def test_a_narrow_affinity_caps_numbas_threads_before_numba_loads(monkeypatch):
    import sys

    monkeypatch.setattr(numba_env, "allowed_cores", lambda: 1)
    monkeypatch.setattr(numba_env.os, "cpu_count", lambda: 8)
    monkeypatch.delitem(sys.modules, "numba", raising=False)
    env = {}
    numba_env.settle_threads(env)
    assert env["NUMBA_NUM_THREADS"] == "1"
    env = {"NUMBA_NUM_THREADS": "4"}                    # the user's setting wins
    numba_env.settle_threads(env)
    assert env["NUMBA_NUM_THREADS"] == "4"


def test_a_run_starts_with_the_passive_policy(tmp_path):
    import subprocess
    import sys

    code = ("import os, simengine, numba, numpy as np\n"
            "@numba.njit(parallel=True)\n"
            "def f(x):\n"
            "    s = 0.0\n"
            "    for i in numba.prange(len(x)):\n"
            "        s += x[i]\n"
            "    return s\n"
            "f(np.ones(10))\n"
            "print(os.environ['OMP_WAIT_POLICY'], numba.threading_layer())\n")
    env = {k: v for k, v in os.environ.items() if k not in ("OMP_WAIT_POLICY", "KMP_BLOCKTIME")}
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split()[0] == "passive"


def test_field_work_time_excludes_the_step_kernels_compilation(tmp_path):
    scen = tmp_path / "f.yaml"
    scen.write_text("kind: field\nname: f\ngrid: {shape: [32, 32]}\n"
                    "initial: {type: noise, amplitude: 0.05, seed: 1}\n"
                    "time: {dt: 0.02, steps: 20}\nsolver: {backend: cpu, kernel: texture}\n"
                    "output: {observables_every: 10}\n")
    env = {"NUMBA_CACHE_DIR": str(tmp_path / "cache")}      # cold: the stage kernels compile
    r = run_cli("run", scen, "-o", tmp_path / "f.h5", env=env)
    assert r.returncode == 0, r.stderr
    import re

    work = float(re.findall(r"done: 20 steps in ([0-9.]+) s", r.stderr + r.stdout)[0])
    with h5py.File(tmp_path / "f.h5") as f:
        wall = f["observables/wall_time"][()]
    # compiling the RK2 stage kernels takes seconds on a cold cache; 20 steps of 32² take ms
    assert work < 1.0 and float(wall[-1]) < 1.0, (work, wall)


def test_the_affinity_setting_is_not_reported_as_the_users():
    from simengine.parallel.threads import decide_threads

    env = {"NUMBA_NUM_THREADS": "1", "SIMENGINE_THREADS_FROM_AFFINITY": "1"}
    n, why = decide_threads(env=env, mpi_split=False)
    assert "NUMBA_NUM_THREADS" not in why
    n, why = decide_threads(env={"NUMBA_NUM_THREADS": "3"}, mpi_split=False)
    assert n is None and why == "NUMBA_NUM_THREADS=3"
