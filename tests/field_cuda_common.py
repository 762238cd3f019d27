"""What the CUDA field test files share: the model, the random field, the solver shorthand, the
run and the comparison (bit-identical under the simulator, the issue's bar on a GPU).

Imported by the ``tests/test_field_cuda*.py`` files after their CUDA check."""
from __future__ import annotations

import numpy as np

from simengine.field.cuda.config import SIMULATOR as SIM
from simengine.field.cuda_solver import CudaFieldSolver
from simengine.field.model import Boundary, CahnHilliard, Grid

MODEL = CahnHilliard(0.7, 1.3, (0.1, -1.0, 0.2, 1.0))
DT = 1e-3
BOUNDARIES = ("periodic", "mirror", "fixed")


def field(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def solver(shape, bnd, dtype, kernel="texture", spacing=0.9, value=0.3, **kw):
    return CudaFieldSolver(MODEL, Grid(shape, spacing), Boundary(bnd, value), kernel=kernel,
                           precision=dtype, dt=DT, **kw)


def run(s, phi, steps):
    s.load(phi)
    s.advance(steps)
    return s.state()


def close(got, expect, dtype, exact=SIM):
    """Bit-identical where claimed (the simulator), else ≤ 1e-12 relative in fp64, ≤ 1e-5 in
    fp32."""
    if exact:
        np.testing.assert_array_equal(got, expect)
        return
    tol = 1e-12 if np.dtype(dtype) == np.float64 else 1e-5
    assert np.max(np.abs(got - expect)) <= tol * np.max(np.abs(expect))
