"""The frame-blocked fused RK2 step of small 2-D grids (``simengine/field/cuda/fused_frame.py``)
against unfused steps.

Under the CUDA simulator (CI): a grid of 13×11 with a 2×3 tile in an 11×10 block (the frame),
bit-identical to the unfused stages for every boundary and fp32/fp64. On a GPU: a
non-tile-multiple grid, the default shape, 1001 steps through CUDA Graphs (≤ 1e-12 relative in
fp64, ≤ 1e-5 in fp32), and graph replay bit-identical to launches.
"""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():  # pragma: no cover
    pytest.skip("no CUDA device and not the simulator", allow_module_level=True)

from field_cuda_common import SIM, close, field, run, solver  # noqa: E402

from simengine.field.cuda import fused_frame as ff  # noqa: E402

SHAPE, TILE, STEPS = ((13, 11), (2, 3), 2) if SIM else ((257, 300), None, 1001)


def _frame(shape, bnd, dtype, tile=TILE):
    """A solver running the frame step (``fused: true`` on a small 2-D grid; the block is the
    frame: tile + 4 on every side)."""
    block = None if tile is None else (tile[1] + 8, tile[0] + 8)
    s = solver(shape, bnd, dtype, fused=True, block=block)
    assert isinstance(s.fused_plan, ff.FramePlan) and s.plan_choice.form.name == "fused-frame"
    return s


def _unfused(shape, bnd, dtype):
    return solver(shape, bnd, dtype, fused=False, **(dict(block=(8, 8)) if SIM else {}))


@pytest.mark.parametrize("prec", ["float64", "float32"])
@pytest.mark.parametrize("bnd", ["periodic", "mirror", "fixed"])
def test_frame_matches_unfused(bnd, prec):
    dtype = np.dtype(prec)
    phi = field(SHAPE, 5).astype(dtype)
    f = _frame(SHAPE, bnd, dtype)
    assert f.fused_plan.block == (f.fused_plan.tile[1] + 8, f.fused_plan.tile[0] + 8)
    assert "1 step/launch" in f.name
    close(run(f, phi, STEPS), run(_unfused(SHAPE, bnd, dtype), phi, STEPS), dtype)


def test_limits_and_default_shape():
    with pytest.raises(ValueError, match="2-D"):
        ff.FramePlan("texture", 1, (1, 1, 64), 0, np.float64)
    with pytest.raises(ValueError, match="smaller tile"):
        ff.FramePlan("texture", 2, (1, 64, 64), 0, np.float64, tile=(32, 32))
    small = (ff.FRAME_BLOCK, ff.FRAME_TILE)
    large = (ff.LARGE_FRAME_BLOCK, ff.LARGE_FRAME_TILE)
    for block, tile in (small, large):
        assert block == (tile[1] + 8, tile[0] + 8)  # (x, y) threads = the frame
    assert ff.frame_shape(200, 200, sms=132) == small  # 625 tiles ≤ 132 · 8
    assert ff.frame_shape(256, 256, sms=132) == small  # 1024
    assert ff.frame_shape(257, 264, sms=132) == large  # 33 · 33 = 1089 > 1056
    assert ff.frame_shape(512, 512, sms=132) == large
    assert ff.frame_shape(200, 200, sms=40) == large


@pytest.mark.skipif(SIM, reason="the simulator records no CUDA Graphs")
def test_auto_runs_it_and_graph_replay_matches_launches():
    from simengine.field.cuda import graph as cgraph

    auto = solver((96, 130), "mirror", np.float64)
    assert isinstance(auto.fused_plan, ff.FramePlan) and auto.plan_choice.form.name == "fused-frame"
    steps = 2 * cgraph.GRAPH_STEPS + 16 + 4 + 2 + 1
    phi = field((96, 130), 8)
    out = []
    for graphs in (False, True):
        s = _frame((96, 130), "mirror", np.float64)
        s.use_graphs = graphs
        out.append(run(s, phi, steps))
        assert s._graph_error is None
    np.testing.assert_array_equal(out[0], out[1])
