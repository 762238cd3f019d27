"""Kernels A/C, 2-D pair form: a thread updates 2 columns × R rows with pair loads."""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from .access import LD, LD2, LDNC, LDNC2, ST, ST2
from .stencil import _make_rhs_fast, _make_rhs_slow
from .physics import mu


# --------------------------------------------------------------------------------------------
# kernels A and C, 2-D pair form: a thread owns a register tile of 2 columns (x) × R rows (y)
# --------------------------------------------------------------------------------------------
def _vec_fast_source(R: int) -> str:
    """Straight-line source of the interior tile update (code-generated, fully unrolled).

    Tile: columns x0, x0+1 (x0 even), rows j … j+R−1. φ is needed at rows j−2 … j+R+1 and
    columns x0−2 … x0+3: the 2 outer rows take one pair load (x0, x0+1), the next 2 rows a pair
    plus 2 scalars (x0−1, x0+2), the R tile rows 3 pair loads — 3R + 8 load instructions for 2R
    cells (the 4-row scalar kernel: 28 for 4). μ is computed once per point of the tile + 1 ring
    (4R + 4), R = M lap μ per cell; loads → μ → updates, every value in registers."""
    L = ["def fast(src, base, out, g, sy, coef, mh2, kh2, nd2, c0, c1, c2, c3):"]
    f = {}
    for r in range(R + 4):  # r = row offset + 2
        o = f"g + {r - 2} * sy"
        if r in (0, R + 3):
            L.append(f"    f{r}_2, f{r}_3 = LOAD2(src, {o})")
            cols = (2, 3)
        elif r in (1, R + 2):
            L.append(f"    f{r}_1 = LOAD(src, {o} - 1)")
            L.append(f"    f{r}_2, f{r}_3 = LOAD2(src, {o})")
            L.append(f"    f{r}_4 = LOAD(src, {o} + 2)")
            cols = (1, 2, 3, 4)
        else:
            L.append(f"    f{r}_0, f{r}_1 = LOAD2(src, {o} - 2)")
            L.append(f"    f{r}_2, f{r}_3 = LOAD2(src, {o})")
            L.append(f"    f{r}_4, f{r}_5 = LOAD2(src, {o} + 2)")
            cols = range(6)
        f[r] = set(cols)
    # μ at rows 1 … R+2: columns 2, 3 on the ring rows, 1 … 4 on the tile rows
    for r in range(1, R + 3):
        cols = (2, 3) if r in (1, R + 2) else (1, 2, 3, 4)
        for c in cols:
            L.append(f"    m{r}_{c} = MU(f{r}_{c}, (f{r}_{c - 1} + f{r}_{c + 1}) + "
                     f"(f{r - 1}_{c} + f{r + 1}_{c}), kh2, nd2, c0, c1, c2, c3)")
    for r in range(2, R + 2):
        o = f"g + {r - 2} * sy"
        L.append(f"    b0, b1 = LD2(base, {o})")
        for c in (2, 3):
            L.append(f"    r{c} = mh2 * (((m{r}_{c - 1} + m{r}_{c + 1}) + (m{r - 1}_{c} + "
                     f"m{r + 1}_{c})) - nd2 * m{r}_{c})")
        L.append(f"    ST2(out, {o}, b0 + coef * r2, b1 + coef * r3)")
    return "\n".join(L) + "\n"


#: rows per thread of the 2-D pair kernel (:func:`vec_kernel`), allowed values
VEC_ROWS = (1, 2, 4, 8)


@functools.lru_cache(maxsize=None)
def vec_kernel(bc: int, nc: bool, dtype: str = "float32", rows: int = 4):
    """Kernel A/C, 2-D, pair form (``StageLaunch(..., vec=2)``): a thread updates a register tile of
    2 consecutive cells along x × ``rows`` consecutive rows with 64-bit (fp32) / 128-bit (fp64)
    pair loads and stores (``ld.global.nc.v2`` for C). Launch with (BX, BY) threads: BX pairs
    (2·BX columns) × BY·rows rows. Tiles at least 2 cells from every boundary (and inside the
    slice) take the unrolled pair path; the others update their cells one by one through the
    address-mode path of :func:`direct_kernel`. The pair path assumes an even row length and
    buffers aligned to 2 elements (``StageLaunch`` falls back to :func:`direct_kernel` otherwise)."""
    if rows not in VEC_ROWS:
        raise ValueError(f"rows per thread of the pair kernel must be one of {VEC_ROWS}")
    R = int(rows)
    rhs_slow = _make_rhs_slow(2, bc, nc)
    rhs_fast = _make_rhs_fast(2, nc)
    del dtype


    ns = {"LOAD2": LDNC2 if nc else LD2, "LOAD": LDNC if nc else LD, "LD2": LD2, "ST2": ST2,
          "MU": mu}
    exec(compile(_vec_fast_source(R), f"<vec_kernel rows={R}>", "exec"), ns)
    fast = cuda.jit(device=True)(ns["fast"])

    @cuda.jit
    def kernel(src, base, out, n0, n1, n2, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2, c3, vphi,
               vmu):
        x0 = (numba.int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x) * 2
        j = (numba.int64(cuda.blockIdx.y) * cuda.blockDim.y + cuda.threadIdx.y) * R + lo
        if x0 >= n2 or j >= hi:
            return
        sy = n2
        if (x0 >= 2 and x0 + 4 <= n2 and j >= 2 and j + R + 2 <= n1 and j + R <= hi
                and (n2 & 1) == 0):
            fast(src, base, out, j * sy + x0, sy, coef, mh2, kh2, nd2, c0, c1, c2, c3)
            return
        for r in range(R):
            jj = j + r
            if jj < hi:
                for c in range(2):
                    i = x0 + c
                    if i < n2:
                        if i >= 2 and i < n2 - 2 and jj >= 2 and jj < n1 - 2:
                            v = rhs_fast(src, jj * sy + i, sy, sy * n1, mh2, kh2, nd2, c0, c1,
                                         c2, c3)
                        else:
                            v = rhs_slow(src, 0, jj, i, n0, n1, n2, mh2, kh2, nd2, c0, c1, c2,
                                         c3, vphi, vmu)
                        g = jj * sy + i
                        ST(out, g, LD(base, g) + coef * v)

    return kernel
