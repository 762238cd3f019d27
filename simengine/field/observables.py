"""Field observables (host NumPy; these are the definitions the CPU and CUDA solvers must match).

* ``mass(φ)`` = mean φ.
* ``free_energy(φ)`` = h^d Σ_cells [ f(φ) + κ/2 Σ_axes ((φ[i+1] − φ[i]) / h)² ] with forward
  differences; f is the bulk density with f(0) = 0 (``CahnHilliard.f``). Boundary terms per axis:
  periodic wraps (the last cell's difference is to cell 0); mirror: the difference past the last
  cell is 0 (edge-duplicating ghost); fixed: both wall differences are added, (φ₀ − v)² at the low
  side and (v − φ_{N−1})² at the high side.
* ``characteristic_length(φ, h)`` = 2π / k₁ with k₁ = Σ_{k≠0} |k| S(k) / Σ_{k≠0} S(k) and
  S(k) = |FFT(φ − mean φ)|² (angular wavenumbers, k = 2π·fftfreq(N, h) per axis). A flat field
  (spread max − min within rounding of its magnitude, :func:`is_flat`) has no structure: the
  length is ``inf``. Computed from the half spectrum of the real FFT (S(−k) =
  S(k); the columns that stand for two are weighted 2): faster than the full FFT and equal to
  the full form within rounding (docs/measurements/code-comments-2026-11-28.md).
"""
from __future__ import annotations

import functools
from dataclasses import dataclass

import numpy as np

from .model import Boundary, CahnHilliard, Grid
from .spectrum import (FOURIER, axis_wavenumbers, mode_table, power, radial_profile,
                       shell_profile, spectrum, transform_axis, transform_of)


def mass(phi) -> float:
    return float(np.mean(phi, dtype=np.float64))


def free_energy(phi, model: CahnHilliard, grid: Grid, boundary: Boundary) -> float:
    p = np.asarray(phi, dtype=np.float64)
    h = float(grid.spacing)
    total = float(np.sum(model.f(p)))
    grad2 = 0.0
    for ax in range(p.ndim):
        d = np.diff(p, axis=ax)
        grad2 += float(np.sum(d * d))
        if boundary.kind == "periodic":
            first = np.take(p, 0, axis=ax)
            last = np.take(p, -1, axis=ax)
            w = first - last
            grad2 += float(np.sum(w * w))
        elif boundary.kind == "fixed":
            v = float(boundary.value)
            w0 = np.take(p, 0, axis=ax) - v
            w1 = v - np.take(p, -1, axis=ax)
            grad2 += float(np.sum(w0 * w0)) + float(np.sum(w1 * w1))
        elif boundary.kind != "mirror":
            raise ValueError(f"unknown boundary {boundary.kind!r}")
    total += 0.5 * model.kappa * grad2 / (h * h) + getattr(model, "f_offset", 0.0) * p.size
    return total * h ** p.ndim


@functools.lru_cache(maxsize=8)
def _wavenumbers(shape: tuple, spacing: float, kind: str = FOURIER):
    """``(w, w·|k|)`` of :func:`characteristic_length` for one grid and transform
    (:func:`spectrum.mode_table`), flattened in the order of the stored spectrum; for the Fourier
    transform each entry is repeated for the real and the imaginary part of the complex
    spectrum. Computed once per grid (a run observes the same shape every time); read-only."""
    kmag, weight = mode_table(shape, spacing, kind)
    reps = 2 if kind == FOURIER else 1
    w2 = np.repeat(weight.ravel(), reps)
    wk2 = np.repeat((weight * kmag).ravel(), reps)
    for a in (w2, wk2):
        a.flags.writeable = False
    return w2, wk2


def is_flat(lo: float, hi: float) -> bool:
    """A field between ``lo`` and ``hi`` (its min and max) is flat: its spread is at the level
    of rounding (then S(k) is rounding noise and the length scale is ``inf``)."""
    if not (np.isfinite(lo) and np.isfinite(hi)):
        return False
    return bool(hi - lo <= 16 * np.finfo(np.float64).eps * max(abs(lo), abs(hi)))


def characteristic_length(phi, spacing: float = 1.0, boundary: str = "periodic") -> float:
    """L = 2π / k₁ of a host field; the transform is the boundary's (:mod:`.spectrum`): the
    real FFT's half spectrum for periodic and fixed walls, the cosine transform for mirror."""
    return length_and_radial(phi, spacing, boundary, radial=False)[0]


def length_and_radial(phi, spacing: float = 1.0, boundary: str = "periodic", radial=True):
    """``(L, (k, S) or None)``: :func:`characteristic_length` and, with ``radial``, the radial
    S(k) per shell (:func:`.spectrum.shell_profile`, NaN where a shell holds no mode) — both from
    one transform of the field."""
    p = np.asarray(phi, dtype=np.float64)
    flat = p.size and is_flat(float(p.min()), float(p.max()))
    if flat and not radial:
        return float("inf"), None
    kind = transform_of(boundary)
    shape = tuple(int(n) for n in p.shape)
    f = spectrum(p - p.mean(), kind)
    w2, wk2 = _wavenumbers(shape, float(spacing), kind)
    a = f.reshape(-1).view(np.float64) if kind == FOURIER else f.reshape(-1)
    a = a * a                                   # re², im² of every half-spectrum entry
    st = float(a @ w2)
    if flat:
        length = float("inf")
    elif not np.isfinite(st):
        length = float("nan")
    elif st <= 1e-300 * max(1, p.size):
        length = float("inf")
    else:
        length = float(2 * np.pi / (float(a @ wk2) / st))
    if not radial:
        return length, None
    kmag, weight = mode_table(shape, float(spacing), kind)
    sums = radial_profile(power(f, kind, p.size), kmag, weight, shape, float(spacing), kind)
    return length, shell_profile(*sums)


def reductions(phi, model, grid, boundary) -> dict:
    """``dict(mass, free_energy, min, max)`` of a host field."""
    return dict(mass=mass(phi), free_energy=free_energy(phi, model, grid, boundary),
                min=float(np.min(phi)), max=float(np.max(phi)))


# ============================================================================ mergeable partials
# A field split into slabs (rows [start, stop) of axis 0 per process/rank) reduces each slab to a
# FieldPartials; merge_partials combines any set of them into the values above. Sums are kept in
# float64; the gradient term uses each slab's own forward differences, reading the first halo row
# above the slab for its last owned row (so each pair of neighbouring cells is counted once).
@dataclass(frozen=True)
class FieldPartials:
    """Sums over some cells of a field: ``count``, Σφ, Σf(φ), Σ_axes Σ (forward difference)²
    (boundary terms included as in :func:`free_energy`), min φ, max φ."""

    count: int
    sum_phi: float
    sum_f: float
    sum_grad2: float
    min: float
    max: float

    def to_array(self) -> np.ndarray:
        """float64[6] (for transport between ranks)."""
        return np.array([self.count, self.sum_phi, self.sum_f, self.sum_grad2, self.min,
                         self.max], dtype=np.float64)

    @classmethod
    def from_array(cls, a) -> "FieldPartials":
        a = np.asarray(a, dtype=np.float64)
        return cls(int(a[0]), float(a[1]), float(a[2]), float(a[3]), float(a[4]), float(a[5]))


def _boundary_grad2(p, ax, kind, v) -> float:
    """Σ (forward difference)² along ``ax`` of a block spanning that axis wholly."""
    d = np.diff(p, axis=ax)
    g = float(np.sum(d * d))
    if kind == "periodic":
        w = np.take(p, 0, axis=ax) - np.take(p, -1, axis=ax)
        g += float(np.sum(w * w))
    elif kind == "fixed":
        w0 = np.take(p, 0, axis=ax) - v
        w1 = v - np.take(p, -1, axis=ax)
        g += float(np.sum(w0 * w0)) + float(np.sum(w1 * w1))
    elif kind != "mirror":
        raise ValueError(f"unknown boundary {kind!r}")
    return g


def field_partials(local, lo: int, hi: int, model: CahnHilliard, boundary: Boundary
                   ) -> FieldPartials:
    """Partials of the owned rows ``lo:hi`` of a slab stored as ``local`` (host array with its
    halo rows, which must be current: row ``hi`` is read when ``hi < local.shape[0]``). A slab
    with no row stored above ``hi`` is at the global top face: periodic wraps to its own row
    ``lo`` (the whole grid), fixed adds (v − φ)², mirror adds nothing; ``lo == 0`` with a fixed
    boundary adds the low wall term."""
    p = np.asarray(local, dtype=np.float64)
    own = p[lo:hi]
    kind, v = boundary.kind, float(boundary.value)
    g = 0.0
    for ax in range(1, p.ndim):
        g += _boundary_grad2(own, ax, kind, v)
    d = np.diff(own, axis=0)
    g += float(np.sum(d * d))
    if hi < p.shape[0]:
        w = p[hi] - own[-1]
        g += float(np.sum(w * w))
    elif kind == "periodic":
        w = own[0] - own[-1]
        g += float(np.sum(w * w))
    elif kind == "fixed":
        w = v - own[-1]
        g += float(np.sum(w * w))
    if lo == 0 and kind == "fixed":
        w = own[0] - v
        g += float(np.sum(w * w))
    if own.size == 0:
        return FieldPartials(0, 0.0, 0.0, 0.0, float("inf"), float("-inf"))
    return FieldPartials(int(own.size), float(np.sum(own)), float(np.sum(model.f(own))), g,
                         float(np.min(own)), float(np.max(own)))


def merge_partials(parts, model: CahnHilliard, grid: Grid) -> dict:
    """``dict(mass, free_energy, min, max)`` of the union of the cells behind ``parts`` (an
    iterable of :class:`FieldPartials` or their arrays) — the whole grid's values when the parts
    cover it."""
    parts = [q if isinstance(q, FieldPartials) else FieldPartials.from_array(q) for q in parts]
    count = sum(q.count for q in parts)
    sum_phi = float(np.sum([q.sum_phi for q in parts]))
    sum_f = float(np.sum([q.sum_f for q in parts]))
    sum_g = float(np.sum([q.sum_grad2 for q in parts]))
    h = float(grid.spacing)
    energy = ((sum_f + getattr(model, "f_offset", 0.0) * count
               + 0.5 * model.kappa * sum_g / (h * h)) * h ** grid.ndim)
    return dict(mass=sum_phi / count if count else float("nan"), free_energy=energy,
                min=float(min(q.min for q in parts)), max=float(max(q.max for q in parts)))


# ============================================================= S(k) and length scale on slabs
# The slab-distributed twin of characteristic_length: each rank holds rows [start, stop) of
# axis 0. It subtracts the global mean, FFTs along the axes it holds whole (1..d-1), transposes
# through ``alltoall`` so that it holds all of axis 0 for a range of axis 1, FFTs along axis 0 and
# sums |k|·S and S over its part of k-space; length_from_partials merges the sums of all ranks.
# A 1-D field is viewed as (n, 1): after the transpose rank 0 holds the whole (small) field.
def transpose_slab(a, rows, cols, alltoall):
    """Redistribute a block ``a`` = rows ``rows[rank]`` of axis 0 × all of axis 1 into all of
    axis 0 × columns ``cols[rank]`` of axis 1. ``alltoall(sendlist) -> recvlist`` exchanges one
    array with every rank (index = rank), as mpi4py's ``comm.alltoall``."""
    send = [np.ascontiguousarray(a[:, c0:c1]) for c0, c1 in cols]
    recv = alltoall(send)
    if len(recv) != len(rows):
        raise ValueError(f"alltoall returned {len(recv)} blocks for {len(rows)} ranks")
    return np.concatenate(recv, axis=0)


def structure_factor_partials(slab_phi, rows, rank: int, shape, spacing: float, mean: float,
                              alltoall, boundary: str = "periodic", radial: bool = False):
    """``[Σ_{k≠0} |k|·S(k), Σ_{k≠0} S(k)]`` over this rank's share of k-space (float64[2]),
    with the boundary's transform (:func:`.spectrum.transform_of`; the full spectrum, unnormalised).

    ``slab_phi``: this rank's owned rows (``rows[rank]`` = (start, stop) of axis 0; ``rows``
    lists every rank's range in rank order); ``shape``: the global grid shape; ``mean``: the
    global mean of φ (from :func:`merge_partials`). Collective: every rank calls it with its slab
    and the same ``alltoall``. With ``radial``: ``(sums, shell sums)``, the second the
    :func:`.spectrum.radial_profile` sums ``(Σ w, Σ w·|k|, Σ w·S)`` over this rank's share (sum
    them over the ranks)."""
    shape = tuple(int(n) for n in shape)
    nd = len(shape)
    kind = transform_of(boundary)
    a = np.asarray(slab_phi, dtype=np.float64) - float(mean)
    if nd == 1:
        a = a[:, None]
        n1 = 1
    else:
        for ax in range(1, nd):
            a = transform_axis(a, ax, kind)
        n1 = shape[1]
    parts = len(rows)
    cols = (split_cols(n1, parts))
    b = transpose_slab(a, rows, cols, alltoall)
    b = transform_axis(b, 0, kind)
    s = np.abs(b) ** 2
    c0, c1 = cols[rank]
    freqs = [axis_wavenumbers(shape[0], spacing, kind)]
    if nd == 1:
        freqs.append(np.zeros(c1 - c0))
    else:
        freqs.append(axis_wavenumbers(n1, spacing, kind)[c0:c1])
        freqs += [axis_wavenumbers(n, spacing, kind) for n in shape[2:]]
    ks = np.meshgrid(*freqs, indexing="ij")
    kmag = np.sqrt(sum(k * k for k in ks))
    mask = kmag > 0
    sums = np.array([float((kmag[mask] * s[mask]).sum()), float(s[mask].sum())])
    if not radial:
        return sums
    norm = float(np.prod(shape)) if kind == FOURIER else 1.0
    kmag = kmag.reshape(s.shape)
    return sums, np.stack(radial_profile(s / norm, kmag, mask.reshape(s.shape).astype(float),
                                         shape, spacing, kind))


def split_cols(n: int, parts: int) -> list:
    """Balanced split of axis 1 among ``parts`` ranks after the transpose."""
    q, r = divmod(int(n), int(parts))
    out, a = [], 0
    for p in range(int(parts)):
        b = a + q + (1 if p < r else 0)
        out.append((a, b))
        a = b
    return out


def length_from_partials(parts, cells: int, bounds=None) -> float:
    """:func:`characteristic_length` from the :func:`structure_factor_partials` of all ranks;
    ``bounds``: the global (min, max) of φ (a flat field's length is ``inf``, as there)."""
    if bounds is not None and is_flat(float(bounds[0]), float(bounds[1])):
        return float("inf")
    tot = np.sum(np.asarray(list(parts), dtype=np.float64).reshape(-1, 2), axis=0)
    wk, st = float(tot[0]), float(tot[1])
    if not np.isfinite(st):
        return float("nan")
    if st <= 1e-300 * max(1, int(cells)):
        return float("inf")
    return float(2 * np.pi / (wk / st))
