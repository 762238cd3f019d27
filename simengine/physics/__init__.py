"""The physics of a Cahn–Hilliard run as one object (:class:`~.model.Model`): a free energy
(f, f′, f″, equilibria, F_min, the interface tension σ), a mobility M(φ), κ and optional
thermal noise. Each free energy is one module with its registry row (:mod:`.registry`); every
target compiles f′ and M from the same definitions (:meth:`jit_fp`, :meth:`jit_m`: numba device
functions closed over by the kernel factories of ``field/``). This package imports no engine.
"""
from __future__ import annotations

from .model import Model, Noise  # noqa: F401
from .registry import FREE_ENERGIES, MOBILITIES, free_energy, mobility  # noqa: F401
