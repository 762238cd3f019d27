"""Ranks and devices: one communicator interface for a plain process and for MPI ranks.

``world()`` returns :class:`~simengine.parallel.comm.SerialComm` (rank 0 of 1, every collective is
the identity) unless the process was started by an MPI launcher (``mpiexec``, ``mpirun``,
``srun``) with more than one rank, in which case it returns
:class:`~simengine.parallel.comm.MPIComm` over mpi4py's ``COMM_WORLD``. Field and network jobs use
only this interface, so the same code runs in one process and on N ranks.
"""
from .comm import MPIComm, SerialComm, launched_size, local_rank, on_root, world
from .devices import bind_gpu

__all__ = ["world", "SerialComm", "MPIComm", "launched_size", "local_rank", "on_root",
           "bind_gpu"]
