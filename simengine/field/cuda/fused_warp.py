"""The warp-marching fused RK2 step for large 2-D grids: no shared memory, no block barriers.

Both RK2 stages in one launch (:mod:`.fused_launch`), organised for bandwidth: no halo tile in
shared memory. A warp's 32 lanes own 64 consecutive x columns (2 per lane, loaded and stored as
pairs) and march a chunk of ``L`` rows along y (axis 0 of the 2-D field) with register queues. Iteration ``t`` loads φ(t) of the lane's columns and computes

* μ(φ) at row t−1 (from φ(t−2), φ(t−1), φ(t); x-neighbours by warp shuffles),
* φ* = φ + c₁·M lap μ(φ) at row t−2,
* μ(φ*) at row t−3,
* φⁿ⁺¹ = φ + c₂·M lap μ(φ*) at row t−4, which it stores.

Each phase loses one valid column at either warp edge, so a warp writes 56 columns and
neighbouring warps overlap by 8 columns; a chunk primes 4 rows above and below (``(L + 8)/L`` row loads). Warps of a block are neighbours along x and share the
chunk (several warps per block only for occupancy: they never synchronise).

Boundaries as in :mod:`.fused_frame` (:mod:`.physics`: fold at any depth): the x load index of
each lane is folded once (wrap / the edge-duplicating reflection / clamp), the row index once per row; fixed writes v over φ and φ*
and f'(v) over μ(φ) and μ(φ*) at every outside position. Per point the arithmetic is that of
:mod:`.stencil` in the same order (μ = c0 + φ(c1 + φ(c2 + φc3)) − κ/h²·((x₋ + x₊) + (y₋ + y₊) −
4φ), R = M/h²·(Σ pairs − 4μ), base + coef·R), so under the simulator the step is bit-identical
to two unfused stages.

The chunk length ``L`` and the warps per block are launch arguments (one compiled kernel per
boundary, load kind and dtype). Under the CUDA simulator (which has no warp shuffles) a
shuffle is emulated through a shared scratch array and two block barriers; every thread of a
block then runs the same number of iterations.
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from .access import LD, LD2, LDNC, LDNC2, ST, ST2
from .config import FIXED, SIMULATOR
from .fused_launch import FusedStep, output_rows
from .occupancy import device_attr, occupancy_report
from .physics import fold_fn, ftype, mu, rate

WARP = 32
#: the fused step's halo: 4 cells (two stages of a 2-cell-deep stencil)
HALO = 4
#: defaults (H100, 4096², see docs/field-gpu.md "Warp-marching fused step"): columns per lane,
#: warps per block
DEFAULT_WARP_COLS = 2
DEFAULT_WARP_WARPS = 2
#: rows per chunk of the first launch; then, unless a length was given, the plan picks the
#: shortest chunk (at least WARP_MIN_LENGTH rows) whose warps all fit on the GPU at once
#: (one wave: measured, a partial second wave costs more than longer chunks; fp64 4096²: fitted
#: 84 rows 0.124 ms/step, fixed 64 rows (1.3 waves) 0.150, 128 rows 0.139)
DEFAULT_WARP_LENGTH = 64
WARP_MIN_LENGTH = 32
#: ... filling at most this fraction of the resident block slots (H100 4096² fp32, 2 warps per
#: block: 99 % of an occupancy estimate without the sub-partition rule gave a partial second
#: wave, 0.092 ms/step against 0.076 at 85 %)
WARP_FILL = 0.95
#: rows loaded ahead of the row being computed (0 or 1)
DEFAULT_WARP_AHEAD = 1
#: simulator only: the shuffle scratch (one value per thread of a block)
_SIM_SCRATCH = 1024


def out_width(cols: int) -> int:
    """Output columns of one warp: ``32·cols − 2·HALO``."""
    return WARP * int(cols) - 2 * HALO


def _exchange(ftype):
    """``(scratch, nbrs)``: ``nbrs(scr, k, u0, u1, u2, u3, d0, d1, d2, d3)`` returns the u's of
    lane − 1 and the d's of lane + 1 (``shfl_up``/``shfl_down`` by 1; the edge lane gets its own
    values, which lie outside the valid columns anyway). All four values a row iteration
    exchanges are known at its start, so the shuffles are issued together. Under the simulator:
    one block barrier through a double-buffered shared scratch (``k`` = iteration parity)."""
    if SIMULATOR:

        @cuda.jit(device=True)
        def scratch():
            return cuda.shared.array((2, 8, _SIM_SCRATCH), ftype)

        @cuda.jit(device=True)
        def nbrs(scr, k, u0, u1, u2, u3, d0, d1, d2, d3):
            tid = cuda.threadIdx.x
            b = scr[k % 2]
            b[0, tid], b[1, tid], b[2, tid], b[3, tid] = u0, u1, u2, u3
            b[4, tid], b[5, tid], b[6, tid], b[7, tid] = d0, d1, d2, d3
            cuda.syncthreads()
            lo = tid if tid % WARP == 0 else tid - 1
            hi = tid if tid % WARP == WARP - 1 else tid + 1
            return (b[0, lo], b[1, lo], b[2, lo], b[3, lo],
                    b[4, hi], b[5, hi], b[6, hi], b[7, hi])

        return scratch, nbrs

    @cuda.jit(device=True)
    def scratch():
        return 0

    @cuda.jit(device=True)
    def nbrs(scr, k, u0, u1, u2, u3, d0, d1, d2, d3):
        m = 0xFFFFFFFF
        return (cuda.shfl_up_sync(m, u0, 1), cuda.shfl_up_sync(m, u1, 1),
                cuda.shfl_up_sync(m, u2, 1), cuda.shfl_up_sync(m, u3, 1),
                cuda.shfl_down_sync(m, d0, 1), cuda.shfl_down_sync(m, d1, 1),
                cuda.shfl_down_sync(m, d2, 1), cuda.shfl_down_sync(m, d3, 1))

    return scratch, nbrs


@functools.lru_cache(maxsize=None)
def warp_kernel(bc: int, nc: bool, dtype: str, cols: int = 2, ahead: int = 1):
    """Warp-marching fused RK2 step of a 2-D field, ``cols`` = 2 columns per lane (pair loads
    and stores; one column per lane was measured slower and removed).

    Launch with ``(32·W,)`` threads per block over ``(ceil(ceil(n2 / (32·cols − 8)) / W),
    ceil((hi − lo) / L))`` blocks. Arguments: ``(src, out, n0, n1, n2, lo, hi, L, coef1, coef2,
    mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)`` with the field's 3-D view ``(1, n1, n2)``; rows
    ``lo:hi`` are written (:func:`.fused_launch.output_rows`). ``ahead`` = 1 loads
    row t + 1 while row t is computed (twice the bytes in flight per warp), 0 loads row t at the
    top of its iteration."""
    C = int(cols)
    A = int(ahead)
    if A not in (0, 1):
        raise ValueError("ahead must be 0 or 1")
    if C != 2:
        raise ValueError("columns per lane must be 2")
    load = LDNC if nc else LD
    load2 = LDNC2 if nc else LD2
    fold = fold_fn(bc)
    fixed = bc == FIXED
    sim = SIMULATOR
    OW = out_width(C)
    scratch, nbrs = _exchange(ftype(dtype))

    @cuda.jit(device=True)
    def row2(src, t, n1, n2, ia, ib, pair, xa, xb, vphi):
        """φ of row t at the lane's two columns (one pair load where aligned)."""
        row = fold(t, n1) * n2
        if pair:
            va, vb = load2(src, row + ia)
        else:
            va = load(src, row + ia)
            vb = load(src, row + ib)
        if fixed:
            yo = t < 0 or t >= n1
            if xa or yo:
                va = vphi
            if xb or yo:
                vb = vphi
        return va, vb

    @cuda.jit
    def kernel(src, out, n0, n1, n2, lo, hi, L, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3,
                vphi, vmu):
        scr = scratch()
        tid = cuda.threadIdx.x
        lane = tid % WARP
        w = numba.int64(cuda.blockIdx.x) * (cuda.blockDim.x // WARP) + tid // WARP
        x0 = w * OW
        if not sim and x0 >= n2:
            return
        kb = lo + numba.int64(cuda.blockIdx.y) * L
        ke = min(kb + L, hi)
        ga = x0 - HALO + 2 * lane  # this lane's columns ga (a) and ga + 1 (b)
        gb = ga + 1
        ia = fold(ga, n2)
        ib = fold(gb, n2)
        even = n2 % 2 == 0
        pair = even and ib == ia + 1 and ia % 2 == 0  # one aligned pair load
        xa = fixed and (ga < 0 or ga >= n2)
        xb = fixed and (gb < 0 or gb >= n2)
        own = lane >= HALO // 2 and lane < WARP - HALO // 2
        owna = own and ga < n2
        ownb = own and gb < n2
        z = c0 - c0
        p1a = z
        p1b = z
        p2a = z
        p2b = z
        p3a = z
        p3b = z
        p4a = z
        p4b = z
        maa = z
        mab = z
        mba = z
        mbb = z
        saa = z
        sab = z
        sba = z
        sbb = z
        naa = z
        nab = z
        nba = z
        nbb = z
        nxa = z
        nxb = z
        if A:
            nxa, nxb = row2(src, kb - HALO, n1, n2, ia, ib, pair, xa, xb, vphi)
        for t in range(kb - HALO, ke + HALO):
            # φ(t)
            if A:
                p0a = nxa
                p0b = nxb
                nxa, nxb = row2(src, t + 1, n1, n2, ia, ib, pair, xa, xb, vphi)
            else:
                p0a, p0b = row2(src, t, n1, n2, ia, ib, pair, xa, xb, vphi)
            # x-neighbours: left of a is b of lane − 1, right of b is a of lane + 1
            pl, ml, sl, nl, pr, mr, sr, nr = nbrs(scr, t, p1b, mab, sab, nab, p1a, maa, saa, naa)
            # μ(φ)(t−1)
            sa_ = (pl + p1b) + (p2a + p0a)
            sb_ = (p1a + pr) + (p2b + p0b)
            m0a = mu(p1a, sa_, kh2, nd2, c0, c1, c2, c3)
            m0b = mu(p1b, sb_, kh2, nd2, c0, c1, c2, c3)
            if fixed:
                yo = t - 1 < 0 or t - 1 >= n1
                if xa or yo:
                    m0a = vmu
                if xb or yo:
                    m0b = vmu
            # φ*(t−2)
            sa_ = (ml + mab) + (mba + m0a)
            sb_ = (maa + mr) + (mbb + m0b)
            s0a = p2a + coef1 * (mh2 * (sa_ - nd2 * maa))
            s0b = p2b + coef1 * (mh2 * (sb_ - nd2 * mab))
            if fixed:
                yo = t - 2 < 0 or t - 2 >= n1
                if xa or yo:
                    s0a = vphi
                if xb or yo:
                    s0b = vphi
            # μ(φ*)(t−3)
            sa_ = (sl + sab) + (sba + s0a)
            sb_ = (saa + sr) + (sbb + s0b)
            q0a = mu(saa, sa_, kh2, nd2, c0, c1, c2, c3)
            q0b = mu(sab, sb_, kh2, nd2, c0, c1, c2, c3)
            if fixed:
                yo = t - 3 < 0 or t - 3 >= n1
                if xa or yo:
                    q0a = vmu
                if xb or yo:
                    q0b = vmu
            # φⁿ⁺¹(t−4)
            sa_ = (nl + nab) + (nba + q0a)
            sb_ = (naa + nr) + (nbb + q0b)
            u = t - HALO
            if u >= kb:
                va = p4a + coef2 * (mh2 * (sa_ - nd2 * naa))
                vb = p4b + coef2 * (mh2 * (sb_ - nd2 * nab))
                if ownb and even:
                    ST2(out, u * n2 + ga, va, vb)
                else:
                    if owna:
                        ST(out, u * n2 + ga, va)
                    if ownb:
                        ST(out, u * n2 + gb, vb)
            p4a = p3a
            p4b = p3b
            p3a = p2a
            p3b = p2b
            p2a = p1a
            p2b = p1b
            p1a = p0a
            p1b = p0b
            mba = maa
            mbb = mab
            maa = m0a
            mab = m0b
            sba = saa
            sbb = sab
            saa = s0a
            sab = s0b
            nba = naa
            nbb = nab
            naa = q0a
            nab = q0b

    return kernel


class WarpFusedPlan(FusedStep):
    """The warp-marching fused RK2 step of a 2-D field: the interface of
    :class:`simengine.field.cuda.fused_launch.FusedStep` (``plan(src, out, coef1, coef2, scal)``,
    :meth:`record`, :meth:`advance`, ``description``, ``shared_bytes``, ``_fast``).

    ``kernel`` picks the loads (``texture``/``combined``: ``ld.global.nc``), ``cols`` the columns
    per lane (2, with pair loads/stores), ``length`` the rows of one chunk (default: fitted
    to the GPU after the first launch, see :meth:`_fit_length`), ``warps`` the
    warps per block, ``ahead`` the rows loaded ahead (default :data:`DEFAULT_WARP_COLS`,
    :data:`DEFAULT_WARP_LENGTH`, :data:`DEFAULT_WARP_WARPS`, :data:`DEFAULT_WARP_AHEAD`)."""

    form = "warp"

    def __init__(self, kernel: str, ndim: int, shape3, bc: int, dtype, *, cols=None,
                 length=None, warps=None, ahead=None, rows=None):
        if int(ndim) != 2:
            raise ValueError("the warp-marching fused step is for 2-D fields")
        self.kernel_name, self.ndim, self.bc = kernel, 2, int(bc)
        self.dtype = np.dtype(dtype)
        self.shape3 = tuple(int(n) for n in shape3)
        self.lo, self.hi = output_rows(self.shape3, rows)
        self.cols = int(cols or DEFAULT_WARP_COLS)
        self.auto_length = not length
        self.length = int(length or DEFAULT_WARP_LENGTH)
        self.warps = int(warps or DEFAULT_WARP_WARPS)
        self.ahead = int(DEFAULT_WARP_AHEAD if ahead is None else ahead)
        if self.length < 1 or not 1 <= self.warps <= 32:
            raise ValueError(f"warp fused: length {self.length} must be >= 1, warps "
                             f"{self.warps} in 1..32")
        nc = kernel in ("texture", "combined")
        self.fn = warp_kernel(self.bc, nc, self.dtype.name, self.cols, self.ahead)
        _, n1, n2 = self.shape3
        ow = out_width(self.cols)
        self.block = (WARP * self.warps,)
        self.blockdim = (WARP * self.warps, 1, 1)
        self._geometry()
        self.shared_bytes = 0
        self._init_launch()

    def _geometry(self):
        _, n1, n2 = self.shape3
        ow = out_width(self.cols)
        self.griddim = (math.ceil(math.ceil(n2 / ow) / self.warps),
                        math.ceil((self.hi - self.lo) / self.length), 1)
        self.tile = (self.length, ow * self.warps)  # (y, x) output cells of one block

    def _fit_length(self):
        """After the first (compiling) launch: the shortest chunk, at least
        :data:`WARP_MIN_LENGTH` rows, whose blocks fit on the GPU at once with
        :data:`WARP_FILL` of the resident block slots. Resident warps per SM from the kernel's
        registers, allocated per warp in units of 256 within each of the SM's 4 sub-partitions
        (a quarter of the register file each). The chunk length changes nothing in the numbers,
        only the launch geometry."""
        occ = occupancy_report(self)
        regs, sms = occ.get("registers_per_thread"), occ.get("sm_count")
        if not regs or not sms:
            return
        dev = cuda.get_current_device()
        regs_sm = device_attr(dev, "MAX_REGISTERS_PER_MULTIPROCESSOR", 65536)
        thr_sm = device_attr(dev, "MAX_THREADS_PER_MULTI_PROCESSOR", 2048)
        blocks_sm = device_attr(dev, "MAX_BLOCKS_PER_MULTIPROCESSOR", 32)
        regs_warp = math.ceil(int(regs) * WARP / 256) * 256
        warps_sm = min(thr_sm // WARP, 4 * ((regs_sm // 4) // regs_warp))
        per_sm = min(blocks_sm, warps_sm // self.warps)
        if per_sm < 1:
            return
        chunks = max(1, int(WARP_FILL * per_sm * int(sms)) // self.griddim[0])
        self.length = max(WARP_MIN_LENGTH, math.ceil((self.hi - self.lo) / chunks))
        self._geometry()
        self._kargs.clear()

    @property
    def description(self) -> str:
        return (f"fused RK2 warp-marching, {self.warps} warps x {self.cols} col/lane, "
                f"{self.length} rows/chunk{' (auto)' if self.auto_length else ''}"
                + (", load-ahead" if self.ahead else ""))

    def _args(self, src, out, coef1, coef2, scal):
        t = self.dtype.type
        n0, n1, n2 = self.shape3
        return (src, out, n0, n1, n2, self.lo, self.hi, self.length, t(coef1), t(coef2), *scal)

    def _compiled(self):
        if self.auto_length:
            self._fit_length()
            self._configured = self._configure()
