"""What a field run measures at each observation besides mass, F and ``length``: the coarsening
measures of :mod:`.lengths`, computed where the field is (host NumPy, or CuPy on the device
with the S(k) of :mod:`.spectrum_cuda`) and over slabs (:func:`.distributed.rank_observables`).

``SIMENGINE_MEASURES`` = ``all`` (default) or ``moment`` (only the moment length ``length``,
the new columns NaN: the reference of ``benchmarks/bench_observe.py --measures``); the start-up
line says which (:attr:`Measurer.note`).
"""
from __future__ import annotations

import os

import numpy as np

from .interface_energy import interface_constants
from .lengths import COLUMNS, interface_area, measures, shell_counts


def measures_mode() -> str:
    mode = os.environ.get("SIMENGINE_MEASURES", "all").strip().lower() or "all"
    if mode not in ("all", "moment"):
        raise ValueError(f"SIMENGINE_MEASURES={mode!r}: expected all or moment")
    return mode


class Measurer:
    """The constants of one run's measures (σ, f_min, the interface level, the shells' mode
    counts) and the row completion."""

    def __init__(self, model, grid, boundary):
        self.enabled = measures_mode() == "all"
        self.constants = interface_constants(model)
        self.grid, self.boundary = grid, boundary
        self.shape = tuple(int(n) for n in grid.shape)
        self.spacing = float(grid.spacing)
        #: the level whose crossings are the interfaces (None: no interfaces in this model)
        self.level = None if self.constants is None else float(self.constants.level)
        self.periodic = boundary.kind == "periodic"
        self._counts = None

    @property
    def note(self) -> str:
        if not self.enabled:
            return "coarsening measures off (SIMENGINE_MEASURES=moment): only L = 2π/k₁"
        if self.constants is None:
            return "coarsening measures: the model has one phase (no σ, no interfaces)"
        c = self.constants
        return (f"coarsening measures: L_E (σ = {c.sigma:.6g}, phases {c.low:.6g}, {c.high:.6g}: "
                f"{c.source}), 1/S_v, shell S̄(k), zero of C(r)")

    @property
    def wants_radial(self) -> bool:
        return self.enabled

    @property
    def area_level(self):
        """The level to measure crossings at, or None (not measured)."""
        return self.level if self.enabled else None

    def host_area(self, phi) -> float | None:
        """The interface area of a whole host field (None: not measured)."""
        if self.area_level is None:
            return None
        p = np.asarray(phi)
        return interface_area(p, p[0] if self.periodic else None, self.spacing, self.level,
                              self.periodic)

    def complete(self, row, area, radial):
        """Add the :data:`.lengths.COLUMNS` to ``row`` (NaN where not measured)."""
        if not self.enabled:
            row.update(dict.fromkeys(COLUMNS, float("nan")))
            return row
        if self._counts is None and radial is not None:
            self._counts = shell_counts(self.shape, self.spacing, self.boundary.kind)
        row.update(measures(row["free_energy"], row["mass"], area, radial, self.shape,
                            self.spacing, self.boundary.kind, self.constants, self._counts))
        return row
