"""Constants of the CUDA field kernels: boundary codes, kernel names, default launch shapes
(measured on H100/H200, docs/field-gpu.md)."""
from __future__ import annotations

import numba

#: True when numba.cuda is the simulator
SIMULATOR = bool(numba.config.ENABLE_CUDASIM)

PERIODIC, MIRROR, FIXED = 0, 1, 2
KERNELS = ("global", "shared", "texture", "combined")
LAYOUTS = ("modern", "seed")
#: default shared-memory layout per dimension (H100: seed 7–20 % faster in 2-D, modern 1.4–2.2×
#: faster in 3-D; docs/field-gpu.md)
DEFAULT_LAYOUT = {1: "modern", 2: "seed", 3: "modern"}

#: default thread-block shapes (x = last axis fastest), per (kernel family, layout, ndim).
#: Chosen from the H100 measurements in docs/field-gpu.md; ``block="auto"`` tunes instead.
DEFAULT_BLOCK = {
    ("direct", 1): (256,),
    ("direct", 2): (32, 4),
    ("direct", 3): (32, 4, 2),
    ("modern", 1): (256,),
    ("modern", 2): (64, 8),
    ("modern", 3): (32, 4, 4),
    ("seed", 1): (256,),
    ("seed", 2): (32, 16),
    ("seed", 3): (16, 8, 8),
}


#: cells per thread of the direct kernels (A, C) per dimension (measured, docs/field-gpu.md)
DEFAULT_CPT = {1: 1, 2: 4, 3: 1}

#: march length (rows in 2-D / planes in 3-D walked by one thread, :func:`march_kernel`) of the
#: direct kernels per dimension; 0 = the non-marching kernel (:func:`direct_kernel`)
DEFAULT_MARCH = {1: 0, 2: 0, 3: 32}
#: thread blocks of the marching kernels (x first; the last entry spans march chunks)
DEFAULT_MARCH_BLOCK = {2: (128, 1), 3: (32, 4, 1)}
#: the default 3-D march of kernels A/C per (dtype, ndim): planes per block of the shared-memory
#: marching kernel (smarch.py: a block of threads marches an in-plane tile with shared φ/μ plane
#: rings); absent = the register queue of march.py (``DEFAULT_MARCH``). H100 (2026-11-24
#: night, flat shared access): fp64 512³ 2.18 ms per step (2 rows/thread) against 3.09 for the
#: register march; fp32 512³ 1.29 against 2.09, 256³ 0.175 against 0.282. An explicit
#: ``march`` selects the register form unless ``smarch=True``.
DEFAULT_SMARCH = {("float64", 3): 64, ("float32", 3): 64}
#: thread block of the shared-memory marching kernel (x first; the in-plane tile)
DEFAULT_SMARCH_BLOCK = (32, 8, 1)
#: planes of φ loads in flight per thread of the shared-memory marching kernel (1 or 2;
#: ``StageLaunch(unroll=)`` for that kernel)
DEFAULT_SMARCH_AHEAD = 2
#: output rows per thread along y of the shared-memory marching kernel (1 or 2: a BX×BY thread
#: block computes a BX × BY·rows in-plane tile); ``StageLaunch(smarch_rows=)``
DEFAULT_SMARCH_ROWS = 1
#: ... and 2 rows per thread on grids (or slabs) of at least this many cells, per dtype, when no
#: block is given. H100 (2026-11-24 night): fp64 512³ 2.18 ms (82.9–84.0 % of the honest
#: roofline) against 2.37 (76.4 %) with 1 row; 256³ 0.324 against 0.296 ms with 64 planes per
#: block (80 registers leave 3 resident blocks per SM: 512 blocks are 1.3 waves), but with 48
#: planes (smarch.smarch_planes, 2026-11-25) 0.284 — so 2 rows from 2²⁴ cells; fp32 (64
#: registers with 2 rows) wins at both sizes: 512³ 1.29 against 1.46 ms, 256³ 0.175 against
#: 0.222
SMARCH_ROWS2_MIN_CELLS = {"float64": 1 << 24, "float32": 0}
#: stage 1 of the shared-memory marching kernel (base is src) reads the own cell's base value
#: from the shared φ ring instead of global memory; ``StageLaunch(smarch_ring_base=)``
DEFAULT_SMARCH_RING_BASE = False
#: the shared φ/μ rings of smarch.py through flat loads/stores (no negative-index wraparound
#: per access); False: numba's array indexing (the form measured before 2026-11-24 night)
DEFAULT_SMARCH_FLAT = True
#: planes a marching thread loads ahead (all loads of U planes issued before their updates)
DEFAULT_MARCH_UNROLL = 1

#: 2-D pair kernel (:func:`vec_kernel`: 2 cells along x × rows per thread, pair loads) per
#: dtype: 2 = on, 0 = the scalar direct kernel; used when neither ``cpt`` nor ``march`` is given
DEFAULT_VEC = {"float32": 2, "float64": 0}
#: rows per thread and thread block (x = pairs first) of the pair kernel
DEFAULT_VEC_ROWS = 4
DEFAULT_VEC_BLOCK = (32, 4)
