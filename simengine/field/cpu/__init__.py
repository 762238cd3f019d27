"""CPU (numba, parallel) stage kernels of the Cahn–Hilliard operator: four memory strategies.

Modules: ``common`` (index maps, f', task claim), ``direct`` (``global``), ``tiled``
(``shared``, ``combined``), ``texture``.

Stage contract (the CUDA twins in :mod:`simengine.field.cuda` mirror it argument for argument)
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

Strategies (mirroring the four GPU kernels A–D of :mod:`simengine.field.cuda`)
-------------------------------------------------------------------

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

from ..params import make_params  # noqa: F401  (one packing for every backend)
from .common import DEFAULT_TILES, STRATEGIES, address_map, default_tile  # noqa: F401
from .direct import global_stage_1d, global_stage_2d, global_stage_3d
from .texture import texture_stage_1d, texture_stage_2d, texture_stage_3d
from .tiled import (combined_stage_1d, combined_stage_2d, combined_stage_3d, shared_stage_1d,
                    shared_stage_2d, shared_stage_3d)

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
