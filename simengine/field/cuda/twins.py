"""Twins of the CPU stage functions (same signature as :mod:`simengine.field.cpu`)."""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from .config import KERNELS
from .plan import StageLaunch, view3


# --------------------------------------------------------------------------------------------
# twins of the CPU stage functions (same signature, see simengine/field/cpu)
# --------------------------------------------------------------------------------------------
def _twin(kernel, ndim):
    def stage_fn(src, base, out, coef, params, bcode, bvalue, lo, hi, tile=None, layout=None):
        """CUDA twin of ``cpu.<kernel>_stage_<ndim>d``: device arrays ``src``, ``base``,
        ``out`` of the field shape; ``params`` = ``[M, κ, a0, a1, a2, a3, 1/h², 2·ndim]``
        (:func:`simengine.field.params.make_params`); ``tile`` here is the CUDA thread-block
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
        plan = StageLaunch(kernel, ndim, view3(shape), int(bcode), dt, layout=layout or "modern",
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
    """The CUDA stage function ``<kernel>_stage_<ndim>d`` (twin of ``cpu.get_stage``)."""
    if kernel not in KERNELS or ndim not in (1, 2, 3):
        raise ValueError(f"no CUDA stage {kernel!r} for {ndim}-D")
    return globals()[f"{kernel}_stage_{ndim}d"]
