"""``simengine schema``: every shipped scenario validates against it, a misspelt key does not."""
import json
from pathlib import Path

import jsonschema
import pytest
import yaml

from simengine.cli import main

ROOT = Path(__file__).resolve().parents[1]
SCENARIOS = sorted((ROOT / "scenarios").glob("*.yaml"))


@pytest.fixture(scope="module")
def validator():
    from simengine.config.json_schema import scenario_schema

    schema = scenario_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def test_the_command_prints_the_schema(capsys):
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "simengine scenario" and "oneOf" in schema


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_shipped_scenarios_are_valid(validator, path):
    errors = [e.message for e in validator.iter_errors(yaml.safe_load(path.read_text()))]
    assert errors == []


def _errors(validator, data):
    return [e for e in validator.iter_errors(data)]


def _messages(errors):
    out = []
    for e in errors:
        out.append(e.message)
        out += _messages(e.context or [])
    return out


@pytest.mark.parametrize("where, key, typo", [((), "grid", "gird"), (("time",), "steps", "step"),
                                              (("solver",), "kernel", "kernal")])
def test_a_misspelt_field_key_is_flagged(validator, where, key, typo):
    data = yaml.safe_load((ROOT / "scenarios" / "spinodal-2d.yaml").read_text())
    node = data
    for k in where:
        node = node[k]
    node[typo] = node.pop(key)
    said = _messages(_errors(validator, data))
    assert any(f"'{typo}' was unexpected" in m for m in said), said


def test_network_typos_values_and_scientific_integers(validator):
    data = yaml.safe_load((ROOT / "scenarios" / "apsp-ba.yaml").read_text())
    data["graph"]["generator"]["mm"] = 3                       # a generator's own keys
    assert _errors(validator, data)
    del data["graph"]["generator"]["mm"]
    data["metrics"]["algorithm"] = "dijkstraa"
    assert _errors(validator, data)
    data["metrics"]["algorithm"] = "auto"
    data["output"] = {"checkpoint_every": "1e4"}               # as simengine accepts it
    assert _errors(validator, data) == []
    data["output"] = {"checkpoint_every": "many"}
    assert _errors(validator, data)
