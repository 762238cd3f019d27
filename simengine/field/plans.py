"""The plan registry of the CUDA field engine: which form runs a solver's step, and why.

Every form declares what it runs (dimensions, precisions, boundary kinds, strategies, whole
grid or a slab with a halo of some depth, ensembles) and its rule for ``fused: auto``;
:func:`choose` walks the table once per solver and returns a :class:`Choice` (the form and a
one-line reason, logged at start-up by the field job). The forms, in the order ``auto`` asks:

================  =====  ========  ==============================================================
form              ndim   slab      auto picks it
================  =====  ========  ==============================================================
``fused-warp``    2      whole     2-D grids above :data:`FUSED_SMALL_CELLS` cells
                                   (:mod:`.cuda.fused_warp`: one warp marches a strip of rows)
``fused-frame``   2      whole     2-D grids of at most :data:`FUSED_SMALL_CELLS` cells
                                   (:mod:`.cuda.fused_frame`: one thread per frame cell)
``stages``        1–3    halo 2    everything else: two launches of the unfused stage kernels
                                   (:class:`.cuda.plan.StagePlan`)
================  =====  ========  ==============================================================

The stage kernel of ``stages`` (:data:`STAGE_KERNELS`: ``smarch``, ``march``, ``vec``,
``direct``, ``tiled``) follows the per-(dimension, precision) defaults of ``cuda/config.py``,
applied by :class:`~.cuda.plan.StagePlan`; :func:`stage_kernel` names the one a plan runs.

Rules: ``fused: auto`` runs a fused form only for RK2 on the whole grid with the ``global`` /
``texture`` strategies, no launch hint of the unfused kernels (``block``, ``cells_per_thread``,
``march``, ``vec``) and on a real GPU (under the CUDA simulator the unfused stages stay the
default so that their tests test them). ``fused: true`` runs the first fused form that supports
the case (a ``block`` is then the frame form's thread block, the frame = tile + 4 on every
side; ``march`` the warp form's rows per chunk); where none does (1-D and 3-D fields, Euler, a
slab of a decomposed grid, ``cells_per_thread``) it is refused with a :class:`PlanError` (a
one-line :class:`~simengine.errors.UserError`). ``fused: false`` runs the
stages. Measurements behind the rules: docs/field-gpu.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ..errors import UserError

#: ``fused: auto``: the frame-blocked fused step on 2-D grids of at most this many cells (H100:
#: 200² fp64 2.45 µs/step against 9.0 for two unfused stages), the warp-marching fused step above
FUSED_SMALL_CELLS = 1 << 18
#: the strategies ``fused: auto`` applies to (``fused: true`` works with all four)
FUSED_AUTO_KERNELS = ("global", "texture")
#: per precision: whether the warp-marching form wins on large 2-D grids (H100 4096²: fp64
#: 0.114 ms/step against 0.150 unfused, fp32 0.079 against 0.14)
WARP_AUTO = {"float32": True, "float64": True}

KERNELS = ("global", "shared", "texture", "combined")
PRECISIONS = ("float32", "float64")
BOUNDARIES = ("periodic", "mirror", "fixed")


class PlanError(UserError, ValueError):
    """A requested plan that cannot run here (one line)."""


@dataclass(frozen=True)
class Case:
    """What the chooser looks at: the solver's local problem and its launch hints."""

    ndim: int
    shape3: tuple
    dtype: str
    boundary: int  # boundary code (cuda/config.py)
    kernel: str = "texture"
    integrator: str = "rk2"
    #: the solver holds the whole grid (not one slab of a decomposed grid)
    whole: bool = True
    #: halo rows the slab holds on either side (a slab; decomposition.HALO today)
    slab_halo: int = 2
    #: a launch hint of the unfused kernels was given (block, cells_per_thread, march, vec)
    hints: bool = False
    block: Optional[tuple] = None  # an explicit block (tuple)
    rows: Optional[int] = None     # cells_per_thread
    march: Optional[int] = None
    simulator: bool = False
    sms: Optional[int] = None      # multiprocessors (None: the current device's)

    @property
    def cells(self) -> int:
        return int(np.prod(self.shape3))


@dataclass(frozen=True)
class Form:
    """One way of running a step: what it supports and when it runs."""

    name: str
    fused: bool
    ndims: tuple
    #: halo rows a slab of a decomposed grid must hold to run this form (its stencil depth per
    #: exchange); None = whole grid only. A fused form on slabs (issue 27) declares 4: the
    #: chooser then runs it on slabs built with a 4-row halo (``Case.slab_halo``)
    halo: Optional[int]
    ensemble: bool
    #: the ``auto`` rule in words (docs, ``simengine`` log)
    rule: str
    #: ``auto``: the reason this form is auto's pick for a case, or None
    wins: Callable = field(repr=False)
    #: ``fused: true``: whether this form takes the request (launch hints it honours)
    takes: Callable = field(repr=False)
    #: the plan object for a case (fused forms; ``stages`` is the solver's own StagePlan)
    build: Optional[Callable] = field(default=None, repr=False)
    kernels: tuple = KERNELS
    precisions: tuple = PRECISIONS
    boundaries: tuple = BOUNDARIES

    def supports(self, case: Case) -> tuple:
        """``(True, "")`` or ``(False, why)``."""
        if case.ndim not in self.ndims:
            return False, f"{self.name} runs {'/'.join(map(str, self.ndims))}-D fields"
        if case.kernel not in self.kernels:
            return False, f"{self.name} has no kernel {case.kernel!r}"
        if np.dtype(case.dtype).name not in self.precisions:
            return False, f"{self.name} computes in {' or '.join(self.precisions)}"
        if self.fused and case.integrator != "rk2":
            return False, f"fused needs integrator rk2, not {case.integrator!r}"
        if not case.whole and self.halo is None:
            return False, (f"{self.name} runs on the whole grid only, not on one slab of a "
                           f"decomposed grid")
        if not case.whole and case.slab_halo < self.halo:
            return False, (f"{self.name} needs a slab halo of {self.halo} rows, the slab holds "
                           f"{case.slab_halo}")
        return True, ""


@dataclass(frozen=True)
class Choice:
    form: Form
    reason: str

    @property
    def fused(self) -> bool:
        return self.form.fused

    def build(self, case: Case):
        return self.form.build(case)


def _auto_fusable(case: Case) -> bool:
    return (case.integrator == "rk2" and case.whole and not case.simulator
            and case.kernel in FUSED_AUTO_KERNELS and not case.hints)


def _warp_wins(case):
    if (_auto_fusable(case) and case.ndim == 2 and case.cells > FUSED_SMALL_CELLS
            and WARP_AUTO.get(case.dtype, False)):
        return "auto: fused, warp-marching (large 2-D grid)"
    return None


def _warp_takes(case):
    return (case.block is None and case.rows is None and case.cells > FUSED_SMALL_CELLS
            and WARP_AUTO.get(case.dtype, False))


def _build_warp(case):
    from .cuda.fused_warp import WarpFusedPlan

    return WarpFusedPlan(case.kernel, 2, case.shape3, case.boundary, case.dtype,
                         length=case.march)


def _frame_wins(case):
    if _auto_fusable(case) and case.ndim == 2 and case.cells <= FUSED_SMALL_CELLS:
        return "auto: fused, frame-blocked (small 2-D grid, latency-bound)"
    return None


def _frame_takes(case):
    """``fused: true``: grids the warp form does not take; ``block`` = the frame."""
    return case.rows is None and not _warp_takes(case)


def _build_frame(case):
    from .cuda.fused_frame import FramePlan

    tile = None
    if case.block is not None:  # the block is the frame: the tile is 4 cells less each side
        if len(case.block) != 2 or min(case.block) <= 8:
            raise PlanError(f"fused-frame: block {list(case.block)} must be 2 entries (x "
                            f"first) above 8: the frame of a tile and its 4-cell halo")
        tile = (case.block[1] - 8, case.block[0] - 8)
    return FramePlan(case.kernel, 2, case.shape3, case.boundary, case.dtype, tile=tile,
                     sms=case.sms)


def _never(case):
    return None


def _always(case):
    return True


FORMS = (
    Form("fused-warp", True, (2,), None, False,
         f"2-D, more than {FUSED_SMALL_CELLS} cells", _warp_wins, _warp_takes, _build_warp),
    Form("fused-frame", True, (2,), None, False,
         f"2-D, at most {FUSED_SMALL_CELLS} cells", _frame_wins, _frame_takes, _build_frame),
    Form("stages", False, (1, 2, 3), 2, True,
         "every case no fused form wins", _never, _always),
)
BY_NAME = {f.name: f for f in FORMS}
STAGES = BY_NAME["stages"]


#: the stage kernels of the ``stages`` form: (what they run, when StagePlan picks them)
STAGE_KERNELS = {
    "smarch": ("3-D, global/texture", "3-D default: planes march through a shared-memory "
               "ring (config.DEFAULT_SMARCH; 2 rows per thread from 2^24 cells)"),
    "march": ("2-D/3-D, global/texture", "an explicit march length (register queues)"),
    "vec": ("2-D fp32, global/texture", "2-D fp32 default: pair loads (config.DEFAULT_VEC)"),
    "direct": ("1-D to 3-D, global/texture", "1-D, 2-D fp64, explicit cells_per_thread"),
    "tiled": ("1-D to 3-D, shared/combined", "the shared and combined strategies "
              "(seed / modern layouts)"),
}


def stage_kernel(plan) -> str:
    """The :data:`STAGE_KERNELS` entry a :class:`~.cuda.plan.StagePlan` runs."""
    if plan.layout != "direct":
        return "tiled"
    if plan.march:
        return "smarch" if plan.smarch else "march"
    return "vec" if plan.vec else "direct"


def _unfused_reason(case: Case) -> str:
    """Why ``auto`` runs the unfused stages for a case no fused form wins."""
    if case.integrator != "rk2":
        return "euler is one stage"
    if not case.whole:
        return "slab (halo 2): unfused"
    if case.simulator:
        return "auto: unfused under the simulator"
    if case.kernel not in FUSED_AUTO_KERNELS or case.ndim != 2:
        return f"auto: unfused for {case.kernel} {case.ndim}-D"
    if case.hints:
        return "auto: launch hints of the unfused kernels given"
    return f"auto: unfused above {FUSED_SMALL_CELLS} cells (bandwidth-bound)"


def choose(case: Case, fused=None) -> Choice:
    """The form that runs ``case`` for ``fused`` = ``True`` / ``False`` / ``None`` (auto)."""
    if fused is False:
        return Choice(STAGES, "fused: false")
    if fused is None:
        for form in FORMS:
            why = form.wins(case)
            if why and form.supports(case)[0]:
                return Choice(form, why)
        return Choice(STAGES, _unfused_reason(case))
    if fused is not True:
        raise PlanError(f"fused must be true, false or auto, not {fused!r}")
    refusal = f"no fused form runs {case.ndim}-D fields (the fused forms are 2-D)"
    for form in FORMS:
        if not form.fused:
            continue
        ok, why = form.supports(case)
        if ok and form.takes(case):
            return Choice(form, "fused: true")
        if case.ndim in form.ndims:
            refusal = why or ("cells_per_thread is no launch hint of the fused forms"
                              if case.rows is not None else f"{form.name} does not take it")
    raise PlanError(f"fused: true cannot run here: {refusal}")


def case_of(solver, fused_block) -> Case:
    """The :class:`Case` of a CUDA solver being set up (``fused_block``: its ``block`` hint as
    given: a tuple, ``"auto"`` or None)."""
    from .cuda.config import SIMULATOR
    from .decomposition import HALO

    h = solver._hints
    explicit = isinstance(fused_block, (list, tuple))
    hints = explicit or isinstance(fused_block, str) or any(
        h.get(k) is not None for k in ("cpt", "march", "vec"))
    return Case(ndim=solver.grid.ndim, shape3=tuple(solver.shape3),
                dtype=np.dtype(solver.dtype).name, boundary=solver.boundary.code,
                kernel=solver.kernel, integrator=solver.integrator, whole=solver.slab.whole,
                slab_halo=HALO, hints=hints, block=tuple(fused_block) if explicit else None,
                rows=h.get("cpt"), march=h.get("march"), simulator=SIMULATOR)


def table() -> str:
    """The registry as text (``bench_field_gpu.py --variants solver``)."""
    rows = []
    for f in FORMS:
        slab = "whole grid" if f.halo is None else f"slab, halo {f.halo}"
        rows.append(f"{f.name:12s} {'/'.join(map(str, f.ndims))}-D  {slab:14s} "
                    f"ensemble {'yes' if f.ensemble else 'no ':3s}  auto: {f.rule}")
    rows += [f"  stages/{k:7s} {runs}: {when}" for k, (runs, when) in STAGE_KERNELS.items()]
    return "\n".join(rows)
