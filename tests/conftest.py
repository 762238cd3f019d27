"""Test configuration.

Without an NVIDIA driver the CUDA kernels run under numba's CUDA simulator, so the same test files
exercise the kernels in CI (simulator) and on a GPU machine (real device). This must happen before
numba.cuda is imported anywhere.
"""
import os
import sys
from pathlib import Path

import pytest

if "NUMBA_ENABLE_CUDASIM" not in os.environ and not Path("/dev/nvidiactl").exists():
    os.environ["NUMBA_ENABLE_CUDASIM"] = "1"
if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    # a blocking syncthreads for the simulator, here and (sitecustomize.py) in subprocesses
    _SITE = str(Path(__file__).parent / "simulator_site")
    sys.path.insert(0, _SITE)
    os.environ["PYTHONPATH"] = os.pathsep.join(
        [_SITE] + ([os.environ["PYTHONPATH"]] if os.environ.get("PYTHONPATH") else []))
    import simulator_barrier  # noqa: E402

    simulator_barrier.install()

if hasattr(os, "geteuid") and os.geteuid() == 0:
    # OpenMPI's mpiexec refuses to start as root unless told (the GPU machine runs the tests as
    # root); the tests' launchers copy os.environ, and mpich ignores these
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT", "1")
    os.environ.setdefault("OMPI_ALLOW_RUN_AS_ROOT_CONFIRM", "1")

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture
def root():
    return ROOT


def run_cli(*args, cwd=None, timeout=600, env=None):
    """Run ``python -m simengine ARGS`` in a subprocess; returns CompletedProcess (text)."""
    import subprocess

    e = dict(os.environ)
    e.update(env or {})
    return subprocess.run([sys.executable, "-m", "simengine", *map(str, args)], cwd=cwd,
                          capture_output=True, text=True, timeout=timeout, env=e)
