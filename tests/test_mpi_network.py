"""Network runs on MPI ranks (``mpiexec -n 2|3 simengine run``) give the one-process result.

These tests need ``mpiexec`` and mpi4py (``pip install mpich mpi4py``, both in the ``test`` extra);
they fail, not skip, when MPI is missing, so CI always runs them.
"""
from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import h5py
import numpy as np
import pytest

from conftest import run_cli

MPIEXEC = shutil.which("mpiexec") or str(Path(sys.executable).with_name("mpiexec"))


def mpirun(n, *args, timeout=300, env=None, popen=False):
    e = dict(os.environ)
    # one thread per rank; MPICH ranks that wait back off instead of spinning (2-core CI machines)
    e.update({"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
              "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "true", "HYDRA_LAUNCHER": "fork"})
    e.update(env or {})
    cmd = [MPIEXEC, "-n", str(n), sys.executable, "-m", "simengine", *map(str, args)]
    if popen:
        return subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                env=e, start_new_session=True)
    return subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=e)


def mpirun_many(n, commands, where, timeout=600, env=None):
    """Several CLI commands in one ``mpiexec -n n`` launch (tests/mpi/run_many.py), so the ranks
    start once for all of them. Returns, per command, (rank 0's exit code, every rank's stderr
    joined in rank order)."""
    import json

    where.mkdir(parents=True, exist_ok=True)
    (where / "cmds.json").write_text(json.dumps([[str(a) for a in c] for c in commands]))
    e = dict(os.environ)
    e.update({"NUMBA_NUM_THREADS": "1", "OMP_NUM_THREADS": "1",
              "MPIR_CVAR_CH4_PROGRESS_THROTTLE": "true", "HYDRA_LAUNCHER": "fork"})
    e.update(env or {})
    r = subprocess.run([MPIEXEC, "-n", str(n), sys.executable,
                        str(Path(__file__).parent / "mpi" / "run_many.py"), str(where),
                        str(where / "cmds.json")], capture_output=True, text=True,
                       timeout=timeout, env=e)
    assert r.returncode == 0, r.stdout + r.stderr
    return [(int((where / f"cmd{i}.rank0.rc").read_text()),
             "".join((where / f"cmd{i}.rank{k}.err").read_text() for k in range(n)))
            for i in range(len(commands))]


def test_mpi_is_available():
    assert Path(MPIEXEC).exists(), "mpiexec not found: pip install mpich mpi4py"
    import mpi4py  # noqa: F401


def write(tmp_path, name, text):
    p = tmp_path / name
    p.write_text(text)
    return p


NET = """kind: network
name: net
graph: {{generator: {gen}, weights: {weights}}}
metrics: {{sources: {sources}, algorithm: {alg}, store_distances: {store}}}
output: {{checkpoint_every: {every}}}
solver: {{backend: cpu}}
"""

CASES = {
    "unweighted-all": dict(gen="{type: barabasi_albert, n: 600, m: 2, seed: 3}", sources="all",
                           weights="none",
                           alg="auto", store="false", every=128),
    "weighted-sampled": dict(gen="{type: gnm, n: 500, m: 1500, seed: 2}",
                             weights="{type: uniform_int, low: 1, high: 10, seed: 1}",
                             sources="{sample: 200, seed: 5}", alg="auto",
                             store="true", every=64),
    # Brandes' engine on ranks: the dependency sums (and their squares, for the stderr of the
    # sampled estimate) merge like the other per-source sums
    "betweenness-sampled": dict(gen="{type: gnm, n: 240, m: 700, seed: 6, directed: true}",
                                weights="{type: uniform_int, low: 1, high: 4, seed: 2}",
                                sources="{sample: 150, seed: 3}", alg="auto", every=40,
                                store="true, statistics: [mean_distance, distance_histogram, "
                                      "harmonic, betweenness]"),
    # betweenness alone (no path statistic asked for): the accumulators keep no path statistics
    "betweenness-alone": dict(gen="{type: gnm, n: 200, m: 600, seed: 7}",
                              weights="{type: uniform_int, low: 1, high: 4, seed: 2}",
                              sources="all", alg="auto", every=50,
                              store="false, statistics: [betweenness]"),
    "directed-list": dict(gen="{type: gnm, n: 300, m: 900, seed: 4, directed: true}",
                          sources="[0, 5, 7, 11, 200, 299, 150]", alg="bfs", store="true", weights="none",
                          every=3),
    # /predecessors travel with the distance rows (gathered on rank 0, in /sources order)
    "predecessors": dict(gen="{type: gnm, n: 120, m: 200, seed: 6, directed: true}",
                         weights="{type: uniform_int, low: 0, high: 3, seed: 2}",
                         sources="{sample: 40, seed: 2}", alg="dial",
                         store="true, store_predecessors: true", every=16),
}


def compare(a_path, b_path):
    with h5py.File(a_path) as a, h5py.File(b_path) as b:
        assert bool(a.attrs["complete"]) and bool(b.attrs["complete"])
        for k in a["statistics"]:
            if k in ("elapsed", "normalized_time"):
                continue
            x, y = a["statistics"][k][()], b["statistics"][k][()]
            if isinstance(x, (float, np.floating)) and not float(x).is_integer():
                assert y == pytest.approx(x, rel=1e-12, abs=0), k
            else:
                assert x == y, k
        for k in a["vertex"]:
            np.testing.assert_allclose(b["vertex"][k][()], a["vertex"][k][()], rtol=1e-12,
                                       atol=1e-300, err_msg=k)
        assert ("distance_histogram" in a) == ("distance_histogram" in b)
        if "distance_histogram" in a:
            np.testing.assert_array_equal(a["distance_histogram"][()],
                                          b["distance_histogram"][()])
        np.testing.assert_array_equal(a["sources"][()], b["sources"][()])
        if "distances" in a:
            np.testing.assert_array_equal(a["distances"][()], b["distances"][()])
        assert ("predecessors" in a) == ("predecessors" in b)
        if "predecessors" in a:
            np.testing.assert_array_equal(a["predecessors"][()], b["predecessors"][()])


def test_ranks_equal_one_process(tmp_path):
    """Every case on 2 and 3 ranks (one mpiexec launch per rank count for all cases) equals the
    one-process run (in this process)."""
    from simengine.cli import main

    scens = {}
    for case in sorted(CASES):
        d = tmp_path / case
        d.mkdir()
        scens[case] = write(d, "net.yaml", NET.format(**CASES[case]))
        assert main(["run", str(scens[case]), "-o", str(d / "one.h5"), "-q"]) == 0, case
    for n in (2, 3):
        # 3 ranks: half of each round split statically (the GPU default) before the claims,
        # and the per-rank profile logged
        env = {"SIMENGINE_STATIC_SHARE": "0.5", "SIMENGINE_PROFILE": "1"} if n == 3 else {}
        res = mpirun_many(n, [["run", s, "-o", s.parent / f"r{n}.h5"] for s in scens.values()],
                          tmp_path / f"ranks{n}", env=env)
        for (case, scen), (rc, err) in zip(scens.items(), res):
            assert rc == 0, (case, err)
            assert f"{n} MPI ranks" in err, (case, err)
            assert err.count("done: ") == 1, (case, err)  # rank 0 logs, once
            if n == 3:
                assert "the first 50% statically" in err, (case, err)
                assert all(f"profile, rank {k} of 3: " in err for k in range(3)), (case, err)
            compare(scen.parent / "one.h5", scen.parent / f"r{n}.h5")


def test_static_share_covers_each_source_once():
    """The static part is whole rounds of one block per rank, dealt round-robin: every position
    below it belongs to exactly one rank; the counter starts where it ends."""
    from simengine.network.distributed import static_positions, static_sources

    assert static_sources(1000, 2, 64, 0.5) == 384          # 3 rounds of 2 × 64
    assert static_sources(1000, 3, 64, 0.0) == 0
    assert static_sources(100, 2, 64, 0.5) == 0             # less than one round
    assert static_sources(1000, 1, 64, 0.5) == 0            # one rank: nothing to split
    for ranks, block in ((2, 64), (3, 10), (4, 1)):
        S = static_sources(1000, ranks, block, 0.5)
        got = np.concatenate([p for r in range(ranks)
                              for p in static_positions(S, ranks, r, block)])
        np.testing.assert_array_equal(np.sort(got), np.arange(S))
        sizes = [sum(len(p) for p in static_positions(S, ranks, r, block)) for r in range(ranks)]
        assert len(set(sizes)) == 1                           # equal shares


SLOW = """kind: network
name: slow
graph:
  generator: {type: gnm, n: 4000, m: 16000, seed: 1}
  weights: {type: uniform_int, low: 1, high: 1000, seed: 1}
metrics: {sources: all, algorithm: dijkstra}
output: {checkpoint_every: 200}
solver: {backend: cpu, batch: 8}
"""


def wait_for_checkpoint(out, proc, timeout=120):
    t = time.time()
    while time.time() - t < timeout and proc.poll() is None:
        try:
            with h5py.File(out, "r") as f:
                if "checkpoint" in f and int(f["checkpoint"].attrs["done"]) > 0:
                    return True
        except OSError:
            pass
        time.sleep(0.2)
    return False


def rank_pids(proc):
    """PIDs of the python rank processes descending from an mpiexec process."""
    out = subprocess.run(["ps", "-eo", "pid,ppid,args"], capture_output=True, text=True).stdout
    children, args_of = {}, {}
    for line in out.splitlines()[1:]:
        pid, ppid, args = (line.split(None, 2) + [""])[:3]
        children.setdefault(int(ppid), []).append(int(pid))
        args_of[int(pid)] = args
    pids, todo = [], [proc.pid]
    while todo:
        p = todo.pop()
        for c in children.get(p, []):
            todo.append(c)
            if "-m simengine" in args_of[c] and "mpiexec" not in args_of[c]:
                pids.append(c)
    return sorted(pids)


def test_sigterm_one_rank_checkpoints_and_resumes_on_other_rank_counts(tmp_path):
    scen = write(tmp_path, "slow.yaml", SLOW)
    ref = tmp_path / "ref.h5"
    r = run_cli("run", scen, "-o", ref, "-q")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "out.h5"
    proc = mpirun(2, "run", scen, "-o", out, popen=True)
    assert wait_for_checkpoint(out, proc), "no checkpoint before the run ended"
    pids = rank_pids(proc)
    assert len(pids) == 2, pids
    os.kill(pids[1], signal.SIGTERM)  # Slurm preemption may reach any rank first
    _, err = proc.communicate(timeout=120)
    assert proc.returncode == 130, err
    assert "interrupted after" in err and "Traceback" not in err
    with h5py.File(out) as f:
        done = int(f["checkpoint"].attrs["done"])
        assert 0 < done < 4000 and not bool(f.attrs["complete"])
    r = mpirun(3, "run", scen, "-o", out, "--resume")
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stderr
    compare(ref, out)


def test_a_dead_rank_stops_the_others_and_keeps_the_checkpoint(tmp_path):
    scen = write(tmp_path, "slow.yaml", SLOW)
    out = tmp_path / "out.h5"
    proc = mpirun(3, "run", scen, "-o", out, popen=True)
    assert wait_for_checkpoint(out, proc), "no checkpoint before the run ended"
    pids = rank_pids(proc)
    assert len(pids) == 3, pids
    t = time.time()
    os.kill(pids[2], signal.SIGKILL)
    proc.communicate(timeout=60)  # the others must not wait until a wall-clock limit
    assert proc.returncode != 0
    assert time.time() - t < 60
    r = run_cli("run", scen, "-o", out, "--resume", "-q")  # the checkpoint is still loadable
    assert r.returncode == 0, r.stderr


def test_user_error_on_ranks_is_one_line(tmp_path):
    scen = write(tmp_path, "bad.yaml", NET.format(**CASES["unweighted-all"]).replace(
        "m: 2", "m: -2"))
    r = mpirun(2, "run", scen, "-o", tmp_path / "x.h5")
    assert r.returncode == 2
    lines = [ln for ln in r.stderr.splitlines() if ln.startswith("simengine")]
    assert len(lines) == 1, r.stderr
    assert not (tmp_path / "x.h5").exists()


@pytest.mark.parametrize("ranks", [2, 3])
def test_merge_of_rank_accumulators(ranks):
    """merge_into on real ranks (tests/mpi/network_merge.py): float partials with compensation
    terms on some ranks only, rows placed, counts and histogram summed."""
    e = dict(os.environ)
    e.update({"MPIR_CVAR_CH4_PROGRESS_THROTTLE": "true", "HYDRA_LAUNCHER": "fork"})
    r = subprocess.run([MPIEXEC, "-n", str(ranks), sys.executable,
                        str(Path(__file__).parent / "mpi" / "network_merge.py")],
                       capture_output=True, text=True, timeout=300, env=e)
    assert r.returncode == 0, r.stdout + r.stderr
    assert f"merge ok on {ranks} ranks" in r.stdout


def test_guided_claims_shrink_to_the_tail_width():
    """Claims are multiples of the sweep width while the share allows, then powers of two down
    to the tail width; without a tail width they never go below the alignment."""
    from simengine.network.distributed import GUIDED_SHARE, guided_size

    share = 2 * GUIDED_SHARE  # two ranks
    assert guided_size(40 * 1024 * share, 2, 2048, 1024, 256) == 2048
    assert guided_size(3 * 1024 * share, 2, 2048, 1024, 256) == 2048
    assert guided_size(1024 * share, 2, 2048, 1024, 256) == 1024
    assert guided_size(700 * share, 2, 2048, 1024, 256) == 512
    assert guided_size(300 * share, 2, 2048, 1024, 256) == 256
    assert guided_size(10, 2, 2048, 1024, 256) == 256
    assert guided_size(700 * share, 2, 2048, 1024) == 1024      # no tail width: full width
    assert guided_size(700 * share, 2, 2048, 1024, 1024) == 1024
    assert guided_size(5, 3, 100) == 1                            # unaligned (CPU sources)
