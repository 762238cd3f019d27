"""The fused spectral step's kernels (:mod:`.gpu_kernels`) for the CPU: numba, parallel over the
run's threads, the same arguments as the CUDA launches (``grid``/``block`` ignored), so
:class:`.gpu_step.FusedSBDF2` drives both. Differences from the CUDA module: ``sb_sums`` writes
the totals themselves into ``part[:7]`` (per-row sums in parallel, added in row order: the same
result for any thread count), ``sb_final`` copies them. No scalar reduction across a parallel
loop (numba 0.68's parfor pass rejected one on the GPU image: "unexpected cycle in lookup()").

The transforms are ``scipy.fft`` with ``workers`` = the run's threads (:class:`ScipyPlans`:
periodic, real FFT with the inverse unnormalised like cuFFT's; mirror / fixed through
:class:`.gpu_step.TransformCopy`).
"""
from __future__ import annotations

import math

import numpy as np
from numba import njit, prange


@njit(parallel=True, cache=True)
def _g(phi, prev, g, w, have, a0, a1, a2, a3, fv, sc, v):
    for i in prange(phi.size):
        p = phi[i]
        s = (1 + w) * p - w * prev[i] if have else p
        g[i] = a0 + s * (a1 + s * (a2 + s * a3)) - fv - sc * (s - v)


@njit(parallel=True, cache=True)
def _update(hat, prev, ghat, out, ns, ncomp, tab, m1, m2, o1, o2, mob, kap, stab, c1, c2, a,
            dt, scale, have):
    rows = ns // m2
    for r in prange(rows):  # one row of the last axis at a time: no division per mode
        lr = tab[r // m1] + tab[o1 + r % m1]
        base = r * m2 * ncomp
        for i2 in range(m2):
            lam = lr + tab[o2 + i2]
            mlam = mob * lam
            dop = mob * kap * lam * lam - mob * stab * lam
            den = a + dt * dop
            for c in range(ncomp):
                j = base + i2 * ncomp + c
                num = c1 * hat[j] + dt * mlam * ghat[j]
                if have:
                    num = num - c2 * prev[j]
                o = num / den
                out[j] = o
                ghat[j] = o * scale


@njit(parallel=True, cache=True)
def _row_sums(x, y, z, mode, w, n0, n1, n2, nd, kind, v, a0, b1, b2, a3, acc):
    """``acc[r]`` = the seven sums of row r of the last axis (no reduction variable across
    the parallel loop: each row writes its own slot, added afterwards in order)."""
    for r in prange(n0 * n1):
        j0 = r // n1
        j1 = r % n1
        base = r * n2
        # the row one step further along axis 1 / axis 0 (the wrapped row for periodic; -1:
        # none, a wall for fixed)
        up1 = -1
        if j1 + 1 < n1:
            up1 = base + n2
        elif kind == 0:
            up1 = base - j1 * n2
        up0 = -1
        if j0 + 1 < n0:
            up0 = base + n1 * n2
        elif kind == 0:
            up0 = base - j0 * n1 * n2
        wall1 = nd >= 2 and kind == 2 and (j1 == 0 or j1 + 1 == n1)
        wall0 = nd >= 3 and kind == 2 and (j0 == 0 or j0 + 1 == n0)
        nwall = (1 if wall1 else 0) + (1 if wall0 else 0)
        if nd >= 2 and kind == 2 and n1 == 1:
            nwall += 1  # first and last face at once
        if nd >= 3 and kind == 2 and n0 == 1:
            nwall += 1
        rsx = 0.0
        rsxx = 0.0
        rsf = 0.0
        rsg = 0.0
        rsd = 0.0
        rmn = np.inf
        rmx = -np.inf
        for j2 in range(n2):
            i = base + j2
            p = np.float64(x[i])
            rsx += p
            rsxx += p * p
            rsf += p * (a0 + p * (b1 + p * (b2 + p * a3 / 4.0)))
            if p < rmn:
                rmn = p
            if p > rmx:
                rmx = p
            t = 0.0
            if j2 + 1 < n2:
                d = np.float64(x[i + 1]) - p
                t += d * d
            if nd >= 2 and up1 >= 0:
                d = np.float64(x[up1 + j2]) - p
                t += d * d
            if nd >= 3 and up0 >= 0:
                d = np.float64(x[up0 + j2]) - p
                t += d * d
            t += nwall * (p - v) * (p - v)
            rsg += t
            if mode == 1:
                d = p - np.float64(y[i])
                rsd += d * d
            elif mode == 2:
                d = p - np.float64((1 + w) * y[i] - w * z[i])
                rsd += d * d
        # the last axis' wrap or walls
        first = np.float64(x[base])
        last = np.float64(x[base + n2 - 1])
        if kind == 0:
            rsg += (first - last) * (first - last)
        elif kind == 2:
            rsg += (v - last) * (v - last) + (first - v) * (first - v)
        acc[r, 0] = rsd
        acc[r, 1] = rsx
        acc[r, 2] = rsxx
        acc[r, 3] = rsf
        acc[r, 4] = rsg
        acc[r, 5] = rmn
        acc[r, 6] = rmx


def _sums(x, y, z, mode, w, n0, n1, n2, nd, kind, v, a0, b1, b2, a3):
    acc = np.empty((n0 * n1, 7))
    _row_sums(x, y, z, mode, w, n0, n1, n2, nd, kind, v, a0, b1, b2, a3, acc)
    s = acc[:, :5].sum(axis=0)
    return (s[0], s[1], s[2], s[3], s[4], acc[:, 5].min(), acc[:, 6].max())


@njit(parallel=True, cache=True)
def _combine(x, y, z, a, b):
    for i in prange(x.size):
        z[i] = a * x[i] + b * y[i]


@njit(parallel=True, cache=True)
def _shift(x, v):
    for i in prange(x.size):
        x[i] = x[i] + v


def _flat(a):
    return a.reshape(-1)


class CpuModule:
    """``get_function(name)`` → a callable taking the CUDA launch's ``(grid, block, args)``."""

    def get_function(self, name):
        return getattr(self, name)

    @staticmethod
    def sb_g(grid, block, args):
        phi, prev, g, n, w, have = args[:6]
        _g(_flat(phi), _flat(prev), _flat(g), w, bool(have), *args[6:])

    @staticmethod
    def sb_update(grid, block, args):
        hat, prev, ghat, out, ns, ncomp, tab, m1, m2, o1, o2 = args[:11]
        _update(_flat(hat), _flat(prev), _flat(ghat), _flat(out), int(ns), int(ncomp), tab,
                int(m1), int(m2), int(o1), int(o2), *args[11:19], bool(args[19]))

    @staticmethod
    def sb_sums(grid, block, args):
        x, y, z, mode, w, n0, n1, n2, nd, kind, v, a0, b1, b2, a3, part = args
        part[:7] = _sums(_flat(x), _flat(y), _flat(z), int(mode), w, int(n0), int(n1),
                         int(n2), int(nd), int(kind), float(v), float(a0), float(b1),
                         float(b2), float(a3))

    @staticmethod
    def sb_final(grid, block, args):
        part, _nblocks, out = args
        out[:7] = part[:7]

    @staticmethod
    def sb_combine(grid, block, args):
        x, y, z, _n, a, b = args
        _combine(_flat(x), _flat(y), _flat(z), a, b)

    @staticmethod
    def sb_shift(grid, block, args):
        x, _n, v = args
        _shift(_flat(x), v)


class HostArrays:
    """The three array constructors :class:`.gpu_step.FusedSBDF2` calls, on the host."""

    empty = staticmethod(np.empty)
    empty_like = staticmethod(np.empty_like)

    @staticmethod
    def asarray(a, dtype=None):
        return np.asarray(a, dtype=dtype)


class ScipyPlans:
    """Periodic: ``scipy.fft.rfftn`` / ``irfftn`` (unnormalised inverse, like cuFFT's C2R;
    ``norm="forward"`` puts the 1/N on the forward side, which the update applies itself)."""

    ncomp = 2

    def __init__(self, shape, workers):
        import scipy.fft as sfft

        self.f, self.shape = sfft, tuple(int(n) for n in shape)
        self.kw = {"workers": workers} if workers else {}
        self.scale = 1.0 / math.prod(self.shape)
        self.name = f"scipy.fft rfftn, workers {workers}"

    def forward(self, real, spec):
        spec[...] = self.f.rfftn(real, **self.kw)

    def inverse(self, spec, real):
        """``spec`` is destroyed: the complex axes in place, then the real one (≈ 20 % less
        than ``irfftn``, which copies, measured at 1024²)."""
        f, kw, nd = self.f, self.kw, len(self.shape)
        if nd > 1:
            spec = f.ifftn(spec, axes=tuple(range(nd - 1)), norm="forward", overwrite_x=True,
                           **kw)
        real[...] = f.irfft(spec, n=self.shape[-1], axis=-1, norm="forward", overwrite_x=True,
                            **kw)
