"""Whether the MPI library under mpi4py is CUDA-aware: may device buffers go to ``MPI_Sendrecv``?

Asked once per run, at run time (the same mpi4py wheel runs over many MPI builds): mpi4py's
``MPI.Query_cuda_support()`` where it has one, else the ``MPIX_Query_cuda_support()`` extension
that Open MPI (≥ 2.0) and MPICH (≥ 4.0) export from ``libmpi``, looked up in the loaded library
(``/proc/self/maps``). No answer counts as no: a device buffer handed to an MPI that is not
CUDA-aware crashes it (the GPU host's Open MPI is not). ``SIMENGINE_CUDA_AWARE_MPI=0`` turns the
device path off whatever the library says; ``=1`` trusts the user where the library gives no
answer. The ranks agree (an all-reduce): one rank without support keeps every rank on the host
path. docs/cluster.md "Field runs".
"""
from __future__ import annotations

import ctypes
import os

ENV = "SIMENGINE_CUDA_AWARE_MPI"


def _mpix_query():
    """``MPIX_Query_cuda_support()`` of the loaded libmpi: 1, 0, or None (no such symbol)."""
    handles = [None]  # the process's global symbols first (Open MPI under mpi4py)
    try:
        with open("/proc/self/maps") as maps:
            handles += sorted({ln.split()[-1] for ln in maps
                               if os.path.basename(ln.split()[-1]).startswith("libmpi")})
    except OSError:  # not Linux: the global symbols only
        pass
    for h in handles:
        try:
            fn = getattr(ctypes.CDLL(h), "MPIX_Query_cuda_support", None)
        except OSError:
            continue
        if fn is not None:
            fn.restype = ctypes.c_int
            return int(fn())
    return None


def query(MPI) -> tuple:
    """``(yes, how)`` for this process's MPI module ``MPI`` (mpi4py.MPI) — ``how`` says which
    query answered (for the start-up log)."""
    env = os.environ.get(ENV, "").strip().lower()
    if env in ("0", "no", "false", "off"):
        return False, f"{ENV}={env}"
    q = getattr(MPI, "Query_cuda_support", None)
    if q is not None:
        try:
            yes = bool(q())
            return yes, f"MPI.Query_cuda_support() = {yes}"
        except Exception:  # pragma: no cover - an MPI without the extension
            pass
    got = _mpix_query()
    if got is not None:
        return bool(got), f"MPIX_Query_cuda_support() = {got}"
    if env in ("1", "yes", "true", "on"):
        return True, f"{ENV}={env} (the library gives no answer)"
    return False, "the MPI library gives no answer (taken as no)"


def cuda_aware(comm) -> tuple:
    """``(yes, how)`` agreed by every rank of ``comm`` (collective): yes only where every rank's
    MPI says yes. A communicator without MPI (one process) says no."""
    MPI = getattr(comm, "MPI", None)
    if MPI is None:
        return False, "no MPI"
    yes, how = query(MPI)
    everyone = comm.allreduce(bool(yes), "and")
    if yes and not everyone:
        how += ", but not on every rank"
    return bool(everyone), how
