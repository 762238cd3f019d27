"""Communicators: :class:`SerialComm` (one process) and :class:`MPIComm` (mpi4py).

Only the operations the engines need are exposed: rank/size, barrier, broadcast, gather, allreduce
of scalars (sum/max/min/or) and of float64 arrays, point-to-point exchange of NumPy buffers
(``sendrecv``), a dynamic work counter (:meth:`counter`) and ``abort``. Everything goes through
host NumPy buffers: the GPU host's MPI is not CUDA-aware, so device data is staged through pinned
host buffers by the caller.

Whether MPI is used is decided from the launcher's environment before mpi4py is imported, so a
plain ``simengine run`` never initialises MPI (and works without mpi4py installed).
"""
from __future__ import annotations

import os
import socket

import numpy as np

from ..errors import UserError

#: environment variables that MPI launchers set to the number of ranks
_SIZE_VARS = ("OMPI_COMM_WORLD_SIZE", "PMI_SIZE", "PMIX_SIZE")
#: node-local rank, by launcher (Open MPI, MPICH/Hydra, Slurm)
_LOCAL_RANK_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "SLURM_LOCALID",
                    "PMIX_LOCAL_RANK")


def launched_size() -> int:
    """Number of ranks the launcher started (1 when not launched by MPI)."""
    for var in _SIZE_VARS:
        v = os.environ.get(var)
        if v and v.isdigit():
            return int(v)
    if os.environ.get("SLURM_STEP_NUM_TASKS", "").isdigit() and "SLURM_PROCID" in os.environ:
        return int(os.environ["SLURM_STEP_NUM_TASKS"])
    return 1


def local_rank(default: int = 0) -> int:
    """This process's rank on its node (chooses the GPU: one GPU per rank)."""
    for var in _LOCAL_RANK_VARS:
        v = os.environ.get(var)
        if v and v.isdigit():
            return int(v)
    return default


_OPS = {"sum": "SUM", "max": "MAX", "min": "MIN", "or": "LOR", "and": "LAND"}


class SerialComm:
    """One process: rank 0 of 1. Collectives return their input."""

    rank = 0
    size = 1
    is_mpi = False

    def __init__(self):
        self.host = socket.gethostname()
        self.local_rank = 0

    def barrier(self):
        pass

    def bcast(self, obj, root=0):
        return obj

    def gather(self, obj, root=0):
        return [obj]

    def allgather(self, obj):
        return [obj]

    def allreduce(self, value, op="sum"):
        return value

    def allreduce_array(self, arr, op="sum"):
        return np.array(arr, copy=True)

    def alltoall(self, objs):
        return list(objs)

    def sendrecv(self, send, dest, recv, source, tag=0):
        if dest is not None and source is not None:
            recv[...] = send

    def counter(self, start=0):
        return _LocalCounter(start)

    def abort(self, code=1):
        os._exit(code)


class _LocalCounter:
    def __init__(self, start):
        self.value = int(start)

    def fetch_add(self, k):
        v = self.value
        self.value += int(k)
        return v

    def fetch_add_async(self, k):
        return _Ready(self.fetch_add(k), k)

    def poke(self):
        pass

    @property
    def hosted_here(self):
        return True

    def free(self):
        pass


class _Ready:
    def __init__(self, value, size):
        self.value = value
        self.size = int(size)

    def wait(self):
        return self.value


class MPIComm:
    """mpi4py ``COMM_WORLD`` behind the :class:`SerialComm` interface."""

    is_mpi = True

    def __init__(self):
        MPI = import_mpi()
        self.MPI = MPI
        self.comm = MPI.COMM_WORLD
        self.rank = self.comm.Get_rank()
        self.size = self.comm.Get_size()
        self.host = socket.gethostname()
        node = self.comm.Split_type(MPI.COMM_TYPE_SHARED, key=self.rank)
        self.local_rank = node.Get_rank()
        node.Free()

    def barrier(self):
        self.comm.Barrier()

    def bcast(self, obj, root=0):
        return self.comm.bcast(obj, root=root)

    def gather(self, obj, root=0):
        return self.comm.gather(obj, root=root)

    def allgather(self, obj):
        return self.comm.allgather(obj)

    def allreduce(self, value, op="sum"):
        return self.comm.allreduce(value, op=getattr(self.MPI, _OPS[op]))

    def allreduce_array(self, arr, op="sum"):
        a = np.ascontiguousarray(arr)
        out = np.empty_like(a)
        self.comm.Allreduce(a, out, op=getattr(self.MPI, _OPS[op]))
        return out

    def alltoall(self, objs):
        return self.comm.alltoall(list(objs))

    def sendrecv(self, send, dest, recv, source, tag=0):
        """Send ``send`` to ``dest`` while receiving into ``recv`` from ``source`` (``None``:
        no partner on that side)."""
        null = self.MPI.PROC_NULL
        self.comm.Sendrecv(np.ascontiguousarray(send), dest=null if dest is None else dest,
                           sendtag=tag, recvbuf=recv, source=null if source is None else source,
                           recvtag=tag)

    def counter(self, start=0):
        return _WindowCounter(self, start)

    def abort(self, code=1):
        self.comm.Abort(code)


class _WindowCounter:
    """A shared int64 counter on rank 0, advanced with one-sided atomics (MPI-3 RMA).

    Every rank (rank 0 too) claims work with :meth:`fetch_add` or :meth:`fetch_add_async`; no
    rank waits for a coordinator. Collective to create and free; every rank holds a shared
    passive-target epoch on the window (``Lock_all``) for the counter's whole life.

    Progress: many MPI libraries (MPICH without an asynchronous progress thread, for one) serve a
    remote atomic only when the target rank enters the MPI library, so a claim from rank 1 can
    wait until rank 0 finishes its own computation. Two things hide that: claims are fetched one
    ahead (:meth:`fetch_add_async`, completed while the claimer computes), and the rank that
    hosts the counter (:attr:`hosted_here`) calls :meth:`poke` (one ``Iprobe``) between pieces of
    its own work.
    """

    def __init__(self, c: MPIComm, start):
        MPI = c.MPI
        self.c = c
        self.MPI = MPI
        itemsize = MPI.INT64_T.Get_size()
        self.win = MPI.Win.Allocate(itemsize if c.rank == 0 else 0, itemsize, comm=c.comm)
        if c.rank == 0:
            self.win.Lock(0, MPI.LOCK_EXCLUSIVE)
            self.win.Put(np.array([int(start)], np.int64), 0)
            self.win.Unlock(0)
        c.comm.Barrier()
        self.win.Lock_all()
        self._pending = []

    def fetch_add(self, k):
        """Add ``k`` and return the value before (blocking)."""
        return self.fetch_add_async(k).wait()

    def fetch_add_async(self, k):
        """Start adding ``k``; ``.wait()`` on the result returns the value before."""
        claim = _Claim(self, k)
        self._pending.append(claim)
        return claim

    @property
    def hosted_here(self):
        return self.c.rank == 0

    def poke(self):
        """Let the MPI library serve pending one-sided requests on this rank."""
        self.c.comm.Iprobe()

    def free(self):
        """Collective: complete outstanding claims and release the window."""
        for claim in self._pending:
            claim.wait()
        self.win.Unlock_all()
        self.win.Free()


class _Claim:
    def __init__(self, counter: _WindowCounter, k):
        MPI = counter.MPI
        self.counter = counter
        self.size = int(k)
        self.inc = np.array([self.size], np.int64)
        self.old = np.zeros(1, np.int64)
        self.req = counter.win.Rget_accumulate(self.inc, self.old, 0, op=MPI.SUM)
        self.value = None

    def wait(self):
        if self.value is None:
            self.req.Wait()
            self.value = int(self.old[0])
            self.counter._pending.remove(self)
        return self.value


MPI_HELP = ("pip install mpich (Linux; or 'simengine[mpi]', which brings it), or a system MPI "
            "(apt install mpich / module load openmpi) with mpi4py built against it: "
            "pip install --no-binary mpi4py --force-reinstall mpi4py (docs/cluster.md)")


def import_mpi():
    """mpi4py's ``MPI`` module, or a one-line error naming what to install when mpi4py is missing
    or cannot load an MPI library (e.g. 'libmpi.so.12: cannot open shared object file')."""
    try:
        from mpi4py import MPI

        return MPI
    except ImportError as exc:
        if getattr(exc, "name", None) == "mpi4py" or "No module named 'mpi4py'" in str(exc):
            err = UserError(f"this process was started as one of {launched_size()} MPI ranks "
                            f"but mpi4py is not installed; pip install 'simengine[mpi]' (or run "
                            f"without mpiexec)")
        else:
            err = UserError(f"mpi4py cannot load an MPI library ({str(exc).splitlines()[0]}); "
                            f"{MPI_HELP}")
    except (OSError, RuntimeError) as exc:
        err = UserError(f"mpi4py cannot start MPI ({str(exc).splitlines()[0]}); {MPI_HELP}")
    err.collective = True          # every rank fails alike: rank 0 says it once
    raise err


def world():
    """The communicator for this process (MPI when launched on more than one rank)."""
    n = launched_size()
    if n <= 1:
        return SerialComm()
    try:
        import mpi4py
    except ImportError:
        import_mpi()               # says what to install
    mpi4py.rc.threads = False  # the engines call MPI from the main thread only
    return MPIComm()


def on_root(comm, fn, *args):
    """Run ``fn(*args)`` on rank 0 and broadcast its (picklable) result to every rank.

    A :class:`UserError` or :class:`SimulationError` raised on rank 0 is raised on every rank,
    marked ``collective`` (only rank 0 prints it; nobody needs to abort the others)."""
    from ..errors import SimulationError

    if comm.size == 1:
        return fn(*args)
    if comm.rank == 0:
        try:
            res = ("ok", fn(*args))
        except (UserError, SimulationError) as exc:
            res = ("err", type(exc), str(exc))
        comm.bcast(res)
    else:
        res = comm.bcast(None)
    if res[0] == "err":
        exc = res[1](res[2])
        exc.collective = True
        raise exc
    return res[1]
