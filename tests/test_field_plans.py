"""The plan registry (simengine/field/plans.py) picks what the code picked before it existed.

``tests/data/plan_picks_70f9f13.json`` holds the forms and launch geometry chosen at 70f9f13
(``fused_plan_for`` + ``StageLaunch`` on an H100: 132 multiprocessors, not the simulator) for the
benchmarks' grids (200², 4096², 16384², 256³, 512³) × fp32/fp64 × the four strategies × RK2/Euler
× fused auto/true/false × whole grid/slab, every boundary giving the same pick. Deliberate
changes, all for ``fused: true`` (``auto`` picks exactly as before): on a slab it ran the unfused
stages without a word, and in 3-D the shared-memory tile kernel (never faster than the stages,
removed): both are refused now; on small 2-D grids it ran that tile kernel (block 16×8) and
runs the frame form now, as ``auto`` does. No kernel is compiled (plans are built, not
launched)."""
from __future__ import annotations

import json
from pathlib import Path

import pytest

from simengine.errors import UserError
from simengine.field import plans
from simengine.field.cuda import plan as stage_plan
from simengine.field.cuda import view3

PICKS = json.loads((Path(__file__).parent / "data" / "plan_picks_70f9f13.json").read_text())
SHAPES = {"200^2": (200, 200), "4096^2": (4096, 4096), "16384^2": (16384, 16384),
          "256^3": (256, 256, 256), "512^3": (512, 512, 512)}
LAYOUT = {2: "seed", 3: "modern"}  # DEFAULT_LAYOUT of the tiled kernels
SMS = 132


def _describe(plan) -> str:
    if not hasattr(plan, "shared_bytes") and hasattr(plan, "smarch"):
        p = plan
        return (f"stages {p.layout} block={'x'.join(map(str, p.block))} cpt={p.cpt} "
                f"march={p.march} smarch={bool(p.smarch)} rows={p.rows} vec={p.vec} "
                f"unroll={p.unroll}")
    name = {"WarpFusedPlan": "fused-warp", "FramePlan": "fused-frame"}[type(plan).__name__]
    out = [name, "block=" + "x".join(map(str, plan.block)),
           "tile=" + "x".join(map(str, plan.tile))]
    if name == "fused-warp":
        out += [f"cols={plan.cols}", f"warps={plan.warps}", f"length={plan.length}",
                f"ahead={plan.ahead}"]
    return " ".join(out)


@pytest.fixture
def on_gpu(monkeypatch):
    """StageLaunch's defaults as on an H100 (the smarch march length depends on the SM count)."""
    monkeypatch.setattr(stage_plan, "SIMULATOR", False)
    monkeypatch.setattr(stage_plan, "_sm_count", lambda: SMS)


@pytest.mark.parametrize("sname", list(SHAPES))
def test_the_registry_picks_what_70f9f13_picked(sname, on_gpu):
    shape = SHAPES[sname]
    nd, s3 = len(shape), view3(shape)
    checked = 0
    for key, want in PICKS.items():
        name, dtype, kernel, integ, fused, where = key.split("|")
        if name != sname:
            continue
        fused = {"None": None, "True": True, "False": False}[fused]
        for bc in (0, 1, 2):
            case = plans.Case(ndim=nd, shape3=s3, dtype=dtype, boundary=bc, kernel=kernel,
                              integrator=integ, whole=where == "whole", sms=SMS)
            if fused is True and want.startswith("fused-tile") and nd == 2:
                want = PICKS[f"{sname}|{dtype}|texture|rk2|None|whole"]  # the frame form
            if want.startswith("error:") or (fused is True and (where == "slab" or nd == 3)):
                # refused where no fused form runs (the deliberate changes)
                with pytest.raises(plans.PlanError, match="fused"):
                    plans.choose(case, fused)
                if want.startswith("error:") and nd == 2:  # 3-D: "no fused form runs 3-D"
                    assert want[len("error: "):] in str(pytest.raises(
                        plans.PlanError, plans.choose, case, fused).value)
                checked += 1
                continue
            choice = plans.choose(case, fused)
            if choice.fused:
                got = _describe(choice.build(case))
            else:
                got = _describe(stage_plan.StageLaunch(kernel, nd, s3, bc, dtype,
                                                     layout=LAYOUT.get(nd, "modern"),
                                                     lo=0, hi=shape[0]))
            assert got == want, (key, bc, choice.reason)
            checked += 1
    assert checked == 3 * 4 * 2 * 3 * 2 * 2


def test_choices_say_why_and_refusals_are_one_line():
    case = plans.Case(ndim=2, shape3=(1, 200, 200), dtype="float64", boundary=0)
    c = plans.choose(case, None)
    assert c.form.name == "fused-frame" and "small 2-D" in c.reason
    sim = plans.choose(plans.Case(ndim=2, shape3=(1, 200, 200), dtype="float64", boundary=0,
                                  simulator=True), None)
    assert sim.form is plans.STAGES and "simulator" in sim.reason
    hinted = plans.choose(plans.Case(ndim=2, shape3=(1, 200, 200), dtype="float64",
                                     boundary=0, hints=True), None)
    assert hinted.form is plans.STAGES and "hints" in hinted.reason
    for bad, why in (
            (plans.Case(ndim=3, shape3=(8, 8, 8), dtype="float32", boundary=1), "3-D"),
            (plans.Case(ndim=1, shape3=(1, 1, 8), dtype="float32", boundary=1), "1-D"),
            (plans.Case(ndim=2, shape3=(1, 8, 8), dtype="float32", boundary=1, whole=False),
             "slab"),
            (plans.Case(ndim=2, shape3=(1, 8, 8), dtype="float32", boundary=1,
                        integrator="euler"), "rk2"),
            (plans.Case(ndim=2, shape3=(1, 8, 8), dtype="float32", boundary=1, rows=2),
             "cells_per_thread")):
        with pytest.raises(UserError, match=why) as err:
            plans.choose(bad, True)
        assert "\n" not in str(err.value) and str(err.value).startswith("fused: true")
    framed = plans.Case(ndim=2, shape3=(1, 8, 8), dtype="float32", boundary=1, block=(11, 10))
    assert plans.choose(framed, True).build(framed).tile == (2, 3)  # the block is the frame
    with pytest.raises(ValueError, match="true, false or auto"):
        plans.choose(case, "yes")


def test_every_form_declares_its_support():
    names = [f.name for f in plans.FORMS]
    assert names[-1] == "stages" and len(set(names)) == len(names)
    for f in plans.FORMS:
        assert f.ndims and f.rule and (f.build is not None) == f.fused
        assert f.halo == (4 if f.fused else 2)  # fused forms: one 4-row exchange per step
    assert "stages" in plans.table() and "halo 2" in plans.table()
    assert set(plans.STAGE_KERNELS) == {"smarch", "march", "vec", "direct", "tiled"}
    # a slab must hold the halo a form declares
    slab = dict(ndim=3, shape3=(8, 8, 8), dtype="float64", boundary=0, whole=False)
    assert plans.STAGES.supports(plans.Case(**slab, slab_halo=2)) == (True, "")
    ok, why = plans.STAGES.supports(plans.Case(**slab, slab_halo=1))
    assert not ok and "halo of 2 rows" in why
