"""Launch plans: a compiled stage kernel plus its launch geometry for one (shape, slice, block)."""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from ..model import Boundary, CahnHilliard, Grid
from ..params import stage_scalars
from . import launch as _launch_api
from .config import (DEFAULT_BLOCK, DEFAULT_CPT, DEFAULT_MARCH, DEFAULT_MARCH_BLOCK,
                     DEFAULT_MARCH_UNROLL, DEFAULT_SMARCH, DEFAULT_SMARCH_AHEAD,
                     DEFAULT_SMARCH_BLOCK, DEFAULT_SMARCH_FLAT, DEFAULT_SMARCH_RING_BASE,
                     DEFAULT_SMARCH_ROWS, DEFAULT_VEC,
                     DEFAULT_VEC_BLOCK, DEFAULT_VEC_ROWS, KERNELS, LAYOUTS,
                     SMARCH_ROWS2_MIN_CELLS, SIMULATOR)
from .direct import direct_kernel
from .march import march_kernel
from .smarch import PLANES as SMARCH_PLANES
from .smarch import ROWS as SMARCH_ROWS
from .smarch import smarch_fits, smarch_kernel, smarch_planes, smarch_shape
from .tiled import _block3, modern_kernel, seed_kernel
from .vec import vec_kernel


# --------------------------------------------------------------------------------------------
# launch plans
# --------------------------------------------------------------------------------------------
def view3(shape):
    """The 3-D view shape of a 1/2/3-D field."""
    shape = tuple(int(n) for n in shape)
    return (1,) * (3 - len(shape)) + shape


def default_stage_kernel(kernel: str, ndim: int, dtype, shape, block=None) -> str:
    """The :data:`~simengine.field.plans.STAGE_KERNELS` entry :class:`StageLaunch` builds with
    its launch defaults (``config.py``) for a grid of ``shape`` — the rule the run's plan
    names (``plan/field.py``). ``block``: ``solver.block`` (a tuple, ``"auto"`` or None)."""
    if kernel in ("shared", "combined"):
        return "tiled"
    dt = np.dtype(dtype).name
    explicit = tuple(block) if isinstance(block, (list, tuple)) else None
    if ndim == 3:
        if DEFAULT_SMARCH.get((dt, 3), 0) and block == "auto":
            return "tuned"      # block: auto tunes the block when the solver is built, and
            #                     with it the 3-D form (smarch where the block fits it)
        if DEFAULT_SMARCH.get((dt, 3), 0):
            if explicit is None or smarch_fits(explicit, DEFAULT_SMARCH_ROWS):
                return "smarch"
        return "march" if DEFAULT_MARCH[3] else "direct"
    if ndim == 2:
        if DEFAULT_MARCH[2]:
            return "march"
        if DEFAULT_VEC.get(dt, 0) and tuple(shape)[-1] % 2 == 0:
            return "vec"
    return "direct"


class StageLaunch:
    """A compiled stage kernel plus its launch geometry for one (shape, slice, block).

    Shared-memory marching form (``smarch``): ``smarch_rows`` (default ``DEFAULT_SMARCH_ROWS``)
    output rows per thread along y; ``smarch_flat`` (default ``DEFAULT_SMARCH_FLAT``): the
    shared rings read and written with flat loads/stores instead of numba's indexing (no
    negative-index wraparound); ``smarch_ring_base`` (default ``DEFAULT_SMARCH_RING_BASE``):
    launches whose ``base`` is ``src`` (the same array object: stage 1 of RK2) run a second
    kernel that takes the base value from the shared φ ring (:attr:`same`, a plan of its own;
    launches and graph recordings with another base run :attr:`fn`)."""

    def __init__(self, kernel: str, ndim: int, shape3, bc: int, dtype, *, layout="modern",
                 block=None, lo=0, hi=None, cpt=None, march=None, unroll=None, vec=None,
                 smarch=None, maxreg=None, smarch_rows=None, smarch_ring_base=None,
                 smarch_flat=None, _src_is_base=False):
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
        # 3-D: the shared-memory marching form (smarch.py) where ``DEFAULT_SMARCH`` names it
        # for the dtype and no launch hint is given, else the register form (march.py) for the
        # default or an explicit ``march`` (unless ``smarch=True``)
        direct = self.layout == "direct" and ndim == 3
        sm_len = DEFAULT_SMARCH.get((self.dtype.name, ndim), 0) if direct else 0
        if smarch_rows is None:
            rows = DEFAULT_SMARCH_ROWS
            own = (self.hi - self.lo) * self.shape3[1] * self.shape3[2]
            least = SMARCH_ROWS2_MIN_CELLS.get(self.dtype.name)
            if block is None and ndim == 3 and least is not None and own >= least:
                rows = 2  # large grids: 2 rows per thread (measured, config.py)
        else:
            rows = int(smarch_rows)
        if rows not in SMARCH_ROWS:
            raise ValueError(f"smarch_rows must be one of {SMARCH_ROWS}")
        if smarch is None:
            smarch = bool(sm_len) and march is None and not cpt
            if smarch and block is not None and not smarch_fits(block, rows):
                smarch = False  # a block of the register form (e.g. 4x4x2): keep that form
        smarch = bool(smarch) and direct
        if self.layout != "direct" or ndim == 1:
            march = 0
        elif march is None:
            march = 0 if cpt else ((sm_len or DEFAULT_MARCH[ndim]) if smarch else
                                   DEFAULT_MARCH[ndim])
            if smarch and sm_len and block is None and not SIMULATOR:
                # the default launch: the march length that fills the GPU's waves best
                bx, by = DEFAULT_SMARCH_BLOCK[:2]
                march = smarch_planes((self.shape3[2], self.shape3[1], self.hi - self.lo),
                                      (bx, by * rows), self.dtype.name, rows,
                                      _sm_count(), choices=(sm_len,) + tuple(
                                          m for m in SMARCH_PLANES if m != sm_len))
        self.march = int(march)
        self.unroll = 0
        if self.march < 0:
            raise ValueError("march must be >= 0")
        self.smarch = smarch and bool(self.march)
        self.rows = rows if self.smarch else 1
        self.ring_base = bool(DEFAULT_SMARCH_RING_BASE if smarch_ring_base is None
                              else smarch_ring_base) and self.smarch
        self.flat = bool(DEFAULT_SMARCH_FLAT if smarch_flat is None else smarch_flat)
        #: the plan of launches with base is src (ring-base kernel), or None
        self.same = None
        #: this plan's kernel is only right for base is src (the ring-base kernel of ``same``)
        self.src_is_base = bool(_src_is_base) and self.smarch
        self.maxreg = int(maxreg) if maxreg else None
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
            block = (DEFAULT_SMARCH_BLOCK if self.smarch else
                     DEFAULT_MARCH_BLOCK[ndim] if self.march else
                     DEFAULT_VEC_BLOCK if self.vec else DEFAULT_BLOCK[(self.layout, ndim)])
        self.block = tuple(int(b) for b in block)
        if self.smarch:
            self.block = smarch_shape(self.block) + (1,)
        b3 = _block3(self.block, ndim)
        if self.smarch:
            self.cpt = 1
            self.unroll = int(unroll or DEFAULT_SMARCH_AHEAD)  # planes of loads in flight
            self.fn = smarch_kernel(bc, nc, self.dtype.name, self.block[:2], self.march,
                                    self.maxreg, self.unroll, rows=self.rows,
                                    ring_base=self.src_is_base, flat=self.flat)
            core = (b3[0], b3[1] * self.rows, self.march)
            if self.ring_base and not _src_is_base:
                self.same = StageLaunch(kernel, ndim, shape3, bc, dtype, layout=layout,
                                      block=self.block, lo=lo, hi=hi, march=self.march,
                                      unroll=self.unroll, smarch=True, maxreg=maxreg,
                                      smarch_rows=self.rows, smarch_ring_base=True,
                                      smarch_flat=self.flat, _src_is_base=True)
        elif self.march:
            self.cpt = 1
            self.unroll = int(unroll or DEFAULT_MARCH_UNROLL)
            self.fn = march_kernel(ndim, bc, nc, self.dtype.name, self.march, self.unroll,
                                   self.maxreg)
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
        if self.same is not None and src is base:
            self.same(src, base, out, coef, scal)
            return
        if self.src_is_base and src is not base:
            raise ValueError("this ring-base plan needs base is src")
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
            if _launch_api.launch_cached(self, key, args, (src, base, out, scal),
                                         self.configured.stream):
                return
            self._fast = None  # pragma: no cover - numba-cuda internals changed
        if SIMULATOR:
            # the simulator's kernel[grid, block] configures the shared kernel object in place,
            # so a plan built later for another geometry would change this plan's launch
            self.fn[self.griddim, self.blockdim](*args)
            return
        self.configured(*args)
        if self._fast is None and not SIMULATOR:
            self._fast = _launch_api.compiled(self.fn)

    def record(self, target, src, base, out, coef, scal):
        """Record this stage into ``target`` (a ``cuda.core`` graph builder) instead of
        launching it. The plan must have launched once (compiled, fast path available) and the
        buffers must be aligned for its kernel; raises ``RuntimeError`` otherwise."""
        if self.hi <= self.lo:
            return
        if self.same is not None and src is base and self.same._fast is not None:
            # (a ring-base kernel never launched: the ordinary kernel is right for any base)
            self.same.record(target, src, base, out, coef, scal)
            return
        if self.src_is_base and src is not base:
            raise ValueError("this ring-base plan needs base is src")
        if self._fast is None:
            raise RuntimeError("the stage kernel has not been launched (compiled) yet")
        if self.vec and not self._aligned(src, base, out):
            self._fallback().record(target, src, base, out, coef, scal)
            return
        n0, n1, n2 = self.shape3
        args = (src, base, out, n0, n1, n2, self.lo, self.hi, self.dtype.type(coef), *scal)
        _stream, config, kernel, kargs = self._prepare(args)
        # the recorded graph refers to the buffers: keep them alive with the plan
        self._keep[("graph", id(src), id(base), id(out), coef)] = (src, base, out, scal, kargs)
        _launch_api.record(target, config, kernel, kargs)

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
            self._alt = StageLaunch(self.kernel_name, self.ndim, self.shape3, self.bc, self.dtype,
                                  block=None, lo=self.lo, hi=self.hi,
                                  cpt=DEFAULT_CPT[self.ndim], march=0, vec=0)
        return self._alt

    # fast launch (see :mod:`.launch`): only three argument lists ever occur in a run
    _fast = None

    def _prepare(self, args):
        return _launch_api.prepare(self._fast, self.configured.stream, self.griddim,
                                   self.blockdim, args)

    @staticmethod
    def _launch(stream, config, kernel, kernelargs):
        _launch_api.launch(stream, config, kernel, kernelargs)


def stage(kernel, src, base, out, coef, model: CahnHilliard, grid: Grid, boundary: Boundary, *,
          lo=0, hi=None, block=None, layout="modern"):
    """Device twin of the CPU stage: ``out[lo:hi] = base[lo:hi] + coef * R(src)[lo:hi]``.

    ``src``, ``base``, ``out``: device arrays of the field shape (1/2/3-D, C-contiguous, one
    dtype; the kernels see them as flat buffers). Convenience entry point (builds a :class:`StageLaunch` each call, cached kernels);
    the solver keeps its plans."""
    shape = tuple(src.shape)
    s3 = view3(shape)
    plan = StageLaunch(kernel, len(shape), s3, boundary.code, src.dtype, layout=layout,
                     block=block, lo=lo, hi=hi)
    n = int(np.prod(shape))
    r = (lambda a: a.reshape(n)) if len(shape) != 1 else (lambda a: a)
    plan(r(src), r(base), r(out), coef, stage_scalars(model, grid, boundary, src.dtype))


def _sm_count() -> int:
    from numba import cuda

    return int(cuda.get_current_device().MULTIPROCESSOR_COUNT)
