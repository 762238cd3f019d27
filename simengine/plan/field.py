"""The field rows of the plan: integrator, backend, GPU form and stage kernel, memory and disk.

Where a new row goes:

* an integrator: a row of :data:`INTEGRATORS`. A stage scheme (``rk2``, ``euler``) is a
  :class:`StageScheme`; any other scheme is a :class:`RulesRow` naming the module beside its
  kernels that declares ``can_run(problem) -> (ok, reason)``, ``describe(problem) -> str`` and
  ``memory_bytes(problem) -> int`` (the spectral integrator: ``simengine.field.spectral.rules``);
* a GPU step form: a row of ``simengine/field/plans.py``'s ``FORMS`` (its ``wins``/``takes``
  rules); :func:`build_field` asks ``plans.choose`` for the form, the solver asks the same table
  with the same case, and the field job checks that both agree.
"""
from __future__ import annotations

import importlib
import math
from dataclasses import dataclass

import numpy as np

from ..errors import UserError
from ..machine import fmt_bytes
from .value import Decision, Item, Plan


# ----------------------------------------------------------------------------- integrator rows
@dataclass(frozen=True)
class StageScheme:
    """An explicit scheme of stages over three buffers (``field/integrator.py``)."""

    name: str
    stages: int
    words: str

    def can_run(self, problem):
        if getattr(problem, "adaptive", False):
            if problem.ranks > 1:
                return False, (f"time.adaptive: adaptive {self.name} steps run in one process (on "
                               f"MPI ranks only the spectral integrator is adaptive); run with "
                               f"one rank or fixed steps")
            if problem.backend == "cuda":
                return False, (f"time.adaptive: adaptive {self.name} steps run on the CPU "
                               f"(solver.backend: cpu); on a GPU use integrator: spectral or "
                               f"fixed steps")
        return True, ""

    def describe(self, problem) -> str:
        return self.name + (" adaptive" if getattr(problem, "adaptive", False) else "")

    def memory_bytes(self, problem) -> int:
        """The solver's three arrays (φⁿ, φ*, φⁿ⁺¹) in the run's precision."""
        return 3 * np.dtype(problem.precision).itemsize * _local_cells(problem)


@dataclass(frozen=True)
class RulesRow:
    """An integrator whose rules live in a module beside its kernels (``can_run``, ``describe``,
    ``memory_bytes``, each taking the problem)."""

    name: str
    module: str

    def _rules(self):
        try:
            return importlib.import_module(self.module)
        except ModuleNotFoundError:
            return None

    def can_run(self, problem):
        rules = self._rules()
        if rules is None:
            return False, f"integrator {self.name!r} is not part of this build ({self.module})"
        return rules.can_run(problem)

    def describe(self, problem) -> str:
        return self._rules().describe(problem)

    def memory_bytes(self, problem) -> int:
        return int(self._rules().memory_bytes(problem))


#: the integrator table (the plan's integrator rows)
INTEGRATORS = {
    "rk2": StageScheme("rk2", 2, "explicit midpoint, two stages"),
    "euler": StageScheme("euler", 1, "forward Euler, one stage"),
    "spectral": RulesRow("spectral", "simengine.field.spectral.rules"),
}


def register_integrator(row) -> None:
    """Add (or replace) an integrator row: any object with ``name``, ``can_run``,
    ``describe`` and ``memory_bytes``."""
    INTEGRATORS[row.name] = row


# ----------------------------------------------------------------------------- helpers
def _local_cells(problem) -> int:
    """Cells one rank holds: the whole grid, or a slab of axis 0 plus two ghost layers a side."""
    cells = problem.cells
    if problem.ranks > 1:
        cells = math.ceil(cells / problem.ranks) + 4 * (cells // problem.shape[0])
    return cells


def stage_kernel(problem) -> str:
    """The stage kernel of the ``stages`` form (``field/plans.py`` STAGE_KERNELS) the CUDA
    solver builds for this problem: the rule of ``field/cuda/plan.py`` (beside
    :class:`~simengine.field.cuda.plan.StageLaunch`, which applies it)."""
    from ..field.cuda.plan import default_stage_kernel

    return default_stage_kernel(problem.kernel, problem.ndim, problem.precision,
                                problem.shape, problem.block)


def _form(problem):
    """(form name, reason) of the GPU step: the form table of ``field/plans.py``."""
    from ..field import plans
    from ..field.cuda.config import SIMULATOR
    from ..field.model import Boundary

    explicit = isinstance(problem.block, (list, tuple))
    shape3 = (1,) * (3 - problem.ndim) + tuple(problem.shape)
    case = plans.Case(ndim=problem.ndim, shape3=shape3, dtype=problem.precision,
                      boundary=Boundary(problem.boundary).code, kernel=problem.kernel,
                      integrator=problem.integrator, hints=problem.block is not None,
                      block=tuple(problem.block) if explicit else None, simulator=SIMULATOR)
    fused = None if problem.fused == "auto" else problem.fused
    choice = plans.choose(case, fused)      # PlanError: fused: true where no fused form runs
    rejected = []
    for f in plans.FORMS:
        if f is choice.form:
            continue
        ok, why = f.supports(case)
        rejected.append((f.name, why if not ok else ("auto did not pick it" if fused is None
                                                     else f"fused: {fused}")))
    name = choice.form.name
    if not choice.fused:
        name += "/" + stage_kernel(problem)
    return name, choice.reason, tuple(rejected)


# ----------------------------------------------------------------------------- the plan
def build_field(problem) -> Plan:
    """The field :class:`~.value.Plan` of ``problem`` (a :class:`~.problem.FieldProblem`).
    Raises :class:`~simengine.errors.UserError` (one line, no scenario path) for what cannot
    run."""
    from ..field.backends import can_run

    decisions = []
    b = problem.backend
    ok, why = can_run(b, kernel=problem.kernel, ndim=problem.ndim, precision=problem.precision)
    if not ok:
        raise UserError(why)
    other = "cpu" if b == "cuda" else "cuda"
    if problem.requested_backend != "auto":
        why, why_not = "as requested", "not requested"
    elif b == "cuda":
        why, why_not = "auto: a real GPU is usable", "auto takes a real GPU where there is one"
    else:
        why, why_not = "auto: no real GPU here", "auto takes CUDA only on a real GPU"
    decisions.append(Decision("backend", b, why, ((other, why_not),)))
    row = INTEGRATORS.get(problem.integrator)
    if row is None:
        raise UserError(f"unknown integrator {problem.integrator!r}; choose one of "
                        f"{', '.join(INTEGRATORS)}")
    ok, why = row.can_run(problem)
    if not ok:
        if why.startswith("time."):       # a refusal that names its own key
            raise UserError(why)
        raise UserError(f"integrator {problem.integrator}: {why}")
    from ..field.model_rules import can_run as model_can_run

    ok, why = model_can_run(problem)
    if not ok:
        raise UserError(why)
    integ = row.describe(problem)
    decisions.append(Decision("integrator", problem.integrator, "as requested",
                              tuple((k, "not requested") for k in INTEGRATORS
                                    if k != problem.integrator)))
    runs = integ
    summary = (f"{problem.ndim}-D {b} {integ} {problem.precision} {problem.boundary}, "
               f"kernel {problem.kernel}")
    if b == "cuda" and isinstance(row, StageScheme):
        form, reason, rejected = _form(problem)
        decisions.append(Decision("form", form, reason, rejected))
        runs = f"{integ} {form}"
        summary += f", {form} ({reason})"
    if getattr(problem, "model", ""):
        summary += f", model {problem.model}"
    decisions.append(Decision("kernel", problem.kernel, "solver.kernel (the memory strategy)"))
    items, disk, disk_what = _memory(problem, row)
    return Plan("field", problem, b, runs, problem.kernel, None, tuple(decisions),
                tuple(items), problem.ranks, disk, disk_what, summary=summary)


def _memory(problem, row):
    cells = _local_cells(problem)
    isz = np.dtype(problem.precision).itemsize
    d = problem.ndim
    items = []
    arrays = row.memory_bytes(problem)
    what = (f"3 field arrays of {cells:,} cells ({problem.precision})"
            if isinstance(row, StageScheme) else f"{row.describe(problem)}: {cells:,} cells")
    if problem.backend == "cuda":
        items.append(Item("grid.shape", what + " on the GPU", device=arrays + 40 * 1024))
    else:
        items.append(Item("grid.shape", what, host=arrays))
    items.append(Item("grid.shape", "host copies of the field (state, snapshot)",
                      host=2 * isz * cells))
    items.append(Item("grid.shape",
                      "observables: FFT length-scale temporaries (float64/complex128)",
                      host=(57 + 8 * d) * cells))
    every = int(problem.snapshot_every or 0)
    steps = int(problem.steps or 0)
    snaps = (steps // every if every else 0) + 2   # and at step 0 and the last step
    if problem.snapshot_dt and problem.end:        # a cadence in simulated time
        snaps += int(problem.end // problem.snapshot_dt)
    full = problem.cells * isz
    disk = snaps * full + 2 * full                 # the snapshots, two checkpoints
    count = f"{snaps:,}" if snaps < 10 ** 12 else f"{snaps:.3g}"
    return items, disk, f"{count} snapshots and 2 checkpoints of {fmt_bytes(full)}"
