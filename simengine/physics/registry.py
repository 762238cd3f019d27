"""The registry: one row per free energy and per mobility (``type`` → class). Adding a free
energy is one module beside these and its row here (docs/architecture.md)."""
from __future__ import annotations

from .double_well import DoubleWell
from .flory_huggins import FloryHuggins
from .mobility import Constant, Degenerate, PolynomialMobility
from .polynomial import Polynomial

FREE_ENERGIES = {
    "polynomial": Polynomial,
    "double_well": DoubleWell,
    "flory_huggins": FloryHuggins,
}

MOBILITIES = {
    "constant": Constant,
    "degenerate": Degenerate,
    "polynomial": PolynomialMobility,
}


def free_energy(kind: str, **params):
    if kind not in FREE_ENERGIES:
        raise ValueError(f"unknown free energy {kind!r}; choose one of {', '.join(FREE_ENERGIES)}")
    return FREE_ENERGIES[kind](**params)


def mobility(kind: str, **params):
    if kind not in MOBILITIES:
        raise ValueError(f"unknown mobility {kind!r}; choose one of {', '.join(MOBILITIES)}")
    return MOBILITIES[kind](**params)
