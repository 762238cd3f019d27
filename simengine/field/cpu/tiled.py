"""CPU stage kernels ``shared`` (B) and ``combined`` (D): cache-blocked tiles with a 2-cell halo
in a private buffer, filled by explicit ghost logic (B) or through the address maps (D)."""
from __future__ import annotations

import numpy as np
from numba import njit, prange

from .common import (_JIT, _TASK_CELLS, _bmap, _claim, _fp, _tx, _workers,  # noqa: F401
                     address_map, stage_constants)


# ======================================================== tiled core (shared B / combined D)
# P: φ tile with a 2-cell halo; U: μ on the tile plus a 1-cell ring. Index p of P <-> cell i0-2+p,
# index p of U <-> cell i0-1+p. Each worker allocates P and U once (for the largest tile) and
# reuses them for every tile it claims. Within a tile the work streams along axis 0: filling
# P row/plane p, μ of U row/plane p-2 and the update of core row/plane p-4 follow one another,
# so the rows being combined are still in L1/L2.

@njit(cache=True)
def _fill_row(P, p, srow, j0, nq, n1, bcode, bv, A1, use_maps):
    """P[p, :nq] = φ(row, j0-2+q) for one source row ``srow`` (1-D view)."""
    if use_maps:
        for q in range(nq):
            b = A1[j0 + q]
            x = srow[b]  # b == -1 reads a valid (wrapped) element; the select below discards it
            P[p, q] = x if b >= 0 else bv
    else:
        qa = max(0, 2 - j0)
        qb = min(nq, n1 + 2 - j0)
        for q in range(qa, qb):
            P[p, q] = srow[j0 - 2 + q]
        for q in range(0, qa):
            b = _bmap(j0 - 2 + q, n1, bcode)
            if b < 0:
                P[p, q] = bv
            else:
                P[p, q] = srow[b]
        for q in range(qb, nq):
            b = _bmap(j0 - 2 + q, n1, bcode)
            if b < 0:
                P[p, q] = bv
            else:
                P[p, q] = srow[b]


@njit(**_JIT)
def _tiled_1d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile, use_maps):
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
        P = np.empty((1, ni + 4), dtype=src.dtype)
        U = np.empty(ni + 2, dtype=src.dtype)
        _fill_row(P, 0, src, i0, ni + 4, n0, bcode, bvalue, A0, use_maps)
        for p in range(ni + 2):
            c = P[0, p + 1]
            lap = ((P[0, p] + P[0, p + 2]) - cnd * c) * ih2
            U[p] = _fp(c, a0, a1, a2, a3) - K * lap
        if bcode == 2:
            if i0 == 0:
                U[0] = muw
            if i1 == n0:
                U[ni + 1] = muw
        for p in range(ni):
            lap = ((U[p] + U[p + 2]) - cnd * U[p + 1]) * ih2
            out[i0 + p] = base[i0 + p] + coef * (M * lap)


@njit(cache=True)
def _mu_line(u, xm, xp, c, n, K, a0, a1, a2, a3, ih2, cnd):
    """u[q] = μ at c[q+1] for q < n: xm/xp the rows before/after along the outer axis (2D)."""
    for q in range(n):
        v = c[q + 1]
        lap = (((xm[q + 1] + xp[q + 1]) + (c[q] + c[q + 2])) - cnd * v) * ih2
        u[q] = (a0 + v * (a1 + v * (a2 + v * a3))) - K * lap


@njit(cache=True)
def _update_line(o, b, um, up, uc, n, coef, M, ih2, cnd):
    """o[q] = b[q] + coef·M·lap(μ) at uc[q+1] (2D line form)."""
    for q in range(n):
        lap = (((um[q + 1] + up[q + 1]) + (uc[q] + uc[q + 2])) - cnd * uc[q + 1]) * ih2
        o[q] = b[q] + coef * (M * lap)


@njit(cache=True)
def _mu_line3(u, x0m, x0p, x1m, x1p, c, n, K, a0, a1, a2, a3, ih2, cnd):
    """u[r] = μ at c[r+1] for r < n (3D line form: x0m/x0p, x1m/x1p the neighbour rows along
    axes 0 and 1, aligned with c)."""
    for r in range(n):
        v = c[r + 1]
        lap = ((((x0m[r + 1] + x0p[r + 1]) + (x1m[r + 1] + x1p[r + 1])) + (c[r] + c[r + 2]))
               - cnd * v) * ih2
        u[r] = (a0 + v * (a1 + v * (a2 + v * a3))) - K * lap


@njit(cache=True)
def _update_line3(o, b, u0m, u0p, u1m, u1p, uc, n, coef, M, ih2, cnd):
    """o[r] = b[r] + coef·M·lap(μ) at uc[r+1] (3D line form)."""
    for r in range(n):
        lap = ((((u0m[r + 1] + u0p[r + 1]) + (u1m[r + 1] + u1p[r + 1])) + (uc[r] + uc[r + 2]))
               - cnd * uc[r + 1]) * ih2
        o[r] = b[r] + coef * (M * lap)


@njit(**_JIT)
def _tiled_2d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile, use_maps):
    n0, n1 = src.shape
    if hi <= lo:
        return
    M, K, a0, a1, a2, a3, ih2, cnd, muw = stage_constants(params, bvalue)
    A0 = address_map(n0, bcode)
    A1 = address_map(n1, bcode)
    t0 = max(1, min(tile[0], hi - lo))
    t1 = max(1, min(tile[1], n1))
    nt0 = (hi - lo + t0 - 1) // t0
    nt1 = (n1 + t1 - 1) // t1
    ntasks = nt0 * nt1
    ctr = np.zeros(1, dtype=np.int64)
    for w in prange(_workers(ntasks)):
        t = _claim(ctr)
        if t >= ntasks:
            continue
        P = np.empty((t0 + 4, t1 + 4), dtype=src.dtype)
        U = np.empty((t0 + 2, t1 + 2), dtype=src.dtype)
        while t < ntasks:
            i0 = lo + (t // nt1) * t0
            j0 = (t % nt1) * t1
            i1 = min(i0 + t0, hi)
            j1 = min(j0 + t1, n1)
            ni = i1 - i0
            nj = j1 - j0
            for p in range(ni + 4):
                # ---- fill φ row p of the tile + halo
                if use_maps:
                    a = A0[i0 + p]
                else:
                    a = _bmap(i0 - 2 + p, n0, bcode)
                if a < 0:
                    for q in range(nj + 4):
                        P[p, q] = bvalue
                else:
                    _fill_row(P, p, src[a], j0, nj + 4, n1, bcode, bvalue, A1, use_maps)
                if p >= 2:
                    # ---- μ row u (tile + ring)
                    u = p - 2
                    _mu_line(U[u], P[u], P[u + 2], P[u + 1], nj + 2, K, a0, a1, a2, a3, ih2, cnd)
                    if bcode == 2:
                        if (u == 0 and i0 == 0) or (u == ni + 1 and i1 == n0):
                            for q in range(nj + 2):
                                U[u, q] = muw
                        if j0 == 0:
                            U[u, 0] = muw
                        if j1 == n1:
                            U[u, nj + 1] = muw
                    if u >= 2:
                        # ---- update core row r
                        r = u - 2
                        _update_line(out[i0 + r, j0:j1], base[i0 + r, j0:j1], U[r], U[r + 2],
                                     U[r + 1], nj, coef, M, ih2, cnd)
            t = _claim(ctr)


@njit(**_JIT)
def _tiled_3d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile, use_maps):
    n0, n1, n2 = src.shape
    if hi <= lo:
        return
    M, K, a0, a1, a2, a3, ih2, cnd, muw = stage_constants(params, bvalue)
    A0 = address_map(n0, bcode)
    A1 = address_map(n1, bcode)
    A2 = address_map(n2, bcode)
    t0 = max(1, min(tile[0], hi - lo))
    t1 = max(1, min(tile[1], n1))
    t2 = max(1, min(tile[2], n2))
    nt0 = (hi - lo + t0 - 1) // t0
    nt1 = (n1 + t1 - 1) // t1
    nt2 = (n2 + t2 - 1) // t2
    ntasks = nt0 * nt1 * nt2
    ctr = np.zeros(1, dtype=np.int64)
    for w in prange(_workers(ntasks)):
        t = _claim(ctr)
        if t >= ntasks:
            continue
        P = np.empty((t0 + 4, t1 + 4, t2 + 4), dtype=src.dtype)
        U = np.empty((t0 + 2, t1 + 2, t2 + 2), dtype=src.dtype)
        while t < ntasks:
            i0 = lo + (t // (nt1 * nt2)) * t0
            j0 = ((t // nt2) % nt1) * t1
            k0 = (t % nt2) * t2
            i1 = min(i0 + t0, hi)
            j1 = min(j0 + t1, n1)
            k1 = min(k0 + t2, n2)
            ni = i1 - i0
            nj = j1 - j0
            nk = k1 - k0
            for p in range(ni + 4):
                # ---- fill φ plane p of the tile + halo
                if use_maps:
                    a = A0[i0 + p]
                else:
                    a = _bmap(i0 - 2 + p, n0, bcode)
                Pp = P[p]
                for q in range(nj + 4):
                    if use_maps:
                        b = A1[j0 + q]
                    else:
                        b = _bmap(j0 - 2 + q, n1, bcode)
                    if a < 0 or b < 0:
                        for r in range(nk + 4):
                            Pp[q, r] = bvalue
                    else:
                        _fill_row(Pp, q, src[a, b], k0, nk + 4, n2, bcode, bvalue, A2, use_maps)
                if p >= 2:
                    # ---- μ plane u (tile + ring)
                    u = p - 2
                    Uu = U[u]
                    for q in range(nj + 2):
                        _mu_line3(Uu[q], P[u, q + 1], P[u + 2, q + 1], P[u + 1, q],
                                  P[u + 1, q + 2], P[u + 1, q + 1], nk + 2,
                                  K, a0, a1, a2, a3, ih2, cnd)
                    if bcode == 2:
                        if (u == 0 and i0 == 0) or (u == ni + 1 and i1 == n0):
                            for q in range(nj + 2):
                                for r in range(nk + 2):
                                    Uu[q, r] = muw
                        if j0 == 0:
                            for r in range(nk + 2):
                                Uu[0, r] = muw
                        if j1 == n1:
                            for r in range(nk + 2):
                                Uu[nj + 1, r] = muw
                        if k0 == 0:
                            for q in range(nj + 2):
                                Uu[q, 0] = muw
                        if k1 == n2:
                            for q in range(nj + 2):
                                Uu[q, nk + 1] = muw
                    if u >= 2:
                        # ---- update core plane s
                        s = u - 2
                        for q in range(nj):
                            _update_line3(out[i0 + s, j0 + q, k0:k1], base[i0 + s, j0 + q, k0:k1],
                                          U[s, q + 1], U[s + 2, q + 1], U[s + 1, q],
                                          U[s + 1, q + 2], U[s + 1, q + 1], nk, coef, M, ih2, cnd)
            t = _claim(ctr)


# thin (serial) entry points: the parallel tiled body is compiled once per (ndim, dtype) and
# shared by the two strategies; they differ only in how the halo is filled. ``use_maps`` is passed
# as a run-time boolean (``bcode < 0`` is always False, ``bcode >= 0`` always True) rather than a
# literal, so numba does not compile a second, literal-specialised copy of the body.
@njit(cache=True)
def shared_stage_1d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    _tiled_1d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile, bcode < 0)


@njit(cache=True)
def shared_stage_2d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    _tiled_2d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile, bcode < 0)


@njit(cache=True)
def shared_stage_3d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    _tiled_3d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile, bcode < 0)


@njit(cache=True)
def combined_stage_1d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    _tiled_1d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile, bcode >= 0)


@njit(cache=True)
def combined_stage_2d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    _tiled_2d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile, bcode >= 0)


@njit(cache=True)
def combined_stage_3d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    _tiled_3d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile, bcode >= 0)
