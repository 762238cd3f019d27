"""``--resume`` with changed physics names the change (issue 48, item 7), and
``initial: {type: file, time_from_file: true}`` continues the stored run's time."""
import h5py
import numpy as np
import pytest

from simengine.cli import main

BASE = """\
kind: field
name: base
grid: {shape: [32, 32], spacing: 1.0}
model: {mobility: 1.0, kappa: 1.0, potential: {b: 1.0, u: 1.0}}
initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}
time: {dt: 0.02, steps: 100}
solver: {backend: cpu, kernel: global}
output: {snapshot_every: 50, checkpoint_every: 50, observables_every: 25}
"""


@pytest.fixture(scope="module")
def base(tmp_path_factory):
    d = tmp_path_factory.mktemp("resume_physics")
    (d / "base.yaml").write_text(BASE)
    assert main(["run", str(d / "base.yaml"), "-o", str(d / "base.h5"), "-q"]) == 0
    return d


def test_a_changed_kappa_is_named_not_the_stability_limit_it_moves(base, capsys):
    rc = main(["run", str(base / "base.yaml"), "-o", str(base / "base.h5"), "-q", "--resume",
               "--set", "model.kappa=2.0", "--set", "time.steps=200"])
    err = capsys.readouterr().err
    assert rc == 2 and err.count("\n") == 1, err
    assert "model.kappa (κ) differs from the stored run (1.0 → 2.0)" in err, err
    assert "a resume continues the same physics" in err and "initial: {type: file" in err
    assert "time.dt" not in err


@pytest.mark.parametrize("key,value", [("grid.shape", "[32, 16]"),
                                       ("model.potential.b", "2.0")])
def test_other_physics_keys_too(base, capsys, key, value):
    rc = main(["run", str(base / "base.yaml"), "-o", str(base / "base.h5"), "-q", "--resume",
               "--set", f"{key}={value}"])
    err = capsys.readouterr().err
    assert rc == 2 and f"{key} differs from the stored run" in err, err


def _continued(base, name, dataset, time_from_file):
    text = BASE.replace("name: base", f"name: {name}").replace(
        "initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}",
        f"initial: {{type: file, path: base.h5, dataset: {dataset}"
        + (", time_from_file: true}" if time_from_file else "}")).replace(
        "kappa: 1.0", "kappa: 2.0").replace("dt: 0.02, steps: 100", "dt: 0.01, steps: 50")
    (base / f"{name}.yaml").write_text(text)
    out = base / f"{name}.h5"
    assert main(["run", str(base / f"{name}.yaml"), "-o", str(out), "-q", "--overwrite"]) == 0
    return out


@pytest.mark.parametrize("dataset", ["fields/phi", "checkpoint/phi"])
def test_time_from_file_continues_the_stored_time(base, dataset):
    out = _continued(base, "cont", dataset, True)
    with h5py.File(base / "base.h5", "r") as f:
        last = f["fields/phi"][-1]
    with h5py.File(out, "r") as f:
        assert f.attrs["time_origin"] == 2.0
        np.testing.assert_allclose(f["fields/time"][()], [2.0, 2.5])
        np.testing.assert_allclose(f["observables/time"][()], 2.0 + 0.01 * f["observables/step"][()])
        assert f["checkpoint/phi"].attrs["time"] == 2.5
        np.testing.assert_array_equal(f["fields/phi"][0], last)
        assert "f(0) = 0" in f.attrs["energy_convention"]
    assert main(["info", str(out), "--verify"]) == 0


def test_without_time_from_file_the_clock_starts_at_zero(base):
    out = _continued(base, "fresh", "fields/phi", False)
    with h5py.File(out, "r") as f:
        assert "time_origin" not in f.attrs
        np.testing.assert_allclose(f["fields/time"][()], [0.0, 0.5])


def test_time_from_file_refusals(base, capsys):
    (base / "bad.yaml").write_text(BASE.replace("seed: 1}", "seed: 1, time_from_file: true}"))
    assert main(["validate", str(base / "bad.yaml")]) == 2
    assert "time_from_file" in capsys.readouterr().err
    with h5py.File(base / "plain.h5", "w") as f:
        f["phi"] = np.zeros((32, 32))
    (base / "plain.yaml").write_text(BASE.replace(
        "initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}",
        "initial: {type: file, path: plain.h5, time_from_file: true}"))
    assert main(["run", str(base / "plain.yaml"), "-o", str(base / "plain-out.h5"), "-q"]) == 2
    err = capsys.readouterr().err
    assert "initial.time_from_file" in err and "no stored time" in err and err.count("\n") == 1
    assert not (base / "plain-out.h5").exists()


def test_a_continued_run_on_ranks_equals_one_process(base):
    """On 2 ranks each rank reads its rows of the series' last field (was: rows of the series)."""
    from test_mpi_network import mpirun

    one = _continued(base, "cont1", "fields/phi", True)
    out = base / "cont2.h5"
    r = mpirun(2, "run", base / "cont1.yaml", "-o", out)
    assert r.returncode == 0, r.stderr
    with h5py.File(one, "r") as a, h5py.File(out, "r") as b:
        np.testing.assert_array_equal(a["fields/phi"][()], b["fields/phi"][()])
        np.testing.assert_array_equal(a["fields/time"][()], b["fields/time"][()])
