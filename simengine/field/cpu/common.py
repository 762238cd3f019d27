"""Shared pieces of the CPU stage kernels: boundary index maps, f', the atomic task claim
that schedules the parallel workers, and the compile options."""
from __future__ import annotations

import numpy as np
from llvmlite import ir as llir
from numba import njit
from numba.core import types
from numba.extending import intrinsic

from ..model import fprime_poly

_JIT = dict(parallel=True, cache=True, fastmath=False)

STRATEGIES = ("global", "shared", "texture", "combined")

#: default tile (core) extents per dimension: long contiguous rows for SIMD, a few rows deep; the
#: working set (φ tile + μ tile) stays well inside a 1–2 MiB L2 cache.
DEFAULT_TILES = {1: (4096,), 2: (32, 1024), 3: (8, 16, 256)}


def default_tile(ndim: int) -> np.ndarray:
    return np.array(DEFAULT_TILES[ndim], dtype=np.int64)


# --------------------------------------------------------------------------- boundary helpers
@njit(cache=True, inline="always")
def _tx(x, ok, bv):
    return x if ok else bv


@njit(cache=True, inline="always")
def _bmap(i, n, bcode):
    """Source index of (possibly outside) index ``i`` on an axis of ``n`` cells, or -1 for
    'outside a fixed boundary'. Valid for |overshoot| <= n."""
    if i >= 0 and i < n:
        return i
    if bcode == 0:
        if i < 0:
            return i + n
        return i - n
    if bcode == 1:
        if i < 0:
            return -1 - i
        return 2 * n - 1 - i
    return -1


@njit(cache=True)
def address_map(n, bcode):
    """Address map of an axis of ``n`` cells: ``A[p]`` is the source index of ``i = p - 2``
    (``p = 0 .. n+3``), ``-1`` where the read returns the border value (fixed)."""
    a = np.empty(n + 4, dtype=np.int64)
    for p in range(n + 4):
        a[p] = _bmap(p - 2, n, bcode)
    return a


#: f'(φ) (field/model.py's one definition) compiled for the CPU kernels
_fp = njit(cache=True, inline="always")(fprime_poly)


@njit(cache=True, inline="always")
def stage_constants(params, bvalue):
    """A stage's constants from the packed parameters (``field/params.py: pack``): M, κ, a0..a3,
    1/h², the Laplacian's centre weight, and μ at a fixed wall (f'(bvalue))."""
    a0, a1, a2, a3 = params[2], params[3], params[4], params[5]
    return (params[0], params[1], a0, a1, a2, a3, params[6], params[7],
            _fp(bvalue, a0, a1, a2, a3))


# ------------------------------------------------------------------------- dynamic scheduling
# numba's threading layers hand each thread an equal, contiguous share of a prange (the OpenMP
# layer uses a static ``omp for``). On a loaded machine a thread that loses its core then holds up
# the whole stage. Every parallel kernel below therefore runs ``prange`` over one worker per thread
# and the workers *claim* tasks (tiles, bands, row blocks) from a shared counter with an atomic
# fetch-and-add: a stalled thread only delays the task it holds. A worker also allocates its
# scratch buffers once, not once per task.

@intrinsic
def _claim(typingctx, counter):
    """``t = counter[0]; counter[0] += 1; return t`` as one atomic operation (int64 array)."""
    if not (isinstance(counter, types.Array) and counter.dtype == types.int64):
        return None
    sig = types.int64(counter)

    def codegen(context, builder, signature, args):
        ary = context.make_array(signature.args[0])(context, builder, args[0])
        return builder.atomic_rmw("add", ary.data, llir.Constant(llir.IntType(64), 1), "seq_cst")

    return sig, codegen


#: upper bound on the workers of one stage (>= any numba thread count used here). ``prange``
#: hands each thread an equal share of the workers; the first worker a thread runs claims tasks
#: until none is left, the others find the counter exhausted and return at once. (Asking numba
#: for the thread count inside a kernel would make the kernel uncacheable.)
_MAX_WORKERS = 256


@njit(cache=True, inline="always")
def _workers(ntasks):
    return max(1, min(_MAX_WORKERS, ntasks))


#: cells per task for the row-block kernels (``global``): enough work to hide the claim, and
#: many more tasks than threads
_TASK_CELLS = 16384
