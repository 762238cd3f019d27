"""CPU stage kernel ``global`` (kernel A): one task per block of rows, every read of the whole
array through explicit boundary index logic near the edges, direct reads inside."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import (_JIT, _TASK_CELLS, _bmap, _claim, _fp, _tx, _workers,  # noqa: F401
                     address_map, stage_constants)


# =========================================================================== global (kernel A)
@njit(cache=True, inline="always")
def _g1(src, i, n0, bcode, bv):
    i = _bmap(i, n0, bcode)
    if i < 0:
        return bv
    return src[i]


@njit(cache=True, inline="always")
def _gmu1(src, i, n0, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd):
    if i < 0 or i >= n0:
        if bcode == 2:
            return muw
        i = _bmap(i, n0, bcode)
    c = src[i]
    lap = ((_g1(src, i - 1, n0, bcode, bv) + _g1(src, i + 1, n0, bcode, bv)) - cnd * c) * ih2
    return _fp(c, a0, a1, a2, a3) - K * lap


@njit(**_JIT)
def global_stage_1d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    n0 = src.shape[0]
    M, K, a0, a1, a2, a3, ih2, cnd, muw = stage_constants(params, bvalue)
    for i in prange(lo, hi):
        mc = _gmu1(src, i, n0, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd)
        lap = ((_gmu1(src, i - 1, n0, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd)
                + _gmu1(src, i + 1, n0, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd))
               - cnd * mc) * ih2
        out[i] = base[i] + coef * (M * lap)


@njit(cache=True, inline="always")
def _g2(src, i, j, n0, n1, bcode, bv):
    i = _bmap(i, n0, bcode)
    j = _bmap(j, n1, bcode)
    if i < 0 or j < 0:
        return bv
    return src[i, j]


@njit(cache=True)
def _gmu2(src, i, j, n0, n1, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd):
    if i < 0 or i >= n0 or j < 0 or j >= n1:
        if bcode == 2:
            return muw
        i = _bmap(i, n0, bcode)
        j = _bmap(j, n1, bcode)
    c = src[i, j]
    lap = (((_g2(src, i - 1, j, n0, n1, bcode, bv) + _g2(src, i + 1, j, n0, n1, bcode, bv))
            + (_g2(src, i, j - 1, n0, n1, bcode, bv) + _g2(src, i, j + 1, n0, n1, bcode, bv)))
           - cnd * c) * ih2
    return _fp(c, a0, a1, a2, a3) - K * lap


@njit(cache=True)
def _glap2(src, i, j, n0, n1, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd):
    """lap(μ) at a boundary cell: every read through the explicit boundary branch (not inlined:
    only the O(perimeter) boundary cells take this path)."""
    mc = _gmu2(src, i, j, n0, n1, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd)
    s0 = (_gmu2(src, i - 1, j, n0, n1, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd)
          + _gmu2(src, i + 1, j, n0, n1, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd))
    s1 = (_gmu2(src, i, j - 1, n0, n1, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd)
          + _gmu2(src, i, j + 1, n0, n1, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd))
    return ((s0 + s1) - cnd * mc) * ih2


@njit(cache=True, inline="always")
def _mu2(src, i, j, K, a0, a1, a2, a3, ih2, cnd):
    """μ at a cell whose 4 neighbours are inside the array: direct reads, no branch."""
    c = src[i, j]
    lap = (((src[i - 1, j] + src[i + 1, j]) + (src[i, j - 1] + src[i, j + 1])) - cnd * c) * ih2
    return _fp(c, a0, a1, a2, a3) - K * lap


@njit(**_JIT)
def global_stage_2d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    n0, n1 = src.shape
    if hi <= lo:
        return
    M, K, a0, a1, a2, a3, ih2, cnd, muw = stage_constants(params, bvalue)
    rows = max(1, _TASK_CELLS // n1)
    ntasks = (hi - lo + rows - 1) // rows
    ctr = np.zeros(1, dtype=np.int64)
    jhi = max(2, n1 - 2)          # interior columns 2 .. n1-3 (all 13 reads inside the array)
    jl = min(2, n1)
    for w in prange(_workers(ntasks)):
        t = _claim(ctr)
        while t < ntasks:
            ia = lo + t * rows
            ib = min(ia + rows, hi)
            for i in range(ia, ib):
                if i >= 2 and i < n0 - 2:
                    # interior fast path: 13 direct reads, μ recomputed at the centre and the 4
                    # neighbours, no boundary logic
                    for j in range(2, jhi):
                        mc = _mu2(src, i, j, K, a0, a1, a2, a3, ih2, cnd)
                        s0 = (_mu2(src, i - 1, j, K, a0, a1, a2, a3, ih2, cnd)
                              + _mu2(src, i + 1, j, K, a0, a1, a2, a3, ih2, cnd))
                        s1 = (_mu2(src, i, j - 1, K, a0, a1, a2, a3, ih2, cnd)
                              + _mu2(src, i, j + 1, K, a0, a1, a2, a3, ih2, cnd))
                        lap = ((s0 + s1) - cnd * mc) * ih2
                        out[i, j] = base[i, j] + coef * (M * lap)
                    for j in range(0, jl):
                        lap = _glap2(src, i, j, n0, n1, bcode, bvalue, muw, K, a0, a1, a2, a3,
                                     ih2, cnd)
                        out[i, j] = base[i, j] + coef * (M * lap)
                    for j in range(jhi, n1):
                        lap = _glap2(src, i, j, n0, n1, bcode, bvalue, muw, K, a0, a1, a2, a3,
                                     ih2, cnd)
                        out[i, j] = base[i, j] + coef * (M * lap)
                else:
                    for j in range(n1):
                        lap = _glap2(src, i, j, n0, n1, bcode, bvalue, muw, K, a0, a1, a2, a3,
                                     ih2, cnd)
                        out[i, j] = base[i, j] + coef * (M * lap)
            t = _claim(ctr)


@njit(cache=True)
def _grows3(src, i, j, n0, n1, bcode):
    """The rows (along the last axis) around μ point (i, j, ·) through the explicit boundary
    branch: (inside, centre, axis-0 neighbours, axis-1 neighbours, their inside flags).
    ``inside`` is False for a point beyond a fixed wall (μ there is μ_wall); a -1 neighbour
    address (fixed wall) reads a valid row that the caller's selects discard."""
    a = _bmap(i, n0, bcode)
    b = _bmap(j, n1, bcode)
    inside = a >= 0 and b >= 0
    if not inside:
        a = 0
        b = 0
    am = _bmap(a - 1, n0, bcode)
    ap = _bmap(a + 1, n0, bcode)
    bm = _bmap(b - 1, n1, bcode)
    bp = _bmap(b + 1, n1, bcode)
    return (inside, src[a, b], src[am, b], src[ap, b], src[a, bm], src[a, bp],
            am >= 0, ap >= 0, bm >= 0, bp >= 0)


@njit(cache=True)
def _gpt3(g, k, n2, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd):
    """μ at point k of the row set ``g`` (from :func:`_grows3`), k through the boundary branch."""
    inside, c, xm, xp, ym, yp, oxm, oxp, oym, oyp = g
    if not inside:
        return muw
    if k < 0 or k >= n2:
        if bcode == 2:
            return muw
        k = _bmap(k, n2, bcode)
    v = c[k]
    km = _bmap(k - 1, n2, bcode)
    kp = _bmap(k + 1, n2, bcode)
    lap = ((((_tx(xm[k], oxm, bv) + _tx(xp[k], oxp, bv))
             + (_tx(ym[k], oym, bv) + _tx(yp[k], oyp, bv)))
            + (_tx(c[km], km >= 0, bv) + _tx(c[kp], kp >= 0, bv))) - cnd * v) * ih2
    return _fp(v, a0, a1, a2, a3) - K * lap


@njit(cache=True)
def _gpt3i(g, k, muw, bv, K, a0, a1, a2, a3, ih2, cnd):
    """As :func:`_gpt3` for 1 <= k <= n2-2 (k and k±1 inside: no branch along the last axis)."""
    inside, c, xm, xp, ym, yp, oxm, oxp, oym, oyp = g
    v = c[k]
    lap = ((((_tx(xm[k], oxm, bv) + _tx(xp[k], oxp, bv))
             + (_tx(ym[k], oym, bv) + _tx(yp[k], oyp, bv)))
            + (c[k - 1] + c[k + 1])) - cnd * v) * ih2
    return _tx(_fp(v, a0, a1, a2, a3) - K * lap, inside, muw)


@njit(cache=True)
def _gline3(src, base, out, i, j, ka, kb, coef, M, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd):
    """Boundary path of ``global`` 3D: cells k in [ka, kb) of row (i, j), every read through
    the explicit boundary branch (row addresses resolved once per row, k per cell); μ recomputed
    at the centre and the 6 neighbours. Not inlined (only boundary cells come here)."""
    n0, n1, n2 = src.shape
    g0 = _grows3(src, i, j, n0, n1, bcode)
    gxm = _grows3(src, i - 1, j, n0, n1, bcode)
    gxp = _grows3(src, i + 1, j, n0, n1, bcode)
    gym = _grows3(src, i, j - 1, n0, n1, bcode)
    gyp = _grows3(src, i, j + 1, n0, n1, bcode)
    k1 = max(ka, min(kb, 2))
    k2 = max(k1, min(kb, n2 - 2))
    for k in range(ka, kb):
        if k >= k1 and k < k2:
            continue  # cells 2 .. n2-3: the loop below, no branch along the last axis
        mc = _gpt3(g0, k, n2, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd)
        s0 = (_gpt3(gxm, k, n2, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd)
              + _gpt3(gxp, k, n2, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd))
        s1 = (_gpt3(gym, k, n2, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd)
              + _gpt3(gyp, k, n2, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd))
        s2 = (_gpt3(g0, k - 1, n2, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd)
              + _gpt3(g0, k + 1, n2, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd))
        lap = (((s0 + s1) + s2) - cnd * mc) * ih2
        out[i, j, k] = base[i, j, k] + coef * (M * lap)
    for k in range(k1, k2):
        mc = _gpt3i(g0, k, muw, bv, K, a0, a1, a2, a3, ih2, cnd)
        s0 = (_gpt3i(gxm, k, muw, bv, K, a0, a1, a2, a3, ih2, cnd)
              + _gpt3i(gxp, k, muw, bv, K, a0, a1, a2, a3, ih2, cnd))
        s1 = (_gpt3i(gym, k, muw, bv, K, a0, a1, a2, a3, ih2, cnd)
              + _gpt3i(gyp, k, muw, bv, K, a0, a1, a2, a3, ih2, cnd))
        s2 = (_gpt3i(g0, k - 1, muw, bv, K, a0, a1, a2, a3, ih2, cnd)
              + _gpt3i(g0, k + 1, muw, bv, K, a0, a1, a2, a3, ih2, cnd))
        lap = (((s0 + s1) + s2) - cnd * mc) * ih2
        out[i, j, k] = base[i, j, k] + coef * (M * lap)


@njit(cache=True, inline="always")
def _mu3(src, i, j, k, K, a0, a1, a2, a3, ih2, cnd):
    """μ at a cell whose 6 neighbours are inside the array: direct reads, no branch."""
    c = src[i, j, k]
    lap = ((((src[i - 1, j, k] + src[i + 1, j, k]) + (src[i, j - 1, k] + src[i, j + 1, k]))
            + (src[i, j, k - 1] + src[i, j, k + 1])) - cnd * c) * ih2
    return _fp(c, a0, a1, a2, a3) - K * lap


@njit(**_JIT)
def global_stage_3d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    n0, n1, n2 = src.shape
    if hi <= lo:
        return
    M, K, a0, a1, a2, a3, ih2, cnd, muw = stage_constants(params, bvalue)
    rows = max(1, _TASK_CELLS // (n1 * n2))
    ntasks = (hi - lo + rows - 1) // rows
    ctr = np.zeros(1, dtype=np.int64)
    khi = max(2, n2 - 2)
    kl = min(2, n2)
    for w in prange(_workers(ntasks)):
        t = _claim(ctr)
        while t < ntasks:
            ia = lo + t * rows
            ib = min(ia + rows, hi)
            for i in range(ia, ib):
                for j in range(n1):
                    if i >= 2 and i < n0 - 2 and j >= 2 and j < n1 - 2:
                        # interior fast path: 25 direct reads of the whole array, μ recomputed
                        # at the centre and the 6 neighbours, no boundary logic
                        for k in range(2, khi):
                            mc = _mu3(src, i, j, k, K, a0, a1, a2, a3, ih2, cnd)
                            s0 = (_mu3(src, i - 1, j, k, K, a0, a1, a2, a3, ih2, cnd)
                                  + _mu3(src, i + 1, j, k, K, a0, a1, a2, a3, ih2, cnd))
                            s1 = (_mu3(src, i, j - 1, k, K, a0, a1, a2, a3, ih2, cnd)
                                  + _mu3(src, i, j + 1, k, K, a0, a1, a2, a3, ih2, cnd))
                            s2 = (_mu3(src, i, j, k - 1, K, a0, a1, a2, a3, ih2, cnd)
                                  + _mu3(src, i, j, k + 1, K, a0, a1, a2, a3, ih2, cnd))
                            lap = (((s0 + s1) + s2) - cnd * mc) * ih2
                            out[i, j, k] = base[i, j, k] + coef * (M * lap)
                        _gline3(src, base, out, i, j, 0, kl, coef, M, bcode, bvalue, muw,
                                K, a0, a1, a2, a3, ih2, cnd)
                        _gline3(src, base, out, i, j, khi, n2, coef, M, bcode, bvalue, muw,
                                K, a0, a1, a2, a3, ih2, cnd)
                    else:
                        _gline3(src, base, out, i, j, 0, n2, coef, M, bcode, bvalue, muw,
                                K, a0, a1, a2, a3, ih2, cnd)
            t = _claim(ctr)
