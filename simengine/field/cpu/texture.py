"""CPU stage kernel ``texture`` (C): no φ copy, every read through per-axis address maps, μ
in a ring of rows/planes."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import (_JIT, _TASK_CELLS, _bmap, _claim, _fp, _tx, _workers,  # noqa: F401
                     address_map, stage_constants)


from .tiled import _update_line, _update_line3


# =========================================================================== texture (kernel C)
# φ is never copied: every φ read is src[A0[i+2], A1[j+2], ...] (an address map per axis, -1 =
# border value); along the contiguous last axis the map is the identity inside the domain, so
# only the two edge cells of a line read through it. μ is kept in a line buffer of three rows
# (2D) / planes (3D) — a ring indexed p % 3: μ row/plane p is computed from φ, then output
# row/plane p-2 is updated from the three μ rows/planes in the ring. The μ ring cells (outside
# the domain) are read through the same address maps (μ border = f'(bvalue)).

@njit(**_JIT)
def texture_stage_1d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    n0 = src.shape[0]
    if hi <= lo:
        return
    M, K, a0, a1, a2, a3, ih2, cnd, muw = stage_constants(params, bvalue)
    A0 = address_map(n0, bcode)
    t0 = max(1, min(tile[0], hi - lo))
    nt = (hi - lo + t0 - 1) // t0
    for t in prange(nt):
        i0 = lo + t * t0
        i1 = min(i0 + t0, hi)
        ni = i1 - i0
        U = np.empty(ni + 2, dtype=src.dtype)
        for p in range(ni + 2):
            am = A0[i0 + p + 1]            # address of the μ cell i0-1+p
            if am < 0:
                U[p] = muw
            else:
                c = src[am]
                xm = A0[am + 1]
                xp = A0[am + 3]
                lap = ((_tx(src[xm], xm >= 0, bvalue) + _tx(src[xp], xp >= 0, bvalue))
                       - cnd * c) * ih2
                U[p] = _fp(c, a0, a1, a2, a3) - K * lap
        for p in range(ni):
            lap = ((U[p] + U[p + 2]) - cnd * U[p + 1]) * ih2
            out[i0 + p] = base[i0 + p] + coef * (M * lap)


@njit(cache=True)
def _mu_row_2d(src, u, am, A0, A1, n1, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd):
    """u[1:n1+1] = μ of source row ``am`` (all columns); u[0] and u[n1+1] through the column
    address map; a border row (am < 0) is μ_wall."""
    if am < 0:
        for q in range(n1 + 2):
            u[q] = muw
        return
    rm = A0[am + 1]
    rp = A0[am + 3]
    okm = rm >= 0
    okp = rp >= 0
    crow = src[am]
    mrow = src[rm]   # rm == -1 reads a valid row; the selects below discard it
    prow = src[rp]
    # edge columns through the column address map; interior columns: the map is the identity
    for j in (0, n1 - 1):
        c = crow[j]
        jm = A1[j + 1]
        jp = A1[j + 3]
        lap = (((_tx(mrow[j], okm, bvalue) + _tx(prow[j], okp, bvalue))
                + (_tx(crow[jm], jm >= 0, bvalue) + _tx(crow[jp], jp >= 0, bvalue)))
               - cnd * c) * ih2
        u[j + 1] = _fp(c, a0, a1, a2, a3) - K * lap
    if okm and okp:
        for j in range(1, n1 - 1):
            c = crow[j]
            lap = (((mrow[j] + prow[j]) + (crow[j - 1] + crow[j + 1])) - cnd * c) * ih2
            u[j + 1] = _fp(c, a0, a1, a2, a3) - K * lap
    else:
        for j in range(1, n1 - 1):
            c = crow[j]
            lap = (((_tx(mrow[j], okm, bvalue) + _tx(prow[j], okp, bvalue))
                    + (crow[j - 1] + crow[j + 1])) - cnd * c) * ih2
            u[j + 1] = _fp(c, a0, a1, a2, a3) - K * lap
    # μ ring columns: same address map, border value μ_wall
    b = A1[1]
    u[0] = u[b + 1] if b >= 0 else muw
    b = A1[n1 + 2]
    u[n1 + 1] = u[b + 1] if b >= 0 else muw


@njit(**_JIT)
def texture_stage_2d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    n0, n1 = src.shape
    if hi <= lo:
        return
    M, K, a0, a1, a2, a3, ih2, cnd, muw = stage_constants(params, bvalue)
    A0 = address_map(n0, bcode)
    A1 = address_map(n1, bcode)
    t0 = max(1, min(tile[0], hi - lo))
    ntasks = (hi - lo + t0 - 1) // t0
    ctr = np.zeros(1, dtype=np.int64)
    for w in prange(_workers(ntasks)):
        t = _claim(ctr)
        if t >= ntasks:
            continue
        U = np.empty((3, n1 + 2), dtype=src.dtype)
        while t < ntasks:
            i0 = lo + t * t0
            ni = min(i0 + t0, hi) - i0
            for p in range(ni + 2):
                _mu_row_2d(src, U[p % 3], A0[i0 + p + 1], A0, A1, n1, bvalue, muw,
                           K, a0, a1, a2, a3, ih2, cnd)
                if p >= 2:
                    r = p - 2
                    _update_line(out[i0 + r], base[i0 + r], U[r % 3], U[p % 3], U[(r + 1) % 3],
                                 n1, coef, M, ih2, cnd)
            t = _claim(ctr)


@njit(cache=True)
def _mu_row_3d(u, crow, r0m, r0p, r1m, r1p, ok0m, ok0p, ok1m, ok1p, A2, n2, bvalue, muw,
               K, a0, a1, a2, a3, ih2, cnd):
    """u[1:n2+1] = μ along one row of the last axis: the neighbour rows along axes 0 and 1 were
    addressed through their maps (ok* = inside); along the last axis the two edge cells read
    through A2, the interior (identity map) directly; u[0], u[n2+1] through A2 (μ ring)."""
    for r in (0, n2 - 1):
        c = crow[r]
        km = A2[r + 1]
        kp = A2[r + 3]
        lap = ((((_tx(r0m[r], ok0m, bvalue) + _tx(r0p[r], ok0p, bvalue))
                 + (_tx(r1m[r], ok1m, bvalue) + _tx(r1p[r], ok1p, bvalue)))
                + (_tx(crow[km], km >= 0, bvalue) + _tx(crow[kp], kp >= 0, bvalue)))
               - cnd * c) * ih2
        u[r + 1] = _fp(c, a0, a1, a2, a3) - K * lap
    if ok0m and ok0p and ok1m and ok1p:
        for r in range(1, n2 - 1):
            c = crow[r]
            lap = ((((r0m[r] + r0p[r]) + (r1m[r] + r1p[r])) + (crow[r - 1] + crow[r + 1]))
                   - cnd * c) * ih2
            u[r + 1] = _fp(c, a0, a1, a2, a3) - K * lap
    else:
        for r in range(1, n2 - 1):
            c = crow[r]
            lap = ((((_tx(r0m[r], ok0m, bvalue) + _tx(r0p[r], ok0p, bvalue))
                     + (_tx(r1m[r], ok1m, bvalue) + _tx(r1p[r], ok1p, bvalue)))
                    + (crow[r - 1] + crow[r + 1])) - cnd * c) * ih2
            u[r + 1] = _fp(c, a0, a1, a2, a3) - K * lap
    kb = A2[1]
    u[0] = u[kb + 1] if kb >= 0 else muw
    kb = A2[n2 + 2]
    u[n2 + 1] = u[kb + 1] if kb >= 0 else muw


@njit(**_JIT)
def texture_stage_3d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    n0, n1, n2 = src.shape
    if hi <= lo:
        return
    M, K, a0, a1, a2, a3, ih2, cnd, muw = stage_constants(params, bvalue)
    A0 = address_map(n0, bcode)
    A1 = address_map(n1, bcode)
    A2 = address_map(n2, bcode)
    t0 = max(1, min(tile[0], hi - lo))
    ntasks = (hi - lo + t0 - 1) // t0
    ctr = np.zeros(1, dtype=np.int64)
    for w in prange(_workers(ntasks)):
        t = _claim(ctr)
        if t >= ntasks:
            continue
        U = np.empty((3, n1 + 2, n2 + 2), dtype=src.dtype)
        while t < ntasks:
            i0 = lo + t * t0
            ni = min(i0 + t0, hi) - i0
            for p in range(ni + 2):
                Up = U[p % 3]
                am = A0[i0 + p + 1]          # address of the μ plane i0-1+p
                if am < 0:
                    for q in range(n1 + 2):
                        for r in range(n2 + 2):
                            Up[q, r] = muw
                else:
                    im = A0[am + 1]
                    ip = A0[am + 3]
                    ok0m = im >= 0
                    ok0p = ip >= 0
                    for q in range(1, n1 + 1):
                        b = A1[q + 1]        # μ row j = q-1 -> address A1[j+2]
                        jm = A1[b + 1]
                        jp = A1[b + 3]
                        # a -1 address reads a valid row; the selects discard it
                        _mu_row_3d(Up[q], src[am, b], src[im, b], src[ip, b], src[am, jm],
                                   src[am, jp], ok0m, ok0p, jm >= 0, jp >= 0, A2, n2, bvalue,
                                   muw, K, a0, a1, a2, a3, ih2, cnd)
                    # μ ring rows along axis 1: same address map, border value μ_wall
                    b = A1[1]
                    for r in range(n2 + 2):
                        Up[0, r] = Up[b + 1, r] if b >= 0 else muw
                    b = A1[n1 + 2]
                    for r in range(n2 + 2):
                        Up[n1 + 1, r] = Up[b + 1, r] if b >= 0 else muw
                if p >= 2:
                    s = p - 2
                    Um = U[s % 3]
                    Uc = U[(s + 1) % 3]
                    for q in range(n1):
                        _update_line3(out[i0 + s, q], base[i0 + s, q], Um[q + 1], Up[q + 1],
                                      Uc[q], Uc[q + 2], Uc[q + 1], n2, coef, M, ih2, cnd)
            t = _claim(ctr)
