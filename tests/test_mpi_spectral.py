"""The spectral integrator on MPI ranks (slabs of axis 0, transforms transposed through alltoall)
equals the one-process run to rounding — adaptive steps included (the error estimate and the
energy are reduced over the ranks, so every rank takes the same decisions); a 2-rank run killed
at a commit point resumes on 3 ranks to the one-process file. Fails, not skips, without MPI."""
from __future__ import annotations

import os

import h5py
import numpy as np
import pytest

from conftest import run_cli
from test_mpi_network import mpirun

SCEN = """kind: field
name: s
grid: {{shape: {shape}}}
boundary: {{type: {boundary}{value}}}
initial: {{type: noise, amplitude: 0.05, seed: 3}}
time: {time}
solver: {{integrator: spectral, backend: cpu, precision: float64}}
output: {output}
"""
ADAPTIVE = ("{end: 40, dt: 0.01, adaptive: true}",
            "{observables_dt: 5, snapshot_dt: 10, checkpoint_dt: 10}")
FIXED = ("{dt: 0.2, steps: 40}", "{observables_every: 5, snapshot_every: 10, checkpoint_every: 20}")


def scenario(tmp_path, shape, boundary, time_output):
    value = ", value: 0.2" if boundary == "fixed" else ""
    p = tmp_path / "s.yaml"
    p.write_text(SCEN.format(shape=shape, boundary=boundary, value=value, time=time_output[0],
                             output=time_output[1]))
    return p


def close_output(a, b):
    with h5py.File(a) as fa, h5py.File(b) as fb:
        for k in ("fields/step", "observables/step", "fields/time", "observables/time"):
            np.testing.assert_array_equal(fa[k][()], fb[k][()], err_msg=k)
        for k in ("fields/phi", "checkpoint/phi"):
            np.testing.assert_allclose(fb[k][()], fa[k][()], rtol=0, atol=1e-10, err_msg=k)
        for k in ("mass", "free_energy", "phi_min", "phi_max", "length", "length_energy",
                  "length_shell"):
            np.testing.assert_allclose(fb[f"observables/{k}"][()], fa[f"observables/{k}"][()],
                                       rtol=1e-10, atol=1e-14, err_msg=k)
        # the crossings count sign changes: fields equal to 1e-10 may differ by a pair
        np.testing.assert_allclose(fb["observables/interface_density"][()],
                                   fa["observables/interface_density"][()], rtol=1e-2)


@pytest.mark.parametrize("shape,boundary,mode,ranks", [
    ("[24, 20]", "mirror", ADAPTIVE, (2, 3)),
    ("[10, 6, 8]", "periodic", FIXED, (3,)),
    ("[17, 12]", "fixed", FIXED, (2,)),
])
def test_spectral_on_ranks_equals_one_process(tmp_path, shape, boundary, mode, ranks):
    scen = scenario(tmp_path, shape, boundary, mode)
    r = run_cli("run", scen, "-o", tmp_path / "one.h5", "-q")
    assert r.returncode == 0, r.stderr
    for n in ranks:
        out = tmp_path / f"r{n}.h5"
        r = mpirun(n, "run", scen, "-o", out)
        assert r.returncode == 0, r.stderr
        assert f"{n} slabs of axis 0" in r.stderr and "integrator spectral" in r.stderr
        close_output(tmp_path / "one.h5", out)


def test_killed_on_two_ranks_resumes_on_three(tmp_path):
    scen = scenario(tmp_path, "[24, 20]", "periodic", ADAPTIVE)
    ref = tmp_path / "ref.h5"
    assert run_cli("run", scen, "-o", ref, "-q").returncode == 0
    out = tmp_path / "out.h5"
    # rank 0 ends (os._exit) right after its 3rd commit (the checkpoint at t = 10 or later)
    r = mpirun(2, "run", scen, "-o", out, "-q", env={"SIMENGINE_FAULT_AT": "commit.done:3"})
    assert r.returncode != 0
    with h5py.File(out, "r") as f:
        assert 0 < int(f["checkpoint/phi"].attrs["step"]) < int(f.attrs["steps_total"])
    r = mpirun(3, "run", scen, "-o", out, "--resume")
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stderr
    close_output(ref, out)


def test_spectral_on_gpu_ranks_without_cupy_is_one_line(tmp_path):
    """(With CuPy and a GPU per rank it runs: tests/test_spectral_gpu_ranks.py on the device.)
    CuPy is hidden here by a package that fails to import, so the test means the same on a GPU
    machine, where CuPy is installed."""
    p = tmp_path / "g.yaml"
    p.write_text("kind: field\nname: g\ngrid: {shape: [8, 8]}\ntime: {dt: 0.1, steps: 2}\n"
                 "solver: {integrator: spectral, backend: cuda}\n")
    hide = tmp_path / "nocupy" / "cupy"
    hide.mkdir(parents=True)
    (hide / "__init__.py").write_text("raise ImportError('no module named cupy (hidden by the test)')\n")
    path = os.pathsep.join([str(hide.parent)] + ([os.environ["PYTHONPATH"]]
                                                 if os.environ.get("PYTHONPATH") else []))
    r = mpirun(2, "run", p, "-o", tmp_path / "g.h5", env={"PYTHONPATH": path})
    assert r.returncode == 2, r.stderr
    lines = [ln for ln in r.stderr.splitlines() if ln.strip()]
    assert any("CuPy" in ln for ln in lines), r.stderr
    assert "Traceback" not in r.stderr
