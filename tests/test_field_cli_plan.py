"""`simengine run` with the default settings runs the plan that benchmarks/bench_field_gpu.py
times as its 'default' row (``field_cli_inrun.default_plan``) for the benchmark's 3-D grids: the
field job's solver is built from a scenario (no field is loaded, no kernel launched) as on an
H100 (132 multiprocessors, the launch rules of a real GPU, not the simulator's)."""
from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from simengine import api
from simengine.control import field_job as fjob
from simengine.field.cuda import plan as stage_plan

ROOT = Path(__file__).resolve().parents[1]


def _load(name):
    import sys

    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location(f"_{name}", ROOT / "benchmarks" / f"{name}.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def _launch(p):
    return dict(kernel=p.kernel_name, layout=p.layout, block=p.block, march=p.march,
                smarch=p.smarch, rows=p.rows, unroll=p.unroll, cpt=p.cpt, vec=p.vec,
                ring_base=p.ring_base, flat=p.flat, griddim=p.griddim, lo=p.lo, hi=p.hi)


@pytest.fixture
def as_h100(monkeypatch):
    monkeypatch.setattr(stage_plan, "SIMULATOR", False)
    monkeypatch.setattr(stage_plan, "_sm_count", lambda: 132)


@pytest.mark.parametrize("shape", [(256, 256, 256), (512, 512, 512)])
@pytest.mark.parametrize("precision", ["float64", "float32"])
def test_cli_plan_is_the_benchmarks_plan(as_h100, shape, precision):
    cli = _load("field_cli_inrun")
    sc = api.load(cli.scenario_text(shape, precision, steps=10, every=5))
    job = fjob.FieldJob(sc)
    ran = job.solver
    assert ran.fused_plan is None and ran.plan_choice.form.name == "stages"
    bench = cli.default_plan(shape, precision)
    assert _launch(ran.plan) == _launch(bench)
    # the rules of a real GPU ran (the planes rule, 2 rows where measured faster)
    want = {("float64", 256): (48, 2), ("float64", 512): (64, 2), ("float32", 256): (64, 2),
            ("float32", 512): (64, 2)}[(precision, shape[0])]
    assert (bench.smarch, bench.march, bench.rows) == (True,) + want
