"""Slab decomposition of a field along axis 0, and the in-process halo exchange.

A solver can be built for a *slab*: the rows ``[start, stop)`` of axis 0 of the global grid. It
stores them with ``depth`` extra rows on each side — :data:`HALO` = 2 for the unfused stages (the
stage ``R = M lap(f'(φ) − κ lap φ)`` reads φ two rows away, exchanged before each stage),
:data:`FUSED_HALO` = 4 for a fused RK2 step (two stages in one launch, exchanged once per step;
``field/plans.py`` declares each form's depth) — except on a side that is a global face with a non-periodic boundary
(mirror, fixed): there the slab has no halo and the kernels apply the real boundary rule, exactly as
on the whole grid. A stage updates only the owned rows ``lo:hi`` (``lo`` = low halo depth,
``hi = lo + owned``), and every read of a row outside them lands in a halo row, which the
solver's ``exchange`` hook fills before each stage from the neighbouring slabs (periodic
boundaries wrap across slabs; a single periodic slab exchanges with itself). Each cell thus sees
exactly the values, and goes through exactly the arithmetic, it would on the whole grid: a field
advanced as K slabs is bit-identical to the one advanced whole.

:class:`SlabGroup` drives K slab solvers of one process in lockstep with :func:`local_exchange`
hooks (tests, and the reference for an MPI exchanger, which calls the same solver methods:
``boundary_rows`` on the sender, ``set_halo`` on the receiver).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

#: halo depth (rows) a stage needs on each side of a slab
HALO = 2
#: halo depth of a fused RK2 step (both stages in one launch: twice a stage's footprint)
FUSED_HALO = 4


@dataclass(frozen=True)
class Slab:
    """Rows ``[start, stop)`` of axis 0 (global extent ``n``), stored with ``halo_lo`` /
    ``halo_hi`` halo rows; ``lower`` / ``upper`` are the indices of the slabs whose rows fill
    them (``None`` where there is no halo); ``depth`` is the halo depth of a side that has one
    (every slab owns at least ``depth`` rows)."""

    n: int
    start: int
    stop: int
    index: int = 0
    parts: int = 1
    halo_lo: int = 0
    halo_hi: int = 0
    lower: int | None = None
    upper: int | None = None
    depth: int = HALO

    @property
    def owned(self) -> int:
        return self.stop - self.start

    @property
    def rows(self) -> int:
        """Stored rows (owned + halos)."""
        return self.halo_lo + self.owned + self.halo_hi

    @property
    def lo(self) -> int:
        """First owned row in local (stored) indexing."""
        return self.halo_lo

    @property
    def hi(self) -> int:
        """One past the last owned row in local indexing."""
        return self.halo_lo + self.owned

    @property
    def whole(self) -> bool:
        """The whole grid, no halo (the plain one-process solver)."""
        return self.parts == 1 and self.halo_lo == 0 and self.halo_hi == 0


def whole_slab(n: int) -> Slab:
    """The whole axis, no halo: what a plain (undecomposed) solver stores."""
    return Slab(int(n), 0, int(n))


def split_rows(n: int, parts: int) -> list[tuple[int, int]]:
    """Balanced split of ``n`` rows into ``parts`` ranges (the first ``n % parts`` get one more)."""
    n, parts = int(n), int(parts)
    if parts < 1:
        raise ValueError(f"parts must be >= 1, got {parts}")
    q, r = divmod(n, parts)
    out, a = [], 0
    for p in range(parts):
        b = a + q + (1 if p < r else 0)
        out.append((a, b))
        a = b
    return out


def make_slabs(n: int, bounds, boundary_kind: str, depth: int = HALO) -> list[Slab]:
    """Slabs for the row ranges ``bounds`` (consecutive, covering ``0..n``; or an int = that many
    balanced parts) with halos of ``depth`` rows. Every slab must own at least ``depth`` rows
    (its neighbours' halos come from its rows alone)."""
    n, depth = int(n), int(depth)
    if isinstance(bounds, (int, np.integer)):
        bounds = split_rows(n, int(bounds))
    bounds = [(int(a), int(b)) for a, b in bounds]
    k = len(bounds)
    if k < 1 or bounds[0][0] != 0 or bounds[-1][1] != n or any(
            bounds[i][1] != bounds[i + 1][0] for i in range(k - 1)):
        raise ValueError(f"slab bounds {bounds} do not cover rows 0..{n} consecutively")
    periodic = boundary_kind == "periodic"
    slabs = []
    for i, (a, b) in enumerate(bounds):
        if b - a < depth:
            raise ValueError(f"slab {i} owns {b - a} rows (rows {a}..{b}); every slab needs at "
                             f"least {depth} (grid axis 0 has {n} rows for {k} slabs)")
        has_lo = periodic or i > 0
        has_hi = periodic or i < k - 1
        slabs.append(Slab(n, a, b, i, k, depth if has_lo else 0, depth if has_hi else 0,
                          (i - 1) % k if has_lo else None, (i + 1) % k if has_hi else None,
                          depth))
    return slabs


def local_exchange(group: "SlabGroup", index: int):
    """The ``exchange(array)`` hook of slab ``index`` in an in-process :class:`SlabGroup`: fills
    the halo rows of ``array`` (one of the solver's buffers) from the owned boundary rows of the
    neighbours' buffer in the same position (the group keeps all solvers' buffers in step)."""

    def exchange(array):
        me = group.solvers[index]
        k = me.buffer_index(array)
        low = high = None
        s = me.slab
        if s.lower is not None:
            nb = group.solvers[s.lower]
            low = nb.boundary_rows(nb.buffers[k])[1]   # the lower neighbour's top rows
        if s.upper is not None:
            nb = group.solvers[s.upper]
            high = nb.boundary_rows(nb.buffers[k])[0]  # the upper neighbour's bottom rows
        me.set_halo(array, low, high)

    return exchange


class SlabGroup:
    """K slab solvers of one process advanced in lockstep (stage by stage; a fused solver's step
    is one stage), exchanging halos through :func:`local_exchange`. ``factory(slab, exchange)``
    builds one solver; ``depth``: the slabs' halo depth."""

    def __init__(self, factory, n: int, bounds, boundary_kind: str, depth: int = HALO):
        self.slabs = make_slabs(n, bounds, boundary_kind, depth)
        self.solvers = []
        for s in self.slabs:
            self.solvers.append(factory(s, local_exchange(self, s.index)))

    def load(self, phi) -> None:
        for s, sol in zip(self.slabs, self.solvers):
            sol.load(phi[s.start:s.stop])

    def state(self) -> np.ndarray:
        return np.concatenate([sol.state() for sol in self.solvers], axis=0)

    def advance(self, nsteps: int) -> None:
        # every solver runs stage i before any runs stage i+1: a halo is read from the
        # neighbour's buffer that the previous stage completed
        for _ in range(int(nsteps)):
            for i in range(self.solvers[0].stages_per_step):
                for sol in self.solvers:
                    sol.run_stage(i)
            hooks = getattr(self.solvers[0], "has_step_hooks", False)
            for sol in self.solvers:
                if hooks:
                    sol.end_step(hooks=False)
                else:
                    sol.end_step()
            if hooks:   # every halo refreshed before any slab adds its noise
                for sol in self.solvers:
                    sol.prepare_step_hooks()
                for sol in self.solvers:
                    sol.apply_step_hooks(sol.steps - 1)

    def partials(self):
        return [sol.partials() for sol in self.solvers]
