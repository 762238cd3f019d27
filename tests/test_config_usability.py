"""Scenario conveniences: integers in scientific notation, validate = run's checks, estimates from
the real graph, oversampling said."""
import pytest

from simengine.cli import main

FIELD = """kind: field
name: t
grid: {shape: [16, 16]}
time: {dt: 0.01, steps: 10}
output: {snapshot_every: 5}
"""


def validate(tmp_path, text, *extra, capsys):
    p = tmp_path / "s.yaml"
    p.write_text(text)
    rc = main(["validate", str(p), *extra])
    out, err = capsys.readouterr()
    return rc, out, err, p


@pytest.mark.parametrize("value, steps", [("1e4", 10000), ("2.5e3", 2500), ("1E2", 100),
                                          ("+3e1", 30), ("12", 12)])
def test_integers_in_exact_scientific_notation(tmp_path, capsys, value, steps):
    rc, out, err, _ = validate(tmp_path, FIELD.replace("steps: 10", f"steps: {value}"),
                               capsys=capsys)
    assert rc == 0, err
    assert f"{steps} steps of dt" in out


@pytest.mark.parametrize("value, said", [("1.5", "expected an integer, got 1.5 (not a whole number)"),
                                         ("1e-3", "expected an integer, got 1e-3 (not a whole number)"),
                                         ("2.5e0", "expected an integer, got 2.5e0 (not a whole number)"),
                                         ("1e99", "expected an integer up to")])
def test_non_integers_are_one_line(tmp_path, capsys, value, said):
    rc, out, err, p = validate(tmp_path, FIELD.replace("steps: 10", f"steps: {value}"),
                               capsys=capsys)
    assert rc == 2 and out == ""
    assert err.strip().splitlines() == [err.strip()]
    assert err.startswith(f"simengine: error: {p}:4: time.steps: {said}"), err


NET = """kind: network
name: n
graph: {{file: {{path: g.txt}}}}
metrics:
  sources: {sources}
solver: {{backend: cpu}}
"""


def graph_file(tmp_path, n=30):
    (tmp_path / "g.txt").write_text("".join(f"{i} {i + 1}\n" for i in range(1, n)))


def test_duplicated_sources_refused_by_validate_with_the_id_and_line(tmp_path, capsys):
    graph_file(tmp_path)
    rc, out, err, p = validate(tmp_path, NET.format(sources="[10, 10]"), capsys=capsys)
    assert rc == 2 and out == ""
    assert err.strip() == f"simengine: error: {p}:5: metrics.sources: vertex 10 is listed twice"
    rc, out, err, p = validate(tmp_path, NET.format(sources="[10, '10']"), capsys=capsys)
    assert rc == 2 and "vertices 10 and '10' are the same vertex (listed twice)" in err


def test_oversampling_is_said_and_estimates_use_the_parsed_graph(tmp_path, capsys):
    graph_file(tmp_path, n=30)
    rc, out, err, _ = validate(tmp_path, NET.format(sources="{sample: 5000}"), capsys=capsys)
    assert rc == 0, err
    assert ("note: metrics.sources: a sample of 5000 from a graph of 30 vertices: all 30 sources "
            "(not a sample)") in err
    lines = out.splitlines()
    assert ": OK — network" in lines[-1] and any("estimates" in ln for ln in lines)
    assert any("graph CSR (n = 30, 58 arcs" in ln and "the parsed file" in ln for ln in lines)
    from simengine.network.backends import choose
    from simengine.network.readers import read_graph

    alg = choose(read_graph(tmp_path / "g.txt"), "auto", "cpu", num_sources=30).algorithm
    assert any(f"with {alg} on cpu" in ln for ln in lines), out


def test_validate_reports_errors_before_any_estimate(tmp_path, capsys):
    graph_file(tmp_path)
    rc, out, err, p = validate(tmp_path, NET.format(sources="[99]"), capsys=capsys)
    assert rc == 2 and out == "" and "vertex 99 is not in the graph" in err


def test_run_logs_oversampling(tmp_path):
    import simengine

    said = []
    sc = {"kind": "network", "name": "o", "metrics": {"sources": {"sample": 5000}},
          "graph": {"generator": {"type": "ring_lattice", "n": 20, "k": 2}},
          "solver": {"backend": "cpu"}}
    simengine.run(sc, tmp_path / "o.h5", log=said.append)
    assert ("metrics.sources: a sample of 5000 from a graph of 20 vertices: all 20 sources "
            "(not a sample)") in said


def test_number_formatting_of_sizes_and_diameters():
    import numpy as np

    from simengine.control.network_job import _short
    from simengine.resources import fmt_bytes

    assert [fmt_bytes(b) for b in (1000, 1024, 28.2 * 1024, 999.4 * 1024, 1041008, 1 << 20,
                                   5.5 * (1 << 20))] == [
        "1000 B", "1.0 KiB", "28.2 KiB", "999 KiB", "1.0 MiB", "1.0 MiB", "5.5 MiB"]
    assert _short(12.940400000000002) == "12.9404" and _short(np.float64(3.0)) == "3"
    assert _short(7) == 7 and _short(None) is None
