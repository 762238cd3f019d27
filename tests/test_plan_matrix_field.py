"""validate = run for field scenarios, as a matrix generated from the registries (issue 47):
every integrator row (plan/field.py INTEGRATORS) × boundary kind × dimension × precision ×
backend (cpu; cuda under the simulator on tiny grids) and, per backend, every memory strategy
(field/backends.py INFO) × ``fused`` (auto, true, false) on a representative case. Each case is
validated (``simengine validate`` in this process) and started as ``simengine run`` starts it
(:func:`simengine.control.runner.start_job`); the property: validate accepts exactly when the run
starts, with the same ``plan:`` line or the same refusal, and the run's field after its steps is
the NumPy reference's (field/reference.py; the spectral integrator: its NumPy solver)."""
from __future__ import annotations

import itertools

import numpy as np
import pytest

from simengine.field.backends import INFO
from simengine.field.model import BOUNDARY_KINDS
from simengine.plan.field import INTEGRATORS

from test_plan_matrix import start, validate   # the run's own start-up, in-process

SHAPES = {1: "[16]", 2: "[8, 6]", 3: "[4, 4, 4]"}
PRECISIONS = ("float64", "float32")
KERNELS = tuple(INFO["cpu"].kernels)
assert KERNELS == tuple(INFO["cuda"].kernels)
STEPS = 3

#: the main matrix: integrator × boundary × dimension × precision × backend (kernel texture,
#: fused auto)
MAIN = list(itertools.product(INTEGRATORS, BOUNDARY_KINDS, SHAPES, PRECISIONS, ("cpu", "cuda"),
                              ("texture",), ("auto",)))
#: the launch side: strategy × fused on each dimension (rk2, periodic, float64)
LAUNCH = [("rk2", "periodic", nd, "float64", b, k, f)
          for nd, b, k, f in itertools.product(SHAPES, ("cpu", "cuda"), KERNELS,
                                               ("auto", "true", "false"))
          if not (b == "cpu" and f != "auto")]
#: the CUDA simulator runs every thread of a block in Python: its 3-D runs (seconds each) are
#: two cases and the refusals (fused: true); the real GPU runs the same list
SIM_3D = {("rk2", "mirror", 3, "float64", "cuda", "texture", "auto"),
          ("euler", "fixed", 3, "float32", "cuda", "global", "false")}
CASES = sorted({c for c in MAIN + LAUNCH if c[4] == "cpu" or c[2] < 3 or c in SIM_3D
                or c[6] == "true"}, key=str)


def scenario(tmp_path, integrator, boundary, nd, precision, backend, kernel, fused):
    scen = tmp_path / "f.yaml"
    bvalue = ", value: 0.1" if boundary == "fixed" else ""
    scen.write_text(
        f"kind: field\nname: f\ngrid: {{shape: {SHAPES[nd]}, spacing: 1.0}}\n"
        f"model: {{mobility: 1.0, kappa: 1.0}}\n"
        f"initial: {{type: noise, amplitude: 0.05, seed: 1}}\n"
        f"time: {{dt: 0.01, steps: {STEPS}}}\nboundary: {{type: {boundary}{bvalue}}}\n"
        f"solver: {{backend: {backend}, precision: {precision}, integrator: {integrator}, "
        f"kernel: {kernel}, fused: {fused}}}\n"
        f"output: {{observables_every: {STEPS}, snapshot_every: 0, checkpoint_every: {STEPS}}}\n")
    return scen


def reference_field(job, integrator, precision):
    """The NumPy reference after STEPS steps from the job's initial field."""
    from simengine.field import reference

    phi0 = np.asarray(job.initial_field(), dtype=np.float64)
    if integrator != "spectral":
        return reference.run(phi0, STEPS, 0.01, job.model, job.grid, job.boundary, integrator)
    from simengine.field.spectral.solver import SpectralFieldSolver

    ref = SpectralFieldSolver(job.model, job.grid, job.boundary, precision=precision, dt=0.01,
                              symbol="fd", backend="cpu", phi_range=job.phi_range)
    ref.load(np.asarray(phi0, dtype=precision))
    ref.advance(STEPS)
    return np.asarray(ref.state(), dtype=np.float64)


@pytest.mark.parametrize("integrator,boundary,nd,precision,backend,kernel,fused", CASES,
                         ids=["-".join(map(str, c)) for c in CASES])
def test_field_validate_is_run(tmp_path, capsys, monkeypatch, integrator, boundary, nd,
                               precision, backend, kernel, fused):
    monkeypatch.chdir(tmp_path)
    scen = scenario(tmp_path, integrator, boundary, nd, precision, backend, kernel, fused)
    line, verr = validate(capsys, scen)
    job, rerr = start(scen)
    capsys.readouterr()
    assert (line is None) == (job is None), (line, verr, rerr)
    if job is None:
        assert verr == rerr
        # what the rows refuse: fused: true where no fused form runs, spectral without CuPy
        assert "fused: true" in verr or "spectral" in verr, verr
        return
    assert job.run_plan.line == line
    assert job.run_plan.backend == backend
    form = job.run_plan.decision("form")
    if form is not None:       # MPI slabs take their halo from the plan's form: the same depth
        from simengine.field.plans import halo_of, slab_depth

        assert halo_of(form.chosen) == slab_depth(
            job.grid.shape, job.boundary.code, kernel=kernel, precision=precision,
            integrator=integrator, fused=None if fused == "auto" else fused == "true")
    job.start(True, None)
    assert job.advance(0, STEPS, lambda: False, lambda done: None) == STEPS
    got = np.asarray(job.solver.state(), dtype=np.float64)
    want = reference_field(job, integrator, precision)
    tol = 1e-12 if precision == "float64" else 2e-6
    np.testing.assert_allclose(got, want, rtol=tol, atol=tol)
