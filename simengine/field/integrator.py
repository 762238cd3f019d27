"""Time integrators of the field engine, over any backend's stage.

A backend provides ``stage(src, base, out, coef, lo, hi)`` (``out[lo:hi] = base[lo:hi] +
coef·R(src)[lo:hi]``) and an ``exchange(array)`` hook that makes the halo rows of ``src`` current
(a no-op for a whole grid in one process). An integrator is a fixed list of stages over three
buffers (φⁿ, φ*, φⁿ⁺¹) plus the buffer rotation at the end of a step; nothing is computed in place.

* ``euler``: φⁿ⁺¹ = φ + dt·R(φ)
* ``rk2`` (explicit midpoint): φ* = φ + dt/2·R(φ); φⁿ⁺¹ = φ + dt·R(φ*)

``exchange`` is called on the stage's ``src`` right before the stage: that is the point where a
slab's halo (depth 2, one stage's footprint) is refreshed from its neighbours. An exchanger with
``start``/``finish`` overlaps its transfer with the update of the rows that do not read the halo
(see :func:`run_stage`).
"""
from __future__ import annotations

from dataclasses import dataclass

INTEGRATORS = ("rk2", "euler")


@dataclass(frozen=True)
class Stage:
    """``buffers[out][lo:hi] = buffers[base][lo:hi] + coef·R(buffers[src])[lo:hi]``;
    ``coef = fraction·dt``."""

    src: int
    base: int
    out: int
    fraction: float


@dataclass(frozen=True)
class Scheme:
    name: str
    stages: tuple
    #: buffer permutation applied after the last stage: ``new[i] = old[rotate[i]]``
    rotate: tuple


SCHEMES = {
    "euler": Scheme("euler", (Stage(0, 0, 1, 1.0),), (1, 0, 2)),
    "rk2": Scheme("rk2", (Stage(0, 0, 1, 0.5), Stage(1, 0, 2, 1.0)), (2, 1, 0)),
}


def scheme(name: str) -> Scheme:
    if name not in SCHEMES:
        raise ValueError(f"unknown integrator {name!r}; choose one of {', '.join(INTEGRATORS)}")
    return SCHEMES[name]


def coefficients(sch: Scheme, dt: float, cast=float) -> tuple:
    """The stage coefficients ``fraction·dt`` (computed in float64, then ``cast``)."""
    return tuple(cast(st.fraction * float(dt)) for st in sch.stages)


def run_stage(buffers, stage, exchange, sch: Scheme, coefs, i: int, lo: int, hi: int) -> None:
    """Stage ``i`` of the scheme: exchange the source's halo, then the stage.

    An exchanger that can overlap (it has ``start(array)``, ``finish(array)`` and ``depth``,
    the halo rows a stage reads) gets its transfer started first; the rows that do not read the
    halo (``lo + depth … hi − depth``) are updated meanwhile, then, once the halo has arrived,
    the ``depth`` rows at each end. Every cell sees the same arithmetic either way."""
    st = sch.stages[i]
    src, base, out = buffers[st.src], buffers[st.base], buffers[st.out]
    d = getattr(exchange, "depth", 0) if hasattr(exchange, "start") else 0
    if d and hi - lo > 2 * d:
        exchange.start(src)
        stage(src, base, out, coefs[i], lo + d, hi - d)
        exchange.finish(src)
        stage(src, base, out, coefs[i], lo, lo + d)
        stage(src, base, out, coefs[i], hi - d, hi)
        return
    exchange(src)
    stage(src, base, out, coefs[i], lo, hi)


def rotate(buffers, sch: Scheme) -> None:
    """End of a step: the new φ becomes ``buffers[0]`` (in place on the list)."""
    old = list(buffers)
    for i, j in enumerate(sch.rotate):
        buffers[i] = old[j]


def advance(buffers, stage, exchange, sch: Scheme, coefs, lo: int, hi: int, nsteps: int) -> None:
    """``nsteps`` steps of ``sch`` on ``buffers`` (a list, rotated in place)."""
    n = len(sch.stages)
    for _ in range(int(nsteps)):
        for i in range(n):
            run_stage(buffers, stage, exchange, sch, coefs, i, lo, hi)
        rotate(buffers, sch)


def no_exchange(array) -> None:
    """The exchange of a whole grid in one process: nothing to do."""
