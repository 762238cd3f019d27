"""The spectral solve on slabs of axis 0, one per MPI rank (CPU, or one GPU per rank with CuPy).

Each rank holds rows ``[start, stop)`` of the real field. A forward transform runs the boundary's
1-D transforms along axes 1 … d−1 on the rank's rows, transposes (``comm.alltoall``, the layout
of the distributed S(k): :func:`simengine.field.observables.transpose_slab` / ``split_cols``) so
that the rank holds all of axis 0 for a range of columns of axis 1, and transforms axis 0; the
inverse runs the same in reverse. The spectrum of a rank is thus the block
``[:, c0:c1, …]`` of the one-process spectrum (``rfftn``'s half axis is the last one, so axis 1
splits whole modes), the symbol is that block of the one-process symbol, and the pointwise work
is local: the result equals the one-process run to rounding (the reductions add in another
order). The error estimate and the free energy are reduced over the ranks, so every rank takes
the same accept/reject decisions.

On GPUs (``xp`` = CuPy) the 1-D transforms are cuFFT through ``cupyx.scipy.fft`` (DST-I through
the odd extension, :func:`.transforms._dst1_axis_xp`) and the transpose is staged through host
memory: the blocks are copied to the host, exchanged by ``alltoall`` and copied back (the GPU
host's MPI is not CUDA-aware; docs/field.md). The observables' partial sums of a slab are taken
on its device (:func:`slab_sums`; only the slab's first row goes to the other ranks).
"""
from __future__ import annotations

import numpy as np

from ..observables import FieldPartials, split_cols
from .scheme import Kernels, relative
from .transforms import TRANSFORM_NAMES, _dst1_axis_xp, axis_symbol


def _axis(f, kind, a, ax, forward, n=None, workers=None, xp=np):
    """One axis of the boundary's transform (``f``: scipy.fft or cupyx.scipy.fft); complex FFT
    on every axis but the last of a periodic field (rfft there)."""
    kw = {"workers": workers} if workers and xp is np else {}
    if kind == "mirror":
        return (f.dct if forward else f.idct)(a, type=2, norm="ortho", axis=ax, **kw)
    if kind == "fixed":
        if xp is not np:  # CuPy has no DST-I; orthonormal DST-I is its own inverse
            return _dst1_axis_xp(a, ax, xp)
        return (f.dst if forward else f.idst)(a, type=1, norm="ortho", axis=ax, **kw)
    last = ax == a.ndim - 1
    if forward:
        return f.rfft(a, axis=ax, **kw) if last else f.fft(a, axis=ax, **kw)
    return f.irfft(a, n=n, axis=ax, **kw) if last else f.ifft(a, axis=ax, **kw)


class SlabTransform:
    """:class:`.transforms.Transform`'s interface over one rank's slab (collective calls)."""

    def __init__(self, shape, h, kind, symbol, dtype, comm, rows, workers=None, xp=np,
                 fft=None):
        """``fft``: the transforms' module (default scipy.fft for NumPy, cupyx.scipy.fft for
        CuPy; the host tests pass scipy.fft with a stand-in for CuPy)."""
        if fft is not None:
            sfft = fft
        elif xp is np:
            import scipy.fft as sfft
        else:
            import cupyx.scipy.fft as sfft

        if kind not in TRANSFORM_NAMES:
            raise ValueError(f"unknown boundary {kind!r}")
        if len(shape) < 2:
            raise ValueError("integrator spectral on MPI ranks needs a grid of 2 or 3 axes")
        self.shape = tuple(int(n) for n in shape)
        self.kind, self.symbol, self.xp = kind, symbol, xp
        self.dtype = np.dtype(dtype)
        self.name = TRANSFORM_NAMES[kind]
        self.workers = workers
        self.comm, self.rows = comm, [tuple(r) for r in rows]
        self._f = sfft
        nd = len(self.shape)
        spec_shape = list(self.shape)
        if kind == "periodic":
            spec_shape[-1] = self.shape[-1] // 2 + 1
        self.cols = split_cols(spec_shape[1], comm.size)
        c0, c1 = self.cols[comm.rank]
        lam = None
        for ax, n in enumerate(self.shape):
            s = axis_symbol(n, float(h), kind, symbol, half=(kind == "periodic" and ax == nd - 1))
            if ax == 1:
                s = s[c0:c1]
            view = s.reshape([-1 if a == ax else 1 for a in range(nd)])
            lam = view if lam is None else lam + view
        self.lam = xp.asarray(np.ascontiguousarray(lam.astype(self.dtype)))
        self.complex = kind == "periodic"
        self.spectrum_shape = tuple(self.lam.shape)
        #: how the transpose moves the blocks (the start-up log quotes it)
        self.transport = ("MPI alltoall" if xp is np else
                          "MPI alltoall, staged through host memory (device → host, alltoall, "
                          "host → device; MPI is not assumed CUDA-aware)")

    def _alltoall(self, blocks, axis):
        """Exchange the blocks (rank q gets ``blocks[q]``) and join what arrives along ``axis``
        (device blocks through host copies)."""
        xp = self.xp
        if xp is np:
            return np.concatenate(self.comm.alltoall(blocks), axis=axis)
        got = self.comm.alltoall([xp.asnumpy(b) for b in blocks])
        return xp.concatenate([xp.asarray(g) for g in got], axis=axis)

    def forward(self, a):
        xp, f = self.xp, self._f
        for ax in range(a.ndim - 1, 0, -1):  # the last axis first (rfft), then the others
            a = _axis(f, self.kind, a, ax, True, workers=self.workers, xp=xp)
        a = self._alltoall([xp.ascontiguousarray(a[:, c0:c1]) for c0, c1 in self.cols], 0)
        return _axis(f, self.kind, a, 0, True, workers=self.workers, xp=xp)

    def inverse(self, s):
        xp, f = self.xp, self._f
        s = _axis(f, self.kind, s, 0, False, workers=self.workers, xp=xp)
        s = self._alltoall([xp.ascontiguousarray(s[r0:r1]) for r0, r1 in self.rows], 1)
        for ax in range(1, s.ndim):
            s = _axis(f, self.kind, s, ax, False, n=self.shape[ax], workers=self.workers,
                      xp=xp)
        return s.real if s.dtype.kind == "c" else s


class SlabKernels(Kernels):
    """The pointwise parts on one slab; the error norm reduced over the ranks."""

    def __init__(self, dtype, comm, xp=np):
        super().__init__(xp, dtype)
        self.comm = comm

    def rms_diff(self, x, y) -> float:
        xp = self.xp
        d = (x - y).astype(np.float64)
        x64 = x.astype(np.float64)
        local = xp.stack([xp.sum(d * d), xp.sum(x64), xp.sum(x64 * x64)])
        local = np.append(local.get() if hasattr(local, "get") else local, x.size)
        sd2, sx, sxx, n = self.comm.allreduce_array(local, "sum")
        mean = sx / n
        return relative(sd2 / n, sxx / n - mean * mean)


def slab_partials(phi, comm, rows, model, boundary) -> FieldPartials:
    """:class:`FieldPartials` of this rank's rows ``phi`` (collective: the first row of the next
    rank — rank 0's for the last rank of a periodic grid — is exchanged for the forward
    difference across the slab's top). A device slab is reduced on its device (only the first
    row and five sums move)."""
    r, size = comm.rank, comm.size
    xp = np
    if hasattr(phi, "get"):
        import cupy as xp
    first = phi[:1].get() if xp is not np else np.ascontiguousarray(phi[:1])
    firsts = comm.allgather(np.ascontiguousarray(first))
    above = None
    if r < size - 1:
        above = firsts[r + 1]
    elif boundary.kind == "periodic" and size > 1:
        above = firsts[0]
    return slab_sums(phi, None if above is None else xp.asarray(above), r == 0, model,
                     boundary, xp)


def slab_sums(phi, above, first, model, boundary, xp=np) -> FieldPartials:
    """:class:`FieldPartials` of the owned rows ``phi`` in ``xp``'s memory (one read back):
    ``above`` — the row after the slab's last one (the next rank's first; None at the global
    top face: periodic wraps to the slab's own first row, fixed adds (v − φ)², mirror nothing);
    ``first`` — the slab holds the global first row (fixed: its wall term)."""
    p = phi.astype(np.float64)
    kind, v = boundary.kind, float(boundary.value)
    a0, a1, a2, a3 = (float(c) for c in model.coefficients)
    zero = xp.zeros((), dtype=np.float64)
    g = zero
    for ax in range(p.ndim):
        d = xp.diff(p, axis=ax)
        g = g + xp.sum(d * d)
        lo, hi = xp.take(p, 0, axis=ax), xp.take(p, -1, axis=ax)
        if ax == 0 and above is not None:
            w = above.reshape(hi.shape).astype(np.float64) - hi
            g = g + xp.sum(w * w)
            hi = None  # the top face is not the wall
        if kind == "periodic" and hi is not None:
            g = g + xp.sum((lo - hi) * (lo - hi))
        elif kind == "fixed":
            if hi is not None:
                g = g + xp.sum((v - hi) * (v - hi))
            if ax > 0 or first:
                g = g + xp.sum((lo - v) * (lo - v))
    f = xp.sum(p * (a0 + p * (a1 / 2.0 + p * (a2 / 3.0 + p * a3 / 4.0))))
    vals = xp.stack([xp.sum(p), f, g, xp.min(p), xp.max(p)])
    s, f, g, lo, hi = (float(x) for x in (vals.get() if hasattr(vals, "get") else vals))
    return FieldPartials(int(phi.size), s, f, g, lo, hi)
