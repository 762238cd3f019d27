"""CUDA kernels (numba-cuda) for the Cahn–Hilliard field engine.

Modules: ``config`` (codes, default launch shapes), ``access`` (flat loads/stores), ``stencil``
(address modes, μ and R device functions), ``direct``, ``vec``, ``march`` (kernels A/C),
``tiled`` (B/D), ``smarch`` (3-D shared-memory march), ``physics`` (μ and the boundary index
rules of the fused forms), ``fused_launch`` (their launch side), ``fused_frame`` and
``fused_warp`` (the fused RK2 forms; ``fused_slab``: a slab's pipelined step), ``occupancy``, ``plan`` (``StageLaunch``),
``launch`` (the fast launch path, the only module
using numba-cuda private API), ``reduce`` (partials), ``twins`` (CPU-signature stages).

Every kernel computes one explicit stage on a slice ``lo:hi`` of axis 0::

    out[lo:hi] = base[lo:hi] + coef * R(src)[lo:hi],   R = M lap(μ),  μ = f'(φ) − κ lap(φ)

exactly as :func:`simengine.field.reference.stage`. Strategies (``solver.kernel``):

``global``   (A) every thread loads its 13 (2D) / 25 (3D) stencil values from global memory
             (coalesced along the last axis), boundary by index logic, μ at the 1+2d points
             recomputed in registers.
``texture``  (C) as A but every load is a read-only cached load (``ld.global.nc``, what CUDA's
             ``__ldg``/texture path uses); the boundary is address arithmetic as a texture's address
             modes would do it: wrap (periodic), mirror (edge-duplicating reflection), border
             (fixed) — no ghost cells.
``shared``   (B) tiles with a 2-cell halo in shared memory. ``layout="modern"`` (default):
             cooperative halo loads, μ computed once for the tile + 1 ring in shared memory, every
             thread updates one cell. ``layout="seed"``: the seed paper's layout, one load per
             thread, only the core (block − 4 per active axis, 12×12 for a 16×16 block) updates.
``combined`` (D) texture-style (``ld.global.nc``) loads into shared tiles, either layout.

Implementation notes
--------------------
* All kernels work on 3-D views ``(n0, n1, n2)``: a 1-D field is ``(1, 1, n)``, a 2-D field
  ``(1, n0, n1)``. The number of active axes ``ND`` is a compile-time constant of each kernel
  (the kernels are built by factories and cached), so the inactive axes cost nothing.
* Arithmetic happens in the array precision: all float parameters are passed as scalars of the
  array dtype and the kernels contain no float literals (which would promote fp32 to fp64).
* Boundary codes (see :data:`simengine.field.model.BOUNDARY_CODE`): 0 periodic, 1 mirror,
  2 fixed. With the edge-duplicating reflection at depth 2 (φ₋₁=φ₀, φ₋₂=φ₁) the μ computed in
  the first ghost ring already equals the mirrored μ, and periodic wrap is exact, so only
  ``fixed`` overrides μ in ghost cells with f'(value).
* Under the CUDA simulator (``NUMBA_ENABLE_CUDASIM=1``) the ``ld.global.nc`` loads fall back to
  plain indexing.
"""
from __future__ import annotations

from ..params import stage_scalars  # noqa: F401  (one packing for every backend)
from .access import HAVE_NC_LOADS, LD, LD2, LDNC, LDNC2, ST, ST2  # noqa: F401
from .config import *  # noqa: F401,F403
from .config import KERNELS, LAYOUTS, SIMULATOR  # noqa: F401
from . import graph  # noqa: F401
from .direct import direct_kernel  # noqa: F401
from .march import march_kernel  # noqa: F401
from .smarch import smarch_kernel  # noqa: F401
from .plan import StageLaunch, stage, view3  # noqa: F401
from .reduce import (RED_THREADS, field_partials, launch_partials, partials_of,  # noqa: F401
                     reduction_blocks, reduction_kernel, reductions)
from .tiled import modern_kernel, seed_kernel  # noqa: F401
from .twins import get_stage  # noqa: F401
from .twins import *  # noqa: F401,F403
from .vec import VEC_ROWS, vec_kernel  # noqa: F401
