"""Ensemble kernels: one launch updates M independent fields (members) stored back to back in one
flat buffer of M·cells, each with its own boundary, exactly as a one-member run of the same
kernel updates it.

The member index is a grid axis:

* 1-D and 2-D, scalar direct form (A/C, 1/2/4 cells per thread): the unchanged
  :func:`~.direct.direct_kernel`. In 1-D/2-D that kernel sees a field as the 3-D view
  ``(1, n0, n1)`` and never lets its third index ``k`` enter an address mode, only the flat
  offset ``k·n0·n1``; launched on the view ``(M, n0, n1)`` with M blocks along z, block z = m
  updates member m. Same compiled kernel, same arithmetic: bit-identical by construction.
* 2-D pair form (``vec=2``, the fp32 default): :func:`pair_ensemble_kernel`, the body of
  :func:`~.vec.vec_kernel` (the same generated tile function and address-mode path) on the
  member's slice ``[m·cells, (m+1)·cells)``, member = ``blockIdx.z``.
* 3-D: :func:`direct3_ensemble_kernel`, one cell per thread, the fast/address-mode device functions
  of :func:`~.direct.direct_kernel` with ``cells_per_thread=1`` on the member's slice; the z blocks
  of all members are folded into ``blockIdx.z`` (``zb`` per member). The 3-D default of a single
  run is the marching form, which has no ensemble form: a 3-D member equals a single run with
  ``march=0, cells_per_thread=1``.

:func:`ensemble_form` decides the form for a case and names the single-run options it equals;
:func:`member_partials` reduces every member in one launch (float64, the same blocks and order as
a one-member :func:`~.reduce.field_partials`).
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from . import launch as _launch_api
from .access import LD, LD2, LDNC, LDNC2, ST, ST2
from .config import (DEFAULT_BLOCK, DEFAULT_CPT, DEFAULT_VEC, DEFAULT_VEC_BLOCK, DEFAULT_VEC_ROWS,
                     SIMULATOR)
from .plan import StageLaunch, view3
from .reduce import RED_THREADS, reduction_blocks, reduction_kernel
from .stencil import _make_rhs_fast, _make_rhs_slow
from .tiled import _block3
from .vec import VEC_ROWS, _vec_fast_source
from .physics import mu

#: kernels with an ensemble form (the direct kernels A and C)
ENSEMBLE_KERNELS = ("global", "texture")


# --------------------------------------------------------------------------------------------
# which form a case runs in, and the single-run options it equals
# --------------------------------------------------------------------------------------------
def ensemble_form(kernel: str, shape, dtype, cpt=None, march=None, vec=None) -> dict:
    """The form of the ensemble kernel for a case: ``dict(form="direct"|"pair", cpt=...,
    single=...)`` where ``single`` are the :class:`~simengine.field.cuda_solver.CudaFieldSolver`
    options (``cells_per_thread``, ``march``, ``vec``) of the one-member run each member equals
    bit for bit. Mirrors :class:`StageLaunch`'s choice for those options; ValueError for cases
    without an ensemble form (tiled kernels, an explicit marching form, 3-D with more than one
    cell per thread)."""
    if kernel not in ENSEMBLE_KERNELS:
        raise ValueError(f"CUDA ensembles run the direct kernels ({', '.join(ENSEMBLE_KERNELS)}),"
                         f" not {kernel!r}")
    shape = tuple(int(n) for n in shape)
    nd = len(shape)
    dname = np.dtype(dtype).name
    if march:
        raise ValueError("the marching form (march > 0) has no ensemble form")
    if nd == 3:
        if cpt not in (None, 1):
            raise ValueError("3-D ensembles update one cell per thread (cells_per_thread 1)")
        return dict(form="direct", cpt=1, single=dict(cells_per_thread=1, march=0, vec=0))
    if nd == 2:
        if vec is None:
            vec = 0 if cpt else DEFAULT_VEC.get(dname, 0)
        if vec not in (0, 2):
            raise ValueError("vec must be 0 or 2 (cells per pair load along x)")
        if vec and shape[1] % 2 == 0:
            rows = int(cpt or DEFAULT_VEC_ROWS)
            if rows not in VEC_ROWS:
                raise ValueError(f"rows per thread of the pair kernel must be one of {VEC_ROWS}")
            return dict(form="pair", cpt=rows, single=dict(cells_per_thread=rows, march=0, vec=2))
        if vec:  # odd row length: the single run falls back to the scalar kernel too
            cpt = cpt if cpt in (1, 2, 4) else None
    c = int(cpt or DEFAULT_CPT[nd])
    if c not in (1, 2, 4):
        raise ValueError("cells per thread must be 1, 2 or 4")
    return dict(form="direct", cpt=c, single=dict(cells_per_thread=c, march=0, vec=0))


def default_single_form(kernel: str, shape, dtype) -> bool:
    """Whether a single run with default options (no ``cells_per_thread``/``march``/``vec``)
    uses the form the ensemble runs — i.e. whether ensemble members equal default single runs."""
    if kernel not in ENSEMBLE_KERNELS:
        return False
    return len(tuple(shape)) != 3   # 3-D single runs default to the marching form


# --------------------------------------------------------------------------------------------
# kernels
# --------------------------------------------------------------------------------------------
@functools.lru_cache(maxsize=None)
def pair_ensemble_kernel(bc: int, nc: bool, dtype: str = "float32", rows: int = 4):
    """:func:`~.vec.vec_kernel` over M members: member ``blockIdx.z`` is the slice
    ``[m·n1·n2, (m+1)·n1·n2)`` of the buffers (``n0`` = 1, the 2-D field is ``(n1, n2)``)."""
    if rows not in VEC_ROWS:
        raise ValueError(f"rows per thread of the pair kernel must be one of {VEC_ROWS}")
    R = int(rows)
    rhs_slow = _make_rhs_slow(2, bc, nc)
    rhs_fast = _make_rhs_fast(2, nc)
    del dtype


    ns = {"LOAD2": LDNC2 if nc else LD2, "LOAD": LDNC if nc else LD, "LD2": LD2, "ST2": ST2,
          "MU": mu}
    exec(compile(_vec_fast_source(R), f"<pair_ensemble_kernel rows={R}>", "exec"), ns)
    fast = cuda.jit(device=True)(ns["fast"])

    @cuda.jit
    def kernel(src_all, base_all, out_all, n0, n1, n2, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2,
               c3, vphi, vmu):
        cells = n1 * n2
        o = numba.int64(cuda.blockIdx.z) * cells
        src = src_all[o:o + cells]
        base = base_all[o:o + cells]
        out = out_all[o:o + cells]
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


@functools.lru_cache(maxsize=None)
def direct3_ensemble_kernel(bc: int, nc: bool, dtype: str = "float64"):
    """3-D kernel A/C, one cell per thread, over M members: ``blockIdx.z = m·zb + (z block)``,
    member m is the slice ``[m·cells, (m+1)·cells)``. Per cell the arithmetic of
    :func:`~.direct.direct_kernel` with ``cells_per_thread=1`` (register fast path at least 2
    cells from every boundary, address-mode path otherwise)."""
    rhs_fast = _make_rhs_fast(3, nc)
    rhs_slow = _make_rhs_slow(3, bc, nc)
    del dtype

    @cuda.jit
    def kernel(src_all, base_all, out_all, n0, n1, n2, lo, hi, coef, mh2, kh2, nd2, c0, c1, c2,
               c3, vphi, vmu, zb):
        bz = numba.int64(cuda.blockIdx.z)
        m = bz // zb
        i = numba.int64(cuda.blockIdx.x) * cuda.blockDim.x + cuda.threadIdx.x
        j = numba.int64(cuda.blockIdx.y) * cuda.blockDim.y + cuda.threadIdx.y
        k = (bz - m * zb) * cuda.blockDim.z + cuda.threadIdx.z + lo
        if k >= hi or j >= n1 or i >= n2:
            return
        sy = n2
        sz = n1 * n2
        cells = n0 * sz
        o = m * cells
        src = src_all[o:o + cells]
        base = base_all[o:o + cells]
        out = out_all[o:o + cells]
        g = k * sz + j * sy + i
        if (i >= 2 and i < n2 - 2 and j >= 2 and j < n1 - 2 and k >= 2 and k < n0 - 2):
            r = rhs_fast(src, g, sy, sz, mh2, kh2, nd2, c0, c1, c2, c3)
        else:
            r = rhs_slow(src, k, j, i, n0, n1, n2, mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu)
        ST(out, g, LD(base, g) + coef * r)

    return kernel


# --------------------------------------------------------------------------------------------
# launch plan
# --------------------------------------------------------------------------------------------
class EnsemblePlan:
    """One stage of M members in one launch: ``out = base + coef·R(src)`` member by member, on
    flat device buffers of ``M·cells`` elements (member m at offset ``m·cells``)."""

    def __init__(self, kernel: str, shape, members: int, bc: int, dtype, *, block=None,
                 cpt=None, march=None, vec=None):
        self.shape = tuple(int(n) for n in shape)
        self.ndim = nd = len(self.shape)
        self.members = M = int(members)
        if M < 1:
            raise ValueError("an ensemble needs at least one member")
        self.dtype = np.dtype(dtype)
        form = ensemble_form(kernel, self.shape, self.dtype, cpt, march, vec)
        self.form, self.cpt, self.single = form["form"], form["cpt"], form["single"]
        self.kernel_name, self.bc = kernel, bc
        nc = kernel == "texture"
        s3 = view3(self.shape)
        self.n_first = self.shape[0]
        self._inner = None
        self._extra = ()
        if self.form == "direct" and nd < 3:
            # the unchanged direct kernel on the view (M, n0, n1) / (M, 1, n)
            self._inner = StageLaunch(kernel, nd, (M,) + s3[1:], bc, self.dtype, block=block,
                                    cpt=self.cpt, march=0, vec=0)
            self.block = self._inner.block
            self.griddim, self.blockdim = self._inner.griddim, self._inner.blockdim
            self.fn = self._inner.fn
            return
        if self.form == "pair":
            self.block = tuple(int(b) for b in (block or DEFAULT_VEC_BLOCK))
            b3 = _block3(self.block, 2)
            self.fn = pair_ensemble_kernel(bc, nc, self.dtype.name, self.cpt)
            self.griddim = (math.ceil(s3[2] / (2 * b3[0])), math.ceil(s3[1] / (b3[1] * self.cpt)),
                            M)
        else:
            self.block = tuple(int(b) for b in (block or DEFAULT_BLOCK[("direct", 3)]))
            b3 = _block3(self.block, 3)
            self.fn = direct3_ensemble_kernel(bc, nc, self.dtype.name)
            zb = math.ceil(s3[0] / b3[2])
            self._extra = (zb,)
            self.griddim = (math.ceil(s3[2] / b3[0]), math.ceil(s3[1] / b3[1]), zb * M)
        self.blockdim = b3
        self.shape3 = s3
        self._kargs, self._keep, self._fast = {}, {}, None

    def __call__(self, src, base, out, coef, scal):
        if self._inner is not None:
            self._inner(src, base, out, coef, scal)
            return
        n0, n1, n2 = self.shape3
        args = (src, base, out, n0, n1, n2, 0, self.n_first, self.dtype.type(coef), *scal,
                *self._extra)
        key = (id(src), id(base), id(out), coef, id(scal))
        kargs = self._kargs.get(key)
        if kargs is not None:
            _launch_api.launch(*kargs)
            return
        if self._fast:
            if _launch_api.launch_cached(self, key, args, (src, base, out, scal),
                                         self.configured.stream):
                return
            self._fast = False  # pragma: no cover - numba-cuda internals changed
        self.configured = self.fn[self.griddim, self.blockdim]
        self.configured(*args)
        if self._fast is None and not SIMULATOR:
            self._fast = _launch_api.compiled(self.fn)


    @property
    def ready(self) -> bool:
        """Whether the kernel has launched once (compiled; the fast path and recording work)."""
        return bool(self._inner._fast if self._inner is not None else self._fast)

    def record(self, target, src, base, out, coef, scal):
        """Record this stage into ``target`` (a ``cuda.core`` graph builder, see :mod:`.graph`)
        instead of launching it; the plan must have launched once."""
        if self._inner is not None:
            self._inner.record(target, src, base, out, coef, scal)
            return
        if not self._fast:
            raise RuntimeError("the ensemble kernel has not been launched (compiled) yet")
        n0, n1, n2 = self.shape3
        args = (src, base, out, n0, n1, n2, 0, self.n_first, self.dtype.type(coef), *scal,
                *self._extra)
        _stream, config, kernel, kargs = _launch_api.prepare(self._fast, self.configured.stream,
                                                             self.griddim, self.blockdim, args)
        self._keep[("graph", id(src), id(base), id(out), coef)] = (src, base, out, scal, kargs)
        _launch_api.record(target, config, kernel, kargs)


# --------------------------------------------------------------------------------------------
# reductions of every member in one launch
# --------------------------------------------------------------------------------------------
def member_partials(phi, shape, members: int, model, boundary, partial=None):
    """One :class:`~simengine.field.observables.FieldPartials` per member of a flat device buffer
    of ``members`` fields of ``shape``: the reduction kernel of :mod:`.reduce` with a member grid
    axis; each member gets the same blocks (and the host adds its partials in the same order) as
    :func:`~.reduce.field_partials` of that field alone, so the values are bit for bit those of a
    one-member run. Returns (list of partials, the partial buffer for reuse)."""
    from ..observables import FieldPartials

    shape = tuple(int(n) for n in shape)
    n0, n1, n2 = view3(shape)
    cells = n0 * n1 * n2
    M = int(members)
    nb = reduction_blocks(cells)
    if partial is None or partial.shape[0] < nb * M:
        partial = cuda.device_array((nb * M, 5), dtype=np.float64)
    a0, a1, a2, a3 = (float(c) for c in model.coefficients)
    kern = reduction_kernel(len(shape), boundary.code)
    kern[(nb, M), RED_THREADS](phi, partial, n0, n1, n2, 0, shape[0], a0, a1 / 2.0, a2 / 3.0,
                               a3 / 4.0, float(boundary.value))
    p = partial.copy_to_host()[:nb * M].reshape(M, nb, 5)
    out = [FieldPartials(cells, float(q[:, 0].sum()), float(q[:, 1].sum()), float(q[:, 2].sum()),
                         float(q[:, 3].min()), float(q[:, 4].max())) for q in p]
    return out, partial
