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
  the whole array; μ is recomputed at the centre and its 2d neighbours (no reuse). Interior cells
  read without branches; cells within two of an edge go through explicit boundary index logic.
* ``shared`` (kernel B): cache-blocked tiles. Each task copies its tile plus a 2-cell halo into a
  small private buffer (the "shared memory"), filling the halo with explicit ghost logic, computes μ
  on the tile plus a 1-cell ring, then updates the core. The tile sizes need not divide the grid.
* ``texture`` (kernel C): no ghost cells and no tiles of φ: all φ reads go through per-axis address
  maps (``address_map``: wrap / mirror / clamp-to-border, like texture address modes; a
  ``-1`` address reads the border value) and μ is kept in a band of rows (the "texture cache").
* ``combined`` (kernel D): texture-style addressed loads fill the tile buffer, then as ``shared``.

Parallelism: a fixed set of ``prange`` workers, each claiming tasks (tiles for
``shared``/``combined``, row bands for ``texture``, blocks of rows for ``global``) one at a time
from a shared atomic counter (``_claim``), so a thread that loses its core holds up only its current
task (numba's OpenMP layer would otherwise give every thread a fixed equal share). Workers allocate
their scratch buffers once. The contiguous last axis is always the innermost loop.
"""
from __future__ import annotations

import numpy as np
from llvmlite import ir as llir
from numba import njit, prange
from numba.core import types
from numba.extending import intrinsic

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
def _tx(x, ok, bv):
    return x if ok else bv


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


# ------------------------------------------------------------------------- dynamic scheduling
# numba's threading layers hand each thread an equal, contiguous share of a prange (the OpenMP
# layer uses a static ``omp for``). On a loaded machine a thread that loses its core then holds up
# the whole stage. Every parallel kernel below therefore runs ``prange`` over one worker per thread
# and the workers *claim* tasks (tiles, bands, row blocks) from a shared counter with an atomic
# fetch-and-add: a stalled thread only delays the task it holds. A worker also allocates its
# scratch buffers once, not once per task.

@intrinsic
def _claim(typingctx, counter):
    """``t = counter[0]; counter[0] += 1; return t`` as one atomic operation (int64 array)."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64):
        return None
    sig = types.int64(counter)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.atomic_rmw("add", ary.data, llir.Constant(llir.IntType(64), 1), "seq_cst")

    return sig, codegen


#: upper bound on the workers of one stage (>= any numba thread count used here). ``prange``
#: hands each thread an equal share of the workers; the first worker a thread runs claims tasks
#: until none is left, the others find the counter exhausted and return at once. (Asking numba
#: for the thread count inside a kernel would make the kernel uncacheable.)
_MAX_WORKERS = 256


@njit(cache=True, inline="always")
def _workers(ntasks):
    return max(1, min(_MAX_WORKERS, ntasks))


#: cells per task for the row-block kernels (``global``): enough work to hide the claim, and
#: many more tasks than threads
_TASK_CELLS = 16384


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
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
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
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
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
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
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
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
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
    M, K, a0, a1, a2, a3, ih2, cnd = (params[0], params[1], params[2], params[3], params[4],
                                      params[5], params[6], params[7])
    muw = _fp(bvalue, a0, a1, a2, a3)
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
