"""``simengine validate`` gives a field run's time (issue 48, item 6), and every shipped field
scenario says what it costs where it runs."""
from pathlib import Path

import pytest

from simengine.config import load_scenario
from simengine.field import cost
from simengine.plan import for_scenario
from simengine.cli import main

ROOT = Path(__file__).resolve().parents[1]
FIELD_SCENARIOS = sorted(p for p in (ROOT / "scenarios").glob("*.yaml")
                         if "kind: field" in p.read_text())


@pytest.mark.parametrize("path", FIELD_SCENARIOS, ids=lambda p: p.stem)
def test_validate_prints_the_time_and_the_scenario_its_cost(path, capsys):
    assert main(["validate", str(path), "--set", "solver.backend=cpu"]) == 0
    out = capsys.readouterr().out
    line = next(ln for ln in out.splitlines() if ln.strip().startswith("time: about"))
    assert "per step" in line and "cpu" in line
    assert "# Cost:" in path.read_text()


def test_the_model_is_steps_times_cells_times_the_cost_per_cell():
    base = ROOT / "scenarios" / "spinodal-2d.yaml"
    sc = load_scenario(base, ["solver.backend=cpu", "solver.kernel=texture",
                              "grid.shape=[1024, 1024]", "time.steps=100"])
    p = for_scenario(sc, 1).problem
    assert cost.step_seconds(p, 2) == pytest.approx(1024 * 1024 * 1.21e-9)
    assert cost.step_seconds(p, 4) == pytest.approx(cost.step_seconds(p, 2) / 2)
    assert "about 127 ms for 100 steps" in cost.time_line(p, 2)
    small = for_scenario(load_scenario(base, ["solver.backend=cpu", "grid.shape=[8, 8]"]),
                         1).problem
    assert cost.step_seconds(small, 2) == cost.CPU_FLOOR
    sp = for_scenario(load_scenario(ROOT / "scenarios" / "coarsening-3d.yaml",
                                    ["solver.backend=cpu"]), 1).problem
    line = cost.time_line(sp, 2)
    assert "8.4 s per step" in line and "adaptive steps are not known" in line
