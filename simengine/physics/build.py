"""A :class:`~.model.Model` from a scenario's ``model:`` block (read duck-typed: the validated
``ModelSpec`` of ``config/schema.py``; this package imports no config)."""
from __future__ import annotations

from . import registry
from .model import Model, Noise


def is_legacy(spec) -> bool:
    """The original keys only (``potential``, a number for ``mobility``, no noise): the run
    is the cubic model exactly as before (no law object)."""
    return (getattr(spec, "free_energy", None) is None
            and isinstance(spec.mobility, (int, float))
            and getattr(spec, "noise", None) is None)


def free_energy_of(spec):
    fe = getattr(spec, "free_energy", None)
    if fe is None:
        return registry.free_energy("polynomial",
                                    coefficients=tuple(spec.potential.as_coefficients()))
    params = fe.model_dump() if hasattr(fe, "model_dump") else dict(fe)
    kind = params.pop("type")
    if kind == "polynomial":
        params["coefficients"] = tuple(params["coefficients"])
    return registry.free_energy(kind, **params)


def mobility_of(spec, variable: str):
    m = spec.mobility
    if isinstance(m, (int, float)):
        return registry.mobility("constant", m=float(m))
    params = m.model_dump() if hasattr(m, "model_dump") else dict(m)
    kind = params.pop("type")
    if kind == "degenerate":
        params["variable"] = variable
    if kind == "polynomial":
        params["coefficients"] = tuple(params["coefficients"])
    return registry.mobility(kind, **params)


def model_of(spec) -> Model:
    fe = free_energy_of(spec)
    n = getattr(spec, "noise", None)
    noise = None if n is None else Noise(float(n.amplitude), int(n.seed))
    return Model(fe, mobility_of(spec, fe.variable), float(spec.kappa), noise)
