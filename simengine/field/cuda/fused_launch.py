"""The launch side every fused RK2 form shares: ``plan(src, out, coef1, coef2, scal)`` through
the fast launch path (:mod:`.launch`), graph recording and ``advance`` over a solver's buffers.

The fused step reads φⁿ once and writes φⁿ⁺¹ once (2 words of DRAM traffic per cell-step
instead of the unfused stages' 5); φ* never leaves the chip: a form recomputes stage 1 in a halo
of 4 cells around what it writes (two stages of a 2-cell-deep stencil).

A form subclasses :class:`FusedStep` and sets ``fn`` (the kernel), ``griddim``, ``blockdim``,
``dtype``, ``shape3`` and ``lo``, ``hi`` (the rows of axis 0 it writes: all of them for the whole
grid, the owned rows of a slab stored with a 4-row halo — :func:`output_rows`);
:meth:`FusedStep._args` builds the kernel's arguments (a form with other arguments overrides it)
and :meth:`FusedStep._compiled` runs once after the first real launch.

On a slab the kernels read rows ``lo − 4 … hi + 3`` of the stored array: halo rows where the slab
has a halo (filled by the solver's ``exchange`` before each step), else — a global mirror or fixed
face, where the slab has no halo and ``lo = 0`` / ``hi`` = the stored rows — the boundary's fold
or outside rule at the array's edge, which is the global face. Every cell thus sees the values
and the arithmetic of the whole-grid step: K slabs are bit-identical to the whole grid.
"""
from __future__ import annotations

from ..integrator import Scheme, Stage
from . import launch as _launch_api
from .config import SIMULATOR


class FusedStep:
    """One fused RK2 step per launch on flat device buffers (φ → φⁿ⁺¹)."""

    layout = "fused"
    cpt = 1
    vec = 0
    rows = 1
    march = 0
    _fast = None
    lo = 0
    hi = None
    #: the CUDA stream of the launches (None: the legacy default stream); a slab's pipelined
    #: step (:mod:`.fused_slab`) runs on its own stream so that halo copies overlap it
    stream = None

    def _configure(self):
        """The dispatcher configured for this plan's launch geometry and stream."""
        if self.stream is None:
            return self.fn[self.griddim, self.blockdim]
        return self.fn[self.griddim, self.blockdim, self.stream]

    def _init_launch(self):
        self._kargs, self._keep = {}, {}
        self._fast = None

    def _args(self, src, out, coef1, coef2, scal):
        t = self.dtype.type
        n0, n1, n2 = self.shape3
        return (src, out, n0, n1, n2, self.lo, self.hi, t(coef1), t(coef2), *scal)

    def _compiled(self):
        """Called once after the first (compiling) launch on a GPU."""

    def __call__(self, src, out, coef1, coef2, scal):
        """``out = src + coef2·R(src + coef1·R(src))`` on flat device buffers; ``scal`` =
        (mh2, kh2, nd2, c0, c1, c2, c3, vphi, vmu) in the array dtype."""
        key = (id(src), id(out), coef1, coef2, id(scal))
        if self._fast is not None:
            kargs = self._kargs.get(key)
            if kargs is not None:
                _launch_api.launch(*kargs)
                return
        args = self._args(src, out, coef1, coef2, scal)
        if self._fast is not None:
            if _launch_api.launch_cached(self, key, args, (src, out, scal),
                                         self._configured.stream):
                return
            self._fast = None  # pragma: no cover - numba-cuda internals changed
        if SIMULATOR:
            self._configure()(*args)
            return
        self._configured = self._configure()
        self._configured(*args)
        self._fast = _launch_api.compiled(self.fn)
        self._compiled()

    def record(self, target, src, out, coef1, coef2, scal):
        """Record this step into ``target`` (a ``cuda.core`` graph builder) instead of launching
        it; the plan must have launched once (compiled)."""
        if self._fast is None:
            raise RuntimeError("the fused kernel has not been launched (compiled) yet")
        args = self._args(src, out, coef1, coef2, scal)
        _stream, config, kernel, kargs = _launch_api.prepare(
            self._fast, self._configured.stream, self.griddim, self.blockdim, args)
        # the recorded graph refers to the buffers: keep them alive with the plan
        self._keep[("graph", id(src), id(out), coef1, coef2)] = (src, out, scal, kargs)
        _launch_api.record(target, config, kernel, kargs)

    def advance(self, buffers, nsteps: int, coefs, scal) -> None:
        """``nsteps`` fused steps on a solver's buffer list (φ in ``buffers[0]``, written to
        ``buffers[2]``, then swapped: the new φ is ``buffers[0]``, as after the unfused
        scheme's rotation; ``buffers[1]`` (φ*) is not touched)."""
        c1, c2 = coefs
        for _ in range(int(nsteps)):
            self(buffers[0], buffers[2], c1, c2, scal)
            buffers[0], buffers[2] = buffers[2], buffers[0]


def output_rows(shape3, rows) -> tuple:
    """``(lo, hi)``: the rows of axis 0 a fused step writes — ``rows`` (a slab's owned rows in
    its stored array) or all of them. A slab's halo side must hold the fused step's 4 rows."""
    n1 = int(shape3[1])
    lo, hi = (0, n1) if rows is None else (int(rows[0]), int(rows[1]))
    if not 0 <= lo < hi <= n1:
        raise ValueError(f"fused step: rows {lo}:{hi} outside the {n1} stored rows")
    if (lo and lo < 4) or (n1 - hi and n1 - hi < 4):
        raise ValueError(f"fused step: rows {lo}:{hi} of {n1}: a halo side needs 4 rows")
    return lo, hi


#: the fused step as a one-stage scheme for :class:`simengine.field.cuda.graph.StepGraph`:
#: buffers[0] → buffers[2], then swapped (period 2, so a graph of an even number of steps
#: leaves every buffer in its slot)
FUSED_SCHEME = Scheme("rk2-fused", (Stage(0, 0, 2, 1.0),), (2, 1, 0))


def graph_recording(plan: FusedStep, coefs, scal):
    """``(scheme, coefs, record_stage)`` for :class:`~simengine.field.cuda.graph.StepGraph`:
    each recorded "stage" is one fused step with the solver's two RK2 coefficients."""
    c1, c2 = coefs

    def record_stage(target, src, base, out, coef):
        plan.record(target, src, out, c1, c2, scal)

    return FUSED_SCHEME, (c2,), record_stage
