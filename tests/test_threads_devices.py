"""Ranks share the machine: numba threads per rank = cores / ranks on the node (launcher
variables or an MPI shared-memory communicator), ``--threads`` and NUMBA_NUM_THREADS win;
``--device`` picks GPUs through CUDA_VISIBLE_DEVICES."""
import os
import subprocess
import sys

import pytest

from conftest import run_cli
from simengine.errors import UserError
from simengine.parallel import threads
from test_mpi_network import MPIEXEC


@pytest.fixture
def eight_cores(monkeypatch):
    monkeypatch.setattr(threads, "_cores", lambda: (8, False))


@pytest.mark.parametrize("env, want", [
    ({}, None),                                                  # one process: numba's default
    ({"OMPI_COMM_WORLD_LOCAL_SIZE": "2"}, 4),
    ({"MPI_LOCALNRANKS": "3"}, 2),
    ({"SLURM_NTASKS_PER_NODE": "16"}, 1),                        # never below one
    ({"SLURM_STEP_TASKS_PER_NODE": "4(x2),2", "SLURM_NODEID": "2"}, 4),
    ({"SLURM_STEP_TASKS_PER_NODE": "4(x2),2", "SLURM_NODEID": "1"}, 2),
    ({"SLURM_CPUS_PER_TASK": "3", "SLURM_PROCID": "0", "SLURM_NTASKS_PER_NODE": "2"}, 3),
    ({"MPI_LOCALNRANKS": "2", "NUMBA_NUM_THREADS": "5"}, None),  # the user's setting stays
])
def test_threads_per_rank(eight_cores, env, want):
    n, why = threads.decide_threads(None, env=env, mpi_split=False)
    assert n == want, why
    if "MPI_LOCALNRANKS" in env and want:
        assert why == "8 cores / 3 ranks on this node (from MPI_LOCALNRANKS)" or want != 2


def test_threads_flag_wins_and_bound_ranks_keep_their_cores(monkeypatch):
    assert threads.decide_threads("3", env={"NUMBA_NUM_THREADS": "1"}) == (3, "--threads")
    monkeypatch.setattr(threads, "_cores", lambda: (2, True))        # bound by the launcher
    assert threads.decide_threads(None, env={"MPI_LOCALNRANKS": "2"}, mpi_split=False)[0] == 2
    for bad in ("0", "-1", "two", "1.5"):
        with pytest.raises(UserError, match="--threads: expected a positive integer"):
            threads.decide_threads(bad, env={})


def test_device_list_composes_with_cuda_visible_devices():
    env = {}
    assert "CUDA_VISIBLE_DEVICES=1,3" in threads.apply_devices("1,3", env)
    assert env["CUDA_VISIBLE_DEVICES"] == "1,3"
    env = {"CUDA_VISIBLE_DEVICES": "4,5,6"}
    threads.apply_devices("2,0", env)
    assert env["CUDA_VISIBLE_DEVICES"] == "6,4"
    with pytest.raises(UserError, match="only GPUs 0..2 visible"):
        threads.apply_devices("3", {"CUDA_VISIBLE_DEVICES": "4,5,6"})
    for bad in ("", "a", "1,1", "-1", "0;1"):
        with pytest.raises(UserError, match="--device: expected GPU numbers"):
            threads.parse_devices(bad)


PROBE = ("import os; from simengine.parallel import threads as t; "
         "os.environ.pop('MPI_LOCALNRANKS', None) if os.environ.get('SPLIT') else None; "
         "print(t.decide_threads(None, mpi_split=True)[1])")


def test_two_ranks_split_the_cores_under_mpiexec():
    e = {k: v for k, v in os.environ.items() if k != "NUMBA_NUM_THREADS"}
    e["HYDRA_LAUNCHER"] = "fork"
    for split, source in (("", "MPI_LOCALNRANKS"), ("1", "an MPI shared-memory communicator")):
        e["SPLIT"] = split
        r = subprocess.run([MPIEXEC, "-n", "2", sys.executable, "-c", PROBE], env=e,
                           capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        said = r.stdout.count(f"/ 2 ranks on this node (from {source})")   # lines may interleave
        assert said + r.stdout.count("bound to") == 2, r.stdout


def test_run_logs_its_threads(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text("kind: network\nname: s\ngraph: {generator: {type: ring_lattice, n: 8, k: 2}}\n"
                  "solver: {backend: cpu}\n")
    r = run_cli("run", sc, "-o", tmp_path / "s.h5", "--threads", "1")
    assert r.returncode == 0, r.stderr
    assert "1 numba thread per process (--threads)" in r.stderr
    r = run_cli("run", sc, "-o", tmp_path / "t.h5", "--threads", "0")
    assert r.returncode == 2 and r.stderr.strip().splitlines() == [
        "simengine: error: --threads: expected a positive integer, got '0'"]
    assert not (tmp_path / "t.h5").exists()


BLOCK = ("import sys, importlib.abc\n"
         "class Block(importlib.abc.MetaPathFinder):\n"
         "    def find_spec(self, name, path, target=None):\n"
         "        if name == 'mpi4py.MPI':\n"
         "            raise ImportError('libmpi.so.12: cannot open shared object file: "
         "No such file or directory')\n"
         "sys.meta_path.insert(0, Block())\n"
         "from simengine.cli import main\n"
         "sys.exit(main(sys.argv[1:]))\n")


def test_mpi_library_missing_is_one_line_naming_what_to_install(tmp_path):
    sc = tmp_path / "s.yaml"
    sc.write_text("kind: network\nname: s\ngraph: {generator: {type: ring_lattice, n: 8, k: 2}}\n")
    e = dict(os.environ, PMI_SIZE="2", PMI_RANK="0", MPI_LOCALNRANKS="2")
    r = subprocess.run([sys.executable, "-c", BLOCK, "run", str(sc), "-o", str(tmp_path / "o.h5")],
                       env=e, capture_output=True, text=True, timeout=120)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith("simengine: error: mpi4py cannot load an MPI library "
                               "(libmpi.so.12: cannot open shared object file")
    assert "pip install mpich" in lines[0] and "--no-binary mpi4py" in lines[0]
