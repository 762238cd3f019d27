"""Every CPU kernel strategy equals the NumPy reference (the specification)."""
import numpy as np
import pytest

from simengine.field import cpu as ck
from simengine.field import reference as ref
from simengine.field.initial import noise
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.backends import make_solver

# shapes that are not multiples of the test tiles (5, 7, 6) nor of the default tiles
SHAPES = {1: (37,), 2: (13, 29), 3: (9, 11, 13)}
TILES = {1: (5,), 2: (5, 7), 3: (5, 7, 6)}
TOL = {"float64": 1e-12, "float32": 1e-5}
MODEL = CahnHilliard(mobility=0.8, kappa=0.7, coefficients=(0.05, -1.0, 0.2, 1.0))


def rel_err(a, b):
    """max-abs error relative to max |reference|."""
    return float(np.max(np.abs(np.asarray(a, np.float64) - b)) / np.max(np.abs(b)))


def _case(nd, kind, spacing=0.9):
    grid = Grid(SHAPES[nd], spacing)
    boundary = Boundary(kind, 0.35)
    phi0 = noise(grid.shape, mean=0.1, amplitude=0.6, seed=nd)
    return grid, boundary, phi0


@pytest.mark.parametrize("precision", ["float64", "float32"])
@pytest.mark.parametrize("kind", ["periodic", "mirror", "fixed"])
@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kernel", ck.STRATEGIES)
def test_kernel_matches_reference(kernel, nd, kind, precision):
    grid, boundary, phi0 = _case(nd, kind)
    dt = 2e-3
    phi0 = phi0.astype(precision).astype(np.float64)  # same start for both
    solver = make_solver(MODEL, grid, boundary, backend="cpu", kernel=kernel,
                         precision=precision, dt=dt, tile=TILES[nd])
    solver.load(phi0)
    solver.advance(3)
    expected = ref.run(phi0, 3, dt, MODEL, grid, boundary)
    got = solver.state()
    assert got.dtype == np.dtype(precision)
    assert np.abs(expected - phi0).max() > 1e-4  # the steps did change the field
    assert rel_err(got, expected) <= TOL[precision]


@pytest.mark.parametrize("kernel", ck.STRATEGIES)
@pytest.mark.parametrize("shape,tile", [((24, 32), (12, 12)), ((24, 32), None),
                                        ((32, 24), (16, 16))])
@pytest.mark.parametrize("kind", ["periodic", "mirror", "fixed"])
def test_multiple_of_12_and_power_of_two(kernel, shape, tile, kind):
    grid = Grid(shape, 1.0)
    boundary = Boundary(kind, -0.2)
    phi0 = noise(shape, mean=-0.1, amplitude=0.5, seed=7)
    solver = make_solver(MODEL, grid, boundary, backend="cpu", kernel=kernel, dt=5e-3, tile=tile)
    solver.load(phi0)
    solver.advance(2)
    expected = ref.run(phi0, 2, 5e-3, MODEL, grid, boundary)
    assert rel_err(solver.state(), expected) <= 1e-12


@pytest.mark.parametrize("nd", [1, 2, 3])
@pytest.mark.parametrize("kernel", ck.STRATEGIES)
def test_slice_updates_only_its_rows(kernel, nd):
    grid, boundary, phi0 = _case(nd, "fixed")
    base = noise(grid.shape, mean=0.0, amplitude=0.3, seed=11)
    lo, hi = 3, 8
    out = np.full(grid.shape, 7.5)
    stage = ck.get_stage(kernel, nd)
    stage(phi0, base, out, 0.01, ck.make_params(MODEL, grid), boundary.code,
          float(boundary.value), lo, hi, np.array(TILES[nd], dtype=np.int64))
    expected = ref.stage(phi0, base, 0.01, MODEL, grid, boundary)
    assert np.all(out[:lo] == 7.5) and np.all(out[hi:] == 7.5)
    assert rel_err(out[lo:hi], expected[lo:hi]) <= 1e-12
    # the first and last rows (boundary rows) as slices of their own
    for lo, hi in ((0, 1), (grid.shape[0] - 2, grid.shape[0])):
        out = np.full(grid.shape, 7.5)
        stage(phi0, base, out, 0.01, ck.make_params(MODEL, grid), boundary.code,
              float(boundary.value), lo, hi, np.array(TILES[nd], dtype=np.int64))
        assert rel_err(out[lo:hi], expected[lo:hi]) <= 1e-12
        assert np.count_nonzero(out != 7.5) == (hi - lo) * int(np.prod(grid.shape[1:]))


def test_rhs_of_uniform_field_is_zero_periodic_and_fixed_reservoir():
    grid = Grid((10, 12))
    phi = np.full(grid.shape, 0.35)
    for kind in ("periodic", "mirror", "fixed"):
        s = make_solver(MODEL, grid, Boundary(kind, 0.35), backend="cpu", dt=0.01)
        s.load(phi)
        s.advance(5)
        assert np.allclose(s.state(), 0.35, rtol=0, atol=1e-14)


def test_address_map_modes():
    assert list(ck.address_map(4, 0)) == [2, 3, 0, 1, 2, 3, 0, 1]
    assert list(ck.address_map(4, 1)) == [1, 0, 0, 1, 2, 3, 3, 2]
    assert list(ck.address_map(4, 2)) == [-1, -1, 0, 1, 2, 3, -1, -1]
