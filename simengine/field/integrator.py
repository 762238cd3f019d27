"""Time integrators of the field engine, over any backend's stage.

A backend provides ``stage(src, base, out, coef, lo, hi)`` (``out[lo:hi] = base[lo:hi] +
coef·R(src)[lo:hi]``) and an ``exchange(array)`` hook that makes the halo rows of ``src`` current
(a no-op for a whole grid in one process). An integrator is a fixed list of stages over three
buffers (φⁿ, φ*, φⁿ⁺¹) plus the buffer rotation at the end of a step; nothing is computed in place.

* ``euler``: φⁿ⁺¹ = φ + dt·R(φ)
* ``rk2`` (explicit midpoint): φ* = φ + dt/2·R(φ); φⁿ⁺¹ = φ + dt·R(φ*)

``exchange`` is called on the stage's ``src`` right before the stage: that is the point where a
slab's halo (depth 2, one stage's footprint) is refreshed from its neighbours. An exchanger with
``boundary_first`` (and ``mark``/``send``/``ready``) is driven by :func:`advance` in the
boundary-first order instead: each stage updates the ``depth`` rows at either end of the slab
first, starts the exchange of those rows while the interior rows are updated, and the next stage
waits for the exchange (see :func:`advance_boundary_first`).
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
    """Stage ``i`` of the scheme: exchange the source's halo, then the stage."""
    st = sch.stages[i]
    src, base, out = buffers[st.src], buffers[st.base], buffers[st.out]
    exchange(src)
    stage(src, base, out, coefs[i], lo, hi)


def rotate(buffers, sch: Scheme) -> None:
    """End of a step: the new φ becomes ``buffers[0]`` (in place on the list)."""
    old = list(buffers)
    for i, j in enumerate(sch.rotate):
        buffers[i] = old[j]


def advance(buffers, stage, exchange, sch: Scheme, coefs, lo: int, hi: int, nsteps: int) -> None:
    """``nsteps`` steps of ``sch`` on ``buffers`` (a list, rotated in place)."""
    depth = boundary_first_depth(exchange, lo, hi)
    if depth:
        advance_boundary_first(buffers, stage, exchange, sch, coefs, lo, hi, nsteps, depth)
        return
    n = len(sch.stages)
    for _ in range(int(nsteps)):
        for i in range(n):
            run_stage(buffers, stage, exchange, sch, coefs, i, lo, hi)
        rotate(buffers, sch)


def boundary_first_depth(exchange, lo: int, hi: int) -> int:
    """The rows at either end that :func:`advance_boundary_first` updates first (the exchanger's
    ``depth``), or 0 for the plain order (an exchanger without ``boundary_first``). The order is
    collective — every slab exchanges at the same points — so the exchanger turns it on only
    where every slab has interior rows; a slab without them is an error here."""
    if not getattr(exchange, "boundary_first", False):
        return 0
    d = int(exchange.depth)
    if hi - lo <= 2 * d:
        raise ValueError(f"the boundary-first order needs more than {2 * d} rows per slab "
                         f"(this slab updates rows {lo}..{hi})")
    return d


def advance_boundary_first(buffers, stage, exchange, sch: Scheme, coefs, lo: int, hi: int,
                           nsteps: int, depth: int) -> None:
    """``nsteps`` steps with the halo exchange overlapping the interior update. Per stage:

    1. ``exchange.ready(src)``: the halo of ``src`` (sent by the previous stage) is waited for
       — by the device, not the host, where the exchanger can — or, for the first stage of the
       call, exchanged in full (``exchange(src)``);
    2. the ``depth`` rows at each end of ``out`` (the rows the neighbours read), then
       ``exchange.mark(out)`` (they are enqueued);
    3. the interior rows ``lo + depth … hi − depth``;
    4. ``exchange.send(out)``: the exchange of ``out``'s halo starts (it waits for the marked
       rows only, so it runs while the interior is computed).

    Every cell is computed by the same stage arithmetic as in the plain order, so the field is
    bit-identical."""
    n = len(sch.stages)
    pending = None  # the buffer whose exchange send() started
    lo_in, hi_in = lo + depth, hi - depth
    for _ in range(int(nsteps)):
        for i in range(n):
            st = sch.stages[i]
            src, base, out = buffers[st.src], buffers[st.base], buffers[st.out]
            if pending is src:
                exchange.ready(src)
            else:
                if pending is not None:
                    exchange.ready(pending)
                exchange(src)
            stage(src, base, out, coefs[i], lo, lo_in)
            stage(src, base, out, coefs[i], hi_in, hi)
            exchange.mark(out)
            stage(src, base, out, coefs[i], lo_in, hi_in)
            exchange.send(out)
            pending = out
        rotate(buffers, sch)
    if pending is not None:
        exchange.ready(pending, wait=True)


def no_exchange(array) -> None:
    """The exchange of a whole grid in one process: nothing to do."""
