"""``initial: {type: expression, formula: ...}`` and ``{type: pfhub_bm1}`` (issue 48, item 8): a
safe formula (an ast whitelist, never eval), checked against NumPy on the same grid."""
import h5py
import numpy as np
import pytest
import yaml

from simengine.cli import main
from simengine.config import scenario_from_text
from simengine.errors import UserError
from simengine.field import expression


def _scenario(initial, shape=(24, 20)):
    return {"kind": "field", "name": "ex", "grid": {"shape": list(shape), "spacing": 0.5},
            "model": {"mobility": 1.0, "kappa": 1.0, "potential": {"b": 1.0, "u": 1.0}},
            "initial": initial, "time": {"dt": 0.001, "steps": 4},
            "solver": {"backend": "cpu", "kernel": "global"},
            "output": {"snapshot_every": 4, "checkpoint_every": 4, "observables_every": 2}}


def _coords(shape, h):
    j, i = np.meshgrid(np.arange(shape[0]), np.arange(shape[1]), indexing="ij")
    return i * h, j * h          # x along the last axis, y along the first (as the output)


def test_a_run_starts_from_the_formula(tmp_path):
    formula = "0.1*tanh((x - 5)/1.5) - 0.2*sin(2*pi*y/12)**2 + exp(-x/3)/sqrt(1 + y) + abs(-0.01)"
    (tmp_path / "s.yaml").write_text(yaml.safe_dump(_scenario(
        {"type": "expression", "formula": formula})))
    assert main(["run", str(tmp_path / "s.yaml"), "-o", str(tmp_path / "o.h5"), "-q"]) == 0
    x, y = _coords((24, 20), 0.5)
    ref = (0.1 * np.tanh((x - 5) / 1.5) - 0.2 * np.sin(2 * np.pi * y / 12) ** 2
           + np.exp(-x / 3) / np.sqrt(1 + y) + 0.01)
    with h5py.File(tmp_path / "o.h5", "r") as f:
        np.testing.assert_allclose(f["fields/phi"][0], ref, rtol=1e-14, atol=1e-15)


def test_pfhub_bm1_is_the_benchmark_field():
    sc = scenario_from_text(yaml.safe_dump(_scenario({"type": "pfhub_bm1"}, (200, 200))))
    from simengine.config.checks import initial_formula
    from simengine.config.loader import Located

    tree = initial_formula(sc, Located(sc.data, {}, sc.path))
    got = expression.evaluate_rows(tree, (200, 200), 1.0, 0, 200)
    x, y = _coords((200, 200), 1.0)
    ref = 0.5 + 0.01 * (np.cos(0.105 * x) * np.cos(0.11 * y)
                        + (np.cos(0.13 * x) * np.cos(0.087 * y)) ** 2
                        + np.cos(0.025 * x - 0.15 * y) * np.cos(0.07 * x - 0.02 * y))
    np.testing.assert_allclose(got, ref, rtol=1e-15)


def test_rows_of_a_slab_are_the_whole_fields_rows():
    tree = expression.parse("x*y + z**2 - cos(x*z)", 3)
    whole = expression.evaluate_rows(tree, (6, 5, 4), 0.7, 0, 6)
    parts = [expression.evaluate_rows(tree, (6, 5, 4), 0.7, a, b) for a, b in ((0, 2), (2, 6))]
    np.testing.assert_array_equal(np.concatenate(parts), whole)


@pytest.mark.parametrize("formula,words", [
    ("__import__('os').system('touch PWNED')", "not an allowed function"),
    ("x.real", "not allowed"), ("(lambda: 1)()", "not an allowed function"),
    ("sin(x, y)", "one positional argument"), ("z + 1", "not a coordinate"),
    ("q * 2", "unknown name 'q'"), ("x +", "not a formula"), ("'a'", "not a number"),
    ("log(x - 100)", "NaN or inf"), ("1e300*1e300 + x", "NaN or inf"), ("1e7 + x", "blow-up"),
    ("", "needs 'formula'")])
def test_a_bad_formula_is_one_line_naming_the_key(tmp_path, monkeypatch, formula, words):
    monkeypatch.chdir(tmp_path)
    with pytest.raises(UserError) as ei:
        scenario_from_text(yaml.safe_dump(_scenario({"type": "expression", "formula": formula})))
    msg = str(ei.value)
    assert "\n" not in msg and "initial" in msg and words in msg, msg
    assert not (tmp_path / "PWNED").exists()


def test_keys_of_other_types_are_refused():
    for init in ({"type": "pfhub_bm1", "mean": 0.5}, {"type": "noise", "formula": "x"},
                 {"type": "expression", "formula": "x", "seed": 3}):
        with pytest.raises(UserError, match="initial"):
            scenario_from_text(yaml.safe_dump(_scenario(init)))
    with pytest.raises(UserError, match="pfhub_bm1 is PFHub benchmark 1's 2-D"):
        scenario_from_text(yaml.safe_dump(_scenario({"type": "pfhub_bm1"}, (8, 8, 8))))
