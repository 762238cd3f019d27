"""The run's plan is one value: ``simengine validate`` prints the ``plan:`` line that ``simengine
run`` logs at start-up (rank 0 under MPI), the output stores the same plan (``/plan``), and
validate refuses what run refuses with the same line (simengine.plan)."""
from __future__ import annotations

import json
import os

import h5py
import pytest

from simengine import cli

FIELD = """kind: field
name: f{nd}
grid: {{shape: {shape}, spacing: 1.0}}
model: {{mobility: 1.0, kappa: 1.0}}
initial: {{type: noise, amplitude: 0.05, seed: 1}}
time: {time}
boundary: {{type: {boundary}}}
solver: {{backend: {backend}, precision: {precision}, integrator: {integrator}{extra}}}
output: {output}
"""
FIXED = "{dt: 0.01, steps: 4}"
FIXED_OUT = "{observables_every: 2, snapshot_every: 0, checkpoint_every: 4}"
ADAPTIVE = "{dt: 0.01, end: 0.04, adaptive: true}"
ADAPTIVE_OUT = "{observables_dt: 0.02, snapshot_every: 0}"


def _field(time=FIXED, output=FIXED_OUT, **kw):
    return FIELD.format(time=time, output=output, **kw)


NET = """kind: network
name: n
graph: {{generator: {gen}{weights}}}
metrics: {{sources: {sources}, algorithm: {alg}{metrics}}}
output: {{checkpoint_every: 64}}
solver: {{backend: {backend}}}
"""

UNW = "{type: barabasi_albert, n: 120, m: 2, seed: 3}"
GNM = "{type: gnm, n: 90, m: 300, seed: 2}"
DENSE = "{type: gnm, n: 90, m: 800, seed: 2}"
WEIGHTS = ", weights: {type: uniform_int, low: 1, high: 9, seed: 1}"
BIG_WEIGHTS = ", weights: {type: uniform_int, low: 1, high: 9000, seed: 1}"

SCENARIOS = {
    "field-1d-cpu": _field(nd=1, shape="[64]", boundary="periodic", backend="cpu",
                                 precision="float64", integrator="rk2", extra=""),
    "field-2d-cpu": _field(nd=2, shape="[16, 12]", boundary="mirror", backend="cpu",
                                 precision="float32", integrator="euler", extra=""),
    "field-3d-cpu": _field(nd=3, shape="[6, 6, 6]", boundary="periodic", backend="cpu",
                                 precision="float64", integrator="rk2", extra=""),
    "field-1d-cuda": _field(nd=1, shape="[64]", boundary="fixed", backend="cuda",
                                  precision="float64", integrator="rk2", extra=""),
    "field-2d-cuda": _field(nd=2, shape="[16, 12]", boundary="periodic", backend="cuda",
                                  precision="float32", integrator="rk2", extra=""),
    "field-2d-cuda-fused": _field(nd=2, shape="[16, 12]", boundary="periodic",
                                        backend="cuda", precision="float64", integrator="rk2",
                                        extra=", fused: true"),
    "field-3d-cuda": _field(nd=3, shape="[6, 6, 6]", boundary="mirror", backend="cuda",
                                  precision="float64", integrator="rk2", extra=""),
    "field-2d-spectral-cpu": _field(nd=2, shape="[16, 12]", boundary="periodic",
                                    backend="cpu", precision="float64", integrator="spectral",
                                    extra=""),
    "field-2d-spectral-adaptive-cpu": _field(nd=2, shape="[16, 12]", boundary="mirror",
                                             backend="cpu", precision="float64",
                                             integrator="spectral", extra=", symbol: exact",
                                             time=ADAPTIVE, output=ADAPTIVE_OUT),
    "field-2d-rk2-adaptive-cpu": _field(nd=2, shape="[16, 12]", boundary="periodic",
                                        backend="cpu", precision="float64", integrator="rk2",
                                        extra="", time=ADAPTIVE, output=ADAPTIVE_OUT),
    "net-cpu-unweighted": NET.format(gen=UNW, weights="", sources="all", alg="auto",
                                     metrics="", backend="cpu"),
    "net-cpu-weighted": NET.format(gen=GNM, weights=BIG_WEIGHTS, sources="{sample: 30, seed: 1}",
                                   alg="auto", metrics="", backend="cpu"),
    "net-cpu-fw": NET.format(gen=DENSE, weights=WEIGHTS, sources="all", alg="auto", metrics="",
                             backend="cpu"),
    "net-cpu-fw-predecessors": NET.format(
        gen=GNM, weights=WEIGHTS, sources="all", alg="floyd_warshall",
        metrics=", store_distances: true, store_predecessors: true", backend="cpu"),
    "net-cpu-betweenness": NET.format(
        gen=UNW, weights="", sources="all", alg="auto",
        metrics=", statistics: [mean_distance, betweenness]", backend="cpu"),
    "net-cuda-unweighted": NET.format(gen=UNW, weights="", sources="[0, 5, 7]", alg="auto",
                                      metrics="", backend="cuda"),
    "net-cuda-weighted": NET.format(gen=GNM, weights=WEIGHTS, sources="{sample: 40, seed: 1}",
                                    alg="dijkstra", metrics="", backend="cuda"),
    "net-cuda-betweenness-weighted": NET.format(
        gen=GNM, weights=WEIGHTS, sources="{sample: 20, seed: 1}", alg="auto",
        metrics=", statistics: [mean_distance, betweenness]", backend="cuda"),
    # a path of 110 vertices: the probe BFS has more than DEEP_LEVELS levels, so auto runs a
    # thread block per source; validate builds the graph to probe it, as the run does
    "net-cuda-deep": NET.format(gen="{type: grid, shape: [110]}", weights="",
                                sources="{sample: 40, seed: 1}", alg="auto", metrics="",
                                backend="cuda"),
    "net-cpu-edge-betweenness": NET.format(
        gen=UNW, weights="", sources="{sample: 30, seed: 1}", alg="auto",
        metrics=", statistics: [mean_distance, edge_betweenness]", backend="cpu"),
    "net-cuda-edge-betweenness-weighted": NET.format(
        gen=GNM, weights=WEIGHTS, sources="{sample: 20, seed: 1}", alg="auto",
        metrics=", statistics: [mean_distance, betweenness, edge_betweenness]",
        backend="cuda"),
}

SIMULATOR = os.environ.get("NUMBA_ENABLE_CUDASIM") == "1"

#: what auto picks today on these cases (the plan must not change a choice); the CUDA field cases
#: under the simulator (where auto keeps the unfused stages) and on a real GPU
EXPECTED_GPU = {
    "field-1d-cuda": "stages/direct (auto: unfused for texture 1-D)",
    "field-2d-cuda": "fused-frame (auto: fused, frame-blocked (small 2-D grid, latency-bound))",
    "field-2d-cuda-fused": "fused-frame (fused: true)",
    "field-3d-cuda": "stages/smarch (auto: unfused for texture 3-D)",
}
EXPECTED = {
    "field-1d-cpu": "plan: field 1-D cpu rk2 float64 periodic, kernel texture",
    "field-1d-cuda": "stages/direct (auto: unfused under the simulator)",
    "field-2d-cuda": "stages/vec (auto: unfused under the simulator)",
    "field-2d-cuda-fused": "fused-frame (fused: true)",
    "field-3d-cuda": "stages/smarch (auto: unfused under the simulator)",
    "net-cpu-unweighted": "cpu msbfs (auto: unweighted graph)",
    "net-cpu-weighted": "cpu dijkstra",
    "net-cpu-fw": "cpu fw (auto:",
    "net-cpu-fw-predecessors": "cpu fw (as requested)",      # integer weights: exact rows
    "net-cpu-betweenness": "cpu brandes",
    "net-cuda-unweighted": "cuda dobfs (auto: 3 sources",
    "net-cuda-weighted": "cuda frontier (instead of dijkstra",
    # positive integer weights: the GPU's weighted Brandes engine (brandes_weighted.can_run)
    "net-cuda-betweenness-weighted": "cuda brandes (betweenness: Brandes (distance buckets",
    "field-2d-spectral-cpu": "plan: field 2-D cpu spectral sbdf2 fft symbol=fd float64 periodic",
    "field-2d-spectral-adaptive-cpu": "plan: field 2-D cpu spectral sbdf2 dct-ii symbol=exact "
                                      "adaptive float64 mirror",
    "field-2d-rk2-adaptive-cpu": "plan: field 2-D cpu rk2 adaptive float64 periodic",
    "net-cuda-deep": "cuda bfs_blocks (auto: a BFS from the vertex of largest degree has more",
    "net-cpu-edge-betweenness": ", edge betweenness on cpu",
    # the edge pass's GPU kernel is unweighted only: the plan's edge_betweenness row says cpu
    "net-cuda-edge-betweenness-weighted": ", edge betweenness on cpu",
}


def _plan_lines(text):
    return [ln.split("simengine: ", 1)[-1] for ln in text.splitlines()
            if ln.split("simengine: ", 1)[-1].startswith("plan: ")]


def _cli(capsys, *args):
    rc = cli.main([str(a) for a in args])
    out = capsys.readouterr()
    return rc, out.out + out.err


@pytest.mark.parametrize("name", sorted(SCENARIOS))
def test_validate_run_and_output_name_one_plan(tmp_path, capsys, name):
    scen = tmp_path / f"{name}.yaml"
    scen.write_text(SCENARIOS[name])
    rc, text = _cli(capsys, "validate", scen)
    assert rc == 0, text
    (validated,) = _plan_lines(text)
    expected = EXPECTED_GPU.get(name) if not SIMULATOR else None
    expected = expected or EXPECTED.get(name)
    if expected:
        assert expected in validated
    out = tmp_path / "out.h5"
    rc, text = _cli(capsys, "run", scen, "--output", out)
    assert rc == 0, text
    assert _plan_lines(text) == [validated]
    with h5py.File(out, "r") as f:
        assert f.attrs["plan"] == validated
        g = f["plan"]
        assert g.attrs["line"] == validated
        assert json.loads(g.attrs["decisions"])          # every choice with its reason


def test_validate_refuses_what_run_refuses_with_the_same_line(tmp_path, capsys):
    """``fused: true`` where the form table has no fused form (1-D here; whatever the table
    says about 3-D, the rule is its)."""
    scen = tmp_path / "f.yaml"
    scen.write_text(_field(nd=1, shape="[64]", boundary="periodic", backend="cuda",
                                 precision="float64", integrator="rk2", extra=", fused: true"))
    rc_v, text_v = _cli(capsys, "validate", scen)
    rc_r, text_r = _cli(capsys, "run", scen, "--output", tmp_path / "o.h5")
    assert rc_v == rc_r == 2
    err = [ln for ln in text_v.splitlines() if "error" in ln]
    assert err and err == [ln for ln in text_r.splitlines() if "error" in ln]
    assert "fused: true cannot run here" in err[0]
    assert not (tmp_path / "o.h5").exists()


@pytest.mark.parametrize("backend,ranks_word", [("cuda", "on the CPU")])
def test_validate_and_run_refuse_adaptive_stage_steps_on_a_gpu(tmp_path, capsys, backend,
                                                                ranks_word):
    """Adaptive rk2 steps run on the CPU: the plan's integrator row refuses them on a GPU, in
    validate and in run, with the same line naming time.adaptive."""
    scen = tmp_path / "a.yaml"
    scen.write_text(_field(nd=2, shape="[16, 12]", boundary="periodic", backend=backend,
                           precision="float64", integrator="rk2", extra="", time=ADAPTIVE,
                           output=ADAPTIVE_OUT))
    rc_v, text_v = _cli(capsys, "validate", scen)
    rc_r, text_r = _cli(capsys, "run", scen, "--output", tmp_path / "o.h5")
    assert rc_v == rc_r == 2
    err = [ln for ln in text_v.splitlines() if "error" in ln]
    assert err and err == [ln for ln in text_r.splitlines() if "error" in ln]
    assert "time.adaptive: adaptive rk2 steps run " + ranks_word in err[0]
    assert not (tmp_path / "o.h5").exists()


def test_validate_time_estimate_of_betweenness_is_brandes(tmp_path, capsys):
    scen = tmp_path / "b.yaml"
    scen.write_text(SCENARIOS["net-cpu-betweenness"])
    rc, text = _cli(capsys, "validate", scen)
    assert rc == 0
    work = [ln for ln in text.splitlines() if "traversal work" in ln]
    assert len(work) == 1 and "with brandes on cpu" in work[0] and "3e+08/s" in work[0]


def test_plan_is_frozen_and_built_once_from_a_shape():
    from dataclasses import FrozenInstanceError

    from simengine.plan import GraphShape, NetworkProblem, build

    shape = GraphShape(n=400, num_arcs=400 * 399 // 5, weighted=True, dial=True, exact=True,
                       directed=False)
    p = build(NetworkProblem(graph=shape, backend="cpu", algorithm="auto", num_sources=400,
                             statistics=("mean_distance",), checkpoint_every=100))
    assert p.runs == "fw" and p.batch == 100 and p.decision("algorithm").chosen == "fw"
    with pytest.raises(FrozenInstanceError):
        p.runs = "msbfs"
    # the predecessors row: real weights refuse Floyd–Warshall, the engine's replacement runs
    real = GraphShape(n=400, num_arcs=400 * 399 // 5, weighted=True, dial=False, exact=False,
                      directed=False)
    q = build(NetworkProblem(graph=real, backend="cpu", algorithm="auto", num_sources=400,
                             store_distances=True, store_predecessors=True,
                             checkpoint_every=100))
    assert q.runs == "dijkstra" and ("fw", q.choice.rejected[0][1]) in q.choice.rejected


@pytest.mark.parametrize("name", ["field-2d-cpu", "net-cpu-weighted"])
def test_mpi_rank0_logs_the_validated_plan(tmp_path, capsys, name):
    """``mpiexec -n 2 simengine run``: rank 0 logs the plan line validate prints, once."""
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    mpiexec = shutil.which("mpiexec") or str(Path(sys.executable).with_name("mpiexec"))
    scen = tmp_path / f"{name}.yaml"
    scen.write_text(SCENARIOS[name])
    rc, text = _cli(capsys, "validate", scen)
    assert rc == 0, text
    (validated,) = _plan_lines(text)
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MPIR_CVAR_CH4_PROGRESS_THROTTLE="true", HYDRA_LAUNCHER="fork")
    out = tmp_path / "o.h5"
    r2 = subprocess.run([mpiexec, "-n", "2", sys.executable, "-m", "simengine", "run", str(scen),
                         "--output", str(out)], capture_output=True, text=True,
                        timeout=600, env=env)
    assert r2.returncode == 0, r2.stderr
    assert _plan_lines(r2.stderr) == [validated]
    with h5py.File(out, "r") as f:
        assert f.attrs["plan"] == validated and f["plan"].attrs["ranks"] == 2
