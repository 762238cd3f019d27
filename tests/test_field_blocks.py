"""Slab decomposition of the field (CPU): K slabs with halo exchange give a field bit-identical
to the whole-grid solver; slab reductions and the slab S(k) merge to the whole-field values."""
import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from simengine.field import observables as obs
from simengine.field.decomposition import SlabGroup, make_slabs, split_rows
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.solver import CpuFieldSolver

MODEL = CahnHilliard(0.7, 1.3, (0.1, -1.0, 0.2, 1.0))
DT = 1e-3
STEPS = 3
SHAPES = {1: (11,), 2: (9, 7), 3: (7, 5, 6)}
TILES = {1: (4,), 2: (3, 4), 3: (2, 3, 4)}
KERNELS = ("global", "shared", "texture", "combined")
BOUNDARIES = ("periodic", "mirror", "fixed")


def _splits(n):
    """K = 1, 2, 3 balanced, plus uneven splits with slabs as thin as 2 rows."""
    out = [1, 2, 3, [(0, 2), (2, n - 2), (n - 2, n)], [(0, n - 2), (n - 2, n)]]
    return out


def _field(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def _make(grid, boundary, kernel, dtype, integrator="rk2"):
    def factory(slab=None, exchange=None):
        return CpuFieldSolver(MODEL, grid, boundary, kernel=kernel, precision=dtype,
                              integrator=integrator, dt=DT, tile=TILES[grid.ndim], slab=slab,
                              exchange=exchange)
    return factory


@pytest.mark.parametrize("dtype", [np.float64, np.float32], ids=["fp64", "fp32"])
@pytest.mark.parametrize("kernel", KERNELS)
@pytest.mark.parametrize("bnd", BOUNDARIES)
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_slabs_bit_identical(nd, bnd, kernel, dtype):
    shape = SHAPES[nd]
    grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
    phi = _field(shape).astype(dtype)
    factory = _make(grid, boundary, kernel, dtype)
    whole = factory()
    whole.load(phi)
    whole.advance(STEPS)
    expect = whole.state()
    for split in _splits(shape[0]):
        g = SlabGroup(factory, shape[0], split, bnd)
        g.load(phi)
        g.advance(STEPS)
        got = g.state()
        assert got.dtype == expect.dtype
        assert np.array_equal(got, expect), (split, np.max(np.abs(got - expect)))


def test_slabs_euler_and_halo_matters():
    """Euler is bit-identical too; a slab whose halo is never exchanged is not."""
    shape = (10, 8)
    grid, boundary = Grid(shape), Boundary("periodic")
    phi = _field(shape, 1)
    factory = _make(grid, boundary, "texture", np.float64, "euler")
    whole = factory()
    whole.load(phi)
    whole.advance(4)
    g = SlabGroup(factory, shape[0], 2, "periodic")
    g.load(phi)
    g.advance(4)
    assert np.array_equal(g.state(), whole.state())
    # the same slabs without exchange: the halo stays zero and the edge rows go wrong
    broken = [factory(s) for s in make_slabs(shape[0], 2, "periodic")]
    for s, sol in zip(make_slabs(shape[0], 2, "periodic"), broken):
        sol.load(phi[s.start:s.stop])
        sol.advance(4)
    assert not np.array_equal(np.concatenate([b.state() for b in broken]), whole.state())


def test_slab_geometry_and_errors():
    s = make_slabs(10, 3, "mirror")
    assert [(x.start, x.stop) for x in s] == [(0, 4), (4, 7), (7, 10)]
    assert (s[0].halo_lo, s[0].halo_hi, s[0].lower, s[0].upper) == (0, 2, None, 1)
    assert (s[2].halo_lo, s[2].halo_hi, s[2].lower, s[2].upper) == (2, 0, 1, None)
    assert (s[1].lo, s[1].hi, s[1].rows) == (2, 5, 7)
    p = make_slabs(10, 1, "periodic")[0]
    assert (p.halo_lo, p.halo_hi, p.lower, p.upper, p.rows) == (2, 2, 0, 0, 14)
    assert split_rows(7, 3) == [(0, 3), (3, 5), (5, 7)]
    with pytest.raises(ValueError, match="at least 2"):
        make_slabs(5, 3, "periodic")
    with pytest.raises(ValueError, match="consecutively"):
        make_slabs(10, [(0, 4), (5, 10)], "fixed")
    grid = Grid((8, 6))
    sol = CpuFieldSolver(MODEL, grid, Boundary("fixed"), dt=DT, slab=make_slabs(8, 2, "fixed")[1])
    assert (sol.lo, sol.hi, sol.buffers[0].shape) == (2, 6, (6, 6))
    with pytest.raises(ValueError, match="does not match"):
        sol.load(np.zeros((8, 6)))
    phi = np.arange(48.0).reshape(8, 6)
    sol.load(phi[4:8])
    low, high = sol.boundary_rows(sol.buffers[0])
    assert low.shape == high.shape == sol.halo_shape() == (2, 6)
    assert np.array_equal(low, phi[4:6]) and np.array_equal(high, phi[6:8])
    sol.set_halo(sol.buffers[0], phi[2:4], None)      # top slab of a fixed grid: no halo above
    assert np.array_equal(sol.buffers[0], phi[2:8])


# ------------------------------------------------------------------ reductions from partials
@pytest.mark.parametrize("bnd", BOUNDARIES)
@pytest.mark.parametrize("nd", [1, 2, 3])
def test_partials_merge_to_whole_field(nd, bnd):
    shape = SHAPES[nd]
    grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
    phi = _field(shape, 3)
    expect = obs.reductions(phi, MODEL, grid, boundary)
    factory = _make(grid, boundary, "texture", np.float64)
    whole = factory()
    whole.load(phi)
    _close(whole.reductions(), expect)
    for split in _splits(shape[0]):
        g = SlabGroup(factory, shape[0], split, bnd)
        g.load(phi)
        parts = g.partials()
        assert sum(p.count for p in parts) == phi.size
        _close(obs.merge_partials(parts, MODEL, grid), expect)
        # through the float64[6] transport form
        _close(obs.merge_partials([p.to_array() for p in parts], MODEL, grid), expect)
    # after steps (halos of the current buffer refreshed by partials())
    g = SlabGroup(factory, shape[0], 3, bnd)
    g.load(phi)
    g.advance(2)
    whole.advance(2)
    _close(obs.merge_partials(g.partials(), MODEL, grid),
           obs.reductions(whole.state(), MODEL, grid, boundary))


def _close(got, expect):
    for key in ("mass", "free_energy", "min", "max"):
        assert got[key] == pytest.approx(expect[key], rel=1e-12, abs=1e-300), key


# ------------------------------------------------------------------ S(k) on slabs
class FakeComm:
    """In-process alltoall among ``n`` threads (one per rank)."""

    def __init__(self, n):
        self.n = n
        self.box = [None] * n
        self.barrier = threading.Barrier(n)

    def alltoall(self, rank):
        def exchange(send):
            assert len(send) == self.n
            self.box[rank] = send
            self.barrier.wait()
            recv = [self.box[q][rank] for q in range(self.n)]
            self.barrier.wait()
            return recv
        return exchange


def _slab_length(phi, bounds, spacing, boundary="periodic"):
    comm = FakeComm(len(bounds))
    mean = float(np.mean(phi))

    def rank(r):
        a, b = bounds[r]
        return obs.structure_factor_partials(phi[a:b], bounds, r, phi.shape, spacing, mean,
                                             comm.alltoall(r), boundary=boundary)

    with ThreadPoolExecutor(len(bounds)) as ex:
        parts = list(ex.map(rank, range(len(bounds))))
    return obs.length_from_partials(parts, phi.size)


@pytest.mark.parametrize("shape", [(16,), (12, 10), (7, 9), (6, 5, 8), (5, 4, 3)], ids=str)
def test_structure_factor_on_slabs(shape):
    phi = _field(shape, 5)
    expect = obs.characteristic_length(phi, 0.7)
    for k in (1, 2, 3):
        bounds = split_rows(shape[0], k)
        assert _slab_length(phi, bounds, 0.7) == pytest.approx(expect, rel=1e-12)
    assert _slab_length(phi, [(0, 1), (1, shape[0])], 0.7) == pytest.approx(expect, rel=1e-12)
    # mirror walls: the cosine transform, on slabs as in one process
    expect = obs.characteristic_length(phi, 0.7, boundary="mirror")
    for k in (1, 2, 3):
        bounds = split_rows(shape[0], k)
        assert _slab_length(phi, bounds, 0.7, "mirror") == pytest.approx(expect, rel=1e-12)
    flat = np.full(shape, 0.25)
    assert _slab_length(flat, split_rows(shape[0], 2), 1.0) == float("inf")
    # a flat field whose mean is inexact: inf with the global bounds, as in one process
    assert obs.length_from_partials([[1e-30, 1e-31]], 10, bounds=(0.3, 0.3)) == float("inf")
    assert obs.characteristic_length(np.full(shape, 0.3), 0.7) == float("inf")
