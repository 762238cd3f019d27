"""The model kernel of the CPU backend: the stage of any :class:`simengine.physics.Model`, built
by a factory that closes over the model's numba f′ and M (one compiled kernel per model and
dtype, cached).

    out[lo:hi] = base[lo:hi] + coef · R(src)[lo:hi],
    R = Σ_axes [M_{i+½}(μ_{i+1} − μ_i) − M_{i−½}(μ_i − μ_{i−1})] / h²,
    M_{i+½} = (M(φ_i) + M(φ_{i+1}))/2,   μ = f′(φ) − κ lap φ,

the conservative form of ∇·(M∇μ) (``reference.face_divergence``); with constant M it is M·lap μ.
Boundary rules as the cubic kernels (``_bmap``): periodic wrap, mirror reflection of φ, μ and M,
fixed: φ = v, μ = f′(v), M = M(v) outside. The same signature as every strategy's stage
(``params``: ``[M, κ, a0..a3, 1/h², 2d]``; M and a0..a3 unused). Arrays are viewed as 3-D
(n0, n1, n2) with the axes past ``ndim`` of length 1 and skipped. Two passes: μ and M on the rows
``lo−1 … hi`` into scratch, then the face fluxes.
"""
from __future__ import annotations

import functools

import numpy as np
from numba import njit, prange

from .common import _bmap

#: the strategy name the model kernel runs under (the other strategies refuse a general model)
MODEL_KERNEL = "global"


@functools.lru_cache(maxsize=32)
def _kernel(law, dtype_name: str):
    fp = law.jit_fp(np.dtype(dtype_name))
    mob = law.jit_m(np.dtype(dtype_name))

    @njit(inline="always")
    def phi_at(src, i, j, k, n0, n1, n2, bcode, bv):
        i = _bmap(i, n0, bcode)
        j = _bmap(j, n1, bcode)
        k = _bmap(k, n2, bcode)
        if i < 0 or j < 0 or k < 0:
            return bv
        return src[i, j, k]

    @njit(parallel=True, fastmath=False)
    def fill(src, mu, mm, lo, hi, nd, K, ih2, cnd, bcode, bv, muw, mw):
        n0, n1, n2 = src.shape
        for r in prange(hi - lo + 2):
            i = lo - 1 + r
            ii = i
            outside = i < 0 or i >= n0
            if outside:
                ii = _bmap(i, n0, bcode)
            for j in range(n1):
                for k in range(n2):
                    if outside and bcode == 2:
                        mu[r, j, k] = muw
                        mm[r, j, k] = mw
                        continue
                    c = src[ii, j, k]
                    s = (phi_at(src, ii - 1, j, k, n0, n1, n2, bcode, bv)
                         + phi_at(src, ii + 1, j, k, n0, n1, n2, bcode, bv))
                    if nd > 1:
                        s = s + (phi_at(src, ii, j - 1, k, n0, n1, n2, bcode, bv)
                                 + phi_at(src, ii, j + 1, k, n0, n1, n2, bcode, bv))
                    if nd > 2:
                        s = s + (phi_at(src, ii, j, k - 1, n0, n1, n2, bcode, bv)
                                 + phi_at(src, ii, j, k + 1, n0, n1, n2, bcode, bv))
                    mu[r, j, k] = fp(c) - K * ((s - cnd * c) * ih2)
                    mm[r, j, k] = mob(c)

    @njit(inline="always")
    def side(mu, mm, r, j, k, n1, n2, bcode, muw, mw, c_mu, c_m, axis, d):
        """(μ, M) of the neighbour at offset d along axis 1 or 2 of scratch cell (r, j, k)."""
        if axis == 1:
            jj = _bmap(j + d, n1, bcode)
            if jj < 0:
                return muw, mw
            return mu[r, jj, k], mm[r, jj, k]
        kk = _bmap(k + d, n2, bcode)
        if kk < 0:
            return muw, mw
        return mu[r, j, kk], mm[r, j, kk]

    @njit(parallel=True, fastmath=False)
    def update(base, out, mu, mm, coef, lo, hi, nd, ih2, bcode, muw, mw):
        n1, n2 = mu.shape[1], mu.shape[2]
        half = mu.dtype.type(0.5)
        for r0 in prange(hi - lo):
            i = lo + r0
            r = r0 + 1
            for j in range(n1):
                for k in range(n2):
                    uc, mc = mu[r, j, k], mm[r, j, k]
                    acc = ((mc + mm[r + 1, j, k]) * half * (mu[r + 1, j, k] - uc)
                           - (mm[r - 1, j, k] + mc) * half * (uc - mu[r - 1, j, k]))
                    if nd > 1:
                        up, mp = side(mu, mm, r, j, k, n1, n2, bcode, muw, mw, uc, mc, 1, 1)
                        un, mn = side(mu, mm, r, j, k, n1, n2, bcode, muw, mw, uc, mc, 1, -1)
                        acc = acc + ((mc + mp) * half * (up - uc) - (mn + mc) * half * (uc - un))
                    if nd > 2:
                        up, mp = side(mu, mm, r, j, k, n1, n2, bcode, muw, mw, uc, mc, 2, 1)
                        un, mn = side(mu, mm, r, j, k, n1, n2, bcode, muw, mw, uc, mc, 2, -1)
                        acc = acc + ((mc + mp) * half * (up - uc) - (mn + mc) * half * (uc - un))
                    out[i, j, k] = base[i, j, k] + coef * (acc * ih2)

    @njit(inline="always")
    def wall(bv, bcode):
        if bcode != 2:
            return bv, bv
        return fp(bv), mob(bv)

    def stage(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
        if hi <= lo:
            return
        shape3 = tuple(src.shape) + (1,) * (3 - src.ndim)
        s3, b3, o3 = (a.reshape(shape3) for a in (src, base, out))
        dt = src.dtype.type
        K, ih2, cnd = params[1], params[6], params[7]
        bv = dt(bvalue)
        muw, mw = wall(bv, int(bcode))
        mu = np.empty((hi - lo + 2,) + shape3[1:], dtype=src.dtype)
        mm = np.empty_like(mu)
        fill(s3, mu, mm, int(lo), int(hi), src.ndim, K, ih2, cnd, int(bcode), bv, dt(muw), dt(mw))
        update(b3, o3, mu, mm, dt(coef), int(lo), int(hi), src.ndim, ih2, int(bcode), dt(muw),
               dt(mw))

    return stage


def model_stage(law, dtype):
    """The stage function of ``law`` (a :class:`simengine.physics.Model`) in ``dtype``."""
    return _kernel(law, np.dtype(dtype).name)
