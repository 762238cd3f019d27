"""Per-target column sums of many batches accumulated on the GPU, downloaded once.

Every GPU engine computes the column sums of a batch (Σ_s d(s, t), the number of batch sources
reaching t, Σ_s 1/d(s, t)) on the device.  Copying three n-long arrays to the host per batch and
adding them there (TwoSum with all host threads) cost 10–20 % of a 1024-source MS-BFS batch on a
10⁶-vertex graph, and as much again when two ranks shared the host.  :class:`DeviceColumns` keeps
the running sums on the device instead: each batch is folded in by one kernel with the host's
arithmetic (:func:`simengine.network.accumulate.add_compensated`: TwoSum, the compensation term
written only where it is non-zero, counts added exactly), so after any number of batches the
arrays are bit-identical to what the host accumulator would hold, and
:meth:`~simengine.network.statistics.PathStatistics.flush` downloads them once — at a checkpoint,
at the end of a round on ranks, or when the results are read.
"""
from __future__ import annotations

import numpy as np
from numba import cuda, float64

from ..accumulate import two_sum
from . import simulator

THREADS = 32 if simulator() else 256


_two_sum = cuda.jit(device=True, inline=True)(two_sum)


@cuda.jit(device=True, inline=True)
def _add_two_sum(acc, lo, i, b):
    """acc[i] ← fl(acc[i] + b), lo[i] += the rounding error (only when non-zero)."""
    s, e = _two_sum(acc[i], b)
    acc[i] = s
    if e != 0.0:
        lo[i] += e


@cuda.jit
def _fold(acc_s, lo_s, acc_h, lo_h, reach, xs, xr, xh, n):
    """acc += x with TwoSum per element (the host's add_compensated with no x compensation)."""
    i = cuda.grid(1)
    if i < n:
        _add_two_sum(acc_s, lo_s, i, float64(xs[i]))
        _add_two_sum(acc_h, lo_h, i, float64(xh[i]))
        r = xr[i]
        if r != 0:
            reach[i] += r


@cuda.jit
def _zero(a, b, c, d, e, n):
    i = cuda.grid(1)
    if i < n:
        a[i] = 0.0
        b[i] = 0.0
        c[i] = 0.0
        d[i] = 0.0
        e[i] = 0


class DeviceColumns:
    """Running column sums of an ``n``-vertex graph on one GPU (allocated on the first
    :meth:`add`, on the device then current).  :meth:`take` returns them with their compensation
    terms and starts again from zero."""

    def __init__(self, n: int):
        self.n = int(n)
        self.device = None
        self.arrays = None       # acc_sum, lo_sum, acc_harm, lo_harm (float64), reach (int64)
        self.batches = 0

    def _blocks(self) -> int:
        return max(1, (self.n + THREADS - 1) // THREADS)

    def _allocate(self):
        from . import current_device

        self.device = current_device()
        self.arrays = tuple(cuda.device_array(max(1, self.n), t) for t in
                            (np.float64, np.float64, np.float64, np.float64, np.int64))
        _zero[self._blocks(), THREADS](*self.arrays, self.n)

    def add(self, col_sum, col_reach, col_harm) -> None:
        """Fold one batch's device column arrays (their first ``n`` entries; ``col_sum`` of any
        numeric type) into the running sums. Runs on the current device."""
        if self.n == 0:
            return
        if self.arrays is None:
            self._allocate()
        acc_s, lo_s, acc_h, lo_h, reach = self.arrays
        _fold[self._blocks(), THREADS](acc_s, lo_s, acc_h, lo_h, reach, col_sum, col_reach,
                                       col_harm, self.n)
        self.batches += 1

    def take(self):
        """``(col_sum, col_sum_lo, col_reach, col_harm, col_harm_lo)`` on the host (None when
        nothing was added since the last take); the device sums start again from zero."""
        if self.arrays is None or self.batches == 0:
            return None
        from . import device_context

        n = self.n
        with device_context(self.device):
            acc_s, lo_s, acc_h, lo_h, reach = self.arrays
            out = (acc_s.copy_to_host()[:n], lo_s.copy_to_host()[:n], reach.copy_to_host()[:n],
                   acc_h.copy_to_host()[:n], lo_h.copy_to_host()[:n])
            _zero[self._blocks(), THREADS](*self.arrays, n)
        self.batches = 0
        return out
