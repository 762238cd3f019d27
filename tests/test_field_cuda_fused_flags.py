"""The persistent fused step with neighbour flags (``simengine/field/cuda/fused_flags.py``)
against unfused steps.

Under the CUDA simulator (CI) the grid is one block that walks every tile (the simulator runs
blocks one after the other, so blocks that wait on each other would never finish): the tile
order, the counters and the arithmetic are tested, bit-identical to the unfused stages for every
boundary, fp32/fp64, several launches and a counter reset. On a GPU the same tests run with the
real grid (every tile its own block, blocks spinning on their neighbours' counters) and with a
grid capped below the tile count (several tiles per block), 1001 steps, ≤ 1e-12 relative in
fp64 / 1e-5 in fp32 against the unfused path.
"""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():  # pragma: no cover
    pytest.skip("no CUDA device and not the simulator", allow_module_level=True)

from simengine.field import cuda as ck  # noqa: E402
from simengine.field.cuda import fused_flags as ff  # noqa: E402
from simengine.field.cuda_solver import CudaFieldSolver  # noqa: E402
from simengine.field.model import Boundary, CahnHilliard, Grid  # noqa: E402

SIM = ck.SIMULATOR
MODEL = CahnHilliard(0.7, 1.3, (0.1, -1.0, 0.2, 1.0))
DT = 1e-3
if SIM:
    SHAPE = (13, 11)  # 4×3 tiles of 4×4, the last row and column partial
    BLOCK, TILE = (8, 8), (4, 4)
    STEPS = 3
else:
    SHAPE = (257, 300)
    BLOCK, TILE = None, None  # the defaults (16×16 threads, 8×8 tiles)
    STEPS = 1001


def _field(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def _solver(shape, bnd, dtype, **kw):
    return CudaFieldSolver(MODEL, Grid(shape, 0.9), Boundary(bnd, 0.3), kernel="texture",
                           precision=dtype, dt=DT, **kw)


def _flagged(shape, bnd, dtype, **kw):
    s = _solver(shape, bnd, dtype, fused=True, block=(8, 8), cells_per_thread=1)
    s.fused_plan = ff.FlagPlan(s.kernel, 2, s.shape3, s.boundary.code, s.dtype,
                               block=kw.pop("block", BLOCK), tile=kw.pop("tile", TILE), **kw)
    return s


def _unfused(shape, bnd, dtype, phi, steps):
    u = _solver(shape, bnd, dtype, fused=False, **(dict(block=(8, 8)) if SIM else {}))
    assert u.fused_plan is None
    u.load(phi)
    u.advance(steps)
    return u.state()


def _close(got, expect, dtype):
    if SIM:
        np.testing.assert_array_equal(got, expect)
        return
    tol = 1e-12 if np.dtype(dtype) == np.float64 else 1e-5
    assert np.max(np.abs(got - expect)) <= tol * np.max(np.abs(expect))


CASES = [("periodic", "float64"), ("mirror", "float64"), ("fixed", "float32")]


@pytest.mark.parametrize("bnd,prec", CASES, ids=lambda v: str(v))
def test_flags_match_unfused(bnd, prec):
    """Two advances (two launches: the counters carry over) against unfused steps; the
    counters end at the step count."""
    dtype = np.dtype(prec)
    phi = _field(SHAPE).astype(dtype)
    s = _flagged(SHAPE, bnd, dtype)
    assert "neighbour flags" in s.name and not s._graphs_usable()
    s.load(phi)
    first = 2 if SIM else 500
    s.advance(first)
    s.advance(STEPS - first)
    assert s.steps == STEPS
    _close(s.state(), _unfused(SHAPE, bnd, dtype, phi, STEPS), dtype)
    flags = s.fused_plan.counters()
    assert flags.shape == (s.fused_plan.tiles,)
    np.testing.assert_array_equal(flags, STEPS)
    assert s.fused_plan.base == STEPS
    if not SIM:  # one block per tile where they all fit at once (200²-class grids)
        assert 1 <= s.fused_plan.griddim[0] <= s.fused_plan.tiles


@pytest.mark.parametrize("bnd", ["mirror"])
def test_several_tiles_per_block(bnd):
    """A grid capped below the tile count: every block walks several tiles per step (on a GPU
    the blocks' neighbours are then partly their own earlier tiles, partly other blocks')."""
    phi = _field(SHAPE, 2)
    s = _flagged(SHAPE, bnd, np.float64, max_blocks=7)
    s.load(phi)
    s.advance(STEPS)
    if not SIM:
        assert s.fused_plan.griddim[0] == 7 < s.fused_plan.tiles
    _close(s.state(), _unfused(SHAPE, bnd, np.float64, phi, STEPS), np.float64)


def test_counter_reset_and_launch_split(monkeypatch):
    """The counters are reset to zero before they could overflow, and an advance longer than
    MAX_STEPS_PER_LAUNCH is split into launches; the field is unchanged by either."""
    monkeypatch.setattr(ff, "MAX_STEPS_PER_LAUNCH", 2)
    monkeypatch.setattr(ff, "COUNTER_LIMIT", 4)
    phi = _field(SHAPE, 3)
    s = _flagged(SHAPE, "fixed", np.float64, pad=4)  # counters 16 bytes apart
    assert s.fused_plan.flags.shape == (4 * s.fused_plan.tiles,)
    s.load(phi)
    steps = 5  # launches of 2, 2 (reset before: 2 + 2 >= 4), 1
    s.advance(steps)
    assert s.fused_plan.base == 3  # 2 (after the reset) + 1
    np.testing.assert_array_equal(s.fused_plan.counters(), 3)
    _close(s.state(), _unfused(SHAPE, "fixed", np.float64, phi, steps), np.float64)


def test_plan_limits():
    with pytest.raises(ValueError, match="at least 4x4"):
        ff.FlagPlan("texture", 2, (1, 32, 32), 0, np.float64, block=(8, 8), tile=(3, 8))
    with pytest.raises(ValueError, match="2-D"):
        ff.FlagPlan("texture", 3, (8, 8, 8), 0, np.float64)
    with pytest.raises(ValueError, match="shared memory"):
        ff.FlagPlan("texture", 2, (1, 64, 64), 0, np.float64, block=(16, 16), tile=(64, 64))
    with pytest.raises(ValueError, match="one step"):
        ff.FlagPlan("texture", 2, (1, 64, 64), 0, np.float64, steps=2)


def test_auto_rule():
    """``fused: auto`` takes the flag plan exactly where the small-grid blocked shape (one
    resident block per 8×8 tile) applies, and only while FLAGS_AUTO."""
    assert ff.flags_auto((1, 200, 200), sms=132) is ff.FLAGS_AUTO
    assert ff.flags_auto((1, 512, 512), sms=132) is False
    assert ff.flags_auto((1, 200, 200), sms=40) is False
    if not SIM:
        auto = _solver((200, 200), "periodic", np.float64)
        assert isinstance(auto.fused_plan, ff.FlagPlan) is ff.FLAGS_AUTO


def _mapped(i, n, bnd):
    """Where a load of index i lands (None: a fixed outside value)."""
    if 0 <= i < n:
        return i
    if bnd == "periodic":
        return i % n
    if bnd == "mirror":
        m = i % (2 * n)
        return 2 * n - 1 - m if m >= n else m
    return None


@pytest.mark.parametrize("bnd", ["periodic", "mirror", "fixed"])
@pytest.mark.parametrize("shape,tile", [((13, 11), (4, 4)), ((9, 10), (4, 4)),
                                        ((16, 16), (4, 4)), ((5, 6), (4, 4)),
                                        ((4, 4), (4, 4)), ((17, 9), (8, 4))],
                         ids=str)
def test_watched_tiles_cover_the_dependencies(bnd, shape, tile):
    """Every tile whose φ a tile's stored cells depend on (four 5-point stencils: the cells
    within |dy| + |dx| ≤ 4, mapped by the boundary) is waited on — also where the last tile is
    shorter than 4 cells and a periodic halo reaches two tiles away (the case the device tests
    found: 257×300 with 8×8 tiles) — and nothing outside the rows/columns within 4 is."""
    from simengine.field.model import Boundary as B

    n1, n2 = shape
    ty, tx = tile
    ntx, nty = -(-n2 // tx), -(-n1 // ty)
    got = ff.watched_tiles(B(bnd, 0.3).code, tile, shape)
    assert len(got) == ntx * nty
    for t, watched in enumerate(got):
        tj, ti = divmod(t, ntx)
        rows = range(tj * ty, min(tj * ty + ty, n1))
        cols = range(ti * tx, min(ti * tx + tx, n2))
        need, near_rows, near_cols = set(), set(), set()
        for r in rows:
            for c in cols:
                for dy in range(-4, 5):
                    for dx in range(-4 + abs(dy), 5 - abs(dy)):
                        y, x = _mapped(r + dy, n1, bnd), _mapped(c + dx, n2, bnd)
                        if y is not None and x is not None:
                            need.add((y // ty) * ntx + x // tx)
                        if y is not None:
                            near_rows.add(y // ty)
                        if x is not None:
                            near_cols.add(x // tx)
        need.discard(t)
        assert need <= watched, (t, need - watched)
        assert t not in watched
        assert all(w // ntx in near_rows | {tj} and w % ntx in near_cols | {ti}
                   for w in watched), (t, watched)
    if shape == (16, 16) and bnd == "periodic":  # 4×4 tiles: the 8 around each
        assert all(len(w) == 8 for w in got)


@pytest.mark.parametrize("sync", ["relaxed", "sc"])
def test_sync_modes_match_unfused(sync):
    """The other publication/poll forms give the same field."""
    phi = _field(SHAPE, 6)
    s = _flagged(SHAPE, "periodic", np.float64, sync=sync, backoff=20)
    assert sync in s.name
    s.load(phi)
    s.advance(STEPS)
    _close(s.state(), _unfused(SHAPE, "periodic", np.float64, phi, STEPS), np.float64)


@pytest.mark.parametrize("bnd", ["periodic", "fixed"])
def test_frame_sized_block(bnd):
    """A block exactly as large as the frame (the defaults' form: the one-pass body of
    fused_blocked._frame_step) with the coherent loads: tile 4×4 in a 12×12 block."""
    phi = _field(SHAPE, 7)
    s = _flagged(SHAPE, bnd, np.float64, block=(12, 12) if SIM else None,
                 tile=(4, 4) if SIM else None)
    assert s.fused_plan.block == (s.fused_plan.tile[1] + 8, s.fused_plan.tile[0] + 8)
    s.load(phi)
    s.advance(STEPS)
    _close(s.state(), _unfused(SHAPE, bnd, np.float64, phi, STEPS), np.float64)
