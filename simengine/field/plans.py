"""The plan registry of the CUDA field engine: which form runs a solver's step, and why.

Every form declares what it runs (dimensions, precisions, boundary kinds, strategies, whole
grid or a slab with a halo of some depth, ensembles) and its rule for ``fused: auto``;
:func:`choose` walks the table once per solver and returns a :class:`Choice` (the form and a
one-line reason, logged at start-up by the field job). The forms, in the order ``auto`` asks:

================  =====  ========  ==============================================================
form              ndim   slab      auto picks it
================  =====  ========  ==============================================================
``fused-warp``    2      halo 4    2-D grids above :data:`FUSED_SMALL_CELLS` cells
                                   (:mod:`.cuda.fused_warp`: one warp marches a strip of rows)
``fused-frame``   2      halo 4    2-D grids of at most :data:`FUSED_SMALL_CELLS` cells
                                   (:mod:`.cuda.fused_frame`: one thread per frame cell)
``stages``        1–3    halo 2    everything else: two launches of the unfused stage kernels
                                   (:class:`.cuda.plan.StageLaunch`)
================  =====  ========  ==============================================================

The stage kernel of ``stages`` (:data:`STAGE_KERNELS`: ``smarch``, ``march``, ``vec``,
``direct``, ``tiled``) follows the per-(dimension, precision) defaults of ``cuda/config.py``,
applied by :class:`~.cuda.plan.StageLaunch`; :func:`stage_kernel` names the one a plan runs.

A slab of a decomposed grid (MPI ranks, ``SlabGroup``) is built with the halo depth of the form
its grid runs (:func:`slab_depth`: the whole grid's choice, so the same grid runs the same form
on any number of slabs; the cell-count rule looks at the whole grid) and exchanges that many rows
before each launch: 4 once per fused step, 2 before each unfused stage.

Rules: ``fused: auto`` runs a fused form only for RK2 with the ``global`` / ``texture``
strategies, no launch hint of the unfused kernels (``block``, ``cells_per_thread``,
``march``, ``vec``) and on a real GPU (under the CUDA simulator the unfused stages stay the
default so that their tests test them). ``fused: true`` runs the first fused form that supports
the case (a ``block`` is then the frame form's thread block, the frame = tile + 4 on every
side; ``march`` the warp form's rows per chunk); where none does (1-D and 3-D fields, Euler, a
slab built with a halo under 4 rows, ``cells_per_thread``) it is refused with a :class:`PlanError` (a
one-line :class:`~simengine.errors.UserError`). ``fused: false`` runs the
stages. Measurements behind the rules: docs/field-gpu.md.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Callable, Optional

import numpy as np

from ..errors import UserError
from .decomposition import FUSED_HALO, HALO

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
    #: halo rows the slab holds on either side (a slab: its ``depth``)
    slab_halo: int = 2
    #: cells of the whole grid (the ``auto`` size rule; None: ``cells``, the whole grid)
    grid_cells: Optional[int] = None
    #: the rows of axis 0 a slab's step writes in its stored array (None: the whole grid)
    write_rows: Optional[tuple] = None
    #: a launch hint of the unfused kernels was given (block, cells_per_thread, march, vec)
    hints: bool = False
    block: Optional[tuple] = None  # an explicit block (tuple)
    rows: Optional[int] = None     # cells_per_thread
    march: Optional[int] = None
    simulator: bool = False
    sms: Optional[int] = None      # multiprocessors (None: the current device's)

    @property
    def cells(self) -> int:
        """Cells of the whole grid (a slab runs the form its grid runs)."""
        return int(np.prod(self.shape3)) if self.grid_cells is None else int(self.grid_cells)


@dataclass(frozen=True)
class Form:
    """One way of running a step: what it supports and when it runs."""

    name: str
    fused: bool
    ndims: tuple
    #: halo rows a slab of a decomposed grid must hold to run this form (its stencil depth per
    #: exchange); None = whole grid only. The fused forms declare 4 (one exchange per step),
    #: the stages 2 (one per stage); a slab's depth comes from :func:`slab_depth`
    halo: Optional[int]
    ensemble: bool
    #: the ``auto`` rule in words (docs, ``simengine`` log)
    rule: str
    #: ``auto``: the reason this form is auto's pick for a case, or None
    wins: Callable = field(repr=False)
    #: ``fused: true``: whether this form takes the request (launch hints it honours)
    takes: Callable = field(repr=False)
    #: the plan object for a case (fused forms; ``stages`` is the solver's own StageLaunch)
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
    return (case.integrator == "rk2" and not case.simulator
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
                         length=case.march, rows=case.write_rows)


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
                     sms=case.sms, rows=case.write_rows)


def _never(case):
    return None


def _always(case):
    return True


FORMS = (
    Form("fused-warp", True, (2,), FUSED_HALO, False,
         f"2-D, more than {FUSED_SMALL_CELLS} cells", _warp_wins, _warp_takes, _build_warp),
    Form("fused-frame", True, (2,), FUSED_HALO, False,
         f"2-D, at most {FUSED_SMALL_CELLS} cells", _frame_wins, _frame_takes, _build_frame),
    Form("stages", False, (1, 2, 3), HALO, True,
         "every case no fused form wins", _never, _always),
)
BY_NAME = {f.name: f for f in FORMS}
STAGES = BY_NAME["stages"]


def halo_of(form: str) -> int:
    """The slab halo of a plan's form (``stages/smarch``, ``fused-frame``: the plan's ``form``
    decision): the depth the slabs of a decomposed grid are built with."""
    return BY_NAME[form.split("/")[0]].halo


#: the stage kernels of the ``stages`` form: (what they run, when StageLaunch picks them)
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
    """The :data:`STAGE_KERNELS` entry a :class:`~.cuda.plan.StageLaunch` runs."""
    if plan.layout != "direct":
        return "tiled"
    if plan.march:
        return "smarch" if plan.smarch else "march"
    return "vec" if plan.vec else "direct"


def _unfused_reason(case: Case) -> str:
    """Why ``auto`` runs the unfused stages for a case no fused form wins."""
    if case.integrator != "rk2":
        return "euler is one stage"
    if not case.whole and case.slab_halo < FUSED_HALO and case.ndim == 2:
        return f"slab (halo {case.slab_halo}): unfused"
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

    h = solver._hints
    explicit = isinstance(fused_block, (list, tuple))
    hints = explicit or isinstance(fused_block, str) or any(
        h.get(k) is not None for k in ("cpt", "march", "vec"))
    whole = solver.slab.whole
    return Case(ndim=solver.grid.ndim, shape3=tuple(solver.shape3),
                dtype=np.dtype(solver.dtype).name, boundary=solver.boundary.code,
                kernel=solver.kernel, integrator=solver.integrator, whole=whole,
                slab_halo=solver.slab.depth, grid_cells=int(np.prod(solver.grid.shape)),
                write_rows=None if whole else (solver.lo, solver.hi), hints=hints,
                block=tuple(fused_block) if explicit else None, rows=h.get("cpt"),
                march=h.get("march"), simulator=SIMULATOR)


def slab_depth(grid_shape, boundary_code: int, *, kernel="texture", precision="float64",
               integrator="rk2", fused=None, block=None, cells_per_thread=None, march=None,
               vec=None, simulator=None, **_other) -> int:
    """The halo depth of the slabs of a grid decomposed for the CUDA backend: that of the form
    the whole grid runs for these solver options (4 where a fused form runs, else 2), so that
    every slab runs what the one-process run runs. A request that cannot run (``fused: true``
    in 3-D) gives the stages' depth here; the slab solver then refuses it with its one line."""
    from .cuda.config import SIMULATOR
    from .params import precision_dtype

    explicit = isinstance(block, (list, tuple))
    hints = block is not None or any(v is not None for v in (cells_per_thread, march, vec))
    shape = tuple(int(n) for n in grid_shape)
    shape3 = (1,) * (3 - len(shape)) + shape
    case = Case(ndim=len(shape), shape3=shape3, dtype=precision_dtype(precision).name,
                boundary=int(boundary_code), kernel=kernel, integrator=integrator, hints=hints,
                block=tuple(block) if explicit else None, rows=cells_per_thread, march=march,
                simulator=SIMULATOR if simulator is None else bool(simulator))
    try:
        form = choose(case, fused).form
    except PlanError:
        return STAGES.halo
    return form.halo


def table() -> str:
    """The registry as text (``bench_field_gpu.py --variants solver``)."""
    rows = []
    for f in FORMS:
        slab = "whole grid" if f.halo is None else f"slab, halo {f.halo}"
        rows.append(f"{f.name:12s} {'/'.join(map(str, f.ndims))}-D  {slab:14s} "
                    f"ensemble {'yes' if f.ensemble else 'no ':3s}  auto: {f.rule}")
    rows += [f"  stages/{k:7s} {runs}: {when}" for k, (runs, when) in STAGE_KERNELS.items()]
    return "\n".join(rows)
