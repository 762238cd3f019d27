"""Slab decomposition on the CUDA solver: K slabs exchanging halos through the host-side halo
API (``boundary_rows`` / ``set_halo``, pinned buffers) give a field bit-identical to the
whole-grid CUDA solver; slab partials merge to the whole-field reductions.

Simulator (CI): tiny grids, small thread blocks, few steps. Real GPU: larger grids, defaults."""
from __future__ import annotations

import numpy as np
import pytest

cuda = pytest.importorskip("numba.cuda")
if not cuda.is_available():  # pragma: no cover
    pytest.skip("no CUDA device and not the simulator", allow_module_level=True)

from field_cuda_common import BOUNDARIES, DT, MODEL, SIM  # noqa: E402

from simengine.field import cuda as ck  # noqa: E402
from simengine.field import observables as obs  # noqa: E402
from simengine.field.cuda_solver import CudaFieldSolver  # noqa: E402
from simengine.field.decomposition import SlabGroup  # noqa: E402
from simengine.field.model import Boundary, Grid  # noqa: E402

VARIANTS = [("global", "modern"), ("texture", "modern"), ("shared", "modern"),
            ("shared", "seed"), ("combined", "modern"), ("combined", "seed")]

if SIM:
    STEPS = 2
    BLOCKS = {("direct", 1): (8,), ("modern", 1): (8,), ("seed", 1): (12,),
              ("direct", 2): (8, 4), ("modern", 2): (8, 8), ("seed", 2): (8, 8),
              ("direct", 3): (4, 4, 2), ("modern", 3): (4, 4, 2), ("seed", 3): (8, 6, 6)}
    # every variant, the boundaries spread over them (the simulator is slow)
    CASES = [((12, 10), b, k, lay, np.float64, {})
             for (k, lay), bs in zip(VARIANTS, [BOUNDARIES, ("mirror",), ("periodic", "fixed"),
                                                ("periodic", "fixed"), ("mirror",), ("fixed",)])
             for b in bs]
    CASES += [((12, 10), "periodic", "global", "modern", np.float32, {}),      # pair kernel
              ((12, 10), "mirror", "shared", "seed", np.float32, {}),
              ((12, 10), "periodic", "texture", "modern", np.float64, {"march": 3}),
              ((23,), "periodic", "texture", "modern", np.float64, {}),
              ((23,), "fixed", "shared", "seed", np.float64, {}),
              ((6, 5, 6), "periodic", "global", "modern", np.float64, {}),     # 3-D march
              ((6, 5, 6), "fixed", "shared", "modern", np.float64, {})]
else:
    STEPS = 4
    BLOCKS = {}
    CASES = [(shape, b, k, lay, dt, {}) for shape in [(1001,), (257, 300), (50, 37, 41)]
             for k, lay in VARIANTS for b in BOUNDARIES for dt in (np.float64, np.float32)]


def _block(kernel, layout, nd):
    fam = layout if kernel in ("shared", "combined") else "direct"
    return BLOCKS.get((fam, nd))


def _splits(n):
    return [1, [(0, 2), (2, n - 2), (n - 2, n)]] if SIM else [1, 2, 3, [(0, 2), (2, n)]]


@pytest.mark.parametrize("shape,bnd,kernel,layout,dtype,hints", CASES, ids=str)
def test_cuda_slabs_bit_identical(shape, bnd, kernel, layout, dtype, hints):
    grid, boundary = Grid(shape, 0.9), Boundary(bnd, 0.3)
    phi = np.random.default_rng(0).uniform(-1, 1, shape).astype(dtype)
    block = None if hints.get("march") else _block(kernel, layout, len(shape))
    if hints.get("march"):
        block = (8, 1)

    def factory(slab=None, exchange=None):
        return CudaFieldSolver(MODEL, grid, boundary, kernel=kernel, layout=layout,
                               precision=dtype, dt=DT, block=block, slab=slab, exchange=exchange,
                               fused=False, **hints)  # the stage kernels on 2-row halos

    whole = factory()
    whole.load(phi)
    whole.advance(STEPS)
    expect = whole.state()
    for split in _splits(shape[0]):
        if split == 1 and bnd != "periodic":
            continue  # one non-periodic slab is the whole grid
        g = SlabGroup(factory, shape[0], split, bnd)
        g.load(phi)
        g.advance(STEPS)
        got = g.state()
        assert np.array_equal(got, expect), (split, np.max(np.abs(got - expect)))
        parts = g.partials()
        red = obs.merge_partials(parts, MODEL, grid)
        host = obs.reductions(expect.astype(np.float64), MODEL, grid, boundary)
        for key in ("mass", "free_energy", "min", "max"):
            assert red[key] == pytest.approx(host[key], rel=1e-12, abs=1e-300), key


def test_cuda_halo_api():
    """lo/hi, boundary_rows (pinned host copies of the owned edge rows), set_halo."""
    shape = (9, 6)
    grid, boundary = Grid(shape), Boundary("periodic")
    from simengine.field.decomposition import make_slabs

    slab = make_slabs(9, 2, "periodic")[1]          # rows 5..9, halos on both sides
    s = CudaFieldSolver(MODEL, grid, boundary, dt=DT, slab=slab)
    assert (s.lo, s.hi, s.shape) == (2, 6, (8, 6))
    phi = np.arange(9 * 6, dtype=np.float64).reshape(shape)
    s.load(phi[5:9])
    low, high = s.boundary_rows(s.buffers[0])
    assert low.shape == high.shape == s.halo_shape() == (2, 6)
    assert np.array_equal(low, phi[5:7]) and np.array_equal(high, phi[7:9])
    s.set_halo(s.buffers[0], phi[3:5], phi[0:2])
    full = s.buffers[0].copy_to_host().reshape(8, 6)
    assert np.array_equal(full, np.concatenate([phi[3:9], phi[0:2]]))
    assert np.array_equal(s.state(), phi[5:9])
