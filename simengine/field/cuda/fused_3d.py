"""The fused RK2 step of 3-D fields: 2.5-D blocking, both stages in one launch, φ* on chip.

A thread block owns an (x, y) output tile and the frame around it (the tile + 4 cells on every
side: two stages of a 2-cell-deep stencil), one frame point per thread, and marches a chunk of
planes ``kb:ke`` of axis 0 (the slab axis, so a slab's step is the same kernel on its own
planes). φⁿ is read from global memory once per plane and frame point, φⁿ⁺¹ written once per
tile point; the intermediate quantities live in four one-plane shared arrays (φ, μ(φ), φ*,
μ(φ*)) and, along z, in per-thread register queues (a thread owns the same frame column on every
plane, so the z-neighbours of its point are its own earlier values). Iteration ``t`` has two
halves separated by a block barrier:

* half 1: store φ(t) into the φ plane; φ*(t−2) = φ + c₁·M lap μ(φ) on the frame less 2 (in-plane
  μ(t−2) from the μ plane, μ(t−3), μ(t−1) from registers), storing the delayed φ*(t−3) into the
  φ* plane; φⁿ⁺¹(t−5) = φ + c₂·M lap μ(φ*) on the tile (in-plane μ*(t−5) from the μ* plane),
  written to global memory;
* half 2: μ(φ)(t) on the frame less 1 (in-plane φ(t), φ(t±1) from registers), storing the
  delayed μ(t−1) into the μ plane; μ(φ*)(t−3) on the frame less 3, storing the delayed μ*(t−4).

Every shared plane is written in one half and read in the other, so one slot per quantity
and two barriers per plane suffice (4 planes of the frame in shared memory). A plane's phases
run only where their output is needed (block-uniform tests on ``t``): a chunk of L planes loads
L + 8 planes, evaluates μ(φ) on L + 6, φ* on L + 4, μ(φ*) on L + 2 and writes L. φ loads are
issued ``ahead`` iterations before their use (registers; 1 or 2); the base φ(t−5) of the update
is read again at the tile point (L1/L2) instead of being queued.

One plane is an inlined device function of the queues (a tuple in, the shifted tuple out), built
with the range tests (the ramps at both ends of a march) and without them (the steady planes
kb + 5 … ke + 2 − A, every phase live); the steady planes run ``unroll`` (12) at a time, a
multiple of every queue's rotation, so that the queues shift by register renaming, not moves.

Boundaries as in :mod:`.fused_frame` (:mod:`.physics`: :func:`.physics.fold4`, the fold
without a division within the 4-cell halo): the in-plane load
offset of a thread's point is folded once, the plane index once per plane; tiles at least 4
cells from every in-plane face load by flat offset. Mirror keeps the frame the mirror image of
the domain through every phase (the arithmetic is reflection-symmetric); fixed puts v over φ and
φ* and f'(v) over μ(φ) and μ(φ*) at every outside point. Per point the arithmetic is that of the
unfused stages (:mod:`.stencil`, :mod:`.smarch`: μ = c0 + φ(c1 + φ(c2 + φc3)) − κ/h²·(((x₋ + x₊)
+ (y₋ + y₊)) + (z₋ + z₊) − 6φ), R = M/h²·(Σ pairs of μ − 6μ), base + coef·R), in the same order,
through :mod:`.physics`'s ``mu`` and ``rate``: under the simulator the step equals two unfused
stages bit for bit.

Slabs (:mod:`.fused_launch`): the planes ``lo:hi`` of the stored slab are written, planes ``lo −
4 … hi + 3`` read — halo planes at an interior face, the fold / outside rule at a global face.
"""
from __future__ import annotations

import functools
import inspect
import math

import numba
import numpy as np
from numba import cuda

from .access import LD, LDNC, ST
from .config import FIXED, SIMULATOR
from .fused_launch import FusedStep, output_rows
from .occupancy import occupancy_report
from .physics import SHARED_LIMIT, fold4, ftype, itemsize, mu, outside2, rate

#: the frame (threads of a block, x first) per precision on a GPU: a warp is one frame row, so
#: the phases' rectangles never split a warp along x; the tile is the frame less 4 on every side
#: (32×32: tile 24×24, 1.78 frame points loaded per tile point)
FRAME_3D = {"float64": (32, 32), "float32": (32, 32)}
#: blocks of the default frame each SM should hold: the kernel's registers are capped at
#: 65536 / (threads · blocks) (ptxas sm_90, separate compilation: fp64 54–56 registers, fp32
#: 31–34, no spills; fp32 also builds at 32 without spills for two blocks per SM, which ran
#: 1.44x slower on an H200 — together with a fold that cost more instructions, not separated)
BLOCKS_PER_SM_3D = {"float64": 1, "float32": 1}
#: the frame under the CUDA simulator (one Python thread per frame point): tile 4×4
SIM_FRAME_3D = (12, 12)
#: planes per chunk (a block's march) of the first launch; then the plan fits the length to the
#: resident blocks (:meth:`Fused3DPlan._fit_length`); the chunk loads 8 planes more than it
#: writes
DEFAULT_PLANES_3D = 64
#: the shortest march the fit chooses (more marches fill the last wave better but load 8 extra
#: planes each)
MIN_PLANES_3D = 16
#: φ loads issued this many iterations before their use (1 or 2)
DEFAULT_AHEAD_3D = 2
#: steady planes per trip of the march loop (inlined one after another; 12: the register queues
#: shift by renaming, see :func:`fused3d_kernel`; 1, 2, 4 build too)
DEFAULT_UNROLL_3D = 12
#: the stages' halo: 4 planes (two stages of a 2-plane-deep stencil)
HALO = 4


#: whether this numba-cuda's ``cuda.jit`` takes ``forceinline`` (NVVM alwaysinline; not the
#: simulator's)
_FORCEINLINE = (not numba.config.ENABLE_CUDASIM
                and "forceinline" in inspect.signature(cuda.jit).parameters)


def frame_for(dtype: str):
    """The default frame (PX, PY) of a dtype (the simulator's small one under the simulator)."""
    return SIM_FRAME_3D if SIMULATOR else FRAME_3D[np.dtype(dtype).name]


@functools.lru_cache(maxsize=None)
def fused3d_kernel(bc: int, nc: bool, dtype: str, frame=None, ahead: int = 2, unroll: int = 12):
    """The fused RK2 step of a 3-D field (see the module's text), a ``frame`` = (PX, PY) block
    of threads writing the (PX − 8) × (PY − 8) tile (None: :func:`frame_for` the dtype, so that
    ``devtools/ptx_check.py`` builds a factory call recorded under the simulator with the GPU's
    frame). Launch over ``(⌈n2/(PX−8)⌉, ⌈n1/(PY−8)⌉,
    ⌈(hi − lo)/L⌉)`` blocks. Arguments ``(src, out, n0, n1, n2, lo, hi, L, coef1, coef2, mh2,
    kh2, nd2, c0, c1, c2, c3, vphi, vmu)``: planes ``lo:hi`` written
    (:func:`.fused_launch.output_rows` on axis 0), L planes per block; ``src`` and ``out``
    must be different buffers. ``unroll``: steady planes per trip of the march loop (1, 2, 4
    or 12; the same numbers)."""
    if frame is None:
        frame = frame_for(dtype)
    PX, PY = int(frame[0]), int(frame[1])
    if PX < 9 or PY < 9:
        raise ValueError(f"fused 3-D: frame {frame!r} must exceed 8 in x and y")
    A = int(ahead)
    if A not in (1, 2):
        raise ValueError("ahead must be 1 or 2")
    if int(unroll) not in (1, 2, 4, 12):
        raise ValueError("unroll must be 1, 2, 4 or 12")
    TX, TY = PX - 8, PY - 8
    NP = PX * PY
    load = LDNC if nc else LD
    fold = fold4(bc)
    fixed = bc == FIXED
    fdt = ftype(dtype)
    opts = {}
    if not numba.config.ENABLE_CUDASIM:  # the blocks per SM must fit the register file
        per_sm = BLOCKS_PER_SM_3D.get(np.dtype(dtype).name, 1)
        opts["max_registers"] = min(255, (65536 // (NP * per_sm)) // 8 * 8)
    # one plane's body is a device function called from the ramp and the steady loop: inlined
    # in NVVM (no call in the PTX)
    inline = {"forceinline": True} if _FORCEINLINE else {}

    @cuda.jit(device=True)
    def plane(src, p, n0, P, off, xo, vphi, live, zero):
        """φ of plane p at the thread's point (``zero`` when not ``live``: past the chunk)."""
        v = zero
        if live:
            v = load(src, fold(p, n0) * P + off)
            if fixed:
                if xo or p < 0 or p >= n0:
                    v = vphi
        return v

    @cuda.jit(device=True)
    def pairs(a, q):
        """(x₋ + x₊) + (y₋ + y₊) around frame point q of a shared plane."""
        return (LD(a, q - 1) + LD(a, q + 1)) + (LD(a, q - PX) + LD(a, q + PX))

    def make_iteration(steady):
        """One plane of the march (iteration t, the module's two halves) as an inlined device
        function of the register queues; ``steady``: every phase runs and the φ load is live
        (kb + 5 ≤ t ≤ ke + 2 − A), so the block-uniform range tests on t are not compiled."""

        @cuda.jit(device=True, **inline)
        def iteration(cx, t, st):
            (src, out, kb, ke, n0, P, off, own, xo, q, in1, in2, in3, mine, sphi, smu, sst,
             smm, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu, z) = cx
            f0, f1, f2, fm1, fm2, m1, m2, m3, s2, s3, s4, w4, w5, w6 = st
            last = ke + HALO - 1  # the last plane loaded
            # the φ load of this iteration: plane t + 1 + A
            nx = plane(src, t + 1 + A, n0, P, off, xo, vphi, steady or t + 1 + A <= last, z)
            # φ(t − 5) at a tile point (inside the domain and the stored planes): read again
            # (L1 / L2: the block loaded it 5 planes ago) instead of a 3-deep register queue
            b5 = z
            if mine and (steady or t >= kb + 5):
                b5 = load(src, (t - 5) * P + own)
            # ---- half 1: φ(t) into its plane; φ*(t−2); φⁿ⁺¹(t−5)
            ST(sphi, q, f0)
            if steady or (t >= kb and t < ke + HALO):
                if in2:
                    v = fm2 + coef1 * rate(pairs(smu, q) + (m3 + m1), m2, mh2, nd2)
                    if fixed:
                        if xo or t - 2 < 0 or t - 2 >= n0:
                            v = vphi
                    ST(sst, q, s3)
                    s2 = v
            if steady or t >= kb + 5:
                if mine:
                    v = b5 + coef2 * rate(pairs(smm, q) + (w6 + w4), w5, mh2, nd2)
                    ST(out, (t - 5) * P + own, v)
            cuda.syncthreads()
            # ---- half 2: μ(φ)(t); μ(φ*)(t−3)
            m0 = z
            if steady or (t >= kb - 3 and t < ke + 3):
                if in1:
                    m0 = mu(f0, pairs(sphi, q) + (fm1 + f1), kh2, nd2, c0, c1, c2, c3)
                    if fixed:
                        if xo or t < 0 or t >= n0:
                            m0 = vmu
                    ST(smu, q, m1)
            w3 = z
            if steady or (t >= kb + 2 and t < ke + HALO):
                if in3:
                    w3 = mu(s3, pairs(sst, q) + (s4 + s2), kh2, nd2, c0, c1, c2, c3)
                    if fixed:
                        if xo or t - 3 < 0 or t - 3 >= n0:
                            w3 = vmu
                    ST(smm, q, w4)
            cuda.syncthreads()
            # ---- the register queues shifted by one plane
            if A == 2:
                return f1, f2, nx, f0, fm1, m0, m1, m2, s2, s2, s3, w3, w4, w5
            return f1, nx, z, f0, fm1, m0, m1, m2, s2, s2, s3, w3, w4, w5

        return iteration

    general = make_iteration(False)
    steady = make_iteration(True)

    @cuda.jit(device=True, **inline)
    def steady2(cx, t, st):
        return steady(cx, t + 1, steady(cx, t, st))

    @cuda.jit(device=True, **inline)
    def steady4(cx, t, st):
        return steady2(cx, t + 2, steady2(cx, t, st))

    @cuda.jit(device=True, **inline)
    def steady12(cx, t, st):
        return steady4(cx, t + 8, steady4(cx, t + 4, steady4(cx, t, st)))

    # U planes per trip of the steady loop, inlined one after the other: 12 is a multiple of
    # every register queue's rotation (φ 6 with ahead 2, μ 4, φ* 3, μ* 4), so the queues shift
    # by renaming registers instead of moving them
    U = int(unroll)
    steadyU = {1: steady, 2: steady2, 4: steady4, 12: steady12}[U]

    @cuda.jit(**opts)
    def kernel(src, out, n0, n1, n2, lo, hi, L, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3,
               vphi, vmu):
        sphi = cuda.shared.array(NP, fdt)  # φ(t)
        smu = cuda.shared.array(NP, fdt)   # μ(φ)(t−2) in half 1
        sst = cuda.shared.array(NP, fdt)   # φ*(t−3) in half 2
        smm = cuda.shared.array(NP, fdt)   # μ(φ*)(t−5) in half 1
        tx = cuda.threadIdx.x
        ty = cuda.threadIdx.y
        q = ty * PX + tx
        i0 = numba.int64(cuda.blockIdx.x) * TX
        j0 = numba.int64(cuda.blockIdx.y) * TY
        kb = lo + numba.int64(cuda.blockIdx.z) * L
        ke = min(kb + L, hi)
        gi = i0 - HALO + tx  # this thread's frame point (may lie outside)
        gj = j0 - HALO + ty
        inner = i0 >= HALO and i0 + TX + HALO <= n2 and j0 >= HALO and j0 + TY + HALO <= n1
        if inner:
            off = gj * n2 + gi
        else:
            off = fold(gj, n1) * n2 + fold(gi, n2)
        xo = fixed and not inner and outside2(gj, gi, n1, n2)
        # the phases' rectangles: frame less 1 (μ), 2 (φ*), 3 (μ*), 4 (the tile, φⁿ⁺¹)
        in1 = tx >= 1 and tx < PX - 1 and ty >= 1 and ty < PY - 1
        in2 = tx >= 2 and tx < PX - 2 and ty >= 2 and ty < PY - 2
        in3 = tx >= 3 and tx < PX - 3 and ty >= 3 and ty < PY - 3
        mine = (tx >= 4 and tx < PX - 4 and ty >= 4 and ty < PY - 4 and gi < n2 and gj < n1)
        P = n1 * n2
        own = gj * n2 + gi
        z = coef1 - coef1
        last = ke + HALO - 1  # the last plane loaded
        # φ register queue: f1 = φ(t+1), f2 = φ(t+2) (ahead 2), f0 = φ(t), fm1, fm2 = φ(t−1),
        # φ(t−2) (φ(t−5) of the update is read again)
        t = kb - HALO
        f0 = plane(src, t, n0, P, off, xo, vphi, True, z)
        f1 = plane(src, t + 1, n0, P, off, xo, vphi, True, z)
        f2 = z
        if A == 2:
            f2 = plane(src, t + 2, n0, P, off, xo, vphi, t + 2 <= last, z)
        fm1 = z
        fm2 = z
        m1 = z  # μ(t−1), μ(t−2), μ(t−3)
        m2 = z
        m3 = z
        s2 = z  # φ*(t−2) (computed in half 1), φ*(t−3), φ*(t−4)
        s3 = z
        s4 = z
        w4 = z  # μ*(t−4), μ*(t−5), μ*(t−6)
        w5 = z
        w6 = z
        cx = (src, out, kb, ke, n0, P, off, own, xo, q, in1, in2, in3, mine, sphi, smu, sst,
              smm, coef1, coef2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu, z)
        st = (f0, f1, f2, fm1, fm2, m1, m2, m3, s2, s3, s4, w4, w5, w6)
        # planes kb − 4 … ke + 4; the steady ones (every phase, the load live: kb + 5 … ke + 2 −
        # A) without the range tests, U at a time, then one at a time; the ramps with them
        s0 = kb + 5
        s1 = ke + 2 - A
        while t <= ke + HALO:
            if t >= s0 and t <= s1:
                while t + (U - 1) <= s1:
                    st = steadyU(cx, t, st)
                    t += U
                if U > 1:
                    while t <= s1:
                        st = steady(cx, t, st)
                        t += 1
            else:
                st = general(cx, t, st)
                t += 1

    return kernel


class Fused3DPlan(FusedStep):
    """The fused RK2 step of a 3-D field (:func:`fused3d_kernel`), the interface of
    :class:`~.fused_launch.FusedStep`. ``frame``: the block (PX, PY), x first (default
    :data:`FRAME_3D` per dtype, :data:`SIM_FRAME_3D` under the simulator); ``length``: planes per
    block (default: :data:`DEFAULT_PLANES_3D`, then fitted after the first launch); ``rows``:
    the planes of axis 0 written (a slab's owned planes), default all."""

    form = "3d"

    def __init__(self, kernel: str, ndim: int, shape3, bc: int, dtype, *, frame=None,
                 length=None, ahead=None, rows=None):
        if int(ndim) != 3:
            raise ValueError("the fused 3-D step is for 3-D fields")
        self.kernel_name, self.ndim, self.bc = kernel, 3, int(bc)
        self.dtype = np.dtype(dtype)
        self.shape3 = tuple(int(n) for n in shape3)
        self.lo, self.hi = output_rows(self.shape3, rows, axis=0)
        default = frame is None
        frame = frame_for(self.dtype.name) if default else frame
        self.frame = tuple(int(f) for f in frame)
        if len(self.frame) != 2 or min(self.frame) <= 2 * HALO:
            raise ValueError(f"fused 3-D: frame {list(frame)} must be 2 entries (x first) "
                             f"above 8: a tile and its 4-cell halo")
        px, py = self.frame
        self.shared_bytes = 4 * itemsize(self.dtype.name) * px * py
        if self.shared_bytes > SHARED_LIMIT or px * py > 1024:
            raise ValueError(f"fused 3-D: frame {px}x{py} needs {px * py} threads and "
                             f"{self.shared_bytes} B of shared memory (at most 1024 and "
                             f"{SHARED_LIMIT}); choose a smaller frame")
        self.auto_length = not length
        self.length = int(length or DEFAULT_PLANES_3D)
        if self.length < 1:
            raise ValueError(f"fused 3-D: {self.length} planes per block")
        self.ahead = int(DEFAULT_AHEAD_3D if ahead is None else ahead)
        nc = kernel in ("texture", "combined")
        self.unroll = int(DEFAULT_UNROLL_3D)
        self.fn = fused3d_kernel(self.bc, nc, self.dtype.name, None if default else self.frame,
                                 self.ahead, self.unroll)
        self.block = self.frame
        self.blockdim = self.frame + (1,)
        self.tile = (py - 2 * HALO, px - 2 * HALO)  # (y, x) output cells of a block
        self._geometry()
        self._init_launch()

    def _geometry(self):
        _n0, n1, n2 = self.shape3
        ty, tx = self.tile
        self.griddim = (math.ceil(n2 / tx), math.ceil(n1 / ty),
                        math.ceil((self.hi - self.lo) / self.length))

    def _fit_length(self):
        """After the first (compiling) launch: the chunk length (:func:`planes_for`) that
        maximises (fullness of the last wave of resident blocks) / (planes loaded per plane
        written, (L + 8)/L), as :func:`.smarch.smarch_planes` does for the stages. The length
        changes nothing in the numbers, only the launch geometry."""
        occ = occupancy_report(self)
        per_sm, sms = occ.get("blocks_per_sm"), occ.get("sm_count")
        if not per_sm or not sms:
            return
        self.length = planes_for(self.hi - self.lo, self.griddim[0] * self.griddim[1],
                                 int(per_sm) * int(sms))
        self._geometry()
        self._kargs.clear()

    @property
    def description(self) -> str:
        px, py = self.frame
        return (f"fused RK2 3-D march, block {px}x{py}, tile {px - 8}x{py - 8}, "
                f"{self.length} planes/block{' (auto)' if self.auto_length else ''}")

    def _args(self, src, out, coef1, coef2, scal):
        t = self.dtype.type
        n0, n1, n2 = self.shape3
        return (src, out, n0, n1, n2, self.lo, self.hi, self.length, t(coef1), t(coef2), *scal)

    def _compiled(self):
        if self.auto_length:
            self._fit_length()
            self._configured = self._configure()


def planes_for(planes: int, tiles: int, resident: int, least: int = MIN_PLANES_3D) -> int:
    """Planes per block for ``planes`` planes of ``tiles`` blocks each on ``resident`` blocks
    at once: the axis cut into c marches of equal length (at least ``least`` planes, or all of
    them) for the c maximising (how full the last wave is) / ((planes + 8c) / planes)."""
    planes, tiles, resident = int(planes), int(tiles), max(1, int(resident))
    best = None
    for c in range(1, max(1, planes // max(1, int(least))) + 1):
        waves = tiles * c / resident
        score = waves / -(-waves // 1) / ((planes + 2 * HALO * c) / planes)
        if best is None or score > best[0] + 1e-12:
            best = (score, c)
    return -(-planes // best[1])
