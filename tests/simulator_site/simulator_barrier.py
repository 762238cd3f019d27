"""A blocking barrier for numba's CUDA simulator (test infrastructure).

The simulator runs each CUDA thread of a block as a Python thread, and its ``BlockManager``
finds out that every thread has reached ``syncthreads`` by polling their flags in a busy loop
that holds the GIL. On the 2-core CI machine that loop made the same simulated launch take 1 s
or 40 s depending on how the interpreter happened to switch threads (128-thread blocks: 1–40 s,
measured; a longer switch interval made barrier-heavy kernels minutes slower instead). This
module replaces the polling with a condition variable: a thread reaching ``syncthreads`` waits
until every live thread of its block has arrived; a thread that returns leaves the barrier (as an
exited CUDA thread does); an exception in one thread aborts the others and is raised by
``BlockManager.run`` as before. The kernels' semantics are unchanged: it decides only who waits.

``tests/conftest.py`` installs it in the test processes; ``sitecustomize.py`` beside this file
installs it in the Python subprocesses the tests start (CLI runs, MPI ranks), when they import
the simulator.
"""
from __future__ import annotations

import threading


class _BlockBarrier:
    """``syncthreads`` for the live threads of one simulated block."""

    def __init__(self, n):
        self.cv = threading.Condition()
        self.alive = n
        self.arrived = 0
        self.generation = 0
        self.aborted = False
        self.first_failure = None  # the thread whose exception aborted the block

    def _release(self):
        self.arrived = 0
        self.generation += 1
        self.cv.notify_all()

    def wait(self):
        with self.cv:
            if self.aborted:
                raise RuntimeError("abort flag set on syncthreads call")
            gen = self.generation
            self.arrived += 1
            if self.arrived == self.alive:
                self._release()
            else:
                while gen == self.generation and not self.aborted:
                    self.cv.wait()
            if self.aborted:
                raise RuntimeError("abort flag set on syncthreads clear")

    def leave(self):
        with self.cv:
            self.alive -= 1
            if self.alive and self.arrived == self.alive:
                self._release()

    def abort(self, thread):
        with self.cv:
            if not self.aborted:
                self.first_failure = thread
            self.aborted = True
            self.cv.notify_all()


def install():
    """Patch the simulator's ``BlockThread``/``BlockManager`` (call before any launch)."""
    from numba.cuda.simulator import kernel

    patch(kernel)


def patch(k):
    """Patch ``BlockThread``/``BlockManager`` of the simulator's kernel module ``k``."""
    if getattr(k.BlockManager, "_blocking_barrier", False):
        return
    run_thread = k.BlockThread.run

    def thread_run(self):
        try:
            run_thread(self)  # records an exception in self.exception
        finally:
            barrier = self._manager._barrier
            if self.exception is not None:
                barrier.abort(self)
            barrier.leave()

    def syncthreads(self):
        self._manager._barrier.wait()

    def manager_run(self, grid_point, *args):
        import numpy as np

        n = int(np.prod(self._block_dim))
        self._barrier = _BlockBarrier(n)
        threads = []
        for block_point in np.ndindex(*self._block_dim):
            def target():
                self._f(*args)

            t = k.BlockThread(target, self, grid_point, block_point, self._debug)
            threads.append(t)
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        first = self._barrier.first_failure  # not the threads it aborted
        if first is not None:
            exc, tb = first.exception
            raise exc.with_traceback(tb)

    k.BlockThread.run = thread_run
    k.BlockThread.syncthreads = syncthreads
    k.BlockManager.run = manager_run
    k.BlockManager._blocking_barrier = True
