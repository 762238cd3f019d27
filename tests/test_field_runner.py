"""`kind: field` runs end to end: HDF5 contract, cadence, initial files, blow-up, plot, info."""
import h5py
import numpy as np
import pytest
import yaml

import simengine
from conftest import run_cli
from simengine.cli import main
from simengine.config import load_scenario
from simengine.field import reference
from simengine.field.initial import noise
from simengine.control.runner import run_scenario

BASE = {
    "kind": "field", "name": "small",
    "grid": {"shape": [24, 20], "spacing": 1.0},
    "boundary": {"type": "periodic"},
    "model": {"mobility": 1.0, "kappa": 1.0, "potential": {"b": 1.0, "u": 1.0}},
    "initial": {"type": "noise", "mean": 0.0, "amplitude": 0.05, "seed": 4},
    "time": {"dt": 0.01, "steps": 60},
    "solver": {"integrator": "rk2", "kernel": "texture", "backend": "cpu", "precision": "float64"},
    "output": {"snapshot_every": 20, "checkpoint_every": 30, "observables_every": 10},
}


def write(tmp_path, **changes):
    data = yaml.safe_load(yaml.safe_dump(BASE))
    for key, value in changes.items():
        node = data
        parts = key.split("__")
        for p in parts[:-1]:
            node = node[p]
        node[parts[-1]] = value
    p = tmp_path / "s.yaml"
    p.write_text(yaml.safe_dump(data))
    return p


def run(path, out, *extra):
    sc = load_scenario(path, list(extra))
    return run_scenario(sc, out, progress=False, log=lambda m: None)


def test_output_layout_and_values(tmp_path):
    out = tmp_path / "o.h5"
    assert run(write(tmp_path), out) == 0
    with simengine.open(out) as r:
        assert r.kind == "field" and r.complete and r.version == simengine.__version__
        assert r.scenario["grid"]["shape"] == [24, 20]
        np.testing.assert_array_equal(r.snapshot_steps, [0, 20, 40, 60])
        np.testing.assert_allclose(r.snapshot_times, [0, 0.2, 0.4, 0.6])
        assert r.phi.shape == (4, 24, 20) and r.phi.dtype == np.float64
        obs = r.observables
        np.testing.assert_array_equal(obs["step"], [0, 10, 20, 30, 40, 50, 60])
        for k in ("time", "mass", "free_energy", "phi_min", "phi_max", "length", "wall_time"):
            assert len(obs[k]) == 7
        ck = r.checkpoint
        assert ck[1] == 60 and ck[2] == pytest.approx(0.6)
        # the stored field is the reference solution
        sc = load_scenario(tmp_path / "s.yaml")
        from simengine.config.checks import field_problem
        model, grid, boundary = field_problem(sc.spec)
        phi0 = noise((24, 20), 0.0, 0.05, 4, np.float64)
        np.testing.assert_array_equal(r.phi[0], phi0)
        ref = reference.run(phi0, 60, 0.01, model, grid, boundary)
        np.testing.assert_allclose(r.final_field, ref, rtol=0, atol=1e-12)
        assert abs(obs["mass"][-1] - obs["mass"][0]) < 1e-14
        assert np.all(np.diff(obs["free_energy"]) <= 1e-12)
    with h5py.File(out, "r") as f:  # plain h5py: a virtual dataset over one checksummed part per snapshot
        assert f["fields/phi"].is_virtual and len(f["fields/phi"].virtual_sources()) == 4
        src = f["fields/phi"].virtual_sources()[-1]
        with h5py.File(out.parent / src.file_name, "r") as part:
            assert part[src.dset_name].fletcher32 and part[src.dset_name].compression is None
            np.testing.assert_array_equal(part[src.dset_name][()], f["fields/phi"][-1])
        assert "simengine_version" in f.attrs and "scenario" in f.attrs


@pytest.mark.parametrize("shape,boundary", [([40], "mirror"), ([10, 9, 8], "fixed")])
def test_1d_and_3d_runs(tmp_path, shape, boundary):
    out = tmp_path / "o.h5"
    p = write(tmp_path, grid__shape=shape, boundary={"type": boundary, **({"value": -1.0} if boundary == "fixed" else {})},
              time={"dt": 0.005, "steps": 20})
    assert run(p, out) == 0
    with simengine.open(out) as r:
        assert r.phi.shape == (2, *shape)
        assert np.all(np.isfinite(r.final_field))


def test_initial_condition_from_file(tmp_path):
    first = tmp_path / "first.h5"
    assert run(write(tmp_path), first) == 0
    # continue from the first run's snapshots (a series: the last entry is used)
    p = write(tmp_path, initial={"type": "file", "path": "first.h5", "dataset": "fields/phi"})
    out = tmp_path / "second.h5"
    assert run(p, out) == 0
    with simengine.open(first) as a, simengine.open(out) as b:
        np.testing.assert_array_equal(b.phi[0], a.final_field)


def test_float32_run(tmp_path):
    out = tmp_path / "o.h5"
    assert run(write(tmp_path), out, "solver.precision=float32") == 0
    with simengine.open(out) as r:
        assert r.phi.dtype == np.float32 and r.checkpoint[0].dtype == np.float32


def test_blow_up_stops_with_exit_1_and_keeps_last_checkpoint(tmp_path, capsys):
    p = write(tmp_path, time={"dt": 0.2, "steps": 400, "allow_unstable": True},
              output={"snapshot_every": 0, "checkpoint_every": 10, "observables_every": 10})
    out = tmp_path / "o.h5"
    assert main(["run", str(p), "-o", str(out), "-q"]) == 1
    err = capsys.readouterr().err
    assert "blew up" in err and "last good checkpoint" in err and "Traceback" not in err
    with simengine.open(out) as r:
        phi, step, _ = r.checkpoint
        assert np.all(np.isfinite(phi)) and 0 <= step < 400 and not r.complete


def test_info_and_plot(tmp_path):
    out = tmp_path / "o.h5"
    assert run(write(tmp_path), out) == 0
    r = run_cli("info", out)
    assert r.returncode == 0 and "snapshots:  4" in r.stdout and "checkpoint: step 60" in r.stdout
    r = run_cli("plot", out, "--out", tmp_path / "png")
    assert r.returncode == 0, r.stderr
    for name in ("field.png", "observables.png"):
        data = (tmp_path / "png" / name).read_bytes()
        assert data[:8] == b"\x89PNG\r\n\x1a\n" and len(data) > 5000


def test_3d_plot_uses_mid_plane(tmp_path):
    out = tmp_path / "o.h5"
    p = write(tmp_path, grid__shape=[8, 9, 10], time={"dt": 0.005, "steps": 10})
    assert run(p, out) == 0
    r = run_cli("plot", out, "--out", tmp_path / "png")
    assert r.returncode == 0 and (tmp_path / "png" / "field.png").exists()
