"""Kernels A/C, marching form: one thread walks a column along axis 0 with a register queue."""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from .access import LD, LDNC, ST
from .config import FIXED, SIMULATOR
from .physics import ghost_map, mu


# --------------------------------------------------------------------------------------------
# kernels A and C, marching form: one thread walks a column along the slowest axis
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def march_kernel(nd: int, bc: int, nc: bool, dtype: str = "float64", length: int = 32,
                 unroll: int = 4, maxreg=None):
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
    the marched axis is thus loaded once per plane instead of 5 (2-D) / 9 (3-D) times.
    ``maxreg``: a register cap per thread (``cuda.jit(max_registers=)``), None = none."""
    if nd not in (2, 3):
        raise ValueError("the marching kernel is 2-D or 3-D")
    L = int(length)
    if L < 1:
        raise ValueError("march length must be >= 1")
    U = int(unroll)
    if U not in (1, 2, 4):
        raise ValueError("march unroll must be 1, 2 or 4")
    load = LDNC if nc else LD
    amap = ghost_map(bc)
    a0 = nd >= 3
    fixed = bc == FIXED
    del dtype


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

    opts = {"max_registers": int(maxreg)} if maxreg and not SIMULATOR else {}

    @cuda.jit(**opts)
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
