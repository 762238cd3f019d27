"""Post-processing used by the figures and by analysis scripts (plain NumPy).

* :func:`radial_structure_factor` — circularly (spherically) averaged S(k) of a field.
* :func:`power_law_fit` — least-squares exponent of y ∝ x^α in log–log space (e.g. the coarsening
  exponent of L(t) over at least a decade of t after separation, see :func:`coarsening_window`
  and :func:`separation_time`), its standard error from the residuals.
* :func:`degree_power_law` — discrete power-law tail of a degree sequence: maximum-likelihood
  exponent with k_min chosen by the Kolmogorov–Smirnov criterion (Clauset, Shalizi & Newman 2009).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np


def radial_structure_factor(phi, spacing: float = 1.0, boundary: str = "periodic"):
    """``(k, S)``: S(k) averaged over shells of |k| (:func:`simengine.field.spectrum.
    radial_structure_factor`): S = |FFT(φ − φ̄)|² / N (periodic and fixed walls) or the squared
    orthonormal cosine transform (mirror walls), shells of width Δk = the largest of the axes'
    fundamentals up to the Nyquist wavenumber π/h (a mode at an exact half shell goes up).
    ``k`` are the shell centres (mean |k| of the modes in the shell); k = 0 is left out.
    With this normalisation Σ_{k≠0} S = N · variance(φ).
    """
    from .field.spectrum import radial_structure_factor as radial

    return radial(phi, spacing, boundary)


@dataclass
class PowerLawFit:
    """y ≈ prefactor · x^exponent over ``x_min ≤ x ≤ x_max`` (``points`` data points)."""

    exponent: float
    stderr: float
    prefactor: float
    x_min: float
    x_max: float
    points: int

    def __call__(self, x):
        return self.prefactor * np.asarray(x, dtype=np.float64) ** self.exponent


def power_law_fit(x, y) -> PowerLawFit | None:
    """Least-squares line through (log x, log y) for positive finite points; None if < 3 points.

    ``stderr`` is the standard error of the slope from the residuals (NaN with exactly 2 dof < 1).
    """
    x = np.asarray(x, dtype=np.float64)
    y = np.asarray(y, dtype=np.float64)
    ok = np.isfinite(x) & np.isfinite(y) & (x > 0) & (y > 0)
    if ok.sum() < 3:
        return None
    lx, ly = np.log(x[ok]), np.log(y[ok])
    A = np.vstack([lx, np.ones_like(lx)]).T
    (slope, icpt), res, *_ = np.linalg.lstsq(A, ly, rcond=None)
    m = len(lx)
    resid = ly - (slope * lx + icpt)
    sxx = float(((lx - lx.mean()) ** 2).sum())
    se = float(np.sqrt((resid ** 2).sum() / (m - 2) / sxx)) if m > 2 and sxx > 0 else float("nan")
    return PowerLawFit(float(slope), se, float(np.exp(icpt)), float(x[ok].min()),
                       float(x[ok].max()), int(m))


def separation_time(t, phi_min, phi_max, fraction: float = 0.9):
    """First time at which the range of φ (max − min) reached ``fraction`` of its final value.

    Before it the field is still in the linear (spinodal) or incubation stage and L(t) is not a
    domain size; None when the inputs are empty.
    """
    t = np.asarray(t, dtype=np.float64)
    spread = np.asarray(phi_max, dtype=np.float64) - np.asarray(phi_min, dtype=np.float64)
    if not len(t) or not np.isfinite(spread[-1]):
        return None
    reached = np.flatnonzero(spread >= fraction * spread[-1])
    return float(t[reached[0]]) if len(reached) else None


def late_window(t, t_start=None, min_points: int = 4):
    """Boolean mask of the late-time window √(t₀·t_end) ≤ t ≤ t_end: the later half of the run in
    log time, counted from t₀ = ``t_start`` (e.g. :func:`separation_time`) or the first t > 0.

    Falls back to the last half of the rows after t₀ (or of all positive times) when the window
    holds fewer than ``min_points`` rows.
    """
    t = np.asarray(t, dtype=np.float64)
    pos = np.isfinite(t) & (t > 0)
    if not pos.any():
        return pos
    t_end = t[pos].max()
    t0 = t[pos].min() if not t_start or t_start <= 0 else min(float(t_start), t_end)
    mask = pos & (t >= np.sqrt(t0 * t_end))
    if mask.sum() < min_points:
        after = pos & (t >= t0)
        idx = np.flatnonzero(after if after.sum() >= min_points else pos)
        mask = np.zeros_like(pos)
        mask[idx[len(idx) // 2:]] = True
    return mask


def coarsening_window(t, t_start=None, min_decades: float = 1.0, max_decades: float = 2.0,
                      min_points: int = 5):
    """(mask, note) of the times over which a coarsening law L ∝ t^α may be fitted: after
    ``t_start`` (the separation time, else the first t > 0), the last ``max_decades`` decades of
    the run, and at least ``min_decades`` decades with ``min_points`` rows — else (None, why).

    A fit over t ∈ [27, 30] says nothing about an exponent, whatever its standard error."""
    t = np.asarray(t, dtype=np.float64)
    pos = np.isfinite(t) & (t > 0)
    if not pos.any():
        return None, "no positive times"
    t_end = float(t[pos].max())
    t0 = float(t[pos].min()) if not t_start or t_start <= 0 else float(t_start)
    t0 = max(t0, t_end / 10 ** max_decades)
    span = np.log10(t_end / t0) if t0 > 0 else 0.0
    mask = pos & (t >= t0)
    after = f" after separation (t ≈ {t_start:.3g})" if t_start else ""
    if span < min_decades - 1e-9:
        return None, (f"no fit: t spans {span:.2f} decades{after}, "
                      f"less than the {min_decades:g} needed")
    if mask.sum() < min_points:
        return None, f"no fit: {int(mask.sum())} rows{after}, fewer than {min_points}"
    return mask, ""


def format_uncertain(value: float, se: float) -> str:
    """'0.31 ± 0.02': the error to two significant digits, the value to the same decimal place."""
    if not np.isfinite(se) or se <= 0:
        return f"{value:.3g}"
    digits = max(0, 1 - int(np.floor(np.log10(se))))
    return f"{value:.{digits}f} ± {se:.{digits}f}"


@dataclass
class DegreeFit:
    """Discrete power-law tail P(k) ∝ k^(−alpha) for k ≥ k_min (``tail`` vertices of ``n``)."""

    alpha: float
    stderr: float
    k_min: int
    ks_distance: float
    tail: int
    n: int

    def ccdf(self, k):
        """Fitted P(K ≥ k) over all vertices (the tail's share times the tail's CCDF)."""
        k = np.asarray(k, dtype=np.float64)
        return (self.tail / self.n) * ((k - 0.5) / (self.k_min - 0.5)) ** (1.0 - self.alpha)

    def pmf(self, k):
        """Fitted P(k) over all vertices: −d/dk of :meth:`ccdf`, ∝ (k − ½)^(−alpha) (the CCDF's
        slope minus one on log–log axes)."""
        k = np.asarray(k, dtype=np.float64)
        return (self.alpha - 1.0) / (k - 0.5) * self.ccdf(k)


def _alpha(tail, k_min):
    """Discrete MLE (continuous approximation, CSN 2009 eq. 3.7) and its standard error."""
    s = float(np.log(tail / (k_min - 0.5)).sum())
    a = 1.0 + len(tail) / s if s > 0 else float("inf")
    return a, (a - 1.0) / np.sqrt(len(tail))


def degree_power_law(degrees, min_tail: int = 50) -> DegreeFit | None:
    """Fit a power-law tail to a degree sequence (vertices of degree 0 are ignored).

    For every candidate k_min (distinct degrees leaving at least ``min_tail`` vertices in the tail)
    the exponent is the discrete maximum-likelihood estimate α = 1 + m / Σ ln(k_i / (k_min − ½));
    k_min minimises the Kolmogorov–Smirnov distance between the tail's empirical CCDF and the fitted
    ((k − ½)/(k_min − ½))^(1−α). Returns None when no candidate leaves ``min_tail`` vertices.
    Works on the distinct degrees (the sums by suffix, the CCDFs at the distinct values): O(U²)
    for U distinct degrees, whatever the number of vertices.
    """
    k = np.asarray(degrees, dtype=np.float64)
    k = k[k > 0]
    n = len(k)
    if not n:
        return None
    vals, counts = np.unique(k, return_counts=True)
    before = np.concatenate([[0], np.cumsum(counts)[:-1]])     # vertices below each value
    logs = np.cumsum((counts * np.log(vals))[::-1])[::-1]     # Σ ln k over each suffix
    best = None
    for j in range(len(vals)):
        m = n - int(before[j])
        if m < min_tail:
            break
        kmin = vals[j]
        s = float(logs[j] - m * np.log(kmin - 0.5))
        a = 1.0 + m / s if s > 0 else float("inf")
        if not np.isfinite(a):
            continue
        emp = 1.0 - (before[j:] - before[j]) / m               # P(K ≥ v) within the tail
        fit = ((vals[j:] - 0.5) / (kmin - 0.5)) ** (1.0 - a)
        d = float(np.abs(emp - fit).max())
        if best is None or d < best.ks_distance:
            best = DegreeFit(float(a), float((a - 1.0) / np.sqrt(m)), int(kmin), d, m, n)
    return best
