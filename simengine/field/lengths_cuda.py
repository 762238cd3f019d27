"""The interface crossings of :func:`simengine.field.lengths.interface_area` on the GPU: one
numba-cuda kernel, one pass over the field with no temporaries (a thread per cell, each of its
pairs with the next cell along every axis), per-block float64 sums.

The field is seen as ``(n0, n1, n2)`` (a 1-D or 2-D field padded with axes of length 1 at the
end, which hold no pairs); ``after`` is the row following axis 0's last (the next slab's first
row or the wrap of a periodic field; without one the last row is repeated: no pair beyond the
face); axes 1 and 2 wrap when ``periodic``, else their last cell is repeated. The same
arithmetic as the NumPy definition, in the same order per pair (tested against it under the CUDA
simulator and on the GPU).
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

THREADS = 256
MAX_BLOCKS = 1024


@cuda.jit(device=True, inline=True)
def _val(phi, after, has_after, n0, n1, n2, periodic, j0, j1, j2, level):
    if j1 >= n1:
        j1 = 0 if periodic else n1 - 1
    if j2 >= n2:
        j2 = 0 if periodic else n2 - 1
    if j0 >= n0:
        if has_after:
            return numba.float64(after[j1 * n2 + j2]) - level
        j0 = n0 - 1
    return numba.float64(phi[(j0 * n1 + j1) * n2 + j2]) - level


@cuda.jit(device=True, inline=True)
def _fwd(phi, after, has_after, n0, n1, n2, periodic, j0, j1, j2, b, level):
    """Forward difference along axis ``b`` at cell (j0, j1, j2) (j0 may be n0: the after row)."""
    here = _val(phi, after, has_after, n0, n1, n2, periodic, j0, j1, j2, level)
    if b == 0:
        if j0 >= n0 or (j0 == n0 - 1 and not has_after):
            return numba.float64(0)
        return _val(phi, after, has_after, n0, n1, n2, periodic, j0 + 1, j1, j2, level) - here
    if b == 1:
        if j1 == n1 - 1 and not periodic:
            return numba.float64(0)
        return _val(phi, after, has_after, n0, n1, n2, periodic, j0, j1 + 1, j2, level) - here
    if j2 == n2 - 1 and not periodic:
        return numba.float64(0)
    return _val(phi, after, has_after, n0, n1, n2, periodic, j0, j1, j2 + 1, level) - here


@functools.lru_cache(maxsize=None)
def area_kernel():
    """``kernel(phi, after, has_after, n0, n1, n2, ndim, periodic, level, partial)``: per-block
    Σ over crossing pairs of |g|₂/|g|₁ (``partial[block]``; times h^(d−1) on the host)."""
    NTH = THREADS

    @cuda.jit
    def kernel(phi, after, has_after, n0, n1, n2, ndim, periodic, level, partial):
        acc_s = cuda.shared.array(NTH, numba.float64)
        tid = cuda.threadIdx.x
        total = numba.int64(n0) * n1 * n2
        acc = numba.float64(0)
        t = numba.int64(cuda.blockIdx.x) * NTH + tid
        stride = numba.int64(cuda.gridDim.x) * NTH
        while t < total:
            i2 = t % n2
            r = t // n2
            i1 = r % n1
            i0 = r // n1
            u = _val(phi, after, has_after, n0, n1, n2, periodic, i0, i1, i2, level)
            for a in range(ndim):
                p0, p1, p2 = i0, i1, i2
                if a == 0:
                    if i0 == n0 - 1 and not has_after:
                        continue
                    p0 = i0 + 1
                elif a == 1:
                    if i1 == n1 - 1 and not periodic:
                        continue
                    p1 = i1 + 1
                else:
                    if i2 == n2 - 1 and not periodic:
                        continue
                    p2 = i2 + 1
                v = _val(phi, after, has_after, n0, n1, n2, periodic, p0, p1, p2, level)
                if (u >= 0) == (v >= 0):
                    continue
                g2 = numba.float64(0)
                g1 = numba.float64(0)
                for b in range(ndim):
                    if b == a:
                        g = v - u
                    else:
                        q0 = p0 if p0 < n0 else n0  # the after row is "row n0"
                        g = 0.5 * (_fwd(phi, after, has_after, n0, n1, n2, periodic, i0, i1,
                                        i2, b, level)
                                   + _fwd(phi, after, has_after, n0, n1, n2, periodic, q0,
                                          p1 % n1, p2 % n2, b, level))
                    g2 += g * g
                    g1 += abs(g)
                if g1 > 0:
                    acc += math.sqrt(g2) / g1
            t += stride
        acc_s[tid] = acc
        cuda.syncthreads()
        step = NTH // 2
        while step > 0:
            if tid < step:
                acc_s[tid] += acc_s[tid + step]
            cuda.syncthreads()
            step //= 2
        if tid == 0:
            partial[cuda.blockIdx.x] = acc_s[0]

    return kernel


def launch_area(phi_flat, shape, level: float, periodic: bool, partial, after=None,
                stream=0) -> int:
    """Enqueue :func:`area_kernel` on a device field of ``shape`` (flat, any float dtype);
    ``partial``: a device float64 array of :data:`MAX_BLOCKS`; ``after``: a device row (flat,
    ``prod(shape[1:])`` values) or None. Returns the number of blocks whose sums to add."""
    shape = tuple(int(n) for n in shape)
    ndim = len(shape)
    n0, n1, n2 = (shape + (1, 1))[:3]
    cells = n0 * n1 * n2
    blocks = max(1, min(MAX_BLOCKS, -(-cells // THREADS)))
    has_after = after is not None
    if after is None:
        after = partial  # never read
    area_kernel()[blocks, THREADS, stream](phi_flat, after, has_after, n0, n1, n2, ndim,
                                           bool(periodic), float(level), partial)
    return blocks


def area_of_partial(host_partial, blocks: int, shape, spacing: float) -> float:
    """The interface area from the block sums copied to the host."""
    ndim = len(shape)
    return float(np.sum(np.asarray(host_partial)[:blocks])) * float(spacing) ** (
        0 if ndim == 1 else ndim - 1)


def device_area(phi_flat, shape, spacing: float, level: float, periodic: bool, after=None
                ) -> float:
    """The interface area of a device field (synchronous; tests and the slab path)."""
    partial = cuda.device_array(MAX_BLOCKS, dtype=np.float64)
    nb = launch_area(phi_flat, shape, level, periodic, partial, after)
    return area_of_partial(partial.copy_to_host(), nb, shape, spacing)
