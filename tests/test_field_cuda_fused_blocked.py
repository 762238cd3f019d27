"""Temporal blocking of the fused RK2 step and the persistent cooperative kernel
(``simengine/field/cuda/fused_blocked.py``) against unfused steps.

Under the CUDA simulator (CI): ≤ 32² grids, 8×8 blocks and tiles, a few steps, and the result
must be bit-identical to the unfused stages (same per-point arithmetic, no FMA contraction) for
every boundary, fp32/fp64, and step counts not divisible by K. On a GPU: non-tile-multiple grids,
the default block and tile, 1001 steps through CUDA Graphs against the unfused
path (≤ 1e-12 relative in fp64, ≤ 1e-5 in fp32), and CUDA Graph replay bit-identical to launches.
"""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():  # pragma: no cover
    pytest.skip("no CUDA device and not the simulator", allow_module_level=True)

from simengine.field import cuda as ck  # noqa: E402
from simengine.field.cuda import fused_blocked as fb  # noqa: E402
from simengine.field.cuda_solver import CudaFieldSolver  # noqa: E402
from simengine.field.model import Boundary, CahnHilliard, Grid  # noqa: E402

SIM = ck.SIMULATOR
MODEL = CahnHilliard(0.7, 1.3, (0.1, -1.0, 0.2, 1.0))
DT = 1e-3
if SIM:
    SHAPE, SMALL = (27, 30), (13, 11)  # 27×30: interior tiles for K = 2 (halo 8) exist
    BLOCK, TILE = (8, 8), (8, 8)
    STEPS = 3
else:
    SHAPE, SMALL = (257, 300), (96, 130)
    BLOCK, TILE = None, None
    STEPS = 1001


def _field(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def _solver(shape, bnd, dtype, **kw):
    return CudaFieldSolver(MODEL, Grid(shape, 0.9), Boundary(bnd, 0.3), kernel="texture",
                           precision=dtype, dt=DT, **kw)


def _blocked(shape, bnd, dtype, k=None, block=BLOCK, tile=TILE):
    if SIM:  # auto is unfused under the simulator: put the blocked plan in a fused solver
        s = _solver(shape, bnd, dtype, fused=True, block=(8, 8), cells_per_thread=1)
        s.fused_plan = fb.BlockedPlan(s.kernel, 2, s.shape3, s.boundary.code, s.dtype, steps=k,
                                      block=block, tile=tile)
        return s
    s = _solver(shape, bnd, dtype, fused=True)
    s.fused_plan = fb.BlockedPlan(s.kernel, 2, s.shape3, s.boundary.code, s.dtype, steps=k,
                                  block=block, tile=tile)
    return s


def _run(s, phi, steps):
    s.load(phi)
    s.advance(steps)
    assert s.steps == steps
    return s.state()


def _close(got, expect, dtype):
    if SIM:
        np.testing.assert_array_equal(got, expect)
        return
    tol = 1e-12 if np.dtype(dtype) == np.float64 else 1e-5
    assert np.max(np.abs(got - expect)) <= tol * np.max(np.abs(expect))


CASES = ([("periodic", "float64", 2, SHAPE), ("mirror", "float64", 2, SHAPE),
          ("fixed", "float64", 2, SHAPE)]
         + [(b, "float32", 3, SMALL) for b in ("periodic", "mirror", "fixed")])


@pytest.mark.parametrize("bnd,prec,k,shape", CASES, ids=lambda v: str(v))
def test_blocked_matches_unfused(bnd, prec, k, shape):
    dtype = np.dtype(prec)
    phi = _field(shape).astype(dtype)
    b = _blocked(shape, bnd, dtype, k)
    assert isinstance(b.fused_plan, fb.BlockedPlan) and "/launch" in b.name
    u = _solver(shape, bnd, dtype, fused=False, **(dict(block=(8, 8)) if SIM else {}))
    assert u.fused_plan is None
    steps = (k + 1 if SIM else STEPS)  # not a multiple of K
    _close(_run(b, phi, steps), _run(u, phi, steps), dtype)


PCASES = ([(b, "float64", 1, SMALL) for b in ("periodic", "mirror", "fixed")]
          + [("fixed", "float32", 2, SMALL)])


@pytest.mark.parametrize("bnd,prec,k,shape", PCASES, ids=lambda v: str(v))
def test_persistent_matches_unfused(bnd, prec, k, shape):
    """The persistent cooperative kernel (grid barrier every k steps; one block under the
    simulator) against the unfused stages, a step count not divisible by k."""
    dtype = np.dtype(prec)
    phi = _field(shape, 4).astype(dtype)
    s = _solver(shape, bnd, dtype, fused=True, block=(8, 8), cells_per_thread=1)
    s.fused_plan = fb.PersistentPlan(s.kernel, 2, s.shape3, s.boundary.code, s.dtype, steps=k,
                                     block=BLOCK or (16, 8), tile=TILE or (8, 16))
    assert "persistent" in s.name and not s._graphs_usable()
    u = _solver(shape, bnd, dtype, fused=False, **(dict(block=(8, 8)) if SIM else {}))
    steps = 2 * k + 1 if SIM else STEPS
    _close(_run(s, phi, steps), _run(u, phi, steps), dtype)
    if not SIM:  # the grid is capped at the co-resident blocks
        assert 1 <= s.fused_plan.griddim[0] <= s.fused_plan.tiles


def test_blocked_lengths_mix():
    """Launches of 1 … K steps in any mix give the same field (every compiled length)."""
    shape = SMALL
    phi = _field(shape, 3)
    k = 3
    ref = _run(_solver(shape, "fixed", np.float64, fused=False,
                       **(dict(block=(8, 8)) if SIM else {})), phi, 4 if SIM else 40)
    s = _blocked(shape, "fixed", np.float64, k)
    s.load(phi)
    p, bufs = s.fused_plan, s.buffers
    seq = [1, 3] if SIM else [1, 3, 2] * 6 + [2, 2]
    for m in seq:
        p(bufs[0], bufs[2], *s.coefs, s.scal, steps=m)
        bufs[0], bufs[2] = bufs[2], bufs[0]
    _close(s.state(), ref, np.float64)
    with pytest.raises(ValueError, match="steps per launch"):
        p(bufs[0], bufs[2], *s.coefs, s.scal, steps=k + 1)


def test_launch_lengths():
    assert fb.launch_lengths(7, 2) == [2, 2, 2, 1]
    assert fb.launch_lengths(6, 3) == [3, 3]
    assert fb.launch_lengths(0, 4) == []
    # graphs: an even number of launches for an even number of steps
    assert fb.launch_lengths(2, 2, even=True) == [1, 1]
    assert fb.launch_lengths(4, 4, even=True) == [2, 2]
    assert fb.launch_lengths(16, 3, even=True) == [3] * 5 + [1]
    for k in (1, 2, 3, 4):
        for n in range(2, 130, 2):
            seq = fb.launch_lengths(n, k, even=True)
            assert sum(seq) == n and len(seq) % 2 == 0 and max(seq) <= k and min(seq) >= 1


def test_plan_limits():
    with pytest.raises(ValueError, match="shared memory"):
        fb.BlockedPlan("texture", 2, (1, 64, 64), 0, np.float64, steps=4, tile=(16, 16))
    with pytest.raises(ValueError, match="2-D"):
        fb.BlockedPlan("texture", 1, (1, 1, 64), 0, np.float64)
    assert fb.blocked_shared_bytes((16, 16), 2, "float64") == 3 * 8 * 32 * 32
    # fused: auto on a small 2-D grid (a real GPU): the blocked plan only where BLOCKED_AUTO
    auto = _solver(SMALL, "periodic", np.float64)
    if not SIM:
        from simengine.field.cuda import fused_flags as ff

        want = (ff.FlagPlan if fb.BLOCKED_AUTO and ff.flags_auto(auto.shape3)
                else fb.BlockedPlan if fb.BLOCKED_AUTO else None)
        assert want is None or type(auto.fused_plan) is want
        assert isinstance(auto.fused_plan, (fb.BlockedPlan, ff.FlagPlan)) is fb.BLOCKED_AUTO


@pytest.mark.skipif(SIM, reason="the simulator records no CUDA Graphs")
@pytest.mark.parametrize("k,exact", [(2, True), (4, True), (1, False)])
def test_blocked_graph_replay_matches_launches(k, exact):
    """Graph replays equal launches: graphs of the standard sizes for a length seen once, one
    graph of the exact length (graph.EXACT_MIN … EXACT_MAX steps) when it comes again, and
    past EXACT_MAX only the standard sizes."""
    from simengine.field.cuda import graph as cgraph

    block, tile = ((16, 8), (16, 8)) if k == 4 else (fb.DEFAULT_BLOCKED_BLOCK,
                                                     fb.DEFAULT_BLOCKED_TILE)
    steps = 2 * cgraph.GRAPH_STEPS + 16 + 4 + 2 + 1 + (0 if exact else cgraph.EXACT_MAX)
    phi = _field(SMALL, 8)
    out = []
    standard = {cgraph.GRAPH_STEPS, *cgraph.GRAPH_REST_STEPS}
    for graphs in (False, True):
        s = _blocked(SMALL, "mirror", np.float64, k, block=block, tile=tile)
        s.use_graphs = graphs
        s.load(phi)
        s.advance(2)  # compiles; then the same length three times
        lengths = []
        for _ in range(3):
            s.advance(steps)
            lengths.append({key[-1] for key in s._graphs})
        assert s.steps == 2 + 3 * steps
        out.append(s.state())
        if graphs:
            assert s._graph_error is None
            assert lengths[0] <= standard  # a length seen once: the standard sizes
            if exact:
                assert lengths[1] == lengths[2] == lengths[0] | {steps - 1}  # then its own
            else:
                assert lengths[2] <= standard
    np.testing.assert_array_equal(out[0], out[1])


def test_default_shape_is_frame_sized_and_fills_one_wave():
    """``fused: auto`` takes a block as large as the loaded frame (every phase one pass per
    thread), tile 8×8 while those tiles fit in one wave of resident 256-thread blocks, else a
    16×16 tile (docs/field-gpu.md: H100 200² and 512² measurements)."""
    small = (fb.DEFAULT_BLOCKED_BLOCK, fb.DEFAULT_BLOCKED_TILE)
    large = (fb.LARGE_BLOCKED_BLOCK, fb.LARGE_BLOCKED_TILE)
    for block, tile in (small, large):
        assert block == (tile[1] + 8, tile[0] + 8)  # (x, y) threads = the frame of 1 step
    assert fb.default_blocked_shape(200, 200, sms=132) == small  # 625 tiles ≤ 132 · 8
    assert fb.default_blocked_shape(256, 256, sms=132) == small  # 1024
    assert fb.default_blocked_shape(257, 264, sms=132) == large  # 33 · 33 = 1089 > 1056
    assert fb.default_blocked_shape(512, 512, sms=132) == large
    assert fb.default_blocked_shape(200, 200, sms=40) == large


@pytest.mark.parametrize("bnd", ["periodic", "mirror", "fixed"])
def test_frame_sized_block_matches_unfused(bnd):
    """A block exactly as large as the frame (tile + 4 on every side), the form of the
    defaults, at a size the simulator can run: tile 2×3 in an 11×10 block."""
    shape, tile = (SMALL, (2, 3)) if SIM else (SHAPE, (8, 8))
    block = (tile[1] + 8, tile[0] + 8)
    phi = _field(shape, 5)
    b = _blocked(shape, bnd, np.float64, 1, block=block, tile=tile)
    assert b.fused_plan.block == block
    u = _solver(shape, bnd, np.float64, fused=False, **(dict(block=(8, 8)) if SIM else {}))
    steps = 2 if SIM else STEPS
    _close(_run(b, phi, steps), _run(u, phi, steps), np.float64)
