"""Reductions of a device field (or a slab's owned rows) to mergeable partials."""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from ..model import Boundary, CahnHilliard, Grid
from .config import FIXED, MIRROR, PERIODIC, SIMULATOR
from .plan import view3


# --------------------------------------------------------------------------------------------
# reductions: mass, free energy, min, max (float64 accumulation, two-pass)
# --------------------------------------------------------------------------------------------
RED_THREADS = 256


@functools.lru_cache(maxsize=None)
def reduction_kernel(nd: int, bc: int):
    """Per-block partial sums over the rows ``lo:hi`` of the first active axis (a slab's owned
    rows): [Σφ, Σf(φ), Σ_axes Σ (forward difference)², min φ, max φ]. The forward difference
    of the last owned row reads the row above it when the buffer has one (a slab's halo), else
    follows the boundary rule (periodic wraps to row 0 of the buffer: the whole grid); the fixed
    low-wall term is added at row 0 of the buffer only (a slab with no halo below).

    A second grid axis runs over the members of an ensemble (:mod:`.ensemble`): block
    (b, m) reduces member m, the ``n0·n1·n2`` cells from offset ``m·n0·n1·n2`` of ``phi``, into row
    ``m·gridDim.x + b`` of ``partial``. A single field is the launch with one member (m = 0),
    which computes exactly what it computed before the member axis existed."""
    a0, a1 = nd >= 3, nd >= 2
    NTH = RED_THREADS

    @cuda.jit
    def kernel(phi, partial, n0, n1, n2, lo, hi, c0, c1, c2, c3, v):
        s_phi = cuda.shared.array(NTH, numba.float64)
        s_f = cuda.shared.array(NTH, numba.float64)
        s_g = cuda.shared.array(NTH, numba.float64)
        s_mn = cuda.shared.array(NTH, numba.float64)
        s_mx = cuda.shared.array(NTH, numba.float64)
        sy = n2
        sz = n1 * n2
        if a0:
            total = (hi - lo) * sz
        elif a1:
            total = (hi - lo) * n2
        else:
            total = hi - lo
        tid = cuda.threadIdx.x
        off = numba.int64(cuda.blockIdx.y) * (n0 * sz)   # the member's first cell
        acc_phi = numba.float64(0)
        acc_f = numba.float64(0)
        acc_g = numba.float64(0)
        mn = numba.float64(math.inf)
        mx = numba.float64(-math.inf)
        t = cuda.blockIdx.x * NTH + tid
        stride = cuda.gridDim.x * NTH
        while t < total:
            if a0:
                k = lo + t // sz
                r = t % sz
                j = r // n2
                i = r % n2
            elif a1:
                k = 0
                j = lo + t // n2
                i = t % n2
            else:
                k = 0
                j = 0
                i = lo + t
            g = k * sz + j * sy + i
            p = numba.float64(phi[off + g])
            acc_phi += p
            acc_f += p * (c0 + p * (c1 + p * (c2 + p * c3)))
            mn = min(mn, p)
            mx = max(mx, p)
            # forward differences along each active axis
            if i + 1 < n2:
                d = numba.float64(phi[off + g + 1]) - p
            elif bc == PERIODIC:
                d = numba.float64(phi[off + g - i]) - p
            elif bc == MIRROR:
                d = numba.float64(0)
            else:
                d = v - p
            acc_g += d * d
            if bc == FIXED and i == 0:
                acc_g += (p - v) * (p - v)
            if a1:
                if j + 1 < n1:
                    d = numba.float64(phi[off + g + sy]) - p
                elif bc == PERIODIC:
                    d = numba.float64(phi[off + g - j * sy]) - p
                elif bc == MIRROR:
                    d = numba.float64(0)
                else:
                    d = v - p
                acc_g += d * d
                if bc == FIXED and j == 0:
                    acc_g += (p - v) * (p - v)
            if a0:
                if k + 1 < n0:
                    d = numba.float64(phi[off + g + sz]) - p
                elif bc == PERIODIC:
                    d = numba.float64(phi[off + g - k * sz]) - p
                elif bc == MIRROR:
                    d = numba.float64(0)
                else:
                    d = v - p
                acc_g += d * d
                if bc == FIXED and k == 0:
                    acc_g += (p - v) * (p - v)
            t += stride
        s_phi[tid] = acc_phi
        s_f[tid] = acc_f
        s_g[tid] = acc_g
        s_mn[tid] = mn
        s_mx[tid] = mx
        cuda.syncthreads()
        w = NTH // 2
        while w > 0:
            if tid < w:
                s_phi[tid] += s_phi[tid + w]
                s_f[tid] += s_f[tid + w]
                s_g[tid] += s_g[tid + w]
                s_mn[tid] = min(s_mn[tid], s_mn[tid + w])
                s_mx[tid] = max(s_mx[tid], s_mx[tid + w])
            cuda.syncthreads()
            w //= 2
        if tid == 0:
            b = cuda.blockIdx.y * cuda.gridDim.x + cuda.blockIdx.x
            partial[b, 0] = s_phi[0]
            partial[b, 1] = s_f[0]
            partial[b, 2] = s_g[0]
            partial[b, 3] = s_mn[0]
            partial[b, 4] = s_mx[0]

    return kernel


def reduction_blocks(cells: int) -> int:
    cap = 8 if SIMULATOR else 1024
    return max(1, min(cap, math.ceil(cells / RED_THREADS)))


def launch_partials(phi, shape, model: CahnHilliard, boundary: Boundary, lo=0, hi=None,
                    partial=None, stream=0):
    """Launch the reduction of the rows ``lo:hi`` (axis 0) of a device field of (local)
    ``shape`` into per-block partial sums (asynchronous on ``stream``); returns
    ``(partial, blocks, owned cells)`` for :func:`partials_of` once the rows
    ``partial[:blocks]`` are on the host."""
    shape = tuple(int(n) for n in shape)
    nd = len(shape)
    n0, n1, n2 = view3(shape)
    cells = n0 * n1 * n2
    hi = shape[0] if hi is None else int(hi)
    lo = int(lo)
    owned = (hi - lo) * (cells // shape[0])
    if len(phi.shape) != 1:
        phi = phi.reshape(cells)
    nb = reduction_blocks(owned)
    if partial is None or partial.shape[0] < nb:
        partial = cuda.device_array((nb, 5), dtype=np.float64)
    a0, a1, a2, a3 = (float(c) for c in model.coefficients)
    kern = reduction_kernel(nd, boundary.code)
    kern[nb, RED_THREADS, stream](phi, partial, n0, n1, n2, lo, hi, a0, a1 / 2.0, a2 / 3.0,
                                  a3 / 4.0, float(boundary.value))
    return partial, nb, owned


def partials_of(p, nb: int, owned: int):
    """:class:`~simengine.field.observables.FieldPartials` from the host copy ``p`` of the
    per-block partial sums (the first ``nb`` rows)."""
    from ..observables import FieldPartials

    p = p[:nb]
    return FieldPartials(int(owned), float(p[:, 0].sum()), float(p[:, 1].sum()),
                         float(p[:, 2].sum()), float(p[:, 3].min()), float(p[:, 4].max()))


def field_partials(phi, shape, model: CahnHilliard, boundary: Boundary, lo=0, hi=None,
                   partial=None):
    """:class:`~simengine.field.observables.FieldPartials` of the rows ``lo:hi`` (axis 0) of a
    device field of (local) ``shape`` (flat or shaped, C-contiguous); float64 accumulation."""
    partial, nb, owned = launch_partials(phi, shape, model, boundary, lo, hi, partial)
    return partials_of(partial.copy_to_host(), nb, owned)


def reductions(phi, model: CahnHilliard, grid: Grid, boundary: Boundary, partial=None):
    """mass (mean φ), free energy, min, max of a whole device field."""
    from ..observables import merge_partials

    part = field_partials(phi, grid.shape, model, boundary, partial=partial)
    return merge_partials([part], model, grid)
