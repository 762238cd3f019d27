"""Adaptive and spectral runs through the runner: cadences in simulated time land exactly, a run
killed at a commit point resumes to the file an uninterrupted run writes, bad settings are one
line."""
import h5py
import numpy as np
import pytest

from conftest import run_cli
from integrity_helpers import assert_same, contents, run, scenario
from simengine.io import faults
from simengine.io.verify import verify_file

ADAPTIVE = """\
kind: field
name: adaptive
grid: {{shape: [24, 20]}}
boundary: {{type: {boundary}}}
initial: {{type: noise, amplitude: 0.05, seed: 3}}
time: {{end: 60, dt: 0.01, adaptive: true, tolerance: 0.002}}
solver: {{integrator: {integrator}, backend: cpu}}
output: {{observables_dt: 7.5, snapshot_dt: 15, checkpoint_dt: 20}}
"""


def _text(integrator="spectral", boundary="mirror"):
    return ADAPTIVE.format(integrator=integrator, boundary=boundary)


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    refs = {}
    for integ in ("spectral", "rk2"):
        sc = scenario(d, f"a-{integ}", _text(integ))
        assert run(sc, d / f"{integ}.h5") == 0
        refs[integ] = (sc, contents(d / f"{integ}.h5"))
    return refs


def test_stops_land_on_simulated_time(reference):
    _, ref = reference["spectral"]
    t = ref["observables/time"]
    np.testing.assert_array_equal(t, 7.5 * np.arange(len(t)))  # 0, 7.5, ... exactly
    assert t[-1] == 60.0 or 60.0 in ref["fields/time"]
    np.testing.assert_array_equal(ref["fields/time"], [0, 15, 30, 45, 60])
    F = ref["observables/free_energy"]
    assert np.all(np.diff(F) <= 1e-9 * np.abs(F[:-1]))
    assert abs(ref["observables/mass"][-1] - ref["observables/mass"][0]) < 1e-12


@pytest.mark.parametrize("integ", ["spectral", "rk2"])
# (format 5: the checkpoints at t = 0 and t = 60 share a snapshot's parts, so the second
# checkpoint written is the one at t = 40)
@pytest.mark.parametrize("point,k", [("commit.done", 4), ("checkpoint.written", 2),
                                     ("index.renamed", 5)])
def test_killed_adaptive_run_resumes_to_the_same_file(tmp_path, reference, integ, point, k):
    sc, ref = reference[integ]
    out = tmp_path / "run.h5"
    faults.arm(point, k)
    try:
        with pytest.raises(faults.FaultInjected):
            run(sc, out)
    finally:
        faults.disarm()
    with h5py.File(out, "r") as f:
        # killed after the checkpoint at t = 20 or 40 (a restart point with a controller state)
        assert 0 < int(f["checkpoint/phi"].attrs["step"]) < int(f.attrs["steps_total"])
    assert run(sc, out, resume=True) == 0
    assert_same(contents(out), ref)
    problems, _, _ = verify_file(out)
    assert problems == []


def test_fixed_steps_with_time_cadences(tmp_path):
    text = ("kind: field\nname: fx\ngrid: {shape: [16, 16]}\n"
            "time: {end: 2.0, dt: 0.05}\nsolver: {integrator: spectral, backend: cpu}\n"
            "output: {observables_dt: 0.5, observables_every: 8}\n")
    sc = scenario(tmp_path, "fx", text)
    out = tmp_path / "fx.h5"
    assert run(sc, out) == 0
    with h5py.File(out, "r") as f:
        steps = f["observables/step"][()]
        assert int(f.attrs["steps_total"]) == 40
    np.testing.assert_array_equal(steps, [0, 8, 10, 16, 20, 24, 30, 32, 40])


@pytest.mark.parametrize("time_,solver_,output_,words", [
    ("{dt: 0.01, end: 10, steps: 5}", "{}", "{}", "exactly one"),
    ("{dt: 0.01, end: 10, adaptive: true}", "{}", "{observables_every: 10}", "observables_dt"),
    ("{dt: 0.01, steps: 10, tolerance: 0.1}", "{}", "{}", "adaptive: true"),
    ("{dt: 0.03, end: 1}", "{}", "{}", "whole number of steps"),
    ("{dt: 0.01, steps: 10}", "{}", "{observables_dt: 0.015}", "whole number of steps"),
    ("{dt: 0.01, steps: 10}", "{symbol: exact}", "{}", "integrator: spectral"),
    ("{dt: 0.01, steps: 10}", "{integrator: spectral, symbol: sinc}", "{}", "symbol"),
])
def test_bad_time_settings_are_one_line(tmp_path, time_, solver_, output_, words):
    p = tmp_path / "bad.yaml"
    p.write_text(f"kind: field\nname: bad\ngrid: {{shape: [8, 8]}}\ntime: {time_}\n"
                 f"solver: {solver_}\noutput: {output_}\n")
    r = run_cli("validate", p)
    assert r.returncode == 2, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1 and words in lines[0] and "Traceback" not in r.stderr, r.stderr


def test_spectral_on_cuda_without_cupy_is_one_line(tmp_path):
    pytest.importorskip("numba.cuda")
    try:
        import cupy  # noqa: F401
        pytest.skip("CuPy is installed here: the refusal does not apply")
    except ImportError:
        pass
    p = tmp_path / "gpu.yaml"
    p.write_text("kind: field\nname: gpu\ngrid: {shape: [8, 8]}\ntime: {dt: 0.1, steps: 2}\n"
                 "solver: {integrator: spectral, backend: cuda}\n")
    r = run_cli("run", p, "-o", tmp_path / "gpu.h5")
    assert r.returncode == 2 and "CuPy" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert not (tmp_path / "gpu.h5").exists()


def test_startup_line_names_integrator_transform_symbol(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text("kind: field\nname: s\ngrid: {shape: [8, 8]}\nboundary: {type: fixed, value: 0.1}"
                 "\ntime: {dt: 0.5, steps: 4}\nsolver: {integrator: spectral, symbol: exact, "
                 "backend: cpu}\n")
    r = run_cli("run", p, "-o", tmp_path / "s.h5")
    assert r.returncode == 0, r.stderr
    assert "integrator spectral" in r.stderr and "transform dst-i" in r.stderr
    assert "symbol exact" in r.stderr


def test_adaptive_rk2_on_cuda_is_one_line(tmp_path):
    """Step doubling resets the stencil solver's dt: the CPU solver only (the GPU forms record
    their coefficients in launch plans and graphs)."""
    p = tmp_path / "a.yaml"
    p.write_text("kind: field\nname: a\ngrid: {shape: [8, 8]}\n"
                 "time: {end: 1, dt: 0.01, adaptive: true}\nsolver: {backend: cuda}\n")
    r = run_cli("run", p, "-o", tmp_path / "a.h5")
    assert r.returncode == 2, r.stderr
    assert "integrator: spectral" in r.stderr and "Traceback" not in r.stderr, r.stderr
    assert len(r.stderr.strip().splitlines()) == 1
    assert not (tmp_path / "a.h5").exists()
