"""CUDA kernels (numba-cuda) for the Cahn–Hilliard field engine.

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

import functools
import math

import numpy as np
import numba
from numba import cuda

from .model import Boundary, CahnHilliard, Grid

#: True when numba.cuda is the simulator
SIMULATOR = bool(numba.config.ENABLE_CUDASIM)

PERIODIC, MIRROR, FIXED = 0, 1, 2
KERNELS = ("global", "shared", "texture", "combined")
LAYOUTS = ("modern", "seed")

#: default thread-block shapes (x = last axis fastest), per (kernel family, layout, ndim).
#: Chosen from the H100 measurements in docs/field-gpu.md; ``block="auto"`` tunes instead.
DEFAULT_BLOCK = {
    ("direct", 1): (256,),
    ("direct", 2): (32, 8),
    ("direct", 3): (32, 4, 4),
    ("modern", 1): (256,),
    ("modern", 2): (32, 8),
    ("modern", 3): (32, 4, 4),
    ("seed", 1): (256,),
    ("seed", 2): (16, 16),
    ("seed", 3): (16, 8, 8),
}


# --------------------------------------------------------------------------------------------
# read-only cached load
# --------------------------------------------------------------------------------------------
def _make_nc_load():
    """``ldnc(array, (k, j, i))``: a ``ld.global.nc`` load; plain indexing under the simulator."""
    if SIMULATOR:
        return None
    try:
        from numba.cuda.cache_hints import ld_cache_operator

        return ld_cache_operator("nc")
    except Exception:  # pragma: no cover - older numba-cuda
        return None


_LDNC = _make_nc_load()
#: whether kernel C/D really emit ld.global.nc (False under the simulator)
HAVE_NC_LOADS = _LDNC is not None


def _make_loader(nc: bool):
    if nc and _LDNC is not None:
        ldnc = _LDNC

        @cuda.jit(device=True)
        def load(a, k, j, i):
            return ldnc(a, (k, j, i))
    else:

        @cuda.jit(device=True)
        def load(a, k, j, i):
            return a[k, j, i]

    return load


def _make_map(bc: int):
    """Address mode for an index within 2 cells of the domain: wrap / mirror / clamp.

    The final clamp keeps tile cells that lie beyond a non-multiple domain end in range (their
    values are never used)."""
    if bc == PERIODIC:

        @cuda.jit(device=True)
        def amap(i, n):
            if i < 0:
                i += n
            elif i >= n:
                i -= n
            if i < 0:
                i = 0
            elif i >= n:
                i = n - 1
            return i
    elif bc == MIRROR:

        @cuda.jit(device=True)
        def amap(i, n):
            if i < 0:
                i = -1 - i
            elif i >= n:
                i = 2 * n - 1 - i
            if i < 0:
                i = 0
            elif i >= n:
                i = n - 1
            return i
    else:

        @cuda.jit(device=True)
        def amap(i, n):
            if i < 0:
                i = 0
            elif i >= n:
                i = n - 1
            return i

    return amap


def _make_phi_at(nd: int, bc: int, nc: bool):
    """φ at (k, j, i), each active index within 2 cells of the domain, by address mode."""
    load = _make_loader(nc)
    amap = _make_map(bc)
    a0, a1 = nd >= 3, nd >= 2
    fixed = bc == FIXED

    @cuda.jit(device=True)
    def phi_at(src, k, j, i, n0, n1, n2, vphi):
        if fixed:
            outside = i < 0 or i >= n2
            if a1:
                outside = outside or j < 0 or j >= n1
            if a0:
                outside = outside or k < 0 or k >= n0
            if outside:
                return vphi
            return load(src, k, j, i)
        ii = amap(i, n2)
        jj = j
        kk = k
        if a1:
            jj = amap(j, n1)
        if a0:
            kk = amap(k, n0)
        return load(src, kk, jj, ii)

    return phi_at


# --------------------------------------------------------------------------------------------
# kernels A and C: direct loads
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def direct_kernel(nd: int, bc: int, nc: bool):
    """Kernel A (``nc=False``) or C (``nc=True``). Launch with a (bx, by, bz) block over the cells
    of the slice; the first active axis is offset by ``lo`` and bounded by ``hi``."""
    phi_at = _make_phi_at(nd, bc, nc)
    a0, a1 = nd >= 3, nd >= 2
    fixed = bc == FIXED

    @cuda.jit(device=True)
    def mu_at(src, k, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu):
        # μ at a cell at most one step outside the domain along one axis
        if fixed:
            outside = i < 0 or i >= n2
            if a1:
                outside = outside or j < 0 or j >= n1
            if a0:
                outside = outside or k < 0 or k >= n0
            if outside:
                return vmu
        c = phi_at(src, k, j, i, n0, n1, n2, vphi)
        s = phi_at(src, k, j, i - 1, n0, n1, n2, vphi) + phi_at(src, k, j, i + 1, n0, n1, n2, vphi)
        if a1:
            s += phi_at(src, k, j - 1, i, n0, n1, n2, vphi) + phi_at(src, k, j + 1, i, n0, n1, n2, vphi)
        if a0:
            s += phi_at(src, k - 1, j, i, n0, n1, n2, vphi) + phi_at(src, k + 1, j, i, n0, n1, n2, vphi)
        fp = c0 + c * (c1 + c * (c2 + c * c3))
        return fp - kh2 * (s - nd2 * c)

    @cuda.jit
    def kernel(src, base, out, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu):
        n0, n1, n2 = src.shape
        i = cuda.blockIdx.x * cuda.blockDim.x + cuda.threadIdx.x
        j = cuda.blockIdx.y * cuda.blockDim.y + cuda.threadIdx.y
        k = cuda.blockIdx.z * cuda.blockDim.z + cuda.threadIdx.z
        if a0:
            k += lo
            if k >= hi or j >= n1 or i >= n2:
                return
        elif a1:
            j += lo
            if j >= hi or i >= n2 or k >= n0:
                return
        else:
            i += lo
            if i >= hi or j >= n1 or k >= n0:
                return
        m = mu_at(src, k, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)
        s = mu_at(src, k, j, i - 1, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu) + mu_at(
            src, k, j, i + 1, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)
        if a1:
            s += mu_at(src, k, j - 1, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu) + mu_at(
                src, k, j + 1, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)
        if a0:
            s += mu_at(src, k - 1, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu) + mu_at(
                src, k + 1, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)
        out[k, j, i] = base[k, j, i] + coef * (mh2 * (s - nd2 * m))

    return kernel


# --------------------------------------------------------------------------------------------
# kernels B and D: shared-memory tiles
# --------------------------------------------------------------------------------------------
def _block3(block, nd):
    b = tuple(int(x) for x in block)
    if len(b) != nd:
        raise ValueError(f"block {block!r} must have {nd} entries (x = last axis first)")
    return b + (1,) * (3 - nd)


@functools.lru_cache(maxsize=None)
def modern_kernel(nd: int, bc: int, nc: bool, block: tuple, dtype: str):
    """Kernel B/D, modern layout: block (BX,BY,BZ) threads update BX×BY×BZ cells; the φ tile
    (block + 2-cell halo) is loaded cooperatively, μ is computed for tile + 1 ring in shared
    memory, then every thread updates its cell."""
    phi_at = _make_phi_at(nd, bc, nc)
    BX, BY, BZ = _block3(block, nd)
    a0, a1 = nd >= 3, nd >= 2
    HY = 2 if a1 else 0
    HZ = 2 if a0 else 0
    TX, TY, TZ = BX + 4, BY + 2 * HY, BZ + 2 * HZ  # φ tile
    MX, MY, MZ = BX + 2, BY + HY, BZ + HZ  # μ tile (block + 1 ring on active axes)
    OY, OZ = HY // 2, HZ // 2
    NT = BX * BY * BZ
    NPHI = TX * TY * TZ
    NMU = MX * MY * MZ
    ftype = numba.float32 if dtype == "float32" else numba.float64
    fixed = bc == FIXED

    @cuda.jit
    def kernel(src, base, out, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu):
        sphi = cuda.shared.array((TZ, TY, TX), ftype)
        smu = cuda.shared.array((MZ, MY, MX), ftype)
        n0, n1, n2 = src.shape
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tz = cuda.threadIdx.z
        tid = (tz * BY + ty) * BX + tx
        i0 = cuda.blockIdx.x * BX
        j0 = cuda.blockIdx.y * BY
        k0 = cuda.blockIdx.z * BZ
        if a0:
            k0 += lo
        elif a1:
            j0 += lo
        else:
            i0 += lo
        # 1. cooperative load of the φ tile with its 2-cell halo
        for t in range(tid, NPHI, NT):
            x = t % TX
            r = t // TX
            y = r % TY
            z = r // TY
            sphi[z, y, x] = phi_at(src, k0 - HZ + z, j0 - HY + y, i0 - 2 + x, n0, n1, n2, vphi)
        cuda.syncthreads()
        # 2. μ on the block + 1 ring
        for t in range(tid, NMU, NT):
            x = t % MX
            r = t // MX
            y = r % MY
            z = r // MY
            px, py, pz = x + 1, y + OY, z + OZ  # position in the φ tile
            c = sphi[pz, py, px]
            s = sphi[pz, py, px - 1] + sphi[pz, py, px + 1]
            if a1:
                s += sphi[pz, py - 1, px] + sphi[pz, py + 1, px]
            if a0:
                s += sphi[pz - 1, py, px] + sphi[pz + 1, py, px]
            m = c0 + c * (c1 + c * (c2 + c * c3)) - kh2 * (s - nd2 * c)
            if fixed:
                gi = i0 - 1 + x
                outside = gi < 0 or gi >= n2
                if a1:
                    gj = j0 - OY + y
                    outside = outside or gj < 0 or gj >= n1
                if a0:
                    gk = k0 - OZ + z
                    outside = outside or gk < 0 or gk >= n0
                if outside:
                    m = vmu
            smu[z, y, x] = m
        cuda.syncthreads()
        # 3. update
        i = i0 + tx
        j = j0 + ty
        k = k0 + tz
        if a0:
            if k >= hi or j >= n1 or i >= n2:
                return
        elif a1:
            if j >= hi or i >= n2 or k >= n0:
                return
        else:
            if i >= hi or j >= n1 or k >= n0:
                return
        x, y, z = tx + 1, ty + OY, tz + OZ
        m = smu[z, y, x]
        s = smu[z, y, x - 1] + smu[z, y, x + 1]
        if a1:
            s += smu[z, y - 1, x] + smu[z, y + 1, x]
        if a0:
            s += smu[z - 1, y, x] + smu[z + 1, y, x]
        out[k, j, i] = base[k, j, i] + coef * (mh2 * (s - nd2 * m))

    return kernel


@functools.lru_cache(maxsize=None)
def seed_kernel(nd: int, bc: int, nc: bool, block: tuple, dtype: str):
    """Kernel B/D, seed layout (Hawick & Playne): a block of TX×TY×TZ threads loads one φ each
    (tile = block, 2-cell halo), and only the core (block − 4 per active axis) updates, reading
    its 13/25 values from shared memory."""
    phi_at = _make_phi_at(nd, bc, nc)
    TX, TY, TZ = _block3(block, nd)
    a0, a1 = nd >= 3, nd >= 2
    HY = 2 if a1 else 0
    HZ = 2 if a0 else 0
    CX, CY, CZ = TX - 4, TY - 2 * HY, TZ - 2 * HZ  # updating core
    if min(CX, CY, CZ) < 1:
        raise ValueError(f"seed layout needs more than 4 threads per active axis, got {block}")
    ftype = numba.float32 if dtype == "float32" else numba.float64
    fixed = bc == FIXED

    @cuda.jit(device=True)
    def smu_at(sphi, z, y, x, gk, gj, gi, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu):
        if fixed:
            outside = gi < 0 or gi >= n2
            if a1:
                outside = outside or gj < 0 or gj >= n1
            if a0:
                outside = outside or gk < 0 or gk >= n0
            if outside:
                return vmu
        c = sphi[z, y, x]
        s = sphi[z, y, x - 1] + sphi[z, y, x + 1]
        if a1:
            s += sphi[z, y - 1, x] + sphi[z, y + 1, x]
        if a0:
            s += sphi[z - 1, y, x] + sphi[z + 1, y, x]
        return c0 + c * (c1 + c * (c2 + c * c3)) - kh2 * (s - nd2 * c)

    @cuda.jit
    def kernel(src, base, out, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu):
        sphi = cuda.shared.array((TZ, TY, TX), ftype)
        n0, n1, n2 = src.shape
        x = cuda.threadIdx.x
        y = cuda.threadIdx.y
        z = cuda.threadIdx.z
        i = cuda.blockIdx.x * CX + x - 2
        j = cuda.blockIdx.y * CY + y - HY
        k = cuda.blockIdx.z * CZ + z - HZ
        if a0:
            k += lo
        elif a1:
            j += lo
        else:
            i += lo
        sphi[z, y, x] = phi_at(src, k, j, i, n0, n1, n2, vphi)
        cuda.syncthreads()
        core = x >= 2 and x < TX - 2
        if a1:
            core = core and y >= 2 and y < TY - 2
        if a0:
            core = core and z >= 2 and z < TZ - 2
        if not core:
            return
        if a0:
            if k >= hi or j >= n1 or i >= n2:
                return
        elif a1:
            if j >= hi or i >= n2 or k >= n0:
                return
        else:
            if i >= hi or j >= n1 or k >= n0:
                return
        m = smu_at(sphi, z, y, x, k, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu)
        s = smu_at(sphi, z, y, x - 1, k, j, i - 1, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu) + smu_at(
            sphi, z, y, x + 1, k, j, i + 1, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu)
        if a1:
            s += smu_at(sphi, z, y - 1, x, k, j - 1, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu) + smu_at(
                sphi, z, y + 1, x, k, j + 1, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu)
        if a0:
            s += smu_at(sphi, z - 1, y, x, k - 1, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu) + smu_at(
                sphi, z + 1, y, x, k + 1, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu)
        out[k, j, i] = base[k, j, i] + coef * (mh2 * (s - nd2 * m))

    return kernel


# --------------------------------------------------------------------------------------------
# launch plans
# --------------------------------------------------------------------------------------------
def view3(shape):
    """The 3-D view shape of a 1/2/3-D field."""
    shape = tuple(int(n) for n in shape)
    return (1,) * (3 - len(shape)) + shape


class StagePlan:
    """A compiled stage kernel plus its launch geometry for one (shape, slice, block)."""

    def __init__(self, kernel: str, ndim: int, shape3, bc: int, dtype, *, layout="modern",
                 block=None, lo=0, hi=None):
        if kernel not in KERNELS:
            raise ValueError(f"unknown kernel {kernel!r}; choose from {KERNELS}")
        if layout not in LAYOUTS:
            raise ValueError(f"unknown layout {layout!r}; choose from {LAYOUTS}")
        self.kernel_name, self.ndim, self.bc = kernel, ndim, bc
        self.dtype = np.dtype(dtype)
        self.shape3 = tuple(shape3)
        n_first = self.shape3[3 - ndim]
        self.lo = int(lo)
        self.hi = n_first if hi is None else int(hi)
        nc = kernel in ("texture", "combined")
        tiled = kernel in ("shared", "combined")
        self.layout = layout if tiled else "direct"
        if block is None:
            block = DEFAULT_BLOCK[(self.layout, ndim)]
        self.block = tuple(int(b) for b in block)
        b3 = _block3(self.block, ndim)
        if self.layout == "direct":
            self.fn = direct_kernel(ndim, bc, nc)
            core = b3
        elif self.layout == "modern":
            self.fn = modern_kernel(ndim, bc, nc, self.block, self.dtype.name)
            core = b3
        else:
            self.fn = seed_kernel(ndim, bc, nc, self.block, self.dtype.name)
            core = (b3[0] - 4, b3[1] - (4 if ndim >= 2 else 0), b3[2] - (4 if ndim >= 3 else 0))
        ext = list(self.shape3[::-1])  # (n2, n1, n0) = x, y, z extents
        ext[ndim - 1] = max(self.hi - self.lo, 0)  # the sliced (first active) axis
        self.griddim = tuple(max(1, math.ceil(e / c)) for e, c in zip(ext, core))
        self.blockdim = b3
        self.configured = self.fn[self.griddim, self.blockdim]

    def __call__(self, src, base, out, coef, scal):
        """``scal`` = (mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu) in the array dtype."""
        if self.hi <= self.lo:
            return
        self.configured(src, base, out, self.lo, self.hi, self.dtype.type(coef), *scal)


def stage_scalars(model: CahnHilliard, grid: Grid, boundary: Boundary, dtype):
    """(M/h², κ/h², 2d, a0, a1, a2, a3, φ_fixed, μ_fixed) as scalars of ``dtype``."""
    t = np.dtype(dtype).type
    h2 = float(grid.spacing) ** 2
    a0, a1, a2, a3 = (float(c) for c in model.coefficients)
    v = float(boundary.value)
    return (t(model.mobility / h2), t(model.kappa / h2), t(2 * grid.ndim), t(a0), t(a1), t(a2),
            t(a3), t(v), t(float(model.fprime(v))))


def stage(kernel, src, base, out, coef, model: CahnHilliard, grid: Grid, boundary: Boundary, *,
          lo=0, hi=None, block=None, layout="modern"):
    """Device twin of the CPU stage: ``out[lo:hi] = base[lo:hi] + coef * R(src)[lo:hi]``.

    ``src``, ``base``, ``out``: device arrays of the field shape (1/2/3-D, C-contiguous, one
    dtype). Convenience entry point (builds a :class:`StagePlan` each call, cached kernels);
    the solver keeps its plans."""
    shape = tuple(src.shape)
    s3 = view3(shape)
    plan = StagePlan(kernel, len(shape), s3, boundary.code, src.dtype, layout=layout,
                     block=block, lo=lo, hi=hi)
    r = (lambda a: a.reshape(s3)) if len(shape) != 3 else (lambda a: a)
    plan(r(src), r(base), r(out), coef, stage_scalars(model, grid, boundary, src.dtype))


# --------------------------------------------------------------------------------------------
# reductions: mass, free energy, min, max (float64 accumulation, two-pass)
# --------------------------------------------------------------------------------------------
RED_THREADS = 256


@functools.lru_cache(maxsize=None)
def reduction_kernel(nd: int, bc: int):
    """Per-block partial sums: [Σφ, Σf(φ), Σ_axes Σ (forward difference)², min φ, max φ]."""
    a0, a1 = nd >= 3, nd >= 2
    NTH = RED_THREADS

    @cuda.jit
    def kernel(phi, partial, c0, c1, c2, c3, v):
        s_phi = cuda.shared.array(NTH, numba.float64)
        s_f = cuda.shared.array(NTH, numba.float64)
        s_g = cuda.shared.array(NTH, numba.float64)
        s_mn = cuda.shared.array(NTH, numba.float64)
        s_mx = cuda.shared.array(NTH, numba.float64)
        n0, n1, n2 = phi.shape
        total = n0 * n1 * n2
        tid = cuda.threadIdx.x
        acc_phi = numba.float64(0)
        acc_f = numba.float64(0)
        acc_g = numba.float64(0)
        mn = numba.float64(math.inf)
        mx = numba.float64(-math.inf)
        t = cuda.blockIdx.x * NTH + tid
        stride = cuda.gridDim.x * NTH
        while t < total:
            i = t % n2
            r = t // n2
            j = r % n1
            k = r // n1
            p = numba.float64(phi[k, j, i])
            acc_phi += p
            acc_f += p * (c0 + p * (c1 + p * (c2 + p * c3)))
            mn = min(mn, p)
            mx = max(mx, p)
            # forward differences along each active axis
            if i + 1 < n2:
                d = numba.float64(phi[k, j, i + 1]) - p
            elif bc == PERIODIC:
                d = numba.float64(phi[k, j, 0]) - p
            elif bc == MIRROR:
                d = numba.float64(0)
            else:
                d = v - p
            acc_g += d * d
            if bc == FIXED and i == 0:
                acc_g += (p - v) * (p - v)
            if a1:
                if j + 1 < n1:
                    d = numba.float64(phi[k, j + 1, i]) - p
                elif bc == PERIODIC:
                    d = numba.float64(phi[k, 0, i]) - p
                elif bc == MIRROR:
                    d = numba.float64(0)
                else:
                    d = v - p
                acc_g += d * d
                if bc == FIXED and j == 0:
                    acc_g += (p - v) * (p - v)
            if a0:
                if k + 1 < n0:
                    d = numba.float64(phi[k + 1, j, i]) - p
                elif bc == PERIODIC:
                    d = numba.float64(phi[0, j, i]) - p
                elif bc == MIRROR:
                    d = numba.float64(0)
                else:
                    d = v - p
                acc_g += d * d
                if bc == FIXED and k == 0:
                    acc_g += (p - v) * (p - v)
            t += stride
        s_phi[tid] = acc_phi
        s_f[tid] = acc_f
        s_g[tid] = acc_g
        s_mn[tid] = mn
        s_mx[tid] = mx
        cuda.syncthreads()
        w = NTH // 2
        while w > 0:
            if tid < w:
                s_phi[tid] += s_phi[tid + w]
                s_f[tid] += s_f[tid + w]
                s_g[tid] += s_g[tid + w]
                s_mn[tid] = min(s_mn[tid], s_mn[tid + w])
                s_mx[tid] = max(s_mx[tid], s_mx[tid + w])
            cuda.syncthreads()
            w //= 2
        if tid == 0:
            b = cuda.blockIdx.x
            partial[b, 0] = s_phi[0]
            partial[b, 1] = s_f[0]
            partial[b, 2] = s_g[0]
            partial[b, 3] = s_mn[0]
            partial[b, 4] = s_mx[0]

    return kernel


def reduction_blocks(cells: int) -> int:
    cap = 8 if SIMULATOR else 1024
    return max(1, min(cap, math.ceil(cells / RED_THREADS)))


def reductions(phi3, model: CahnHilliard, grid: Grid, boundary: Boundary, partial=None):
    """mass (mean φ), free energy, min, max of a device field given as its 3-D view."""
    nd = grid.ndim
    cells = int(np.prod(phi3.shape))
    nb = reduction_blocks(cells)
    if partial is None or partial.shape[0] != nb:
        partial = cuda.device_array((nb, 5), dtype=np.float64)
    a0, a1, a2, a3 = (float(c) for c in model.coefficients)
    kern = reduction_kernel(nd, boundary.code)
    kern[nb, RED_THREADS](phi3, partial, a0, a1 / 2.0, a2 / 3.0, a3 / 4.0, float(boundary.value))
    p = partial.copy_to_host()
    h = float(grid.spacing)
    sum_phi, sum_f, sum_g = (float(x) for x in p[:, :3].sum(axis=0))
    energy = h ** nd * (sum_f + 0.5 * float(model.kappa) * sum_g / (h * h))
    return {"mass": sum_phi / cells, "free_energy": energy, "min": float(p[:, 3].min()),
            "max": float(p[:, 4].max())}
