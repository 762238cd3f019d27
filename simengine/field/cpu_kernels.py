"""CPU (numba, parallel) stage kernels of the Cahn–Hilliard operator: four memory strategies.

Stage contract (the CUDA twins in ``cuda_kernels.py`` mirror it argument for argument)
--------------------------------------------------------------------------------------

Every strategy has one stage function per dimension, all with the same signature::

    <strategy>_stage_<d>d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile)

and computes, for the rows ``lo:hi`` of axis 0 only (every other row of ``out`` is left alone)::

    out[lo:hi] = base[lo:hi] + coef * R(src)[lo:hi],   R(φ) = M lap(μ),  μ = f'(φ) − κ lap(φ)

* ``src``, ``base``, ``out``: C-contiguous arrays of one float dtype (float32 or float64) and the
  grid's shape; ``out`` must not alias ``src`` or ``base`` (never in place). The dtype drives the
  arithmetic: everything is computed in the array precision.
* ``coef``: scalar of the array dtype (``dt/2`` or ``dt``).
* ``params``: 1-D array of the array dtype, length 8:
  ``[M, κ, a0, a1, a2, a3, 1/h², 2·ndim]`` (build it with :func:`make_params`; the last entry is
  the centre weight of the Laplacian, passed so that no kernel mixes a Python int or float64
  literal into float32 arithmetic).
* ``bcode``: int, ``0`` periodic, ``1`` mirror (edge-duplicating reflection, φ₋₁ = φ₀, φ₋₂ = φ₁,
  same for μ), ``2`` fixed (φ = ``bvalue`` and μ = f'(``bvalue``) in every cell outside the domain).
* ``bvalue``: scalar of the array dtype, the fixed-boundary value (ignored otherwise).
* ``lo``, ``hi``: int, the slice of axis 0 to update (``0, shape[0]`` for the whole field). Reads
  still see the whole of ``src`` (the rows ``lo-2 .. hi+1`` through the boundary rule).
* ``tile``: 1-D int64 array of length ndim: the tile (core) extent for ``shared``/``combined``;
  ``texture`` uses ``tile[0]`` as its band of rows per task; ``global`` ignores it. See
  :func:`default_tile`.

The arithmetic follows ``reference.py`` operation for operation: ``lap(g) = ((g[i-1]+g[i+1]) along
axis 0 + (…) along axis 1 + …) − 2d·g[i]`` then ``× 1/h²``; ``f'(φ) = a0 + φ(a1 + φ(a2 + φ a3))``;
``μ = f'(φ) − κ·lap φ``; ``R = M·lap μ``; ``out = base + coef·R``. With ``fastmath=False`` (no FMA
contraction) float64 results agree with the reference to round-off (≈1e-15 relative; exactly
when h = 1, where ``× 1/h²`` and ``/ h²`` coincide).

Strategies (mirroring the four GPU kernels of the seed paper, §5.4 of the digest)
---------------------------------------------------------------------------------

* ``global`` (kernel A): one "thread" per cell, 13 (2D; 5 in 1D, 25 in 3D) direct indexed reads of
  the whole array; every read goes through an explicit boundary branch; μ is recomputed at the
  centre and its 2d neighbours (no reuse). Simple and slow.
* ``shared`` (kernel B): cache-blocked tiles. Each task copies its tile plus a 2-cell halo into a
  small private buffer (the "shared memory"), filling the halo with explicit ghost logic, computes μ
  on the tile plus a 1-cell ring, then updates the core. The tile sizes need not divide the grid.
* ``texture`` (kernel C): no ghost cells and no tiles of φ: all φ reads go through per-axis address
  maps (``address_map``: wrap / mirror / clamp-to-border, like texture address modes; a
  ``-1`` address reads the border value) and μ is kept in a band of rows (the "texture cache").
* ``combined`` (kernel D): texture-style addressed loads fill the tile buffer, then as ``shared``.

Parallelism: ``prange`` over tiles (``shared``/``combined``), row bands (``texture``) or rows
(``global``); the contiguous last axis is always the innermost loop.
"""
from __future__ import annotations

import numpy as np
from numba import njit, prange

_JIT = dict(parallel=True, cache=True, fastmath=False)

STRATEGIES = ("global", "shared", "texture", "combined")

#: default tile (core) extents per dimension: long contiguous rows for SIMD, a few rows deep; the
#: working set (φ tile + μ tile) stays well inside a 1–2 MiB L2 cache.
DEFAULT_TILES = {1: (4096,), 2: (32, 1024), 3: (8, 16, 256)}


def default_tile(ndim: int) -> np.ndarray:
    return np.array(DEFAULT_TILES[ndim], dtype=np.int64)


def make_params(model, grid, dtype=np.float64) -> np.ndarray:
    """``[M, κ, a0, a1, a2, a3, 1/h², 2·ndim]`` in ``dtype`` (computed in float64, then cast)."""
    h = float(grid.spacing)
    return np.array([model.mobility, model.kappa, *model.coefficients, 1.0 / (h * h),
                     2.0 * grid.ndim], dtype=dtype)


# --------------------------------------------------------------------------- boundary helpers
@njit(cache=True, inline="always")
def _bmap(i, n, bcode):
    """Source index of (possibly outside) index ``i`` on an axis of ``n`` cells, or -1 for
    'outside a fixed boundary'. Valid for |overshoot| <= n."""
    if i >= 0 and i < n:
        return i
    if bcode == 0:
        if i < 0:
            return i + n
        return i - n
    if bcode == 1:
        if i < 0:
            return -1 - i
        return 2 * n - 1 - i
    return -1


@njit(cache=True)
def address_map(n, bcode):
    """Address map of an axis of ``n`` cells: ``A[p]`` is the source index of ``i = p - 2``
    (``p = 0 .. n+3``), ``-1`` where the read returns the border value (fixed)."""
    a = np.empty(n + 4, dtype=np.int64)
    for p in range(n + 4):
        a[p] = _bmap(p - 2, n, bcode)
    return a


@njit(cache=True, inline="always")
def _fp(c, a0, a1, a2, a3):
    return a0 + c * (a1 + c * (a2 + c * a3))


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
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
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


@njit(**_JIT)
def global_stage_2d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    n0, n1 = src.shape
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
    for i in prange(lo, hi):
        for j in range(n1):
            mc = _gmu2(src, i, j, n0, n1, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd)
            s0 = (_gmu2(src, i - 1, j, n0, n1, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd)
                  + _gmu2(src, i + 1, j, n0, n1, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd))
            s1 = (_gmu2(src, i, j - 1, n0, n1, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd)
                  + _gmu2(src, i, j + 1, n0, n1, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd))
            lap = ((s0 + s1) - cnd * mc) * ih2
            out[i, j] = base[i, j] + coef * (M * lap)


@njit(cache=True, inline="always")
def _g3(src, i, j, k, n0, n1, n2, bcode, bv):
    i = _bmap(i, n0, bcode)
    j = _bmap(j, n1, bcode)
    k = _bmap(k, n2, bcode)
    if i < 0 or j < 0 or k < 0:
        return bv
    return src[i, j, k]


@njit(cache=True)
def _gmu3(src, i, j, k, n0, n1, n2, bcode, bv, muw, K, a0, a1, a2, a3, ih2, cnd):
    # not inlined: keeps the 3D global kernel's compile time reasonable
    if i < 0 or i >= n0 or j < 0 or j >= n1 or k < 0 or k >= n2:
        if bcode == 2:
            return muw
        i = _bmap(i, n0, bcode)
        j = _bmap(j, n1, bcode)
        k = _bmap(k, n2, bcode)
    c = src[i, j, k]
    s0 = _g3(src, i - 1, j, k, n0, n1, n2, bcode, bv) + _g3(src, i + 1, j, k, n0, n1, n2, bcode, bv)
    s1 = _g3(src, i, j - 1, k, n0, n1, n2, bcode, bv) + _g3(src, i, j + 1, k, n0, n1, n2, bcode, bv)
    s2 = _g3(src, i, j, k - 1, n0, n1, n2, bcode, bv) + _g3(src, i, j, k + 1, n0, n1, n2, bcode, bv)
    lap = (((s0 + s1) + s2) - cnd * c) * ih2
    return _fp(c, a0, a1, a2, a3) - K * lap


@njit(**_JIT)
def global_stage_3d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    n0, n1, n2 = src.shape
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
    for i in prange(lo, hi):
        for j in range(n1):
            for k in range(n2):
                mc = _gmu3(src, i, j, k, n0, n1, n2, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd)
                s0 = (_gmu3(src, i - 1, j, k, n0, n1, n2, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd)
                      + _gmu3(src, i + 1, j, k, n0, n1, n2, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd))
                s1 = (_gmu3(src, i, j - 1, k, n0, n1, n2, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd)
                      + _gmu3(src, i, j + 1, k, n0, n1, n2, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd))
                s2 = (_gmu3(src, i, j, k - 1, n0, n1, n2, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd)
                      + _gmu3(src, i, j, k + 1, n0, n1, n2, bcode, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd))
                lap = (((s0 + s1) + s2) - cnd * mc) * ih2
                out[i, j, k] = base[i, j, k] + coef * (M * lap)


# ======================================================== tiled core (shared B / combined D)
# P: φ tile with a 2-cell halo; U: μ on the tile plus a 1-cell ring. Index p of P <-> cell i0-2+p,
# index p of U <-> cell i0-1+p.

@njit(cache=True, inline="always")
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
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
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


@njit(cache=True, inline="always")
def _mu_line(u, xm, xp, c, n, K, a0, a1, a2, a3, ih2, cnd):
    """u[q] = μ at c[q+1] for q < n: xm/xp the rows before/after along the outer axis (2D)."""
    for q in range(n):
        v = c[q + 1]
        lap = (((xm[q + 1] + xp[q + 1]) + (c[q] + c[q + 2])) - cnd * v) * ih2
        u[q] = (a0 + v * (a1 + v * (a2 + v * a3))) - K * lap


@njit(cache=True, inline="always")
def _update_line(o, b, um, up, uc, n, coef, M, ih2, cnd):
    """o[q] = b[q] + coef·M·lap(μ) at uc[q+1] (2D line form)."""
    for q in range(n):
        lap = (((um[q + 1] + up[q + 1]) + (uc[q] + uc[q + 2])) - cnd * uc[q + 1]) * ih2
        o[q] = b[q] + coef * (M * lap)


@njit(**_JIT)
def _tiled_2d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile, use_maps):
    n0, n1 = src.shape
    if hi <= lo:
        return
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
    A0 = address_map(n0, bcode)
    A1 = address_map(n1, bcode)
    t0 = max(1, min(tile[0], hi - lo))
    t1 = max(1, min(tile[1], n1))
    nt0 = (hi - lo + t0 - 1) // t0
    nt1 = (n1 + t1 - 1) // t1
    for t in prange(nt0 * nt1):
        i0 = lo + (t // nt1) * t0
        j0 = (t % nt1) * t1
        i1 = min(i0 + t0, hi)
        j1 = min(j0 + t1, n1)
        ni = i1 - i0
        nj = j1 - j0
        P = np.empty((ni + 4, nj + 4), dtype=src.dtype)
        U = np.empty((ni + 2, nj + 2), dtype=src.dtype)
        # ---- fill φ tile + halo
        for p in range(ni + 4):
            if use_maps:
                a = A0[i0 + p]
            else:
                a = _bmap(i0 - 2 + p, n0, bcode)
            if a < 0:
                for q in range(nj + 4):
                    P[p, q] = bvalue
            else:
                _fill_row(P, p, src[a], j0, nj + 4, n1, bcode, bvalue, A1, use_maps)
        # ---- μ on tile + ring
        for p in range(ni + 2):
            _mu_line(U[p], P[p], P[p + 2], P[p + 1], nj + 2, K, a0, a1, a2, a3, ih2, cnd)
        if bcode == 2:
            if i0 == 0:
                U[0, :] = muw
            if i1 == n0:
                U[ni + 1, :] = muw
            if j0 == 0:
                U[:, 0] = muw
            if j1 == n1:
                U[:, nj + 1] = muw
        # ---- update core
        for p in range(ni):
            _update_line(out[i0 + p, j0:j1], base[i0 + p, j0:j1], U[p], U[p + 2], U[p + 1], nj,
                         coef, M, ih2, cnd)


@njit(**_JIT)
def _tiled_3d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile, use_maps):
    n0, n1, n2 = src.shape
    if hi <= lo:
        return
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
    A0 = address_map(n0, bcode)
    A1 = address_map(n1, bcode)
    A2 = address_map(n2, bcode)
    t0 = max(1, min(tile[0], hi - lo))
    t1 = max(1, min(tile[1], n1))
    t2 = max(1, min(tile[2], n2))
    nt0 = (hi - lo + t0 - 1) // t0
    nt1 = (n1 + t1 - 1) // t1
    nt2 = (n2 + t2 - 1) // t2
    for t in prange(nt0 * nt1 * nt2):
        i0 = lo + (t // (nt1 * nt2)) * t0
        j0 = ((t // nt2) % nt1) * t1
        k0 = (t % nt2) * t2
        i1 = min(i0 + t0, hi)
        j1 = min(j0 + t1, n1)
        k1 = min(k0 + t2, n2)
        ni = i1 - i0
        nj = j1 - j0
        nk = k1 - k0
        P = np.empty((ni + 4, nj + 4, nk + 4), dtype=src.dtype)
        U = np.empty((ni + 2, nj + 2, nk + 2), dtype=src.dtype)
        for p in range(ni + 4):
            if use_maps:
                a = A0[i0 + p]
            else:
                a = _bmap(i0 - 2 + p, n0, bcode)
            for q in range(nj + 4):
                if use_maps:
                    b = A1[j0 + q]
                else:
                    b = _bmap(j0 - 2 + q, n1, bcode)
                if a < 0 or b < 0:
                    for r in range(nk + 4):
                        P[p, q, r] = bvalue
                else:
                    _fill_row(P[p], q, src[a, b], k0, nk + 4, n2, bcode, bvalue, A2, use_maps)
        for p in range(ni + 2):
            for q in range(nj + 2):
                for r in range(nk + 2):
                    c = P[p + 1, q + 1, r + 1]
                    lap = ((((P[p, q + 1, r + 1] + P[p + 2, q + 1, r + 1])
                             + (P[p + 1, q, r + 1] + P[p + 1, q + 2, r + 1]))
                            + (P[p + 1, q + 1, r] + P[p + 1, q + 1, r + 2]))
                           - cnd * c) * ih2
                    U[p, q, r] = _fp(c, a0, a1, a2, a3) - K * lap
        if bcode == 2:
            if i0 == 0:
                U[0, :, :] = muw
            if i1 == n0:
                U[ni + 1, :, :] = muw
            if j0 == 0:
                U[:, 0, :] = muw
            if j1 == n1:
                U[:, nj + 1, :] = muw
            if k0 == 0:
                U[:, :, 0] = muw
            if k1 == n2:
                U[:, :, nk + 1] = muw
        for p in range(ni):
            for q in range(nj):
                orow = out[i0 + p, j0 + q]
                brow = base[i0 + p, j0 + q]
                for r in range(nk):
                    lap = ((((U[p, q + 1, r + 1] + U[p + 2, q + 1, r + 1])
                             + (U[p + 1, q, r + 1] + U[p + 1, q + 2, r + 1]))
                            + (U[p + 1, q + 1, r] + U[p + 1, q + 1, r + 2]))
                           - cnd * U[p + 1, q + 1, r + 1]) * ih2
                    orow[k0 + r] = brow[k0 + r] + coef * (M * lap)


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


# =========================================================================== texture (kernel C)
# φ is never copied: every φ read is src[A0[i+2], A1[j+2], ...] (an address map per axis, -1 =
# border value). μ is computed for a band of rows (plus one row each side) into a buffer whose
# ring is filled through the same address maps (μ border = f'(bvalue)).

@njit(cache=True, inline="always")
def _tx(x, ok, bv):
    return x if ok else bv


@njit(**_JIT)
def texture_stage_1d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    n0 = src.shape[0]
    if hi <= lo:
        return
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
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


@njit(cache=True, inline="always")
def _mu_row_2d(src, U, p, am, A0, A1, n1, bvalue, muw, K, a0, a1, a2, a3, ih2, cnd):
    """U[p, 1:n1+1] = μ of source row ``am`` (all columns); U[p, 0] and U[p, n1+1] through the
    column address map; a border row (am < 0) is μ_wall."""
    if am < 0:
        for q in range(n1 + 2):
            U[p, q] = muw
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
        U[p, j + 1] = _fp(c, a0, a1, a2, a3) - K * lap
    if okm and okp:
        for j in range(1, n1 - 1):
            c = crow[j]
            lap = (((mrow[j] + prow[j]) + (crow[j - 1] + crow[j + 1])) - cnd * c) * ih2
            U[p, j + 1] = _fp(c, a0, a1, a2, a3) - K * lap
    else:
        for j in range(1, n1 - 1):
            c = crow[j]
            lap = (((_tx(mrow[j], okm, bvalue) + _tx(prow[j], okp, bvalue))
                    + (crow[j - 1] + crow[j + 1])) - cnd * c) * ih2
            U[p, j + 1] = _fp(c, a0, a1, a2, a3) - K * lap
    # μ ring columns: same address map, border value μ_wall
    b = A1[1]
    U[p, 0] = U[p, b + 1] if b >= 0 else muw
    b = A1[n1 + 2]
    U[p, n1 + 1] = U[p, b + 1] if b >= 0 else muw


@njit(**_JIT)
def texture_stage_2d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    n0, n1 = src.shape
    if hi <= lo:
        return
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
    A0 = address_map(n0, bcode)
    A1 = address_map(n1, bcode)
    t0 = max(1, min(tile[0], hi - lo))
    nt = (hi - lo + t0 - 1) // t0
    for t in prange(nt):
        i0 = lo + t * t0
        i1 = min(i0 + t0, hi)
        ni = i1 - i0
        U = np.empty((ni + 2, n1 + 2), dtype=src.dtype)
        for p in range(ni + 2):
            _mu_row_2d(src, U, p, A0[i0 + p + 1], A0, A1, n1, bvalue, muw,
                       K, a0, a1, a2, a3, ih2, cnd)
        for p in range(ni):
            orow = out[i0 + p]
            brow = base[i0 + p]
            for j in range(n1):
                lap = (((U[p, j + 1] + U[p + 2, j + 1]) + (U[p + 1, j] + U[p + 1, j + 2]))
                       - cnd * U[p + 1, j + 1]) * ih2
                orow[j] = brow[j] + coef * (M * lap)


@njit(**_JIT)
def texture_stage_3d(src, base, out, coef, params, bcode, bvalue, lo, hi, tile):
    n0, n1, n2 = src.shape
    if hi <= lo:
        return
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
    A0 = address_map(n0, bcode)
    A1 = address_map(n1, bcode)
    A2 = address_map(n2, bcode)
    t0 = max(1, min(tile[0], hi - lo))
    nt = (hi - lo + t0 - 1) // t0
    for t in prange(nt):
        i0 = lo + t * t0
        i1 = min(i0 + t0, hi)
        ni = i1 - i0
        U = np.empty((ni + 2, n1 + 2, n2 + 2), dtype=src.dtype)
        for p in range(ni + 2):
            am = A0[i0 + p + 1]
            if am < 0:
                U[p, :, :] = muw
                continue
            im = A0[am + 1]
            ip = A0[am + 3]
            for q in range(n1 + 2):
                b = A1[q + 1]       # μ cell column j = q-1 -> address A1[j+2]
                if b < 0:
                    for r in range(n2 + 2):
                        U[p, q, r] = muw
                    continue
                jm = A1[b + 1]
                jp = A1[b + 3]
                ok0m = im >= 0
                ok0p = ip >= 0
                ok1m = jm >= 0
                ok1p = jp >= 0
                crow = src[am, b]
                r0m = src[im, b]
                r0p = src[ip, b]
                r1m = src[am, jm]
                r1p = src[am, jp]
                for r in range(n2):
                    c = crow[r]
                    km = A2[r + 1]
                    kp = A2[r + 3]
                    lap = ((((_tx(r0m[r], ok0m, bvalue) + _tx(r0p[r], ok0p, bvalue))
                             + (_tx(r1m[r], ok1m, bvalue) + _tx(r1p[r], ok1p, bvalue)))
                            + (_tx(crow[km], km >= 0, bvalue) + _tx(crow[kp], kp >= 0, bvalue)))
                           - cnd * c) * ih2
                    U[p, q, r + 1] = _fp(c, a0, a1, a2, a3) - K * lap
                kb = A2[1]
                U[p, q, 0] = U[p, q, kb + 1] if kb >= 0 else muw
                kb = A2[n2 + 2]
                U[p, q, n2 + 1] = U[p, q, kb + 1] if kb >= 0 else muw
        for p in range(ni):
            for q in range(n1):
                orow = out[i0 + p, q]
                brow = base[i0 + p, q]
                for r in range(n2):
                    lap = ((((U[p, q + 1, r + 1] + U[p + 2, q + 1, r + 1])
                             + (U[p + 1, q, r + 1] + U[p + 1, q + 2, r + 1]))
                            + (U[p + 1, q + 1, r] + U[p + 1, q + 1, r + 2]))
                           - cnd * U[p + 1, q + 1, r + 1]) * ih2
                    orow[r] = brow[r] + coef * (M * lap)


STAGES = {
    ("global", 1): global_stage_1d, ("global", 2): global_stage_2d, ("global", 3): global_stage_3d,
    ("shared", 1): shared_stage_1d, ("shared", 2): shared_stage_2d, ("shared", 3): shared_stage_3d,
    ("texture", 1): texture_stage_1d, ("texture", 2): texture_stage_2d,
    ("texture", 3): texture_stage_3d,
    ("combined", 1): combined_stage_1d, ("combined", 2): combined_stage_2d,
    ("combined", 3): combined_stage_3d,
}


def get_stage(kernel: str, ndim: int):
    """The stage function of strategy ``kernel`` for ``ndim`` dimensions."""
    if kernel not in STRATEGIES:
        raise ValueError(f"unknown field kernel {kernel!r}; choose one of {', '.join(STRATEGIES)}")
    if ndim not in (1, 2, 3):
        raise ValueError(f"field kernels support 1, 2 or 3 dimensions, not {ndim}")
    return STAGES[(kernel, ndim)]
