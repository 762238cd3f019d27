"""Kernels A/C, 3-D shared-memory marching form (2.5-D blocking with shared-memory plane rings).

A block of BX×BY threads owns a BY×BX in-plane tile and walks a chunk of ``length`` planes of
axis 0. Per plane k it

1. issues the global loads of φ(k+3) on the tile + 2 ring (read-only ``ld.global.nc`` for C),
   coalesced along x, into registers,
2. computes μ(k+1) once for every point of the tile + 1 ring into a shared μ ring (in-plane
   neighbours from the shared φ plane k+1, φ(k+2) from the shared plane k+2, φ(k) and φ(k+1) of
   the point from a 2-deep register queue of the thread that owns the point),
3. stores the φ(k+3) registers into the free slot of a 3-plane shared φ ring,
4. one barrier,
5. updates its cell at plane k: R = M lap μ with μ(k) of the 4 in-plane neighbours from the
   shared μ ring, μ(k+1) of its column from the ring, μ(k−1), μ(k) of its column in registers.

The φ and μ rings have 3 planes each, so one barrier per plane suffices (a slot is overwritten
two planes after its last reader, with a barrier in between). Every φ value is loaded once per
plane per tile (plus the 2-cell in-plane halo, (BX+4)(BY+4)/(BX·BY) loads per cell from L1/L2)
and μ is evaluated (BX+2)(BY+2)/(BX·BY) times per cell (1.33 for 32×8) instead of 7 (the direct
kernel) or 5 (the register march).

Boundaries: the in-plane positions of a thread's load slots and μ points (wrap / mirror /
clamp, and the ``fixed`` outside flags) are computed once per thread; the plane index is mapped
once per plane. ``fixed`` puts φ = v at outside positions and μ = f'(v) at outside μ points, as
the address-mode path of the direct kernel does. Each value's arithmetic is that of the direct
kernel (same μ expression, pairs added in the order x, y, z), so under the simulator the result
equals the direct kernel bit for bit.
"""
from __future__ import annotations

import functools

import numba
from numba import cuda

from .access import LD, LDNC, ST, index_load, index_store
from .config import FIXED, SIMULATOR
from .physics import ghost_map, mu, rate

#: the largest φ loads / μ points per thread and plane the kernel is written for
MAX_LOADS = 4
MAX_MU = 3
#: output rows per thread (along y) the kernel is written for
ROWS = (1, 2)


def smarch_shape(block):
    """(BX, BY) of a 2- or 3-entry block (x first; a third entry must be 1)."""
    b = tuple(int(x) for x in block)
    if len(b) == 3:
        if b[2] != 1:
            raise ValueError("the shared-memory marching kernel takes a (bx, by[, 1]) block")
        b = b[:2]
    if len(b) != 2 or min(b) < 1:
        raise ValueError(f"bad block {block!r} for the shared-memory marching kernel")
    return b


#: march lengths (planes per block) the default launch chooses from (:func:`smarch_planes`)
PLANES = (64, 48, 32)
#: resident blocks of the default 32×8 threads per SM, per (dtype, rows per thread), from the
#: registers ptxas gives the kernels (H100, 2026-11-24 night: fp64 56 / 80 registers, fp32 40 /
#: 64 → occupancy 0.50 / 0.38, 0.75 / 0.50)
RESIDENT = {("float64", 1): 4, ("float64", 2): 3, ("float32", 1): 6, ("float32", 2): 4}


def smarch_planes(ext, tile, dtype, rows, sms, halo=4, choices=PLANES) -> int:
    """Planes per block for a march over ``ext`` = (x, y, z) cells with in-plane ``tile`` =
    (x, y) cells per block on ``sms`` multiprocessors: the length in ``choices`` that maximises
    (how full the last wave of blocks is) / (planes loaded per plane owned, ``halo`` extra per
    block). Long marches load fewer halo planes but make fewer blocks: 256³ fp64 with 2 rows
    has 128 blocks per layer of planes, so 64 planes gave 512 blocks (1.3 waves of 396 resident
    blocks, 0.324 ms per stage pair on an H100), 48 planes 768 (1.9 waves, 0.284 ms) and 32
    planes 1024 (2.6 waves, 0.287 ms)."""
    nx, ny, nz = (int(e) for e in ext)
    per_layer = -(-nx // int(tile[0])) * -(-ny // int(tile[1]))
    resident = max(1, int(sms) * RESIDENT.get((str(dtype), int(rows)), 4))
    best = None
    for m in choices:
        segments = -(-nz // int(m))
        waves = per_layer * segments / resident
        score = waves / -(-waves // 1) / ((nz + halo * segments) / nz)
        if best is None or score > best[0] + 1e-12:
            best = (score, int(m))
    return best[1]


def smarch_fits(block, rows=1) -> bool:
    """Whether ``block`` (with ``rows`` output rows per thread) is a valid block of the
    shared-memory marching kernel."""
    try:
        nld, nmu, _ = smarch_counts(block, rows)
    except (ValueError, TypeError):
        return False
    return nld <= MAX_LOADS and nmu <= MAX_MU


def smarch_counts(block, rows=1):
    """(φ loads, μ points) per thread and plane, shared bytes per element (φ ring + μ ring) of
    a (BX, BY) thread block whose in-plane tile is BX × BY·rows (``rows`` output cells per
    thread along y)."""
    bx, by = smarch_shape(block)
    r = int(rows)
    if r not in ROWS:
        raise ValueError(f"rows must be one of {ROWS}")
    nt = bx * by
    tp = (bx + 4) * (by * r + 4)
    mp = (bx + 2) * (by * r + 2)
    return -(-tp // nt), -(-mp // nt), 3 * (tp + mp)


@functools.lru_cache(maxsize=None)
def smarch_kernel(bc: int, nc: bool, dtype: str = "float64", block=(32, 8), length: int = 32,
                  maxreg=None, ahead: int = 2, rows: int = 1, ring_base: bool = False,
                  flat: bool = True):
    """The 3-D shared-memory marching stage kernel (see the module docstring). Launch with
    block (BX, BY, 1) and grid (⌈n2/BX⌉, ⌈n1/(BY·rows)⌉, ⌈(hi−lo)/length⌉); same arguments as
    the other stage kernels. ``ahead`` (1, 2 or 3): planes of φ loads in flight per thread (A:
    the loads of φ(k+2+A) are issued at plane k and stored into the ring at plane k+A−1).

    ``rows`` (1 or 2): output cells per thread along y; the in-plane tile is BX × BY·rows and a
    thread owns the cells of tile rows ty and ty + BY (more loads and μ points per thread and
    plane, less halo per cell). ``ring_base``: the own cell's base value φ(k) is read from the
    shared φ ring (during the μ phase of plane k−1, before that plane's barrier: the slot of
    plane k is stable from the barrier of plane k−2 until the stores of plane k) instead of a
    global load of ``base`` — **only valid when base is src** (stage 1 of RK2; the plan picks
    this kernel by ``base is src``, see ``StageLaunch``); ``base`` is then not read."""
    BX, BY = smarch_shape(block)
    A = int(ahead)
    if A not in (1, 2, 3):
        raise ValueError("ahead must be 1, 2 or 3")
    R = int(rows)
    if R not in ROWS:
        raise ValueError(f"rows must be one of {ROWS}")
    RB = bool(ring_base)
    BYR = BY * R  # tile rows
    L = int(length)
    if L < 1:
        raise ValueError("march length must be >= 1")
    NT = BX * BY
    TX, TY = BX + 4, BYR + 4  # φ plane: tile + 2 ring
    TP = TX * TY
    MX, MY = BX + 2, BYR + 2  # μ plane: tile + 1 ring
    MP = MX * MY
    NLD, NMU, _ = smarch_counts((BX, BY), R)
    SPHI, SMU = 3 * TP, 3 * MP  # shared ring sizes (compile-time constants)
    if NLD > MAX_LOADS or NMU > MAX_MU:
        raise ValueError(f"block {block!r} too small for its halo (at most {MAX_LOADS} loads "
                         f"and {MAX_MU} μ points per thread)")
    load = LDNC if nc else LD
    # the shared rings through flat loads/stores (no negative-index wraparound), or numba's
    # indexing (the form before 2026-11-24 night; the benchmark's comparison)
    SLD, SST = (LD, ST) if flat else (index_load, index_store)
    amap = ghost_map(bc)
    fixed = bc == FIXED
    ftype = numba.float32 if dtype == "float32" else numba.float64
    opts = {}
    if maxreg and not SIMULATOR:
        opts["max_registers"] = int(maxreg)


    @cuda.jit(device=True)
    def slot_off(t, i0, j0, n1, n2):
        """Mapped in-plane offset and (fixed) outside flag of φ-tile position t."""
        y = t // TX
        x = t - y * TX
        gy = j0 - 2 + y
        gx = i0 - 2 + x
        out = False
        if fixed:
            out = gx < 0 or gx >= n2 or gy < 0 or gy >= n1
        return amap(gy, n1) * n2 + amap(gx, n2), out

    @cuda.jit(device=True)
    def mu_pos(u, i0, j0, n1, n2):
        """φ-tile position and (fixed) outside flag of μ-tile point u."""
        y = u // MX
        x = u - y * MX
        out = False
        if fixed:
            gy = j0 - 1 + y
            gx = i0 - 1 + x
            out = gx < 0 or gx >= n2 or gy < 0 or gy >= n1
        return (y + 1) * TX + x + 1, out

    @cuda.jit(device=True)
    def ldv(src, pk, off, out, vphi):
        v = load(src, pk + off)
        if fixed:
            if out:
                v = vphi
        return v

    @cuda.jit(device=True)
    def ldplane(src, p, n0, P, o0, o1, o2, o3, g0, g1, g2, g3, v0, v1, v2, v3, vphi, zero):
        """This thread's φ load slots of plane p (``zero`` in unused slots)."""
        pk = amap(p, n0) * P
        gp = False
        if fixed:
            gp = p < 0 or p >= n0
        l0 = zero
        l1 = zero
        l2 = zero
        l3 = zero
        if v0:
            l0 = ldv(src, pk, o0, gp or g0, vphi)
        if v1:
            l1 = ldv(src, pk, o1, gp or g1, vphi)
        if v2:
            l2 = ldv(src, pk, o2, gp or g2, vphi)
        if v3:
            l3 = ldv(src, pk, o3, gp or g3, vphi)
        return l0, l1, l2, l3

    @cuda.jit(device=True)
    def mu_point(sphi, f1, f2, q, zm, c, kh2, nd2, c0, c1, c2, c3):
        """μ at φ-tile position q of plane p (slot offset f1) with φ(p−1) = zm, φ(p) = c in
        registers and φ(p+1) from slot offset f2; returns (μ, φ(p+1))."""
        zp = SLD(sphi, f2 + q)
        s = ((SLD(sphi, f1 + q - 1) + SLD(sphi, f1 + q + 1)) + (SLD(sphi, f1 + q - TX) + SLD(sphi, f1 + q + TX))) + (
            zm + zp)
        return mu(c, s, kh2, nd2, c0, c1, c2, c3), zp

    @cuda.jit(**opts)
    def kernel(src, base, out, n0, n1, n2, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2, c3, vphi,
               vmu):
        sphi = cuda.shared.array(SPHI, ftype)
        smu = cuda.shared.array(SMU, ftype)
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        tid = ty * BX + tx
        i0 = numba.int64(cuda.blockIdx.x) * BX
        j0 = numba.int64(cuda.blockIdx.y) * BYR
        kb = lo + numba.int64(cuda.blockIdx.z) * L
        if kb >= hi:
            return
        ke = min(kb + L, hi)
        i = i0 + tx
        j = j0 + ty
        mine = i < n2 and j < n1
        jb = j + BY  # the second own row (rows 2)
        mineb = R == 2 and i < n2 and jb < n1
        P = n1 * n2
        F = False
        # this thread's φ load slots (tile + 2 ring), once per thread
        t0 = tid
        t1 = tid + NT
        t2 = tid + 2 * NT
        t3 = tid + 3 * NT
        v0 = t0 < TP
        v1 = NLD > 1 and t1 < TP
        v2 = NLD > 2 and t2 < TP
        v3 = NLD > 3 and t3 < TP
        o0, g0 = slot_off(min(t0, TP - 1), i0, j0, n1, n2)
        o1, g1 = slot_off(min(t1, TP - 1), i0, j0, n1, n2)
        o2, g2 = slot_off(min(t2, TP - 1), i0, j0, n1, n2)
        o3, g3 = slot_off(min(t3, TP - 1), i0, j0, n1, n2)
        # this thread's μ points (tile + 1 ring)
        u0 = tid
        u1 = tid + NT
        u2 = tid + 2 * NT
        w0 = u0 < MP
        w1 = NMU > 1 and u1 < MP
        w2 = NMU > 2 and u2 < MP
        q0, h0 = mu_pos(min(u0, MP - 1), i0, j0, n1, n2)
        q1, h1 = mu_pos(min(u1, MP - 1), i0, j0, n1, n2)
        q2, h2 = mu_pos(min(u2, MP - 1), i0, j0, n1, n2)
        qc = (ty + 2) * TX + tx + 2  # own cell in the φ tile
        mc = (ty + 1) * MX + tx + 1  # own cell in the μ tile
        qcb = qc + BY * TX  # second own cell (rows 2)
        mcb = mc + BY * MX

        # ---- prime: φ(kb−1), φ(kb), φ(kb+1) into slots, μ(kb) on the μ tile, own μ(kb−1)
        for d in range(3):
            p = kb - 1 + d
            pk = amap(p, n0) * P
            gp = F
            if fixed:
                gp = p < 0 or p >= n0
            f = ((p + 3) % 3) * TP
            if v0:
                SST(sphi, f + t0, ldv(src, pk, o0, gp or g0, vphi))
            if v1:
                SST(sphi, f + t1, ldv(src, pk, o1, gp or g1, vphi))
            if v2:
                SST(sphi, f + t2, ldv(src, pk, o2, gp or g2, vphi))
            if v3:
                SST(sphi, f + t3, ldv(src, pk, o3, gp or g3, vphi))
        cuda.syncthreads()
        fm = ((kb + 2) % 3) * TP  # slot of plane kb−1
        f0 = (kb % 3) * TP
        f1 = ((kb + 1) % 3) * TP
        m0 = (kb % 3) * MP
        gk = F  # plane kb outside (fixed): impossible for kb < hi <= n0, kept for symmetry
        zero = coef - coef
        l0 = zero
        l1 = zero
        l2 = zero
        l3 = zero
        if A >= 2 and kb + 1 < ke:  # φ(kb+3) in flight during the priming
            l0, l1, l2, l3 = ldplane(src, kb + 3, n0, P, o0, o1, o2, o3, g0, g1, g2, g3, v0,
                                     v1, v2, v3, vphi, zero)
        n0_ = zero
        n1_ = zero
        n2_ = zero
        n3_ = zero
        if A == 3 and kb + 2 < ke:  # and φ(kb+4)
            n0_, n1_, n2_, n3_ = ldplane(src, kb + 4, n0, P, o0, o1, o2, o3, g0, g1, g2, g3,
                                         v0, v1, v2, v3, vphi, zero)
        a0 = zero
        b0 = zero
        a1 = zero
        b1 = zero
        a2 = zero
        b2 = zero
        if w0:
            m, b0 = mu_point(sphi, f0, f1, q0, SLD(sphi, fm + q0), SLD(sphi, f0 + q0), kh2, nd2, c0, c1,
                             c2, c3)
            a0 = SLD(sphi, f0 + q0)
            if fixed:
                if h0 or gk:
                    m = vmu
            SST(smu, m0 + u0, m)
        if w1:
            m, b1 = mu_point(sphi, f0, f1, q1, SLD(sphi, fm + q1), SLD(sphi, f0 + q1), kh2, nd2, c0, c1,
                             c2, c3)
            a1 = SLD(sphi, f0 + q1)
            if fixed:
                if h1 or gk:
                    m = vmu
            SST(smu, m0 + u1, m)
        if w2:
            m, b2 = mu_point(sphi, f0, f1, q2, SLD(sphi, fm + q2), SLD(sphi, f0 + q2), kh2, nd2, c0, c1,
                             c2, c3)
            a2 = SLD(sphi, f0 + q2)
            if fixed:
                if h2 or gk:
                    m = vmu
            SST(smu, m0 + u2, m)
        # own μ(kb−1): φ(kb−2) of the column from global memory, the rest from the ring
        pm2 = kb - 2
        gm2 = F
        gm1 = F
        if fixed:
            gm2 = pm2 < 0
            gm1 = kb - 1 < 0
        zm = ldv(src, amap(pm2, n0) * P, j * n2 + i if mine else numba.int64(0), gm2, vphi)
        mu_m1, _z = mu_point(sphi, fm, f0, qc, zm, SLD(sphi, fm + qc), kh2, nd2, c0, c1, c2, c3)
        if fixed:
            if gm1:
                mu_m1 = vmu
        mu_m1b = zero
        if R == 2:
            zmb = ldv(src, amap(pm2, n0) * P, jb * n2 + i if mineb else numba.int64(0), gm2,
                      vphi)
            mu_m1b, _z = mu_point(sphi, fm, f0, qcb, zmb, SLD(sphi, fm + qcb), kh2, nd2, c0, c1,
                                  c2, c3)
            if fixed:
                if gm1:
                    mu_m1b = vmu
        # ring base: φ(kb) of the own cells from the slot of plane kb (stable until the stores
        # of the first march iteration, which follow the next two barriers)
        bn = zero
        bnb = zero
        if RB:
            bn = SLD(sphi, f0 + qc)
            if R == 2:
                bnb = SLD(sphi, f0 + qcb)
        cuda.syncthreads()
        # φ(kb+2) into the slot of plane kb−1
        p = kb + 2
        pk = amap(p, n0) * P
        gp = F
        if fixed:
            gp = p >= n0
        if v0:
            SST(sphi, fm + t0, ldv(src, pk, o0, gp or g0, vphi))
        if v1:
            SST(sphi, fm + t1, ldv(src, pk, o1, gp or g1, vphi))
        if v2:
            SST(sphi, fm + t2, ldv(src, pk, o2, gp or g2, vphi))
        if v3:
            SST(sphi, fm + t3, ldv(src, pk, o3, gp or g3, vphi))
        cuda.syncthreads()
        mu_0 = SLD(smu, m0 + mc)
        mu_0b = zero
        if R == 2:
            mu_0b = SLD(smu, m0 + mcb)

        # ---- march: slots z0 = k % 3, z1 = (k+1) % 3, z2 = (k+2) % 3 (φ and μ rings alike)
        z0 = kb % 3
        z1 = (kb + 1) % 3
        z2 = (kb + 2) % 3
        k = kb
        while k < ke:
            more = k + 1 < ke
            g = k * P + j * n2 + i
            bv = zero
            bvb = zero
            if RB:  # φ(k) of the own cells, read from the ring during plane k−1 (or the prime)
                bv = bn
                bvb = bnb
            else:
                if mine:
                    bv = LD(base, g)  # in flight during the μ phase
                if R == 2:
                    if mineb:
                        bvb = LD(base, g + BY * n2)
            # 1. issue the loads of φ(k+3) (ahead 1) / φ(k+4) (ahead 2)
            if A == 1:
                if more:
                    l0, l1, l2, l3 = ldplane(src, k + 3, n0, P, o0, o1, o2, o3, g0, g1, g2, g3,
                                             v0, v1, v2, v3, vphi, zero)
                n0_ = l0
                n1_ = l1
                n2_ = l2
                n3_ = l3
            elif A == 2:
                n0_ = zero
                n1_ = zero
                n2_ = zero
                n3_ = zero
                if k + 2 < ke:
                    n0_, n1_, n2_, n3_ = ldplane(src, k + 4, n0, P, o0, o1, o2, o3, g0, g1, g2,
                                                 g3, v0, v1, v2, v3, vphi, zero)
            else:
                m0_ = zero
                m1_ = zero
                m2_ = zero
                m3_ = zero
                if k + 3 < ke:
                    m0_, m1_, m2_, m3_ = ldplane(src, k + 5, n0, P, o0, o1, o2, o3, g0, g1, g2,
                                                 g3, v0, v1, v2, v3, vphi, zero)
            # 2. μ(k+1) on the μ tile
            f1 = z1 * TP
            f2 = z2 * TP
            mu1 = z1 * MP
            gk1 = F
            if fixed:
                gk1 = k + 1 >= n0
            if w0:
                m, zp = mu_point(sphi, f1, f2, q0, a0, b0, kh2, nd2, c0, c1, c2, c3)
                a0 = b0
                b0 = zp
                if fixed:
                    if h0 or gk1:
                        m = vmu
                SST(smu, mu1 + u0, m)
            if w1:
                m, zp = mu_point(sphi, f1, f2, q1, a1, b1, kh2, nd2, c0, c1, c2, c3)
                a1 = b1
                b1 = zp
                if fixed:
                    if h1 or gk1:
                        m = vmu
                SST(smu, mu1 + u1, m)
            if w2:
                m, zp = mu_point(sphi, f1, f2, q2, a2, b2, kh2, nd2, c0, c1, c2, c3)
                a2 = b2
                b2 = zp
                if fixed:
                    if h2 or gk1:
                        m = vmu
                SST(smu, mu1 + u2, m)
            if RB:  # φ(k+1) of the own cells: slot z1 is stable until the stores of plane k+1
                bn = SLD(sphi, f1 + qc)
                if R == 2:
                    bnb = SLD(sphi, f1 + qcb)
            # 3. φ(k+3) into the slot of plane k
            f0 = z0 * TP
            if more:
                if v0:
                    SST(sphi, f0 + t0, l0)
                if v1:
                    SST(sphi, f0 + t1, l1)
                if v2:
                    SST(sphi, f0 + t2, l2)
                if v3:
                    SST(sphi, f0 + t3, l3)
            l0 = n0_
            l1 = n1_
            l2 = n2_
            l3 = n3_
            if A == 3:
                n0_ = m0_
                n1_ = m1_
                n2_ = m2_
                n3_ = m3_
            cuda.syncthreads()
            # 5. update the own cell of plane k
            mu0 = z0 * MP
            mu_p1 = SLD(smu, mu1 + mc)
            if mine:
                s = ((SLD(smu, mu0 + mc - 1) + SLD(smu, mu0 + mc + 1)) + (
                    SLD(smu, mu0 + mc - MX) + SLD(smu, mu0 + mc + MX))) + (mu_m1 + mu_p1)
                r = rate(s, mu_0, mh2, nd2)
                ST(out, g, bv + coef * r)
            mu_m1 = mu_0
            mu_0 = mu_p1
            if R == 2:
                mu_p1b = SLD(smu, mu1 + mcb)
                if mineb:
                    s = ((SLD(smu, mu0 + mcb - 1) + SLD(smu, mu0 + mcb + 1)) + (
                        SLD(smu, mu0 + mcb - MX) + SLD(smu, mu0 + mcb + MX))) + (mu_m1b + mu_p1b)
                    r = rate(s, mu_0b, mh2, nd2)
                    ST(out, g + BY * n2, bvb + coef * r)
                mu_m1b = mu_0b
                mu_0b = mu_p1b
            zt = z0
            z0 = z1
            z1 = z2
            z2 = zt
            k += 1

    return kernel
