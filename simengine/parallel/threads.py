"""How many numba threads this process runs, and which GPUs it may use (``--threads``,
``--device``), decided before numba is imported.

Ranks share the machine: started as one of several ranks on a node, a process runs
``cores / local ranks`` numba threads (at least one) instead of numba's default of every core —
two ranks of two threads each on a 2-core machine ran 15× slower than one process. The node's
rank count comes from the launcher (Open MPI ``OMPI_COMM_WORLD_LOCAL_SIZE``, MPICH/Hydra
``MPI_LOCALNRANKS``, Slurm ``SLURM_NTASKS_PER_NODE`` / ``SLURM_STEP_TASKS_PER_NODE``), else from
an MPI shared-memory communicator. A launcher that bound the rank to fewer cores than the machine
has (or Slurm's ``SLURM_CPUS_PER_TASK``) gives that many threads. ``--threads N`` and a
``NUMBA_NUM_THREADS`` set by the user win over all of this.
"""
from __future__ import annotations

import os
import re
import sys

from ..errors import UserError
from .comm import import_mpi, launched_size

_LOCAL_SIZE_VARS = ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "PMIX_LOCAL_SIZE",
                    "SLURM_NTASKS_PER_NODE")


def _slurm_step_tasks(env) -> int | None:
    """This node's entry of ``SLURM_STEP_TASKS_PER_NODE`` (e.g. '2(x3),1', node SLURM_NODEID)."""
    spec, node = env.get("SLURM_STEP_TASKS_PER_NODE", ""), env.get("SLURM_NODEID", "0")
    if not spec or not node.isdigit():
        return None
    counts = []
    for part in spec.split(","):
        m = re.fullmatch(r"(\d+)(?:\(x(\d+)\))?", part.strip())
        if not m:
            return None
        counts += [int(m.group(1))] * int(m.group(2) or 1)
    return counts[int(node)] if int(node) < len(counts) else None


def local_size(env=None, mpi_split=True) -> tuple[int, str]:
    """(ranks on this node, where that came from)."""
    env = os.environ if env is None else env
    for var in _LOCAL_SIZE_VARS:
        v = env.get(var, "")
        if v.isdigit() and int(v) > 0:
            return int(v), var
    n = _slurm_step_tasks(env)
    if n:
        return n, "SLURM_STEP_TASKS_PER_NODE"
    if mpi_split and launched_size() > 1:
        try:
            import mpi4py

            mpi4py.rc.threads = False   # as parallel.world() does
        except ImportError:
            pass                        # import_mpi says what to install
        MPI = import_mpi()
        node = MPI.COMM_WORLD.Split_type(MPI.COMM_TYPE_SHARED)
        n = node.Get_size()
        node.Free()
        return n, "an MPI shared-memory communicator"
    return 1, "one process"


def _cores() -> tuple[int, bool]:
    """(cores this process may run on, whether something narrower than the machine bound it)."""
    try:
        mask = len(os.sched_getaffinity(0))
    except AttributeError:          # not Linux
        mask = os.cpu_count() or 1
    return mask, mask < (os.cpu_count() or mask)


def parse_threads(text) -> int:
    try:
        n = int(str(text).strip())
    except ValueError:
        n = 0
    if n < 1:
        raise UserError(f"--threads: expected a positive integer, got {text!r}")
    return n


def decide_threads(requested=None, env=None, mpi_split=True) -> tuple[int | None, str]:
    """(numba threads for this process or None = numba's default, the log line's reason)."""
    env = os.environ if env is None else env
    if requested is not None:
        return parse_threads(requested), "--threads"
    user = env.get("NUMBA_NUM_THREADS", "").strip()
    if user and user == env.get("SIMENGINE_THREADS_FROM_AFFINITY"):   # numba_env's, not the user's
        user = ""
    if user:
        return None, f"NUMBA_NUM_THREADS={user}"
    per_task = env.get("SLURM_CPUS_PER_TASK", "")
    if per_task.isdigit() and int(per_task) > 0 and "SLURM_PROCID" in env:
        return int(per_task), "SLURM_CPUS_PER_TASK"
    cores, bound = _cores()
    ranks, how = local_size(env, mpi_split)
    if bound:
        return cores, f"the {cores} cores this process is bound to"
    if ranks <= 1:
        return None, f"all {cores} cores"
    return max(1, cores // ranks), f"{cores} cores / {ranks} ranks on this node (from {how})"


_DECIDED: list = []


def decided() -> str:
    """The start-up log line of what :func:`apply_threads` / :func:`apply_devices` decided in
    this process ('' when neither ran, e.g. through the Python API)."""
    return "; ".join(_DECIDED)


def apply_threads(requested=None) -> str:
    """Set this process's numba thread count (before numba starts its pool) and return the log
    line that says how many and why."""
    n, why = decide_threads(requested)
    if n is not None:
        if "numba" in sys.modules:          # already imported (the Python API, tests)
            import numba

            numba.set_num_threads(min(n, numba.config.NUMBA_NUM_THREADS))
        else:
            os.environ["NUMBA_NUM_THREADS"] = str(n)
        said = f"{n} numba thread{'s' if n != 1 else ''} per process ({why})"
    else:
        said = f"numba threads: {why}"
    _DECIDED[:] = [said]
    return said


def parse_devices(text) -> list[int]:
    ids = [p.strip() for p in str(text).split(",")]
    if not ids or not all(p.isdigit() for p in ids) or len(set(ids)) != len(ids):
        raise UserError(f"--device: expected GPU numbers like 0 or 0,1 (distinct, >= 0), "
                        f"got {text!r}")
    return [int(p) for p in ids]


def apply_devices(text, env=None) -> str:
    """Restrict this process to the GPUs ``text`` names (through ``CUDA_VISIBLE_DEVICES``, before
    CUDA starts; numbers count within an existing ``CUDA_VISIBLE_DEVICES``); ranks then take
    GPU local_rank % count of these.  Returns the log line."""
    env = os.environ if env is None else env
    ids = parse_devices(text)
    visible = [v.strip() for v in env.get("CUDA_VISIBLE_DEVICES", "").split(",") if v.strip()]
    if visible:
        bad = [i for i in ids if i >= len(visible)]
        if bad:
            raise UserError(f"--device {text}: CUDA_VISIBLE_DEVICES={','.join(visible)} makes "
                            f"only GPUs 0..{len(visible) - 1} visible")
        chosen = [visible[i] for i in ids]
    else:
        chosen = [str(i) for i in ids]
    env["CUDA_VISIBLE_DEVICES"] = ",".join(chosen)
    _DECIDED.append(f"GPUs {','.join(chosen)} (--device {text})")
    return f"GPUs {','.join(chosen)} (--device {text}; CUDA_VISIBLE_DEVICES={env['CUDA_VISIBLE_DEVICES']})"
