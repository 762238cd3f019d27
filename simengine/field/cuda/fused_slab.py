"""A fused RK2 step on a slab whose halo exchange overlaps the step's interior.

A fused step on a slab needs φⁿ's 4-row halo, exchanged once per step. Done in sequence —
wait for the GPU, meet the neighbours, copy, launch the step — the GPU idles for the whole
exchange every step. Output rows further than 4 rows from the slab's edges read no halo row, so
the step is split into three launches of the same fused kernel (the form's plan for rows
``lo:lo+4``, ``hi-4:hi`` and ``lo+4:hi-4``: the same per-point arithmetic, bit-identical) and
ordered so that the exchange for step n + 1 runs while step n's interior computes:

    step n:  exchange(φⁿ) → edge strips of step n → event Eₙ → interior of step n
    step n+1: the exchanger waits for Eₙ only (this rank's edge rows of φⁿ⁺¹ are final; the
              interior of step n still runs), meets the neighbours, copies their edge rows into
              the halo on its own stream, waits for the copies → edge strips of step n+1 → …

The kernels run on a stream of their own (blocking: the legacy default stream — reductions,
host copies — still waits for them), the copies on the exchanger's: the two overlap. Safety of
the rows read and written concurrently: the interior of step n writes rows ``lo+4:hi-4`` of
φⁿ⁺¹'s buffer while the halo rows of that buffer are filled and the neighbours read its rows
``lo:lo+4`` / ``hi-4:hi`` (final at Eₙ): disjoint rows. The neighbours' buffers are read only
after the barrier that each rank reaches after its own Eₙ.

Used where the exchanger can start an exchange behind an event (``start(array, ready=event)``,
``finish(array)``: the peer exchange between GPUs of one node) and the slab owns at least
:data:`MIN_ROWS` rows; ``SIMENGINE_FUSED_OVERLAP=0`` turns it off (exchange, then one launch).
"""
from __future__ import annotations

import dataclasses
import os

from numba import cuda

from .config import SIMULATOR

#: the fused step's halo (two stages of a 2-row stencil)
EDGE = 4
#: slabs owning fewer rows run exchange-then-step (the strips would be most of the slab)
MIN_ROWS = 3 * EDGE


def overlap_wanted() -> bool:
    """``SIMENGINE_FUSED_OVERLAP`` (default 1): pipeline the exchange behind the interior."""
    return os.environ.get("SIMENGINE_FUSED_OVERLAP", "1").strip() != "0"


def can_pipeline(exchange, lo: int, hi: int) -> bool:
    """Whether a slab owning rows ``lo:hi`` with this exchanger runs :class:`PipelinedStep`."""
    return (overlap_wanted() and getattr(exchange, "pipelines", False) and hi - lo >= MIN_ROWS)


class PipelinedStep:
    """The fused step of one slab in three launches with the exchange in between (see the
    module's text). ``build(case)`` builds the form's plan for a :class:`~..plans.Case`;
    ``case.write_rows`` = the slab's owned rows."""

    def __init__(self, build, case):
        lo, hi = case.write_rows
        self.stream = None if SIMULATOR else cuda.stream()
        self.parts = []
        for rows in ((lo, lo + EDGE), (hi - EDGE, hi), (lo + EDGE, hi - EDGE)):
            plan = build(dataclasses.replace(case, write_rows=rows))
            plan.stream = self.stream
            self.parts.append(plan)
        self.edges, self.interior = self.parts[:2], self.parts[2]
        self._edges_done = None  # the event recorded after the last step's edge strips

    def __call__(self, exchange, src, out, coef1, coef2, scal):
        """One step: the exchange of ``src``'s halo (behind the previous step's edge strips),
        the two edge strips, then the interior (not waited for)."""
        ready = self._edges_done
        if ready is None:  # the first step: whatever ran before (load, other plans) is done
            cuda.synchronize()
        exchange.start(src, ready=ready)
        exchange.finish(src)
        for p in self.edges:
            p(src, out, coef1, coef2, scal)
        if not SIMULATOR:
            if self._edges_done is None:
                self._edges_done = cuda.event(timing=False)
            self._edges_done.record(self.stream)
        self.interior(src, out, coef1, coef2, scal)
