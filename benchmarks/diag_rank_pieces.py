"""Diagnostic: where the wall time of a field `simengine run` goes, per rank (for MPI runs).

Runs the CLI in this process (same arguments as ``python -m simengine run``) with timers around
the job's pieces: ``solver.advance`` (launches; the slab exchanges inside), the halo exchange's
full calls and its boundary-first ``send``/``ready``, ``solver.synchronize``, the communicator's
``allreduce``, and the job's ``at_stop`` (observations and output). Each rank prints one line at
exit: seconds and calls per part.

    mpirun -n 2 python benchmarks/diag_rank_pieces.py run s.yaml -o s.h5 --overwrite
"""
from __future__ import annotations

import atexit
import collections
import os
import sys
import time

TIMES = collections.defaultdict(float)
CALLS = collections.Counter()


def timed(fn, key):
    def wrapper(*a, **k):
        t = time.perf_counter()
        try:
            return fn(*a, **k)
        finally:
            TIMES[key] += time.perf_counter() - t
            CALLS[key] += 1

    return wrapper


def install():
    from simengine.field import distributed
    from simengine.field import job as fjob

    init = fjob.FieldJob.__init__

    def patched(self, *a, **k):
        init(self, *a, **k)
        s = self.solver
        s.advance = timed(s.advance, "solver.advance")
        s.synchronize = timed(s.synchronize, "solver.synchronize")
        ex = s.exchange
        for m in ("send", "ready"):
            if hasattr(ex, m):
                setattr(ex, m, timed(getattr(ex, m), f"exchange.{m}"))
        self.comm.allreduce = timed(self.comm.allreduce, "comm.allreduce")

    fjob.FieldJob.__init__ = patched
    fjob.FieldJob.at_stop = timed(fjob.FieldJob.at_stop, "job.at_stop")
    for cls in (distributed.PeerHaloExchange, distributed.MPIHaloExchange):
        cls.__call__ = timed(cls.__call__, f"{cls.__name__} full")


def report():
    rank = next((os.environ[v] for v in ("OMPI_COMM_WORLD_RANK", "PMI_RANK") if v in os.environ),
                "0")
    parts = ", ".join(f"{k} {TIMES[k]:.3f} s/{CALLS[k]}" for k in sorted(TIMES))
    print(f"PIECES rank {rank}: {parts}", file=sys.stderr, flush=True)


if __name__ == "__main__":
    install()
    atexit.register(report)
    from simengine.cli import main

    sys.exit(main(sys.argv[1:]))
