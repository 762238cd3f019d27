"""Conserved thermal noise (Cahn–Hilliard–Cook) on the stencil grid, CPU form.

After each deterministic step, every cell gets

    Δφ_i = −Σ_axes (Ξ_{i+½} − Ξ_{i−½}) / h,   Ξ_f = √(2·A·M_f·dt / h^d) · N_f,

with A = ``noise.amplitude`` (k_BT), M_f the face mobility ((M(φ_i) + M(φ_j))/2 of the state
after the deterministic step; M for a constant mobility) and N_f a standard normal deviate of
Philox4x32-10 keyed by (seed, step, global cell of the face's lower side, axis)
(:mod:`simengine.physics.philox`): the integrated flux through a face over a step has variance
2·A·M_f·dt/h^d, so ⟨ξξ⟩ = 2·A·M·δ. The noise is a divergence: it conserves mass exactly (to
rounding). Periodic faces wrap; on mirror walls the wall faces carry no flux (fixed walls: a
one-line refusal). The deviates are computed in float64 and the increment is cast to the field's
precision once. Because the key is the global cell and the step, a run gives the same field on
any rank count and after a resume (tests).
"""
from __future__ import annotations

import functools
import math

import numpy as np
from numba import njit, prange

from ..physics.philox import normal_cpu
from .cpu.common import _bmap


@functools.lru_cache(maxsize=16)
def _kernel(mobility_law, dtype_name: str):
    if mobility_law is None:
        @njit(inline="always")
        def mob(x):
            return 1.0
    else:
        mob = mobility_law.jit_m(np.float64)

    @njit(inline="always")
    def face(src, i, j, k, ax, n0, n1, n2, g0, gn0, nd, bcode, seed, step, scale):
        """Ξ of the face between cell (i, j, k) (global row g0 + i − lo handled by the caller
        through ``g0``) and its upper neighbour along ``ax``; 0 on a mirror wall."""
        if ax == 0:
            gi = g0
            gup = gi + 1
            if gup >= gn0:
                if bcode != 0:
                    return 0.0
            ii, jj, kk = _bmap(i + 1, n0, bcode), j, k
        elif ax == 1:
            gi = g0
            if (j + 1 >= n1 or j < 0) and bcode != 0:
                return 0.0
            ii, jj, kk = i, _bmap(j + 1, n1, bcode), k
        else:
            gi = g0
            if (k + 1 >= n2 or k < 0) and bcode != 0:
                return 0.0
            ii, jj, kk = i, j, _bmap(k + 1, n2, bcode)
        if gi < 0:
            if bcode != 0:
                return 0.0
            gi += gn0
        cell = (gi * n1 + (j if j >= 0 else j + n1)) * n2 + (k if k >= 0 else k + n2)
        mf = 0.5 * (mob(np.float64(src[_bmap(i, n0, bcode), _bmap(j, n1, bcode),
                                        _bmap(k, n2, bcode)]))
                    + mob(np.float64(src[ii, jj, kk])))
        return math.sqrt(mf) * scale * normal_cpu(seed, step, cell, ax)

    @njit(parallel=True, fastmath=False)
    def apply(src, out, lo, hi, row0, gn0, nd, bcode, seed, step, scale, ih):
        n0, n1, n2 = src.shape
        for r in prange(hi - lo):
            i = lo + r
            g = row0 + r
            for j in range(n1):
                for k in range(n2):
                    d = (face(src, i, j, k, 0, n0, n1, n2, g, gn0, nd, bcode, seed, step, scale)
                         - face(src, i - 1, j, k, 0, n0, n1, n2, g - 1, gn0, nd, bcode, seed,
                                step, scale))
                    if nd > 1:
                        d += (face(src, i, j, k, 1, n0, n1, n2, g, gn0, nd, bcode, seed, step,
                                   scale)
                              - face(src, i, j - 1, k, 1, n0, n1, n2, g, gn0, nd, bcode, seed,
                                     step, scale))
                    if nd > 2:
                        d += (face(src, i, j, k, 2, n0, n1, n2, g, gn0, nd, bcode, seed, step,
                                   scale)
                              - face(src, i, j, k - 1, 2, n0, n1, n2, g, gn0, nd, bcode, seed,
                                     step, scale))
                    out[i, j, k] = src[i, j, k] + out.dtype.type(-d * ih)

    return apply


def face_scale(amplitude: float, dt: float, h: float, ndim: int, mobility: float = 1.0):
    """√(2·A·M·dt/h^d) (M = 1 for a variable mobility: its √M_f is taken per face)."""
    return math.sqrt(2.0 * amplitude * mobility * dt / h ** ndim)


def add_noise(src, out, *, model, grid, boundary, dt, step, lo, hi, row0):
    """``out[lo:hi] = src[lo:hi] + Δφ`` of ``step`` (``row0``: the global row of ``lo``)."""
    noise = model.noise
    law = model.law
    variable = not law.mobility.constant
    m = 1.0 if variable else float(law.mobility.m)
    kern = _kernel(law.mobility if variable else None, np.dtype(src.dtype).name)
    shape3 = tuple(src.shape) + (1,) * (3 - src.ndim)
    h = float(grid.spacing)
    kern(src.reshape(shape3), out.reshape(shape3), int(lo), int(hi), int(row0),
         int(grid.shape[0]), src.ndim, int(boundary.code), np.int64(noise.seed), np.int64(step),
         face_scale(noise.amplitude, dt, h, grid.ndim, m), 1.0 / h)


def reference_noise(shape, *, model, grid, boundary, dt, step, phi=None):
    """The same increment in plain NumPy/Python (the specification the kernel is tested
    against): Δφ of the whole grid at ``step`` for the state ``phi``."""
    from ..physics.philox import normal_py

    noise, law = model.noise, model.law
    nd = len(shape)
    h = float(grid.spacing)
    variable = not law.mobility.constant
    scale = face_scale(noise.amplitude, dt, h, nd, 1.0 if variable else float(law.mobility.m))
    periodic = boundary.kind == "periodic"
    sizes = list(shape)
    strides = [int(np.prod(shape[a + 1:])) for a in range(nd)]
    flux = [np.zeros(shape) for _ in range(nd)]
    for idx in np.ndindex(*shape):
        cell = sum(i * s for i, s in zip(idx, strides))
        for ax in range(nd):
            up = list(idx)
            up[ax] += 1
            if up[ax] >= sizes[ax]:
                if not periodic:
                    continue
                up[ax] = 0
            mf = 1.0
            if variable:
                mf = 0.5 * (float(law.m(phi[idx])) + float(law.m(phi[tuple(up)])))
            flux[ax][idx] = math.sqrt(mf) * scale * normal_py(noise.seed, step, cell, ax)
    d = np.zeros(shape)
    for ax in range(nd):
        d -= flux[ax] - (np.roll(flux[ax], 1, axis=ax) if periodic else
                         np.concatenate([np.zeros_like(np.take(flux[ax], [0], axis=ax)),
                                         np.delete(flux[ax], -1, axis=ax)], axis=ax))
    return d / h
