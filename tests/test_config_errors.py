"""Bad scenarios: a one-line error naming file, line and key; exit code 2; never a traceback."""
import textwrap

import h5py
import numpy as np
import pytest

from simengine.cli import main
from simengine.config import load_scenario
from simengine.errors import UserError

GOOD = """\
kind: field
name: t
grid: {shape: [16, 16], spacing: 1.0}
boundary: {type: periodic}
model:
  mobility: 1.0
  kappa: 1.0
  potential: {b: 1.0, u: 1.0}
initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}
time: {dt: 0.01, steps: 10}
solver: {integrator: rk2, kernel: global, backend: cpu, precision: float64}
output: {snapshot_every: 5, checkpoint_every: 5, observables_every: 5}
"""


def write(tmp_path, text, name="s.yaml"):
    p = tmp_path / name
    p.write_text(textwrap.dedent(text))
    return p


def error_of(path, overrides=()):
    with pytest.raises(UserError) as ei:
        load_scenario(path, list(overrides))
    msg = str(ei.value)
    assert "\n" not in msg
    return msg


def test_good_scenario_validates(tmp_path):
    sc = load_scenario(write(tmp_path, GOOD))
    assert sc.spec.grid.shape == [16, 16]
    assert sc.spec.model.potential.as_coefficients() == (0.0, -1.0, 0.0, 1.0)


@pytest.mark.parametrize("old,new,expect", [
    ("  kappa: 1.0\n", "  kappa: 1.0\n  kapa: 2.0\n", ["s.yaml:8", "model.kapa", "unknown key"]),
    ("  mobility: 1.0\n", "  mobility: fast\n", ["s.yaml:6", "model.mobility", "number", "'fast'"]),
    ("  mobility: 1.0\n", "  mobility: -1.0\n", ["s.yaml:6", "model.mobility", "greater than 0"]),
    ("time: {dt: 0.01, steps: 10}\n", "", ["time", "missing key"]),
    ("[16, 16]", "[16, 16, 16, 16]", ["s.yaml:3", "grid.shape", "at most 3"]),
    ("[16, 16]", "[16, 1]", ["grid.shape", "at least 3"]),
    ("kernel: global", "kernel: fastest", ["s.yaml:11", "solver.kernel", "'fastest'", "texture"]),
    ("type: periodic", "type: sticky", ["s.yaml:4", "boundary.type", "'sticky'"]),
    ("{b: 1.0, u: 1.0}", "{b: 1.0}", ["model.potential", "both b and u"]),
    ("dt: 0.01", "dt: 0.5", ["s.yaml:10", "time.dt", "stability limit", "allow_unstable"]),
    ("kind: field", "kind: fluid", ["s.yaml:1", "kind", "'field' or 'network'"]),
    ("name: t", "name: 'a b/c'", ["s.yaml:2", "name"]),
    ("{type: noise, mean: 0.0, amplitude: 0.05, seed: 1}", "{type: file, path: nothere.h5}",
     ["s.yaml:9", "initial.path", "nothere.h5", "does not exist"]),
])
def test_bad_scenarios(tmp_path, old, new, expect):
    assert old in GOOD
    msg = error_of(write(tmp_path, GOOD.replace(old, new)))
    for e in expect:
        assert e in msg, (e, msg)


def test_invalid_yaml_names_the_line(tmp_path):
    msg = error_of(write(tmp_path, GOOD.replace("kappa: 1.0", "kappa: [1.0")))
    assert "s.yaml:" in msg and "invalid YAML" in msg


def test_missing_file_and_empty_file(tmp_path):
    assert "no such scenario file" in error_of(tmp_path / "nope.yaml")
    assert "empty" in error_of(write(tmp_path, ""))


def test_override_errors_and_effects(tmp_path):
    p = write(tmp_path, GOOD)
    assert load_scenario(p, ["time.steps=3"]).spec.time.steps == 3
    assert "KEY.PATH=VALUE" in error_of(p, ["time.steps"])
    assert "time.steps" in error_of(p, ["time.steps=-3"])
    assert "unknown key" in error_of(p, ["time.stpes=3"])


def test_allow_unstable_overrides_the_limit(tmp_path):
    p = write(tmp_path, GOOD.replace("dt: 0.01", "dt: 0.5"))
    sc = load_scenario(p, ["time.allow_unstable=true"])
    assert sc.spec.time.dt == 0.5


def test_initial_file_shape_and_dataset(tmp_path):
    ic = tmp_path / "ic.h5"
    with h5py.File(ic, "w") as f:
        f["phi"] = np.zeros((8, 8))
    base = GOOD.replace("{type: noise, mean: 0.0, amplitude: 0.05, seed: 1}",
                        "{type: file, path: ic.h5, dataset: phi}")
    assert "expected grid.shape [16, 16]" in error_of(write(tmp_path, base))
    assert "no dataset 'psi'" in error_of(write(tmp_path, base.replace("dataset: phi", "dataset: psi")))
    with h5py.File(ic, "w") as f:
        f["phi"] = np.zeros((16, 16))
    assert load_scenario(write(tmp_path, base)).spec.initial.path == "ic.h5"


def test_cli_exit_code_2_and_one_line(tmp_path, capsys):
    p = write(tmp_path, GOOD.replace("kernel: global", "kernel: fastest"))
    assert main(["run", str(p)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "Traceback" not in err and "solver.kernel" in err
    assert main(["validate", str(p)]) == 2
    assert main(["info", str(tmp_path / "none.h5")]) == 2


def test_cli_validate_ok(tmp_path, capsys):
    assert main(["validate", str(write(tmp_path, GOOD))]) == 0
    assert "OK" in capsys.readouterr().out


def test_foreign_and_truncated_files(tmp_path, capsys):
    junk = tmp_path / "junk.h5"
    junk.write_bytes(b"\x89HDF\r\n\x1a\n" + b"\0" * 100)
    assert main(["info", str(junk)]) == 2
    assert "not a readable HDF5 file" in capsys.readouterr().err
    foreign = tmp_path / "foreign.h5"
    with h5py.File(foreign, "w") as f:
        f["x"] = 1
    assert main(["info", str(foreign)]) == 2
    assert "not a simengine output" in capsys.readouterr().err
