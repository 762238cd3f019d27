"""In-place, parallel column accumulation for :class:`~simengine.network.statistics.PathStatistics`
and fresh host copies of staged device results.

The numpy form of the compensated column update (``two_sum`` on whole arrays) makes about ten
n-long temporaries per call; at n = 10⁷ each is a fresh allocation whose pages fault in on first
write, one thread at a time — more than the traversal of the batch on the GPU (the figures:
docs/measurements/code-comments-2026-11-28.md).  These kernels do the same arithmetic element by
element (Knuth's TwoSum, the same operations in the same order, so the results are bit-identical
to the array form), in place, with the vertices split over threads (first-touch page faults of a
fresh accumulator then happen in parallel too).  A compensation term is written only where it
changes, so the ``lo`` arrays of a sum of integers (always exact) are never touched.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange


def two_sum(a, b):
    """Error-free sum: ``s = fl(a + b)`` and ``e`` with ``a + b = s + e`` exactly (Knuth's
    TwoSum, no branches, any magnitudes). Written once: NumPy arrays and floats call it as it is,
    the host kernels below inline its numba form, the GPU's column sums
    (``network/cuda/columns.py``) its CUDA device form."""
    s = a + b
    bb = s - a
    e = (a - (s - bb)) + (b - bb)
    return s, e


_two_sum = njit(inline="always", cache=True)(two_sum)


@njit(cache=True, parallel=True)
def add_compensated(acc, lo, x, xlo, has_xlo):
    """acc + x with TwoSum: acc ← fl(acc + x), lo ← lo + (err + xlo) (xlo ignored unless
    ``has_xlo``, then 0.0 is used, as in ``lo += e + 0.0``)."""
    for i in prange(acc.shape[0]):
        s, e = _two_sum(acc[i], np.float64(x[i]))
        acc[i] = s
        t = e + (xlo[i] if has_xlo else 0.0)
        if t != 0.0:
            lo[i] += t


@njit(cache=True, parallel=True)
def add_counts(acc, x):
    """acc += x (integer counts), writing only where x ≠ 0."""
    for i in prange(acc.shape[0]):
        v = x[i]
        if v != 0:
            acc[i] += v


@njit(cache=True, parallel=True)
def parallel_copy(src):
    """A fresh copy of the 1-D array ``src`` written by all threads (its pages fault in in
    parallel; a single-threaded copy into fresh memory is slow: docs/measurements/)."""
    out = np.empty_like(src)
    for i in prange(src.shape[0]):
        out[i] = src[i]
    return out
