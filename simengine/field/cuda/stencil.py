"""Device functions of the stencil: address modes per boundary, φ and μ at (possibly outside)
cells, R = M lap μ by the address-mode (slow) path and the register (fast) path."""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from .access import LD, LDNC
from .config import FIXED
from .physics import ghost_map, mu, rate


def _make_phi_at(nd: int, bc: int, nc: bool):
    """φ at (k, j, i) of a flat field, each active index within 2 cells of the domain, by
    address mode (wrap / mirror / border value for fixed)."""
    load = LDNC if nc else LD
    amap = ghost_map(bc)
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
        return mu(c, s, kh2, nd2, c0, c1, c2, c3)

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
        return rate(s, m, mh2, nd2)

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
        return rate(s, mc, mh2, nd2)

    return rhs_fast
