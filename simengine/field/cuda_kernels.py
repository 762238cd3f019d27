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
#: planes a marching thread loads ahead (all loads of U planes issued before their updates)
DEFAULT_MARCH_UNROLL = 1

#: 2-D pair kernel (:func:`vec_kernel`: 2 cells along x × rows per thread, pair loads) per
#: dtype: 2 = on, 0 = the scalar direct kernel; used when neither ``cpt`` nor ``march`` is given
DEFAULT_VEC = {"float32": 2, "float64": 0}
#: rows per thread and thread block (x = pairs first) of the pair kernel
DEFAULT_VEC_ROWS = 4
DEFAULT_VEC_BLOCK = (32, 4)


# --------------------------------------------------------------------------------------------
# flat loads / stores without numba's index overhead
# --------------------------------------------------------------------------------------------
# The kernels index flat (1-D) buffers with an int64 offset. numba's own ``a[i]`` adds a
# negative-index wraparound per access; the intrinsics below emit a bare address computation and
# either a plain load or ``ld.global.nc`` (the read-only/texture data path, CUDA's ``__ldg``).
def _make_access():
    if SIMULATOR:

        @cuda.jit(device=True)
        def ld(a, i):
            return a[i]

        @cuda.jit(device=True)
        def ldnc(a, i):
            return a[i]

        @cuda.jit(device=True)
        def st(a, i, v):
            a[i] = v

        return ld, ldnc, st, False

    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    def _ld(nc):
        @intrinsic
        def impl(typingctx, arr, idx):
            sig = arr.dtype(arr, idx)

            def codegen(context, builder, sig, args):
                aty = sig.args[0]
                ary = context.make_array(aty)(context, builder, value=args[0])
                ptr = builder.gep(ary.data, [args[1]])
                if not nc:
                    return builder.load(ptr)
                llty = context.get_value_type(aty.dtype)
                bw = aty.dtype.bitwidth
                fnty = ir.FunctionType(llty, [llty.as_pointer()])
                asm = ir.InlineAsm(fnty, f"ld.global.nc.f{bw} $0, [$1];",
                                   "=f,l" if bw == 32 else "=d,l")
                return builder.call(asm, [ptr])

            return sig, codegen

        return impl

    @intrinsic
    def st(typingctx, arr, idx, val):
        sig = types.void(arr, idx, arr.dtype)

        def codegen(context, builder, sig, args):
            aty = sig.args[0]
            ary = context.make_array(aty)(context, builder, value=args[0])
            builder.store(args[2], builder.gep(ary.data, [args[1]]))
            return context.get_dummy_value()

        return sig, codegen

    return _ld(False), _ld(True), st, True


LD, LDNC, ST, HAVE_NC_LOADS = _make_access()


def _make_access2():
    """Pair loads / stores of two consecutive elements ``a[i], a[i+1]`` (``i`` even, the buffer
    aligned to 2 elements): ``ld.global.nc.v2.f32/.f64`` (LDNC2), a plain 8/16-byte vector load
    (LD2) and store (ST2) — one instruction for two cells along x."""
    if SIMULATOR:

        @cuda.jit(device=True)
        def ld2(a, i):
            return a[i], a[i + 1]

        @cuda.jit(device=True)
        def st2(a, i, v0, v1):
            a[i] = v0
            a[i + 1] = v1

        return ld2, ld2, st2

    from llvmlite import ir
    from numba import types
    from numba.cuda.extending import intrinsic

    def _ld2(nc):
        @intrinsic
        def impl(typingctx, arr, idx):
            sig = types.UniTuple(arr.dtype, 2)(arr, idx)

            def codegen(context, builder, sig, args):
                aty = sig.args[0]
                ary = context.make_array(aty)(context, builder, value=args[0])
                ptr = builder.gep(ary.data, [args[1]])
                llty = context.get_value_type(aty.dtype)
                bw = aty.dtype.bitwidth
                if nc:
                    c = "f" if bw == 32 else "d"
                    fnty = ir.FunctionType(ir.LiteralStructType([llty, llty]),
                                           [llty.as_pointer()])
                    asm = ir.InlineAsm(fnty, f"ld.global.nc.v2.f{bw} {{$0, $1}}, [$2];",
                                       f"={c},={c},l")
                    res = builder.call(asm, [ptr])
                    v0 = builder.extract_value(res, 0)
                    v1 = builder.extract_value(res, 1)
                else:
                    vty = ir.VectorType(llty, 2)
                    vec = builder.load(builder.bitcast(ptr, vty.as_pointer()), align=bw // 4)
                    v0 = builder.extract_element(vec, ir.Constant(ir.IntType(32), 0))
                    v1 = builder.extract_element(vec, ir.Constant(ir.IntType(32), 1))
                return context.make_tuple(builder, sig.return_type, [v0, v1])

            return sig, codegen

        return impl

    @intrinsic
    def st2(typingctx, arr, idx, v0, v1):
        sig = types.void(arr, idx, arr.dtype, arr.dtype)

        def codegen(context, builder, sig, args):
            aty = sig.args[0]
            ary = context.make_array(aty)(context, builder, value=args[0])
            ptr = builder.gep(ary.data, [args[1]])
            llty = context.get_value_type(aty.dtype)
            vty = ir.VectorType(llty, 2)
            vec = ir.Constant(vty, ir.Undefined)
            vec = builder.insert_element(vec, args[2], ir.Constant(ir.IntType(32), 0))
            vec = builder.insert_element(vec, args[3], ir.Constant(ir.IntType(32), 1))
            builder.store(vec, builder.bitcast(ptr, vty.as_pointer()),
                          align=aty.dtype.bitwidth // 4)
            return context.get_dummy_value()

        return sig, codegen

    return _ld2(False), _ld2(True), st2


LD2, LDNC2, ST2 = _make_access2()
#: HAVE_NC_LOADS: whether kernels C/D really emit ld.global.nc (False under the simulator)


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
            return min(max(i, 0), n - 1)
    elif bc == MIRROR:

        @cuda.jit(device=True)
        def amap(i, n):
            if i < 0:
                i = -1 - i
            elif i >= n:
                i = 2 * n - 1 - i
            return min(max(i, 0), n - 1)
    else:

        @cuda.jit(device=True)
        def amap(i, n):
            return min(max(i, 0), n - 1)

    return amap


def _make_phi_at(nd: int, bc: int, nc: bool):
    """φ at (k, j, i) of a flat field, each active index within 2 cells of the domain, by
    address mode (wrap / mirror / border value for fixed)."""
    load = LDNC if nc else LD
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
        ii = amap(i, n2)
        jj = j
        kk = k
        if a1:
            jj = amap(j, n1)
        if a0:
            kk = amap(k, n0)
        return load(src, (kk * n1 + jj) * n2 + ii)

    return phi_at


def _make_mu_at(nd: int, bc: int, nc: bool):
    """Slow path: μ at a cell at most one step outside the domain along one axis."""
    phi_at = _make_phi_at(nd, bc, nc)
    a0, a1 = nd >= 3, nd >= 2
    fixed = bc == FIXED

    @cuda.jit(device=True)
    def mu_at(src, k, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu):
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
        return c0 + c * (c1 + c * (c2 + c * c3)) - kh2 * (s - nd2 * c)

    return mu_at


def _make_rhs_slow(nd: int, bc: int, nc: bool):
    mu_at = _make_mu_at(nd, bc, nc)
    a0, a1 = nd >= 3, nd >= 2

    @cuda.jit(device=True)
    def rhs_slow(src, k, j, i, n0, n1, n2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu):
        m = mu_at(src, k, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)
        s = mu_at(src, k, j, i - 1, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu) + mu_at(
            src, k, j, i + 1, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)
        if a1:
            s += mu_at(src, k, j - 1, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu) + mu_at(
                src, k, j + 1, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)
        if a0:
            s += mu_at(src, k - 1, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu) + mu_at(
                src, k + 1, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)
        return mh2 * (s - nd2 * m)

    return rhs_slow


def _make_rhs_fast(nd: int, nc: bool):
    """Interior fast path: the 5/13/25 stencil values loaded by flat offset, μ at the 1 + 2d
    points, R = M lap(μ).

    Every μ is evaluated with one canonical expression ``mu(φ, (x− + x+) + (y− + y+) + (z− + z+))``
    so that, when a thread updates consecutive rows (``cpt`` > 1) with plain loads, the compiler
    can share loads and μ values between the rows (common-subexpression elimination)."""
    load = LDNC if nc else LD
    a0, a1 = nd >= 3, nd >= 2

    @cuda.jit(device=True)
    def mu(p, s, kh2, nd2, c0, c1, c2, c3):
        return c0 + p * (c1 + p * (c2 + p * c3)) - kh2 * (s - nd2 * p)

    @cuda.jit(device=True)
    def rhs_fast(src, c, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3):
        p = load(src, c)
        xm = load(src, c - 1)
        xp = load(src, c + 1)
        xm2 = load(src, c - 2)
        xp2 = load(src, c + 2)
        sc = xm + xp
        sxm = xm2 + p
        sxp = p + xp2
        ym = p
        yp = p
        zm = p
        zp = p
        sym = p
        syp = p
        szm = p
        szp = p
        if a1:
            ym = load(src, c - sy)
            yp = load(src, c + sy)
            ym2 = load(src, c - 2 * sy)
            yp2 = load(src, c + 2 * sy)
            xmym = load(src, c - sy - 1)
            xpym = load(src, c - sy + 1)
            xmyp = load(src, c + sy - 1)
            xpyp = load(src, c + sy + 1)
            sc = sc + (ym + yp)
            sxm = sxm + (xmym + xmyp)
            sxp = sxp + (xpym + xpyp)
            sym = (xmym + xpym) + (ym2 + p)
            syp = (xmyp + xpyp) + (p + yp2)
        if a0:
            zm = load(src, c - sz)
            zp = load(src, c + sz)
            zm2 = load(src, c - 2 * sz)
            zp2 = load(src, c + 2 * sz)
            xmzm = load(src, c - sz - 1)
            xpzm = load(src, c - sz + 1)
            xmzp = load(src, c + sz - 1)
            xpzp = load(src, c + sz + 1)
            ymzm = load(src, c - sz - sy)
            ypzm = load(src, c - sz + sy)
            ymzp = load(src, c + sz - sy)
            ypzp = load(src, c + sz + sy)
            sc = sc + (zm + zp)
            sxm = sxm + (xmzm + xmzp)
            sxp = sxp + (xpzm + xpzp)
            sym = sym + (ymzm + ymzp)
            syp = syp + (ypzm + ypzp)
            szm = ((xmzm + xpzm) + (ymzm + ypzm)) + (zm2 + p)
            szp = ((xmzp + xpzp) + (ymzp + ypzp)) + (p + zp2)
        mc = mu(p, sc, kh2, nd2, c0, c1, c2, c3)
        s = mu(xm, sxm, kh2, nd2, c0, c1, c2, c3) + mu(xp, sxp, kh2, nd2, c0, c1, c2, c3)
        if a1:
            s += mu(ym, sym, kh2, nd2, c0, c1, c2, c3) + mu(yp, syp, kh2, nd2, c0, c1, c2, c3)
        if a0:
            s += mu(zm, szm, kh2, nd2, c0, c1, c2, c3) + mu(zp, szp, kh2, nd2, c0, c1, c2, c3)
        return mh2 * (s - nd2 * mc)

    return rhs_fast


# --------------------------------------------------------------------------------------------
# kernels A and C: direct loads
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def direct_kernel(nd: int, bc: int, nc: bool, dtype: str = "float64", cpt: int = 1):
    """Kernel A (``nc=False``) or C (``nc=True``). Launch with a (bx, by, bz) block over the cells
    of the slice; the first active axis is offset by ``lo`` and bounded by ``hi``. Cells at least
    2 away from every boundary take the register fast path, the others the address-mode path.

    ``cpt`` (1, 2 or 4) cells per thread: consecutive rows (y) in 2-D/3-D, cells ``blockDim.x``
    apart in 1-D. All loads of a thread's cells are issued before its stores, which puts more
    bytes in flight per thread (fp32 needs it to approach the memory roofline) and lets
    neighbouring rows share loads."""
    if cpt not in (1, 2, 4):
        raise ValueError("cells per thread must be 1, 2 or 4")
    rhs_fast = _make_rhs_fast(nd, nc)
    rhs_slow = _make_rhs_slow(nd, bc, nc)
    a0, a1 = nd >= 3, nd >= 2
    CPT = cpt
    del dtype  # one dispatcher per dtype (keeps the fast launch path to one overload)

    @cuda.jit(device=True)
    def valid(k, j, i, n0, n1, n2, hi):
        if a0:
            return k < hi and j < n1 and i < n2
        if a1:
            return j < hi and i < n2 and k < n0
        return i < hi and j < n1 and k < n0

    @cuda.jit(device=True)
    def inner(k, j, i, n0, n1, n2):
        ok = i >= 2 and i < n2 - 2
        if a1:
            ok = ok and j >= 2 and j < n1 - 2
        if a0:
            ok = ok and k >= 2 and k < n0 - 2
        return ok

    @cuda.jit(device=True)
    def cell_rhs(src, k, j, i, n0, n1, n2, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu):
        if inner(k, j, i, n0, n1, n2):
            return rhs_fast(src, k * sz + j * sy + i, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3)
        return rhs_slow(src, k, j, i, n0, n1, n2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)

    @cuda.jit
    def kernel(src, base, out, n0, n1, n2, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2, c3, vphi,
               vmu):
        if a1:
            i = numba.int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x
            j = (numba.int64(cuda.blockIdx.y) * cuda.blockDim.y + cuda.threadIdx.y) * CPT
            di, dj = 0, 1
        else:
            i = numba.int64(cuda.blockIdx.x) * (cuda.blockDim.x * CPT) + cuda.threadIdx.x
            j = numba.int64(cuda.blockIdx.y) * cuda.blockDim.y + cuda.threadIdx.y
            di, dj = numba.int64(cuda.blockDim.x), 0
        k = numba.int64(cuda.blockIdx.z) * cuda.blockDim.z + cuda.threadIdx.z
        if a0:
            k += lo
        elif a1:
            j += lo
        else:
            i += lo
        sy = n2
        sz = n1 * n2
        zero = coef - coef
        r0 = zero
        r1 = zero
        r2 = zero
        r3 = zero
        # whole column interior and valid: one straight-line block (rows share loads and μ)
        last = CPT - 1
        col = valid(k, j + last * dj, i + last * di, n0, n1, n2, hi) and inner(
            k, j, i, n0, n1, n2) and inner(k, j + last * dj, i + last * di, n0, n1, n2)
        if col:
            g = k * sz + j * sy + i
            dg = dj * sy + di
            r0 = rhs_fast(src, g, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3)
            if CPT >= 2:
                r1 = rhs_fast(src, g + dg, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3)
            if CPT >= 4:
                r2 = rhs_fast(src, g + 2 * dg, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3)
                r3 = rhs_fast(src, g + 3 * dg, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3)
            ST(out, g, LD(base, g) + coef * r0)
            if CPT >= 2:
                ST(out, g + dg, LD(base, g + dg) + coef * r1)
            if CPT >= 4:
                ST(out, g + 2 * dg, LD(base, g + 2 * dg) + coef * r2)
                ST(out, g + 3 * dg, LD(base, g + 3 * dg) + coef * r3)
            return
        ok0 = valid(k, j, i, n0, n1, n2, hi)
        if ok0:
            r0 = cell_rhs(src, k, j, i, n0, n1, n2, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)
        ok1 = False
        ok2 = False
        ok3 = False
        if CPT >= 2:
            ok1 = valid(k, j + dj, i + di, n0, n1, n2, hi)
            if ok1:
                r1 = cell_rhs(src, k, j + dj, i + di, n0, n1, n2, sy, sz, mh2, kh2, nd2, c0, c1,
                              c2, c3, vphi, vmu)
        if CPT >= 4:
            ok2 = valid(k, j + 2 * dj, i + 2 * di, n0, n1, n2, hi)
            if ok2:
                r2 = cell_rhs(src, k, j + 2 * dj, i + 2 * di, n0, n1, n2, sy, sz, mh2, kh2, nd2,
                              c0, c1, c2, c3, vphi, vmu)
            ok3 = valid(k, j + 3 * dj, i + 3 * di, n0, n1, n2, hi)
            if ok3:
                r3 = cell_rhs(src, k, j + 3 * dj, i + 3 * di, n0, n1, n2, sy, sz, mh2, kh2, nd2,
                              c0, c1, c2, c3, vphi, vmu)
        g = k * sz + j * sy + i
        dg = dj * sy + di
        if ok0:
            ST(out, g, LD(base, g) + coef * r0)
        if ok1:
            ST(out, g + dg, LD(base, g + dg) + coef * r1)
        if ok2:
            ST(out, g + 2 * dg, LD(base, g + 2 * dg) + coef * r2)
        if ok3:
            ST(out, g + 3 * dg, LD(base, g + 3 * dg) + coef * r3)

    return kernel


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
    """Kernel A/C, 2-D, pair form (``StagePlan(..., vec=2)``): a thread updates a register tile of
    2 consecutive cells along x × ``rows`` consecutive rows with 64-bit (fp32) / 128-bit (fp64)
    pair loads and stores (``ld.global.nc.v2`` for C). Launch with (BX, BY) threads: BX pairs
    (2·BX columns) × BY·rows rows. Tiles at least 2 cells from every boundary (and inside the
    slice) take the unrolled pair path; the others update their cells one by one through the
    address-mode path of :func:`direct_kernel`. The pair path assumes an even row length and
    buffers aligned to 2 elements (``StagePlan`` falls back to :func:`direct_kernel` otherwise)."""
    if rows not in VEC_ROWS:
        raise ValueError(f"rows per thread of the pair kernel must be one of {VEC_ROWS}")
    R = int(rows)
    rhs_slow = _make_rhs_slow(2, bc, nc)
    rhs_fast = _make_rhs_fast(2, nc)
    del dtype

    @cuda.jit(device=True)
    def mu(p, s, kh2, nd2, c0, c1, c2, c3):
        return c0 + p * (c1 + p * (c2 + p * c3)) - kh2 * (s - nd2 * p)

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


# --------------------------------------------------------------------------------------------
# kernels A and C, marching form: one thread walks a column along the slowest axis
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def march_kernel(nd: int, bc: int, nc: bool, dtype: str = "float64", length: int = 32,
                 unroll: int = 4):
    """Kernel A/C in marching form (2.5-D blocking with a register queue), 2-D and 3-D.

    A thread owns one in-plane position — x in 2-D, (y, x) in 3-D — and walks ``length``
    consecutive rows (2-D) / planes (3-D) along axis 0, the slowest one. It keeps in registers
    φ of its own column at planes k, k+1, φ of the 2 (2-D) / 4 (3-D) in-plane ±1 neighbour
    columns at planes k−1, k, and its own μ at k−1, k. Per plane it loads only φ(k+2) of its
    column, the ±1 neighbours at k+1 and the in-plane ring of radius 2 at k (2-D: 1 + 2 + 2 = 5
    loads, 3-D: 1 + 4 + 8 = 13, instead of 13 / 25), computes μ(k+1) of its column and μ of the
    in-plane neighbours at k, and updates cell k. The in-plane addresses (wrap / mirror / clamped
    for fixed) are computed once per thread, the plane address once per plane; ``fixed`` selects
    φ = v for points outside the domain and μ = f'(v) for outside columns/planes. Each φ value of
    the marched axis is thus loaded once per plane instead of 5 (2-D) / 9 (3-D) times."""
    if nd not in (2, 3):
        raise ValueError("the marching kernel is 2-D or 3-D")
    L = int(length)
    if L < 1:
        raise ValueError("march length must be >= 1")
    U = int(unroll)
    if U not in (1, 2, 4):
        raise ValueError("march unroll must be 1, 2 or 4")
    load = LDNC if nc else LD
    amap = _make_map(bc)
    a0 = nd >= 3
    fixed = bc == FIXED
    del dtype

    @cuda.jit(device=True)
    def mu(p, s, kh2, nd2, c0, c1, c2, c3):
        return c0 + p * (c1 + p * (c2 + p * c3)) - kh2 * (s - nd2 * p)

    @cuda.jit(device=True)
    def val(src, g, outside, vphi):
        v = load(src, g)
        if fixed:
            if outside:
                v = vphi
        return v

    @cuda.jit(device=True)
    def fetch(src, base, k, nm, P, o, f, vphi):
        """The values plane k's update needs beyond the queues: φ(k+2) of the column, the ±1
        neighbours at k+1, the radius-2 in-plane ring at k, and base at k."""
        pp1 = amap(k + 1, nm) * P
        pp2 = amap(k + 2, nm) * P
        p0 = k * P
        gp1 = False
        gp2 = False
        if fixed:
            gp1 = k + 1 >= nm
            gp2 = k + 2 >= nm
        c_p2 = val(src, pp2 + o[0], gp2, vphi)
        xm_p1 = val(src, pp1 + o[1], gp1 or f[0], vphi)
        xp_p1 = val(src, pp1 + o[2], gp1 or f[1], vphi)
        xm2 = val(src, p0 + o[3], f[2], vphi)
        xp2 = val(src, p0 + o[4], f[3], vphi)
        b = LD(base, p0 + o[0])
        ym_p1 = b
        yp_p1 = b
        ym2 = b
        yp2 = b
        xmym = b
        xpym = b
        xmyp = b
        xpyp = b
        if a0:
            ym_p1 = val(src, pp1 + o[5], gp1 or f[4], vphi)
            yp_p1 = val(src, pp1 + o[6], gp1 or f[5], vphi)
            ym2 = val(src, p0 + o[7], f[6], vphi)
            yp2 = val(src, p0 + o[8], f[7], vphi)
            xmym = val(src, p0 + o[9], f[0] or f[4], vphi)
            xpym = val(src, p0 + o[10], f[1] or f[4], vphi)
            xmyp = val(src, p0 + o[11], f[0] or f[5], vphi)
            xpyp = val(src, p0 + o[12], f[1] or f[5], vphi)
        return (c_p2, xm_p1, xp_p1, xm2, xp2, b, ym_p1, yp_p1, ym2, yp2, xmym, xpym, xmyp, xpyp)

    @cuda.jit(device=True)
    def step(q, v, k, nm, f, mh2, kh2, nd2, c0, c1, c2, c3, coef, vmu):
        """Update of plane k from the queues ``q`` and the fetched values ``v``; returns the
        shifted queues and the new value of the cell."""
        c_0, c_p1, xm_m1, xm_0, xp_m1, xp_0, ym_m1, ym_0, yp_m1, yp_0, mu_m1, mu_0 = q
        c_p2, xm_p1, xp_p1, xm2, xp2, b, ym_p1, yp_p1, ym2, yp2, xmym, xpym, xmyp, xpyp = v
        s_p1 = xm_p1 + xp_p1
        sxm = (xm2 + c_0) + (xm_m1 + xm_p1)
        sxp = (c_0 + xp2) + (xp_m1 + xp_p1)
        sym = c_0
        syp = c_0
        if a0:
            s_p1 = s_p1 + (ym_p1 + yp_p1)
            sxm = sxm + (xmym + xmyp)
            sxp = sxp + (xpym + xpyp)
            sym = ((xmym + xpym) + (ym2 + c_0)) + (ym_m1 + ym_p1)
            syp = ((xmyp + xpyp) + (c_0 + yp2)) + (yp_m1 + yp_p1)
        mu_p1 = mu(c_p1, s_p1 + (c_0 + c_p2), kh2, nd2, c0, c1, c2, c3)
        m_xm = mu(xm_0, sxm, kh2, nd2, c0, c1, c2, c3)
        m_xp = mu(xp_0, sxp, kh2, nd2, c0, c1, c2, c3)
        if fixed:
            if k + 1 >= nm:
                mu_p1 = vmu
            if f[0]:
                m_xm = vmu
            if f[1]:
                m_xp = vmu
        s = m_xm + m_xp
        if a0:
            m_ym = mu(ym_0, sym, kh2, nd2, c0, c1, c2, c3)
            m_yp = mu(yp_0, syp, kh2, nd2, c0, c1, c2, c3)
            if fixed:
                if f[4]:
                    m_ym = vmu
                if f[5]:
                    m_yp = vmu
            s = s + (m_ym + m_yp)
        r = mh2 * ((s + (mu_m1 + mu_p1)) - nd2 * mu_0)
        q2 = (c_p1, c_p2, xm_0, xm_p1, xp_0, xp_p1, ym_0, ym_p1, yp_0, yp_p1, mu_0, mu_p1)
        return q2, b + coef * r

    @cuda.jit
    def kernel(src, base, out, n0, n1, n2, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2, c3, vphi,
               vmu):
        i = numba.int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x
        if a0:
            j = numba.int64(cuda.blockIdx.y) * cuda.blockDim.y + cuda.threadIdx.y
            ch = numba.int64(cuda.blockIdx.z) * cuda.blockDim.z + cuda.threadIdx.z
            nm = n0
            P = n1 * n2
        else:
            j = numba.int64(0)
            ch = numba.int64(cuda.blockIdx.y) * cuda.blockDim.y + cuda.threadIdx.y
            nm = n1
            P = n2
        if i >= n2 or j >= n1:
            return
        kb = lo + ch * L
        if kb >= hi:
            return
        ke = min(kb + L, hi)
        sy = n2
        F = False
        # in-plane addresses and (fixed) outside flags, once per thread
        im1 = amap(i - 1, n2)
        ip1 = amap(i + 1, n2)
        im2 = amap(i - 2, n2)
        ip2 = amap(i + 2, n2)
        row = j * sy
        oc = row + i
        oxm = row + im1
        oxp = row + ip1
        oxm2 = row + im2
        oxp2 = row + ip2
        fxm = F
        fxp = F
        fxm2 = F
        fxp2 = F
        if fixed:
            fxm = i - 1 < 0
            fxp = i + 1 >= n2
            fxm2 = i - 2 < 0
            fxp2 = i + 2 >= n2
        oym = oc
        oyp = oc
        oym2 = oc
        oyp2 = oc
        oxmym = oc
        oxpym = oc
        oxmyp = oc
        oxpyp = oc
        fym = F
        fyp = F
        fym2 = F
        fyp2 = F
        if a0:
            jm1 = amap(j - 1, n1) * sy
            jp1 = amap(j + 1, n1) * sy
            oym = jm1 + i
            oyp = jp1 + i
            oym2 = amap(j - 2, n1) * sy + i
            oyp2 = amap(j + 2, n1) * sy + i
            oxmym = jm1 + im1
            oxpym = jm1 + ip1
            oxmyp = jp1 + im1
            oxpyp = jp1 + ip1
            if fixed:
                fym = j - 1 < 0
                fyp = j + 1 >= n1
                fym2 = j - 2 < 0
                fyp2 = j + 2 >= n1
        # prime the queues at k = kb
        pm2 = amap(kb - 2, nm) * P
        pm1 = amap(kb - 1, nm) * P
        p0 = kb * P
        pp1 = amap(kb + 1, nm) * P
        gm2 = F
        gm1 = F
        gp1 = F
        if fixed:
            gm2 = kb - 2 < 0
            gm1 = kb - 1 < 0
            gp1 = kb + 1 >= nm
        c_m2 = val(src, pm2 + oc, gm2, vphi)
        c_m1 = val(src, pm1 + oc, gm1, vphi)
        c_0 = load(src, p0 + oc)
        c_p1 = val(src, pp1 + oc, gp1, vphi)
        xm_m1 = val(src, pm1 + oxm, gm1 or fxm, vphi)
        xp_m1 = val(src, pm1 + oxp, gm1 or fxp, vphi)
        xm_0 = val(src, p0 + oxm, fxm, vphi)
        xp_0 = val(src, p0 + oxp, fxp, vphi)
        s_m1 = xm_m1 + xp_m1
        s_0 = xm_0 + xp_0
        ym_m1 = c_0
        yp_m1 = c_0
        ym_0 = c_0
        yp_0 = c_0
        if a0:
            ym_m1 = val(src, pm1 + oym, gm1 or fym, vphi)
            yp_m1 = val(src, pm1 + oyp, gm1 or fyp, vphi)
            ym_0 = val(src, p0 + oym, fym, vphi)
            yp_0 = val(src, p0 + oyp, fyp, vphi)
            s_m1 = s_m1 + (ym_m1 + yp_m1)
            s_0 = s_0 + (ym_0 + yp_0)
        mu_m1 = mu(c_m1, s_m1 + (c_m2 + c_0), kh2, nd2, c0, c1, c2, c3)
        if fixed:
            if gm1:
                mu_m1 = vmu
        mu_0 = mu(c_0, s_0 + (c_m1 + c_p1), kh2, nd2, c0, c1, c2, c3)
        offs = (oc, oxm, oxp, oxm2, oxp2, oym, oyp, oym2, oyp2, oxmym, oxpym, oxmyp, oxpyp)
        flg = (fxm, fxp, fxm2, fxp2, fym, fyp, fym2, fyp2)
        st_ = (c_0, c_p1, xm_m1, xm_0, xp_m1, xp_0, ym_m1, ym_0, yp_m1, yp_0, mu_m1, mu_0)
        k = kb
        if U == 1:
            # one plane per iteration, written out (fewer registers than fetch/step below: on
            # the H200 0.38 vs 0.55-0.58 ms per 256³ fp64 RK2 step)
            while k < ke:
                pp1 = amap(k + 1, nm) * P
                pp2 = amap(k + 2, nm) * P
                p0 = k * P
                gp1 = F
                gp2 = F
                if fixed:
                    gp1 = k + 1 >= nm
                    gp2 = k + 2 >= nm
                c_p2 = val(src, pp2 + oc, gp2, vphi)
                xm_p1 = val(src, pp1 + oxm, gp1 or fxm, vphi)
                xp_p1 = val(src, pp1 + oxp, gp1 or fxp, vphi)
                xm2 = val(src, p0 + oxm2, fxm2, vphi)
                xp2 = val(src, p0 + oxp2, fxp2, vphi)
                s_p1 = xm_p1 + xp_p1
                sxm = (xm2 + c_0) + (xm_m1 + xm_p1)
                sxp = (c_0 + xp2) + (xp_m1 + xp_p1)
                ym_p1 = c_0
                yp_p1 = c_0
                sym = c_0
                syp = c_0
                if a0:
                    ym_p1 = val(src, pp1 + oym, gp1 or fym, vphi)
                    yp_p1 = val(src, pp1 + oyp, gp1 or fyp, vphi)
                    ym2 = val(src, p0 + oym2, fym2, vphi)
                    yp2 = val(src, p0 + oyp2, fyp2, vphi)
                    xmym = val(src, p0 + oxmym, fxm or fym, vphi)
                    xpym = val(src, p0 + oxpym, fxp or fym, vphi)
                    xmyp = val(src, p0 + oxmyp, fxm or fyp, vphi)
                    xpyp = val(src, p0 + oxpyp, fxp or fyp, vphi)
                    s_p1 = s_p1 + (ym_p1 + yp_p1)
                    sxm = sxm + (xmym + xmyp)
                    sxp = sxp + (xpym + xpyp)
                    sym = ((xmym + xpym) + (ym2 + c_0)) + (ym_m1 + ym_p1)
                    syp = ((xmyp + xpyp) + (c_0 + yp2)) + (yp_m1 + yp_p1)
                mu_p1 = mu(c_p1, s_p1 + (c_0 + c_p2), kh2, nd2, c0, c1, c2, c3)
                m_xm = mu(xm_0, sxm, kh2, nd2, c0, c1, c2, c3)
                m_xp = mu(xp_0, sxp, kh2, nd2, c0, c1, c2, c3)
                if fixed:
                    if gp1:
                        mu_p1 = vmu
                    if fxm:
                        m_xm = vmu
                    if fxp:
                        m_xp = vmu
                s = m_xm + m_xp
                if a0:
                    m_ym = mu(ym_0, sym, kh2, nd2, c0, c1, c2, c3)
                    m_yp = mu(yp_0, syp, kh2, nd2, c0, c1, c2, c3)
                    if fixed:
                        if fym:
                            m_ym = vmu
                        if fyp:
                            m_yp = vmu
                    s = s + (m_ym + m_yp)
                r = mh2 * ((s + (mu_m1 + mu_p1)) - nd2 * mu_0)
                g = p0 + oc
                ST(out, g, LD(base, g) + coef * r)
                # shift the queues
                c_0 = c_p1
                c_p1 = c_p2
                xm_m1 = xm_0
                xm_0 = xm_p1
                xp_m1 = xp_0
                xp_0 = xp_p1
                ym_m1 = ym_0
                ym_0 = ym_p1
                yp_m1 = yp_0
                yp_0 = yp_p1
                mu_m1 = mu_0
                mu_0 = mu_p1
                k += 1
            return
        if U > 1:
            # U planes per round: all loads first (U planes of bytes in flight per thread)
            while k + (U - 1) < ke:
                f0 = fetch(src, base, k, nm, P, offs, flg, vphi)
                if U >= 2:
                    f1 = fetch(src, base, k + 1, nm, P, offs, flg, vphi)
                if U >= 4:
                    f2 = fetch(src, base, k + 2, nm, P, offs, flg, vphi)
                    f3 = fetch(src, base, k + 3, nm, P, offs, flg, vphi)
                st_, v0 = step(st_, f0, k, nm, flg, mh2, kh2, nd2, c0, c1, c2, c3, coef, vmu)
                ST(out, k * P + oc, v0)
                if U >= 2:
                    st_, v1 = step(st_, f1, k + 1, nm, flg, mh2, kh2, nd2, c0, c1, c2, c3,
                                   coef, vmu)
                    ST(out, (k + 1) * P + oc, v1)
                if U >= 4:
                    st_, v2 = step(st_, f2, k + 2, nm, flg, mh2, kh2, nd2, c0, c1, c2, c3,
                                   coef, vmu)
                    ST(out, (k + 2) * P + oc, v2)
                    st_, v3 = step(st_, f3, k + 3, nm, flg, mh2, kh2, nd2, c0, c1, c2, c3,
                                   coef, vmu)
                    ST(out, (k + 3) * P + oc, v3)
                k += U
        while k < ke:
            f0 = fetch(src, base, k, nm, P, offs, flg, vphi)
            st_, v0 = step(st_, f0, k, nm, flg, mh2, kh2, nd2, c0, c1, c2, c3, coef, vmu)
            ST(out, k * P + oc, v0)
            k += 1

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
    load = LDNC if nc else LD
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
    TXY, MXY = TX * TY, MX * MY
    PX, PY, PZ = -(-TX // BX), -(-TY // BY), -(-TZ // BZ)  # φ-tile loads per thread per axis
    QX, QY, QZ = -(-MX // BX), -(-MY // BY), -(-MZ // BZ)  # μ-tile cells per thread per axis
    ftype = numba.float32 if dtype == "float32" else numba.float64
    fixed = bc == FIXED

    @cuda.jit
    def kernel(src, base, out, n0, n1, n2, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2, c3, vphi,
               vmu):
        sphi = cuda.shared.array(NPHI, ftype)
        smu = cuda.shared.array(NMU, ftype)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tz = cuda.threadIdx.z
        i0 = numba.int64(cuda.blockIdx.x) * BX
        j0 = numba.int64(cuda.blockIdx.y) * BY
        k0 = numba.int64(cuda.blockIdx.z) * BZ
        if a0:
            k0 += lo
        elif a1:
            j0 += lo
        else:
            i0 += lo
        sy = n2
        sz = n1 * n2
        # 1. cooperative load of the φ tile with its 2-cell halo
        inner = i0 >= 2 and i0 + BX + 2 <= n2
        if a1:
            inner = inner and j0 >= 2 and j0 + BY + 2 <= n1
        if a0:
            inner = inner and k0 >= 2 and k0 + BZ + 2 <= n0
        # constant trip counts (ceil(T/B) per axis), no integer division
        if inner:
            g0 = (k0 - HZ) * sz + (j0 - HY) * sy + (i0 - 2)
            for zz in range(PZ):
                z = tz + zz * BZ
                for yy in range(PY):
                    y = ty + yy * BY
                    for xx in range(PX):
                        x = tx + xx * BX
                        if z < TZ and y < TY and x < TX:
                            sphi[(z * TY + y) * TX + x] = load(src, g0 + z * sz + y * sy + x)
        else:
            for zz in range(PZ):
                z = tz + zz * BZ
                for yy in range(PY):
                    y = ty + yy * BY
                    for xx in range(PX):
                        x = tx + xx * BX
                        if z < TZ and y < TY and x < TX:
                            sphi[(z * TY + y) * TX + x] = phi_at(
                                src, k0 - HZ + z, j0 - HY + y, i0 - 2 + x, n0, n1, n2, vphi)
        cuda.syncthreads()
        # 2. μ on the block + 1 ring
        for zz in range(QZ):
            z = tz + zz * BZ
            for yy in range(QY):
                y = ty + yy * BY
                for xx in range(QX):
                    x = tx + xx * BX
                    if z >= MZ or y >= MY or x >= MX:
                        continue
                    q = (z + OZ) * TXY + (y + OY) * TX + x + 1  # position in the φ tile
                    c = sphi[q]
                    s = sphi[q - 1] + sphi[q + 1]
                    if a1:
                        s += sphi[q - TX] + sphi[q + TX]
                    if a0:
                        s += sphi[q - TXY] + sphi[q + TXY]
                    m = c0 + c * (c1 + c * (c2 + c * c3)) - kh2 * (s - nd2 * c)
                    if fixed and not inner:
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
                    smu[(z * MY + y) * MX + x] = m
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
        q = (tz + OZ) * MXY + (ty + OY) * MX + tx + 1
        m = smu[q]
        s = smu[q - 1] + smu[q + 1]
        if a1:
            s += smu[q - MX] + smu[q + MX]
        if a0:
            s += smu[q - MXY] + smu[q + MXY]
        g = k * sz + j * sy + i
        ST(out, g, LD(base, g) + coef * (mh2 * (s - nd2 * m)))

    return kernel


@functools.lru_cache(maxsize=None)
def seed_kernel(nd: int, bc: int, nc: bool, block: tuple, dtype: str):
    """Kernel B/D, seed layout (Hawick & Playne): a block of TX×TY×TZ threads loads one φ each
    (tile = block, 2-cell halo), and only the core (block − 4 per active axis) updates, reading
    its 13/25 values from shared memory."""
    phi_at = _make_phi_at(nd, bc, nc)
    load = LDNC if nc else LD
    TX, TY, TZ = _block3(block, nd)
    a0, a1 = nd >= 3, nd >= 2
    HY = 2 if a1 else 0
    HZ = 2 if a0 else 0
    CX, CY, CZ = TX - 4, TY - 2 * HY, TZ - 2 * HZ  # updating core
    if min(CX, CY, CZ) < 1:
        raise ValueError(f"seed layout needs more than 4 threads per active axis, got {block}")
    TXY = TX * TY
    NS = TX * TY * TZ
    ftype = numba.float32 if dtype == "float32" else numba.float64
    fixed = bc == FIXED

    @cuda.jit(device=True)
    def smu_at(sphi, q, gk, gj, gi, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu):
        if fixed:
            outside = gi < 0 or gi >= n2
            if a1:
                outside = outside or gj < 0 or gj >= n1
            if a0:
                outside = outside or gk < 0 or gk >= n0
            if outside:
                return vmu
        c = sphi[q]
        s = sphi[q - 1] + sphi[q + 1]
        if a1:
            s += sphi[q - TX] + sphi[q + TX]
        if a0:
            s += sphi[q - TXY] + sphi[q + TXY]
        return c0 + c * (c1 + c * (c2 + c * c3)) - kh2 * (s - nd2 * c)

    @cuda.jit
    def kernel(src, base, out, n0, n1, n2, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2, c3, vphi,
               vmu):
        sphi = cuda.shared.array(NS, ftype)
        x = cuda.threadIdx.x
        y = cuda.threadIdx.y
        z = cuda.threadIdx.z
        i = numba.int64(cuda.blockIdx.x) * CX + x - 2
        j = numba.int64(cuda.blockIdx.y) * CY + y - HY
        k = numba.int64(cuda.blockIdx.z) * CZ + z - HZ
        if a0:
            k += lo
        elif a1:
            j += lo
        else:
            i += lo
        sy = n2
        sz = n1 * n2
        q = (z * TY + y) * TX + x
        inside = i >= 0 and i < n2
        if a1:
            inside = inside and j >= 0 and j < n1
        if a0:
            inside = inside and k >= 0 and k < n0
        if inside:
            sphi[q] = load(src, k * sz + j * sy + i)
        else:
            sphi[q] = phi_at(src, k, j, i, n0, n1, n2, vphi)
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
        m = smu_at(sphi, q, k, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu)
        s = smu_at(sphi, q - 1, k, j, i - 1, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu) + smu_at(
            sphi, q + 1, k, j, i + 1, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu)
        if a1:
            s += smu_at(sphi, q - TX, k, j - 1, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu) + smu_at(
                sphi, q + TX, k, j + 1, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu)
        if a0:
            s += smu_at(sphi, q - TXY, k - 1, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu) + smu_at(
                sphi, q + TXY, k + 1, j, i, n0, n1, n2, kh2, nd2, c0, c1, c2, c3, vmu)
        g = k * sz + j * sy + i
        ST(out, g, LD(base, g) + coef * (mh2 * (s - nd2 * m)))

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
                 block=None, lo=0, hi=None, cpt=None, march=None, unroll=None, vec=None):
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
        # marching form of A/C: explicit ``march``, else the default unless ``cpt`` is given
        if self.layout != "direct" or ndim == 1:
            march = 0
        elif march is None:
            march = 0 if cpt else DEFAULT_MARCH[ndim]
        self.march = int(march)
        self.unroll = 0
        if self.march < 0:
            raise ValueError("march must be >= 0")
        # 2-D pair kernel: explicit ``vec=2``, else the per-dtype default unless ``cpt`` is given
        if self.layout != "direct" or ndim != 2 or self.march:
            vec = 0
        elif vec is None:
            vec = 0 if cpt else DEFAULT_VEC.get(self.dtype.name, 0)
        self.vec = int(vec)
        if self.vec not in (0, 2):
            raise ValueError("vec must be 0 or 2 (cells per pair load along x)")
        if self.vec and self.shape3[2] % 2:
            # odd row length: pair loads would be misaligned on every other row
            self.vec = 0
            cpt = cpt if cpt in (1, 2, 4) else None
        self._alt = None
        if block is None:
            block = (DEFAULT_MARCH_BLOCK[ndim] if self.march else
                     DEFAULT_VEC_BLOCK if self.vec else DEFAULT_BLOCK[(self.layout, ndim)])
        self.block = tuple(int(b) for b in block)
        b3 = _block3(self.block, ndim)
        if self.march:
            self.cpt = 1
            self.unroll = int(unroll or DEFAULT_MARCH_UNROLL)
            self.fn = march_kernel(ndim, bc, nc, self.dtype.name, self.march, self.unroll)
            core = (b3[0], b3[1] * self.march, 1) if ndim == 2 else (b3[0], b3[1],
                                                                     b3[2] * self.march)
        elif self.vec:
            self.cpt = int(cpt or DEFAULT_VEC_ROWS)  # rows per thread (2 cells each)
            self.fn = vec_kernel(bc, nc, self.dtype.name, self.cpt)
            core = (b3[0] * 2, b3[1] * self.cpt, 1)
        elif self.layout == "direct":
            self.cpt = int(cpt or DEFAULT_CPT[ndim])
            self.fn = direct_kernel(ndim, bc, nc, self.dtype.name, self.cpt)
            core = (b3[0] * self.cpt, b3[1], b3[2]) if ndim == 1 else (b3[0], b3[1] * self.cpt,
                                                                       b3[2])
        else:
            self.cpt = 1
        if self.layout == "direct":
            pass
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
        self._kargs, self._keep = {}, {}

    def __call__(self, src, base, out, coef, scal):
        """Launch on flat device buffers. ``scal`` = (mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)
        in the array dtype (see :func:`stage_scalars`)."""
        if self.hi <= self.lo:
            return
        n0, n1, n2 = self.shape3
        args = (src, base, out, n0, n1, n2, self.lo, self.hi, self.dtype.type(coef), *scal)
        if self._fast is not None:
            key = (id(src), id(base), id(out), coef, id(scal))
            kargs = self._kargs.get(key)
            if kargs is not None:
                self._launch(*kargs)
                return
        if self.vec and not self._aligned(src, base, out):
            self._fallback()(src, base, out, coef, scal)
            return
        if self._fast is not None:
            try:
                kargs = self._prepare(args)
            except Exception:  # pragma: no cover - numba-cuda internals changed
                self._fast = None
            else:
                if len(self._kargs) > 16:
                    self._kargs.clear()
                # keep the buffers alive as long as their prepared arguments
                self._kargs[key] = kargs
                self._keep[key] = (src, base, out, scal)
                self._launch(*kargs)
                return
        if SIMULATOR:
            # the simulator's kernel[grid, block] configures the shared kernel object in place,
            # so a plan built later for another geometry would change this plan's launch
            self.fn[self.griddim, self.blockdim](*args)
            return
        self.configured(*args)
        if self._fast is None and not SIMULATOR and len(self.fn.overloads) == 1:
            self._fast = next(iter(self.fn.overloads.values()))

    def _aligned(self, *arrays):
        """Whether every buffer starts at a multiple of 2 elements (pair loads)."""
        if SIMULATOR:
            return True
        step = 2 * self.dtype.itemsize
        for a in arrays:
            try:
                ptr = a.__cuda_array_interface__["data"][0]
            except Exception:  # pragma: no cover - not a CUDA array
                return False
            if ptr % step:
                return False
        return True

    def _fallback(self):
        """The scalar direct-kernel plan of the same stage (misaligned buffers)."""
        if self._alt is None:
            self._alt = StagePlan(self.kernel_name, self.ndim, self.shape3, self.bc, self.dtype,
                                  block=None, lo=self.lo, hi=self.hi,
                                  cpt=DEFAULT_CPT[self.ndim], march=0, vec=0)
        return self._alt

    # fast launch: numba-cuda's _Kernel.launch without re-typing and re-marshalling the arguments
    # (the three buffers rotate, so only three argument lists ever occur in a run)
    _fast = None

    def _prepare(self, args):
        from cuda.core import LaunchConfig

        from numba.cuda._compat import CUDA_CORE_GE_1_0

        kern = self._fast
        stream = self.configured.stream
        kernelargs, retr = [], []
        for t, v in zip(kern.argument_types, args):
            kern._prepare_args(t, v, stream, retr, kernelargs)
        coop = {"is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch": False}
        config = LaunchConfig(grid=self.griddim, block=self.blockdim, shmem_size=0, **coop)
        return stream, config, kern._codelibrary.get_cufunc().kernel, kernelargs

    @staticmethod
    def _launch(stream, config, kernel, kernelargs):
        from cuda.core import launch

        launch(stream, config, kernel, *kernelargs)


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
    dtype; the kernels see them as flat buffers). Convenience entry point (builds a :class:`StagePlan` each call, cached kernels);
    the solver keeps its plans."""
    shape = tuple(src.shape)
    s3 = view3(shape)
    plan = StagePlan(kernel, len(shape), s3, boundary.code, src.dtype, layout=layout,
                     block=block, lo=lo, hi=hi)
    n = int(np.prod(shape))
    r = (lambda a: a.reshape(n)) if len(shape) != 1 else (lambda a: a)
    plan(r(src), r(base), r(out), coef, stage_scalars(model, grid, boundary, src.dtype))


# --------------------------------------------------------------------------------------------
# reductions: mass, free energy, min, max (float64 accumulation, two-pass)
# --------------------------------------------------------------------------------------------
RED_THREADS = 256


@functools.lru_cache(maxsize=None)
def reduction_kernel(nd: int, bc: int):
    """Per-block partial sums over the rows ``lo:hi`` of the first active axis (a slab's owned
    rows): [Σφ, Σf(φ), Σ_axes Σ (forward difference)², min φ, max φ]. The forward difference
    of the last owned row reads the row above it when the buffer has one (a slab's halo), else
    follows the boundary rule (periodic wraps to row 0 of the buffer: the whole grid); the fixed
    low-wall term is added at row 0 of the buffer only (a slab with no halo below)."""
    a0, a1 = nd >= 3, nd >= 2
    NTH = RED_THREADS

    @cuda.jit
    def kernel(phi, partial, n0, n1, n2, lo, hi, c0, c1, c2, c3, v):
        s_phi = cuda.shared.array(NTH, numba.float64)
        s_f = cuda.shared.array(NTH, numba.float64)
        s_g = cuda.shared.array(NTH, numba.float64)
        s_mn = cuda.shared.array(NTH, numba.float64)
        s_mx = cuda.shared.array(NTH, numba.float64)
        sy = n2
        sz = n1 * n2
        if a0:
            total = (hi - lo) * sz
        elif a1:
            total = (hi - lo) * n2
        else:
            total = hi - lo
        tid = cuda.threadIdx.x
        acc_phi = numba.float64(0)
        acc_f = numba.float64(0)
        acc_g = numba.float64(0)
        mn = numba.float64(math.inf)
        mx = numba.float64(-math.inf)
        t = cuda.blockIdx.x * NTH + tid
        stride = cuda.gridDim.x * NTH
        while t < total:
            if a0:
                k = lo + t // sz
                r = t % sz
                j = r // n2
                i = r % n2
            elif a1:
                k = 0
                j = lo + t // n2
                i = t % n2
            else:
                k = 0
                j = 0
                i = lo + t
            g = k * sz + j * sy + i
            p = numba.float64(phi[g])
            acc_phi += p
            acc_f += p * (c0 + p * (c1 + p * (c2 + p * c3)))
            mn = min(mn, p)
            mx = max(mx, p)
            # forward differences along each active axis
            if i + 1 < n2:
                d = numba.float64(phi[g + 1]) - p
            elif bc == PERIODIC:
                d = numba.float64(phi[g - i]) - p
            elif bc == MIRROR:
                d = numba.float64(0)
            else:
                d = v - p
            acc_g += d * d
            if bc == FIXED and i == 0:
                acc_g += (p - v) * (p - v)
            if a1:
                if j + 1 < n1:
                    d = numba.float64(phi[g + sy]) - p
                elif bc == PERIODIC:
                    d = numba.float64(phi[g - j * sy]) - p
                elif bc == MIRROR:
                    d = numba.float64(0)
                else:
                    d = v - p
                acc_g += d * d
                if bc == FIXED and j == 0:
                    acc_g += (p - v) * (p - v)
            if a0:
                if k + 1 < n0:
                    d = numba.float64(phi[g + sz]) - p
                elif bc == PERIODIC:
                    d = numba.float64(phi[g - k * sz]) - p
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


def field_partials(phi, shape, model: CahnHilliard, boundary: Boundary, lo=0, hi=None,
                   partial=None):
    """:class:`~simengine.field.observables.FieldPartials` of the rows ``lo:hi`` (axis 0) of a
    device field of (local) ``shape`` (flat or shaped, C-contiguous); float64 accumulation."""
    from .observables import FieldPartials

    shape = tuple(int(n) for n in shape)
    nd = len(shape)
    n0, n1, n2 = view3(shape)
    cells = n0 * n1 * n2
    hi = shape[0] if hi is None else int(hi)
    lo = int(lo)
    owned = (hi - lo) * (cells // shape[0])
    if len(phi.shape) != 1:
        phi = phi.reshape(cells)
    nb = reduction_blocks(owned)
    if partial is None or partial.shape[0] < nb:
        partial = cuda.device_array((nb, 5), dtype=np.float64)
    a0, a1, a2, a3 = (float(c) for c in model.coefficients)
    kern = reduction_kernel(nd, boundary.code)
    kern[nb, RED_THREADS](phi, partial, n0, n1, n2, lo, hi, a0, a1 / 2.0, a2 / 3.0, a3 / 4.0,
                          float(boundary.value))
    p = partial.copy_to_host()[:nb]
    return FieldPartials(int(owned), float(p[:, 0].sum()), float(p[:, 1].sum()),
                         float(p[:, 2].sum()), float(p[:, 3].min()), float(p[:, 4].max()))


def reductions(phi, model: CahnHilliard, grid: Grid, boundary: Boundary, partial=None):
    """mass (mean φ), free energy, min, max of a whole device field."""
    from .observables import merge_partials

    part = field_partials(phi, grid.shape, model, boundary, partial=partial)
    return merge_partials([part], model, grid)


# --------------------------------------------------------------------------------------------
# twins of the CPU stage functions (same signature, see simengine/field/cpu_kernels.py)
# --------------------------------------------------------------------------------------------
def _twin(kernel, ndim):
    def stage_fn(src, base, out, coef, params, bcode, bvalue, lo, hi, tile=None, layout=None):
        """CUDA twin of ``cpu_kernels.<kernel>_stage_<ndim>d``: device arrays ``src``, ``base``,
        ``out`` of the field shape; ``params`` = ``[M, κ, a0, a1, a2, a3, 1/h², 2·ndim]``
        (:func:`simengine.field.cpu_kernels.make_params`); ``tile`` here is the CUDA thread-block
        shape in axis order (axis 0 first; ``None`` = default) — for the seed layout the updating
        core is the block minus 4 per axis."""
        if len(src.shape) != ndim:
            raise ValueError(f"{kernel}_stage_{ndim}d needs a {ndim}-D field")
        dt = np.dtype(src.dtype)
        t = dt.type
        M, K, a0, a1, a2, a3, ih2, cnd = (float(x) for x in np.asarray(params, dtype=np.float64))
        bv = float(bvalue)
        fpv = a0 + bv * (a1 + bv * (a2 + bv * a3))
        scal = (t(M * ih2), t(K * ih2), t(cnd), t(a0), t(a1), t(a2), t(a3), t(bv), t(fpv))
        shape = tuple(int(n) for n in src.shape)
        block = None if tile is None else tuple(int(b) for b in tile)[::-1]
        plan = StagePlan(kernel, ndim, view3(shape), int(bcode), dt, layout=layout or "modern",
                         block=block, lo=lo, hi=hi)
        n = int(np.prod(shape))
        r = (lambda a: a.reshape(n)) if ndim != 1 else (lambda a: a)
        plan(r(src), r(base), r(out), float(coef), scal)

    stage_fn.__name__ = stage_fn.__qualname__ = f"{kernel}_stage_{ndim}d"
    return stage_fn


for _k in KERNELS:
    for _d in (1, 2, 3):
        globals()[f"{_k}_stage_{_d}d"] = _twin(_k, _d)
del _k, _d


def get_stage(kernel: str, ndim: int):
    """The CUDA stage function ``<kernel>_stage_<ndim>d`` (twin of ``cpu_kernels.get_stage``)."""
    if kernel not in KERNELS or ndim not in (1, 2, 3):
        raise ValueError(f"no CUDA stage {kernel!r} for {ndim}-D")
    return globals()[f"{kernel}_stage_{ndim}d"]
