"""The spectral integrator on MPI ranks with a GPU each (here 2 ranks sharing one GPU, on the
device: ``python -m pytest -m gpu tests/test_spectral_gpu_ranks.py``): the 2-rank run equals the
one-process GPU run to rounding, for periodic, mirror and fixed walls in 2-D and 3-D, adaptive
steps included; a 2-rank GPU run killed at a commit point resumes in one process to the same
file. Skipped without CuPy and a GPU (the CPU ranks: tests/test_mpi_spectral.py)."""
from __future__ import annotations

import pytest

from conftest import run_cli
from test_mpi_network import mpirun
from test_mpi_spectral import ADAPTIVE, FIXED, close_output, scenario

pytestmark = pytest.mark.gpu


@pytest.fixture(autouse=True)
def _gpu():
    try:
        import cupy

        if cupy.cuda.runtime.getDeviceCount() < 1:
            pytest.skip("no GPU")
    except Exception as exc:  # no CuPy / no driver
        pytest.skip(f"needs CuPy and a GPU ({type(exc).__name__})")


def on_gpu(path):
    path.write_text(path.read_text().replace("backend: cpu", "backend: cuda"))
    return path


@pytest.mark.parametrize("shape,boundary,mode", [
    ("[24, 20]", "mirror", ADAPTIVE),
    ("[20, 16]", "periodic", ADAPTIVE),
    ("[10, 6, 8]", "periodic", FIXED),
    ("[12, 10, 8]", "mirror", FIXED),
    ("[17, 12]", "fixed", FIXED),
    ("[9, 8, 6]", "fixed", FIXED),
])
def test_two_gpu_ranks_equal_one_gpu(tmp_path, shape, boundary, mode):
    scen = on_gpu(scenario(tmp_path, shape, boundary, mode))
    r = run_cli("run", scen, "-o", tmp_path / "one.h5", "-q")
    assert r.returncode == 0, r.stderr
    out = tmp_path / "r2.h5"
    r = mpirun(2, "run", scen, "-o", out)
    assert r.returncode == 0, r.stderr
    assert "2 slabs of axis 0" in r.stderr and "staged through host memory" in r.stderr, \
        r.stderr
    assert "transpose=host-staged-alltoall" in r.stderr, r.stderr  # the plan line
    close_output(tmp_path / "one.h5", out)


def test_killed_on_two_gpu_ranks_resumes_in_one_process(tmp_path):
    scen = on_gpu(scenario(tmp_path, "[24, 20]", "periodic", ADAPTIVE))
    ref = tmp_path / "ref.h5"
    assert run_cli("run", scen, "-o", ref, "-q").returncode == 0
    out = tmp_path / "out.h5"
    r = mpirun(2, "run", scen, "-o", out, "-q", env={"SIMENGINE_FAULT_AT": "commit.done:3"})
    assert r.returncode != 0
    r = run_cli("run", scen, "-o", out, "--resume")
    assert r.returncode == 0, r.stderr
    assert "resuming" in r.stderr
    close_output(ref, out)
