"""Hostile and absurd scenarios: every one is a one-line UserError (exit 2), fast, never a
traceback, a hang or exit 1. One test per row of docs/hardening.md ("Scenarios")."""
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest

from simengine.cli import main
from simengine.config import load_scenario, scenario_from_text
from simengine.config.brief import LIMIT, brief
from simengine.config.loader import MAX_BYTES, MAX_DEPTH, MAX_NODES
from simengine.errors import UserError

FIELD = """\
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

NETWORK = """\
kind: network
name: n
graph:
  generator: {type: barabasi_albert, n: 200, m: 3, seed: 1}
metrics: {sources: all}
solver: {backend: cpu}
"""

BILLION_LAUGHS = ('kind: field\na: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]\n'
                  + "".join(f"{c}: &{c} [*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p},*{p}]\n"
                            for p, c in zip("abcdefgh", "bcdefghi")))


def error_of(text, overrides=(), path="s.yaml"):
    """The one-line UserError message of a scenario text (fails if it validates)."""
    with pytest.raises(UserError) as ei:
        scenario_from_text(text, path, list(overrides))
    msg = str(ei.value)
    assert "\n" not in msg and len(msg) < 400, msg
    return msg


def cli(capsys, *args):
    """(exit code, stderr) of an in-process ``simengine ARGS``; stderr must be one line on error."""
    rc = main([str(a) for a in args])
    err = capsys.readouterr().err
    if rc != 0:
        assert err.count("\n") == 1 and "Traceback" not in err, err
    return rc, err


# ----------------------------------------------------------------------------------- YAML level
def test_billion_laughs_fails_fast():
    assert len(BILLION_LAUGHS) < 600  # the 579-byte class of file: 10^9 nodes once expanded
    msg = error_of(BILLION_LAUGHS)
    assert f"more than {MAX_NODES} nodes" in msg and "s.yaml:" in msg


@pytest.mark.parametrize("text", [
    "kind: field\na: " + "[" * 1000 + "]" * 1000 + "\n",
    "kind: field\na: " + "{b: " * 1000 + "1" + "}" * 1000 + "\n",
    "kind: field\n" + "".join("  " * i + f"k{i}:\n" for i in range(1000)) + "  " * 1000 + "x: 1\n",
    "- " * 1000 + "1\n",
])
def test_deep_nesting_is_refused(text):
    assert f"nested more than {MAX_DEPTH} levels" in error_of(text)


def test_nesting_through_aliases_is_refused():
    # every anchor is 20 levels deep and contains the previous one: 100 levels once expanded
    text = "kind: field\n"
    prev = None
    for i in range(5):
        inner = f"*a{prev}" if prev is not None else "1"
        text += f"x{i}: &a{i} " + "[" * 20 + inner + "]" * 20 + "\n"
        prev = i
    assert "levels deep once aliases are expanded" in error_of(text)


@pytest.mark.parametrize("text", ["kind: field\na: &x [*x]\n", "kind: field\na: &x {b: [1, *x]}\n"])
def test_recursive_alias_is_refused(text):
    assert "recursive alias" in error_of(text)


def test_aliases_within_limits_still_work():
    text = FIELD.replace("grid: {shape: [16, 16], spacing: 1.0}",
                         "grid: {shape: &n [16, 16], spacing: 1.0}\nx-shape: *n")
    assert "unknown key 'x-shape'" in error_of(text)  # parsed fine, then the schema speaks
    merged = FIELD.replace("time: {dt: 0.01, steps: 10}",
                           "time: {<<: {dt: 0.01, steps: 10}, steps: 4}")
    ok = scenario_from_text(merged, "s.yaml")
    assert ok.spec.time.steps == 4 and ok.spec.time.dt == 0.01  # merge keys override, no dup error


@pytest.mark.parametrize("old,new,line", [
    ("  kappa: 1.0\n", "  kappa: 1.0\n  kappa: 2.0\n", 8),
    ("time: {dt: 0.01, steps: 10}", "time: {dt: 0.01, steps: 10, dt: 0.02}", 10),
    ("name: t\n", "name: t\nname: u\n", 3),
])
def test_duplicate_keys_are_refused(old, new, line):
    msg = error_of(FIELD.replace(old, new))
    assert f"s.yaml:{line}:" in msg and "duplicate key" in msg and "first given on line" in msg


def test_4400_digit_integer():
    msg = error_of(FIELD.replace("steps: 10", "steps: " + "7" * 4400))
    assert "s.yaml:10" in msg and "integer with more than" in msg


@pytest.mark.parametrize("text", [
    FIELD.replace("seed: 1", "seed: 2001-13-45"),
    FIELD.replace("dt: 0.01", "dt: !!float abc"),
    FIELD.replace("steps: 10", "steps: !!int ''"),
    FIELD.replace("allow_unstable", "x").replace("steps: 10", "steps: 10, allow_unstable: !!bool maybe"),
    FIELD.replace("seed: 1", "seed: !!timestamp never"),
])
def test_scalars_pyyaml_cannot_convert(text):
    msg = error_of(text)
    assert "invalid YAML" in msg and "s.yaml:" in msg


def test_top_level_shapes():
    assert "kind: expected 'field' or 'network', got ['field']" in error_of(
        FIELD.replace("kind: field", "kind: [field]"))
    assert "got {'a': 1}" in error_of(FIELD.replace("kind: field", "kind: {a: 1}"))
    assert "top level, got a list" in error_of("- kind: field\n- name: t\n")
    assert "top level, got a string" in error_of("just text\n")
    assert "empty" in error_of("# nothing\n")
    assert "keys must be strings" in error_of(FIELD + "1: 2\n")


# ----------------------------------------------------------------------------------- numbers
@pytest.mark.parametrize("key,old,bad", [
    ("initial.mean", "mean: 0.0", "mean: .nan"),
    ("initial.amplitude", "amplitude: 0.05", "amplitude: .inf"),
    ("time.dt", "dt: 0.01", "dt: .nan"),
    ("time.dt", "dt: 0.01", "dt: 1e999"),
    ("model.mobility", "mobility: 1.0", "mobility: .inf"),
    ("model.kappa", "kappa: 1.0", "kappa: .nan"),
    ("model.potential.u", "u: 1.0", "u: .nan"),
    ("model.potential.b", "b: 1.0", "b: -.inf"),
    ("grid.spacing", "spacing: 1.0", "spacing: .nan"),
    ("boundary.value", "{type: periodic}", "{type: fixed, value: .inf}"),
])
def test_non_finite_numbers_name_the_key(key, old, bad):
    msg = error_of(FIELD.replace(old, bad))
    assert f"{key}: expected a finite number" in msg or f"{key}: expected greater" in msg, msg


def test_non_finite_coefficients():
    msg = error_of(FIELD.replace("{b: 1.0, u: 1.0}", "{coefficients: [0, -1, .nan, 1]}"))
    assert "model.potential.coefficients.2: expected a finite number" in msg


@pytest.mark.parametrize("old,new,key", [
    ("spacing: 1.0", "spacing: 1e308", "grid.spacing"),
    ("spacing: 1.0", "spacing: 1e-300", "grid.spacing"),
    ("steps: 10", "steps: " + "1" + "0" * 40, "time.steps"),
    ("seed: 1", "seed: " + "9" * 30, "initial.seed"),
    ("mean: 0.0", "mean: 1e300", "initial.mean"),
    ("{type: periodic}", "{type: fixed, value: 1e7}", "boundary.value"),
    ("[16, 16]", "[16, 10000000000]", "grid.shape.1"),
    ("[16, 16]", "[1000000, 1000000, 1000000]", "grid.shape"),
    ("snapshot_every: 5", "snapshot_every: 1e30", "output.snapshot_every"),
])
def test_absurd_values_name_the_key(old, new, key):
    msg = error_of(FIELD.replace(old, new))
    assert f": {key}:" in msg, msg


def test_float32_overflow_names_the_parameter():
    f32 = FIELD.replace("precision: float64", "precision: float32")
    assert ": model.kappa:" in error_of(f32.replace("kappa: 1.0", "kappa: 1e36"))
    assert ": model.potential:" in error_of(f32.replace("{b: 1.0, u: 1.0}", "{b: 1.0, u: 1e37}"))
    assert ": model.mobility:" in error_of(f32.replace("mobility: 1.0", "mobility: 1e35"))
    assert ": grid.spacing:" in error_of(f32.replace("spacing: 1.0", "spacing: 1e-20"))
    # SI-like units stay fine in float32: h = 1 nm, κ = 1e-10, M = 1e-20 (dt from the limit)
    si = f32.replace("spacing: 1.0", "spacing: 1e-9").replace("kappa: 1.0", "kappa: 1e-10") \
        .replace("mobility: 1.0", "mobility: 1e-20").replace("dt: 0.01", "dt: 1e-12")
    assert scenario_from_text(si, "s.yaml").spec.grid.spacing == 1e-9


@pytest.mark.parametrize("old,new,key", [
    ("spacing: 1.0", "spacing: true", "grid.spacing"),
    ("steps: 10", "steps: false", "time.steps"),
    ("seed: 1", "seed: true", "initial.seed"),
    ("mobility: 1.0", "mobility: true", "model.mobility"),
    ("[16, 16]", "[16, true]", "grid.shape.1"),
])
def test_booleans_are_not_numbers(old, new, key):
    msg = error_of(FIELD.replace(old, new))
    assert f"{key}: expected a number, got" in msg and "(a boolean)" in msg


def test_numbers_are_not_booleans():
    msg = error_of(FIELD.replace("steps: 10", "steps: 10, allow_unstable: 1"))
    assert "time.allow_unstable: expected a valid boolean" in msg


def test_exact_numbers_in_other_spellings_still_work():
    sc = scenario_from_text(FIELD.replace("steps: 10", "steps: 1.0e+3").replace("dt: 0.01", "dt: 1e-2"),
                            "s.yaml")
    assert sc.spec.time.steps == 1000 and sc.spec.time.dt == 0.01


# ----------------------------------------------------------------------------------- physics
@pytest.mark.parametrize("old,new,key", [
    ("mobility: 1.0", "mobility: -1.0", "model.mobility"),
    ("kappa: 1.0", "kappa: 0", "model.kappa"),
    ("dt: 0.01", "dt: -0.01", "time.dt"),
    ("{b: 1.0, u: 1.0}", "{b: 1.0, u: -1.0}", "model.potential"),
    ("{b: 1.0, u: 1.0}", "{b: 1.0, u: 0.0}", "model.potential"),
    ("{b: 1.0, u: 1.0}", "{coefficients: [0, -1, 0, -1]}", "model.potential"),
    ("{b: 1.0, u: 1.0}", "{coefficients: [0, 1, 0.5, 0]}", "model.potential"),
    ("mobility: 1.0", "mobility: .nan", "model.mobility"),
])
def test_bad_physics_is_exit_2_before_any_output(tmp_path, capsys, old, new, key):
    scen = tmp_path / "s.yaml"
    scen.write_text(FIELD.replace(old, new))
    out = tmp_path / "o.h5"
    rc, err = cli(capsys, "run", scen, "-o", out, "-q")
    assert rc == 2 and f": {key}" in err and "blew up" not in err
    assert not out.exists()


def test_bounded_potentials_are_accepted():
    for pot in ("{b: 1.0, u: 1.0}", "{b: -1.0, u: 0.0}", "{coefficients: [0.1, 2, 0, 0]}"):
        assert scenario_from_text(FIELD.replace("{b: 1.0, u: 1.0}", pot), "s.yaml")


# ----------------------------------------------------------------------------------- generators
@pytest.mark.parametrize("gen,expect", [
    ("{type: barabasi_albert, n: abc, m: 3}", "graph.generator.n: expected a valid integer"),
    ("{type: barabasi_albert, n: 1" + "0" * 40 + ", m: 3}", "graph.generator.n: expected less than"),
    ("{type: barabasi_albert, n: true, m: 3}", "graph.generator.n: expected a number, got true"),
    ("{type: barabasi_albert, n: 200, m: 3, seed: -1}", "graph.generator.seed: expected greater"),
    ("{type: barabasi_albert, n: 200, m: 3, colour: red}", "unknown key 'colour' (expected one of"),
    ("{type: barabasi_albert, n: 3, m: 3}", "graph.generator: n = 3 must be at least m + 1"),
    ("{type: nope, n: 3}", "graph.generator.type: expected one of"),
    ("{type: [gnm], n: 3}", "graph.generator.type: expected one of"),
    ("{type: gnm, n: 10, m: 100}", "do not fit among the 45 vertex pairs"),
    ("{type: gnp, n: 10, p: 1.5}", "graph.generator.p: expected less than or equal to 1"),
    ("{type: gnp, n: 10, p: .nan}", "graph.generator.p: expected a finite number"),
    ("{type: ring_lattice, n: 10, k: 3}", "k = 3 must be even"),
    ("{type: watts_alpha, n: 10, k: 10}", "k = 10 must be smaller than n = 10"),
    ("{type: rmat, scale: 31}", "graph.generator.scale: expected less than or equal to 30"),
    ("{type: rmat, scale: 4, a: 0.5, b: 0.5, c: 0.5}", "a + b + c = 1.5 must not exceed 1"),
    ("{type: grid, shape: [100000, 100000]}", "more than 2147483647"),
    ("{type: random_weighted, n: 10, low: 5, high: 1}", "low = 5 must not exceed high = 1"),
    ("{type: gnm, n: 10, m: 5, weights: {type: uniform_int, low: -1}}",
     "graph.generator.weights.low: expected greater than or equal to 0"),
    ("{type: gnm, n: 2147483647, m: 2000000000000000000}", "more than any allocation can"),
])
def test_generator_parameters_are_validated(gen, expect):
    msg = error_of(NETWORK.replace("{type: barabasi_albert, n: 200, m: 3, seed: 1}", gen))
    assert expect in msg and "s.yaml:4" in msg, msg


def test_every_generator_type_validates_and_builds():
    from simengine.network.generators import generate

    specs = ["{type: watts_alpha, n: 50, k: 4, seed: 1}", "{type: watts_alpha_free, n: 50, k: 4}",
             "{type: barabasi_albert, n: 50, m: 2}", "{type: gnp, n: 50, p: 0.1}",
             "{type: erdos_renyi, n: 50, p: 0.1, directed: true}", "{type: gnm, n: 50, m: 60}",
             "{type: watts_strogatz, n: 50, k: 4, p: 0.1}", "{type: ring_lattice, n: 50, k: 4}",
             "{type: grid, shape: [5, 10], periodic: true}", "{type: torus, shape: [5, 10]}",
             "{type: rmat, scale: 5, edge_factor: 4}", "{type: random_weighted, n: 50}"]
    for gen in specs:
        text = NETWORK.replace("{type: barabasi_albert, n: 200, m: 3, seed: 1}", gen)
        if "directed: true" in gen:
            text = text.replace("metrics:", "  directed: true\nmetrics:")
        sc = scenario_from_text(text, "s.yaml")
        g = generate(dict(sc.spec.graph.generator))
        assert g.n == (32 if "rmat" in gen else 50)
        assert 0 < g.num_arcs <= 2 * sc.generator.arcs()  # the memory estimate is an upper bound, roughly


def test_sources_out_of_range_for_generated_graphs():
    grid = NETWORK.replace("{type: barabasi_albert, n: 200, m: 3, seed: 1}",
                           "{type: grid, shape: [4, 5]}")
    assert "vertex 20 is not in the generated graph (its vertices are 0..20-1)" in error_of(grid.replace("sources: all",
                                                                           "sources: [0, 20]"))


# ----------------------------------------------------------------------------------- names, echoes
def test_long_name_is_exit_2_and_200_is_fine(tmp_path, capsys, monkeypatch):
    monkeypatch.chdir(tmp_path)
    scen = tmp_path / "s.yaml"
    scen.write_text(FIELD.replace("name: t", "name: " + "a" * 300))
    rc, err = cli(capsys, "run", scen, "-q")
    assert rc == 2 and "name: string should have at most 200 characters" in err
    assert not (tmp_path / "outputs").exists() or not any((tmp_path / "outputs").iterdir())
    scen.write_text(FIELD.replace("name: t", "name: " + "a" * 200))
    assert cli(capsys, "validate", scen)[0] == 0


def test_echoed_values_are_shortened():
    huge = "x" * 100_000
    for text in (FIELD.replace("mobility: 1.0", f"mobility: {huge}"),
                 FIELD.replace("kernel: global", f"kernel: {huge}"),
                 FIELD.replace("kind: field", f"kind: {huge}"),
                 FIELD + f"{huge}: 1\n",
                 NETWORK.replace("barabasi_albert", huge)):
        msg = error_of(text)
        assert "x" * (LIMIT + 1) not in msg and len(msg) < 300, msg[:300]
    # file names are quoted up to 200 characters
    msg = error_of(FIELD.replace("{type: noise, mean: 0.0, amplitude: 0.05, seed: 1}",
                                 "{type: file, path: " + huge + "}"))
    assert "initial.path" in msg and "x" * 201 not in msg and "…" in msg, msg[:300]
    assert brief(10**5000).startswith("<an integer of about 5001 digits")
    assert len(brief(list(range(10**5)))) == LIMIT


def test_set_overrides_go_through_the_same_limits(tmp_path):
    p = tmp_path / "s.yaml"
    p.write_text(FIELD)
    for override, expect in [("model=&x {a: *x}", "recursive alias"),
                             ("model={a: 1, a: 2}", "duplicate key"),
                             ("time.steps=" + "9" * 2000, "integer with more than"),
                             ("x" * 5000 + "=1", "unknown key"),
                             ("time.dt=.nan", "time.dt: expected a finite number")]:
        with pytest.raises(UserError) as ei:
            load_scenario(p, [override])
        msg = str(ei.value)
        # bounded apart from the scenario's path (longer under pytest-xdist's tmp dirs)
        assert expect in msg and len(msg) - len(str(p)) < 340, msg


# ----------------------------------------------------------------------------------- files
@pytest.mark.parametrize("make,expect", [
    (lambda p: p.mkdir(), "is a directory"),
    (lambda p: os.mkfifo(p), "is a FIFO"),
    (lambda p: p.write_bytes(b"kind: field\n#" + b"x" * MAX_BYTES), "more than the 1048576"),
    (lambda p: p.write_bytes(FIELD.encode() + b"# \xff\xfe\n"), "not UTF-8 text"),
    (lambda p: p.write_bytes(b"kind: field\x00\n"), "invalid YAML"),
    (lambda p: None, "no such scenario file"),
])
def test_scenario_file_types(tmp_path, capsys, make, expect):
    p = tmp_path / "s.yaml"
    make(p)
    rc, err = cli(capsys, "validate", p)
    assert rc == 2 and expect in err, err


def test_character_device_as_scenario(capsys):
    rc, err = cli(capsys, "validate", "/dev/zero")
    assert rc == 2 and "is a character device" in err


def test_fifo_scenario_does_not_hang_the_process(tmp_path):
    fifo = tmp_path / "s.yaml"
    os.mkfifo(fifo)
    r = subprocess.run([sys.executable, "-m", "simengine", "run", str(fifo)], capture_output=True,
                       text=True, timeout=120)
    assert r.returncode == 2 and "is a FIFO" in r.stderr and r.stderr.count("\n") == 1


@pytest.mark.parametrize("make,expect", [
    (lambda p: p.mkdir(), "is a directory"),
    (lambda p: os.mkfifo(p), "is a FIFO"),
])
def test_initial_and_graph_paths_that_are_not_files(tmp_path, make, expect):
    target = tmp_path / "thing"
    make(target)
    field = FIELD.replace("{type: noise, mean: 0.0, amplitude: 0.05, seed: 1}",
                          f"{{type: file, path: {target}}}")
    assert f"initial.path: file '{target}' {expect}" in error_of(field)
    net = NETWORK.replace("generator: {type: barabasi_albert, n: 200, m: 3, seed: 1}",
                          f"file: {{path: {target}}}")
    assert f"graph.file.path: file '{target}' {expect}" in error_of(net)


def test_initial_path_character_device():
    field = FIELD.replace("{type: noise, mean: 0.0, amplitude: 0.05, seed: 1}",
                          "{type: file, path: /dev/zero}")
    assert "is a device or special file" in error_of(field)


def test_initial_file_contents(tmp_path):
    ic = tmp_path / "ic.h5"
    field = FIELD.replace("{type: noise, mean: 0.0, amplitude: 0.05, seed: 1}",
                          f"{{type: file, path: {ic}}}")
    with h5py.File(ic, "w") as f:
        f["phi"] = np.full((16, 16), 1e9)
    assert "beyond ±1e+06" in error_of(field)
    with h5py.File(ic, "w") as f:
        f["phi"] = np.array([[b"ab"] * 16] * 16)
    assert "expected numbers" in error_of(field)
    with h5py.File(ic, "w") as f:
        f["phi"] = np.zeros((0, 16, 16))
    assert "has shape [0, 16, 16]" in error_of(field)
    with h5py.File(ic, "w") as f:
        f["phi"] = np.stack([np.zeros((16, 16)), np.full((16, 16), 0.25)])
    ok = scenario_from_text(field, "s.yaml")
    from simengine.config.checks import initial_range
    from simengine.config.loader import Located

    assert initial_range(ok, Located(ok.data, {}, ok.path)) == (0.25, 0.25)  # the last snapshot
    ic.write_bytes(b"not hdf5 at all")
    assert "is not a readable HDF5 file" in error_of(field)


def test_shipped_scenarios_still_validate(root, capsys):
    for p in sorted((root / "scenarios").glob("*.yaml")):
        rc, err = cli(capsys, "validate", p)
        assert rc == 0, err


def test_plain_text_helpers():
    # the multi-line form of a YAML problem never reaches the message
    msg = error_of("kind: field\nname: [unclosed\n")
    assert msg.startswith("s.yaml:") and "invalid YAML" in msg
    msg = error_of("kind: field\n---\nkind: network\n")
    assert "expected a single document" in msg


def test_limits_hold_with_the_pure_python_parser(monkeypatch):
    """Without libyaml the loader falls back to PyYAML's Python parser with the same limits."""
    import importlib

    import simengine.config.loader as loader

    monkeypatch.setitem(sys.modules, "yaml._yaml", None)  # "import yaml._yaml" now fails
    fallback = importlib.reload(loader)
    try:
        assert fallback._EventParser is None
        for text, expect in [(BILLION_LAUGHS, "more than 100000 nodes"),
                             ("a: " + "[" * 1000 + "]" * 1000, "levels deep"),
                             ("a: 1\na: 2\n", "duplicate key"), ("a: &x [*x]\n", "recursive alias"),
                             ("a: 2001-13-45\n", "cannot read")]:
            with pytest.raises(UserError) as ei:
                fallback.load_scenario_text(text, "s.yaml")
            assert expect in str(ei.value)
        assert fallback.load_scenario_text(FIELD, "s.yaml").lines[("time", "dt")] == 10
    finally:
        monkeypatch.undo()
        importlib.reload(loader)
