"""Coarsening length measures of a field, each a definition written once for NumPy and CuPy
(``xp``) and mergeable over slabs (docs/field.md, "Coarsening measures").

Columns of ``/observables`` (all lengths in the model's length unit):

* ``length`` (alias ``length_moment``): 2π/k₁, k₁ the first moment of S(k) over every mode
  (:mod:`.observables`). Its Porod tail S ∝ k^−(d+1) adds ln(L/ξ) to k₁, so its effective
  exponent stays well below 1/3.
* ``length_energy`` L_E = 2Vσ / (F − V f_min(φ̄)): the excess free energy over the separated
  bulk is σ·A (A the interface area), so L_E = 2V/A (= λ for stripes of period λ). σ and f_min
  from :mod:`.interface_energy`.
* ``interface_density`` S_v = A/V from the level-set crossings of φ (level midway between the
  phases): every pair of neighbouring cells along an axis whose signs of φ − level differ is a
  crossing, weighted by h^(d−1)·|∇φ|₂/|∇φ|₁ at the pair (forward differences, the transverse
  ones averaged over the pair), so that Σ_axes (crossings · weight) = A for an interface of
  any orientation (a crossing along axis a stands for |n_a| dA). ``length_interface`` = 1/S_v.
* ``length_shell`` = 2π/k̄₁, k̄₁ = Σ_s k_s S̄_s / Σ_s S̄_s over the radial shells s of S(k)
  (S̄ the shell average, shells up to π/h): no shell-count weight, so the tail converges
  (the shell-averaged first moment of e.g. OpenPFC's structure factor).
* ``length_correlation`` r₀: the first zero of C(r) = Σ_s n_s S̄_s j_d(k_s r) (the inverse
  transform of the shell-averaged S(k); n_s the modes of shell s, j₁ = cos, j₂ = J₀,
  j₃ = sin x/x), found on r = 0 … (smallest box side)/2 in steps of max(h/4, length_shell/64)
  and refined by Brent's method; ``inf`` without a zero there.
"""
from __future__ import annotations

import math

import numpy as np

#: measure name -> (column, what it is) — the order of the figures and the printed fit lines
MEASURES = {
    "energy": ("length_energy", "L_E = 2Vσ/(F − F_min)"),
    "interface": ("length_interface", "1/S_v (level-set crossings)"),
    "shell": ("length_shell", "2π/k̄₁ of the shell-averaged S̄(k)"),
    "correlation": ("length_correlation", "first zero of C(r)"),
    "moment": ("length", "2π/k₁, all modes (Porod-sensitive)"),
}
#: the columns the field job adds to every observables row (besides ``length``)
COLUMNS = ("length_energy", "interface_density", "length_interface", "length_shell",
           "length_correlation")
#: the alias under which readers also give ``length``
ALIAS = {"length_moment": "length"}


def _forward(u, ax, periodic, xp):
    """Forward differences along ``ax`` (≥ 1), the last one wrapped (periodic) or 0."""
    if periodic:
        return xp.roll(u, -1, axis=ax) - u
    d = xp.diff(u, axis=ax)
    pad = [(0, 0)] * u.ndim
    pad[ax] = (0, 1)
    return xp.pad(d, pad)


def _shift(a, ax, periodic, xp):
    """``a`` at the next cell along ``ax`` (≥ 1): wrapped, or the last cell repeated."""
    if periodic:
        return xp.roll(a, -1, axis=ax)
    idx = [slice(None)] * a.ndim
    idx[ax] = slice(1, None)
    last = [slice(None)] * a.ndim
    last[ax] = slice(-1, None)
    return xp.concatenate([a[tuple(idx)], a[tuple(last)]], axis=ax)


def interface_area(block, after, spacing: float, level: float, periodic: bool, xp=np) -> float:
    """:func:`interface_area_sum` as a float (waits for a device result)."""
    return float(interface_area_sum(block, after, spacing, level, periodic, xp))


def interface_area_sum(block, after, spacing: float, level: float, periodic: bool, xp=np):
    """The weighted crossings (module docstring) of the rows ``block`` of a field: every pair
    of neighbouring cells with at least its first cell in the block. ``after``: the field's row
    following the block along axis 0 (the next slab's first row, or the wrap of a periodic
    field), None at a non-periodic global top face; axes ≥ 1 are whole (wrapped when
    ``periodic``). Sums of disjoint blocks add up to the whole field's area (float; a 1-D
    field's "area" is its number of crossings). Returns an ``xp`` scalar: no wait on a
    device."""
    u = xp.asarray(block, dtype=xp.float64) - float(level)
    if u.ndim == 1:
        u = u[:, None]
        after = None if after is None else xp.asarray(after, dtype=xp.float64).reshape(1) - level
        one_d = True
    else:
        one_d = False
        if after is not None:
            after = xp.asarray(after, dtype=xp.float64) - float(level)
    nd = u.ndim
    if after is None:
        ext = xp.concatenate([u, u[-1:]], axis=0)      # the top face: no pair beyond it
    else:
        ext = xp.concatenate([u, after[None]], axis=0)
    axes = [0] if one_d else list(range(nd))
    # forward differences of every axis on the extended rows (n0 + 1)
    dif = {0: ext[1:] - ext[:-1]}
    for b in axes[1:]:
        dif[b] = _forward(ext, b, periodic, xp)
    total = 0.0
    h = float(spacing)
    for a in axes:
        if a == 0:
            x0, x1 = ext[:-1], ext[1:]
        else:
            x0, x1 = u, _shift(u, a, periodic, xp)
        cross = (x0 >= 0) != (x1 >= 0)
        g2 = None
        g1 = None
        for b in axes:
            if b == a:
                g = dif[a][:u.shape[0]]
            elif a == 0:      # transverse b ≥ 1 of an axis-0 pair: rows i and i + 1
                g = 0.5 * (dif[b][:-1] + dif[b][1:])
            else:
                db = dif[b][:u.shape[0]]
                g = 0.5 * (db + _shift(db, a, periodic, xp))
            g2 = g * g if g2 is None else g2 + g * g
            g1 = xp.abs(g) if g1 is None else g1 + xp.abs(g)
        w = xp.where(cross, xp.sqrt(g2) / xp.where(g1 > 0, g1, 1.0), 0.0)
        total = total + xp.sum(w)
    return total * h ** (0 if one_d else nd - 1)


def energy_length(free_energy: float, mean: float, cells: int, spacing: float, ndim: int,
                  constants) -> float:
    """L_E = 2Vσ / (F − V f_min(mean)); ``inf`` where F does not exceed the bulk, NaN without
    constants (a one-phase model)."""
    if constants is None or not math.isfinite(free_energy):
        return float("nan")
    volume = float(cells) * float(spacing) ** ndim
    excess = float(free_energy) - volume * constants.f_min(float(mean))
    if excess <= 0:
        return float("inf")
    return 2.0 * volume * constants.sigma / excess


def shell_length(k, s) -> float:
    """2π/k̄₁ of a radial profile (``k``, ``s`` per shell, NaN shells left out)."""
    k, s = np.asarray(k, dtype=np.float64), np.asarray(s, dtype=np.float64)
    ok = np.isfinite(k) & np.isfinite(s) & (k > 0)
    st = float(s[ok].sum())
    ks = float((k[ok] * s[ok]).sum())
    if not ok.any() or st <= 0 or ks <= 0:
        return float("inf")
    return 2 * math.pi * st / ks


def _kernel(ndim: int):
    if ndim == 1:
        return np.cos
    if ndim == 2:
        from scipy.special import j0

        return j0
    return lambda x: np.sinc(x / math.pi)


def correlation(r, k, s, counts, ndim: int):
    """C(r) (unnormalised) of a radial profile at radii ``r``: Σ_s n_s S̄_s j_d(k_s r)."""
    k, s, counts = (np.asarray(a, dtype=np.float64) for a in (k, s, counts))
    ok = np.isfinite(k) & np.isfinite(s) & (counts > 0)
    w = counts[ok] * s[ok]
    return _kernel(ndim)(np.outer(np.asarray(r, dtype=np.float64), k[ok])) @ w


def correlation_zero(k, s, counts, ndim: int, r_max: float, spacing: float,
                     scale: float | None = None) -> float:
    """The first zero r₀ of :func:`correlation` in (0, ``r_max``], searched in steps of
    max(h/4, ``scale``/64) (``scale``: the domain size, e.g. the shell length; C(r) changes on
    that scale), 32 at a time, and refined by Brent's method; ``inf`` without a zero there."""
    from scipy.optimize import brentq

    k, s, counts = (np.asarray(a, dtype=np.float64) for a in (k, s, counts))
    ok = np.isfinite(k) & np.isfinite(s) & (counts > 0)
    if not ok.any():
        return float("inf")
    k, w = k[ok], counts[ok] * s[ok]
    kern = _kernel(ndim)

    def c(r):
        return kern(np.outer(np.atleast_1d(r), k)) @ w

    dr = float(spacing) / 4
    if scale is not None and math.isfinite(scale) and scale > 0:
        dr = max(dr, float(scale) / 64)
    start = 0.0
    prev = float(c(0.0)[0])
    if prev <= 0:
        return float("inf")
    while start < r_max:
        r = start + dr * np.arange(1, 33)
        r = r[r <= r_max + 1e-12]
        if not len(r):
            break
        vals = c(r)
        neg = np.flatnonzero(vals <= 0)
        if len(neg):
            j = int(neg[0])
            a = r[j - 1] if j else start
            if vals[j] == 0:
                return float(r[j])
            return float(brentq(lambda x: float(c(x)[0]), a, float(r[j]), xtol=1e-10 * r_max))
        start = float(r[-1])
    return float("inf")


def shell_counts(shape, spacing: float, boundary: str = "periodic"):
    """Modes per radial shell of a grid (:func:`.spectrum.radial_profile` of ones)."""
    from .spectrum import mode_table, radial_profile, transform_of

    kind = transform_of(boundary)
    shape = tuple(int(n) for n in shape)
    kmag, weight = mode_table(shape, float(spacing), kind)
    return radial_profile(np.ones(kmag.shape), kmag, weight, shape, float(spacing), kind)[0]


def measures(free_energy, mean, area, radial, shape, spacing, boundary, constants,
             counts=None) -> dict:
    """The columns of :data:`COLUMNS` of one observation from the whole field's free energy
    and mean, its interface area (:func:`interface_area` summed over the blocks; None: not
    measured) and radial profile ``(k, S)`` per shell (None: not measured)."""
    shape = tuple(int(n) for n in shape)
    cells = int(np.prod(shape))
    h = float(spacing)
    volume = cells * h ** len(shape)
    out = dict.fromkeys(COLUMNS, float("nan"))
    out["length_energy"] = energy_length(free_energy, mean, cells, h, len(shape), constants)
    if area is not None and math.isfinite(area):
        out["interface_density"] = float(area) / volume
        out["length_interface"] = volume / float(area) if area > 0 else float("inf")
    if radial is not None:
        k, s = radial
        out["length_shell"] = shell_length(k, s)
        if counts is None:
            counts = shell_counts(shape, h, boundary)
        out["length_correlation"] = correlation_zero(k, s, counts, len(shape),
                                                     min(shape) * h / 2, h,
                                                     out["length_shell"])
    return out
