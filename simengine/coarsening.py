"""Coarsening fits of a field run's length measures (plain NumPy; the figures, `simengine plot`,
`simengine info` and sweep summaries use them).

The window rule (stated on the figure and in every printed line's words):

1. t ≥ the separation time (φ's range reached 90 % of its final value,
   :func:`analysis.separation_time`) and t ≥ t_end/100 (the last two decades);
2. t ≤ the last time the box rule holds: the energy length L_E (the domain period; else the
   measure itself) stays below :data:`BOX_FRACTION` of the smallest box side;
3. the rows nearest to :data:`PER_DECADE` log-spaced times per decade (each row once), so that
   every decade weighs the same (uniform rows put most of the weight on the last decade);
4. at least one decade and :data:`MIN_POINTS` such rows, else no fit and a note says why.

Two fits over that window: the log–log slope n of L ∝ tⁿ, and L³ − L₀³ = K(t − t₀) (a line of
L³ against t; t₀ the window's start, L₀³ the line's value there — Andrews, Voorhees & Thornton).
Each uncertainty is the larger of the least-squares standard error and half the difference
between the fits of the window's two halves in log t (the drift of a not-yet-asymptotic
exponent is part of the error). The local exponent n(t) = Δln L/Δln t between consecutive
log-spaced rows, against 1/L, extrapolates to 1/L → 0 (Huse 1986).
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

from .analysis import format_uncertain, separation_time

#: measure name -> (column, legend words); the default fit first (Porod-insensitive)
MEASURES = {
    "energy": ("length_energy", "energy length L_E = 2Vσ/(F − F_min)"),
    "interface": ("length_interface", "1/S_v (interface density)"),
    "shell": ("length_shell", "2π/k̄₁ of the shell-averaged S̄(k)"),
    "correlation": ("length_correlation", "first zero r₀ of C(r)"),
    "moment": ("length", "2π/k₁ over all modes (Porod-sensitive)"),
}
DEFAULT = "energy"
#: the box rule: fit only while L_E < this fraction of the smallest box side
BOX_FRACTION = 0.25
PER_DECADE = 10
MIN_POINTS = 5
MAX_DECADES = 2.0
RULE = (f"window: t ≥ separation and ≥ t_end/100, L_E < {BOX_FRACTION:g} × box, "
        f"{PER_DECADE} log-spaced rows per decade")


@dataclass
class CoarseningFit:
    """The fits of one measure (``exponent`` None: no fit, ``note`` says why)."""

    measure: str
    column: str
    exponent: float | None = None
    stderr: float = float("nan")
    t_lo: float = float("nan")
    t_hi: float = float("nan")
    points: int = 0
    rate: float = float("nan")          # K of L³ − L₀³ = K(t − t₀)
    rate_stderr: float = float("nan")
    rate_change: float = float("nan")   # K of the second half / K of the first − 1
    cube0: float = float("nan")         # L₀³
    prefactor: float = float("nan")     # A of L = A tⁿ
    note: str = ""
    rows: np.ndarray = field(default=None, repr=False)  # the fitted rows' indices

    @property
    def ok(self) -> bool:
        return self.exponent is not None

    def __call__(self, t):
        return self.prefactor * np.asarray(t, dtype=np.float64) ** self.exponent

    def line(self) -> str:
        """``length <name>: exponent n = 0.33 ± 0.01 over t in [a, b]; ...`` (or why no fit)."""
        if not self.ok:
            return f"length {self.measure}: no fit ({self.note})"
        return (f"length {self.measure}: exponent n = "
                f"{format_uncertain(self.exponent, self.stderr)} over t in "
                f"[{self.t_lo:.6g}, {self.t_hi:.6g}]; L³ − L₀³ = K(t − t₀), K = "
                f"{format_uncertain(self.rate, self.rate_stderr)} (second half / first "
                f"{self.rate_change:+.1%}); {self.points} log-spaced rows")


def log_rows(t, mask, per_decade: int = PER_DECADE) -> np.ndarray:
    """Indices of the rows (within ``mask``) nearest to ``per_decade`` log-spaced times per
    decade over the masked span, each row once, in time order."""
    t = np.asarray(t, dtype=np.float64)
    idx = np.flatnonzero(mask)
    if len(idx) < 2:
        return idx
    lt = np.log10(t[idx])
    n = max(2, int(np.ceil((lt[-1] - lt[0]) * per_decade)) + 1)
    want = np.linspace(lt[0], lt[-1], n)
    near = np.abs(lt[None, :] - want[:, None]).argmin(axis=1)
    return idx[np.unique(near)]


def _ols(x, y):
    """(slope, intercept, slope's standard error) of a least-squares line."""
    x, y = np.asarray(x, float), np.asarray(y, float)
    A = np.vstack([x, np.ones_like(x)]).T
    (b, a), *_ = np.linalg.lstsq(A, y, rcond=None)
    m = len(x)
    sxx = float(((x - x.mean()) ** 2).sum())
    resid = y - (b * x + a)
    se = float(np.sqrt((resid ** 2).sum() / (m - 2) / sxx)) if m > 2 and sxx > 0 else float("nan")
    return float(b), float(a), se


def _box_end(t, ref, box, t0):
    """The last time (from ``t0`` on) before the reference length first reaches
    BOX_FRACTION × box; ``t0`` itself when it is there already."""
    over = np.flatnonzero((t >= t0) & np.isfinite(ref) & (ref >= BOX_FRACTION * box))
    if not len(over):
        return float("inf")
    return float(t[over[0] - 1]) if over[0] > 0 and t[over[0] - 1] >= t0 else float(t0)


def fit_measure(t, length, t_sep=None, box=float("inf"), reference=None, measure="?",
                column="?") -> CoarseningFit:
    """The fits of one length series over the window of the module's rule."""
    t = np.asarray(t, dtype=np.float64)
    length = np.asarray(length, dtype=np.float64)
    out = CoarseningFit(measure, column)
    ok = np.isfinite(t) & (t > 0) & np.isfinite(length) & (length > 0)
    if not ok.any():
        out.note = "no finite positive values"
        return out
    t_end = float(t[ok].max())
    t0 = max(float(t_sep or 0.0), t_end / 10 ** MAX_DECADES, float(t[ok].min()))
    ref = length if reference is None else np.asarray(reference, dtype=np.float64)
    t1 = min(t_end, _box_end(t, ref, box, t0))
    after = f" after separation (t ≈ {t_sep:.3g})" if t_sep else ""
    if t1 <= t0 or np.log10(t1 / t0) < 1 - 1e-9:
        span = np.log10(t1 / t0) if t1 > t0 else 0.0
        why = (f" before L_E reaches {BOX_FRACTION:g} of the box (t ≈ {t1:.3g})"
               if t1 < t_end else "")
        out.note = (f"t spans {span:.2f} decades{after}{why}, less than the 1 needed")
        return out
    rows = log_rows(t, ok & (t >= t0) & (t <= t1))
    if len(rows) < MIN_POINTS:
        out.note = f"{len(rows)} log-spaced rows{after}, fewer than {MIN_POINTS}"
        return out
    lt, ll = np.log(t[rows]), np.log(length[rows])
    n, a, se = _ols(lt, ll)
    mid = 0.5 * (lt[0] + lt[-1])
    first, second = lt <= mid, lt >= mid
    drift = 0.0
    if first.sum() >= 3 and second.sum() >= 3:
        drift = abs(_ols(lt[first], ll[first])[0] - _ols(lt[second], ll[second])[0]) / 2
    cube = length[rows] ** 3
    K, c0, kse = _ols(t[rows], cube)
    change = float("nan")
    if first.sum() >= 3 and second.sum() >= 3:
        k1 = _ols(t[rows][first], cube[first])[0]
        k2 = _ols(t[rows][second], cube[second])[0]
        change = k2 / k1 - 1 if k1 else float("nan")
        kse = max(kse, abs(k2 - k1) / 2)
    out.exponent, out.stderr = n, max(se, drift)
    out.prefactor = float(np.exp(a))
    out.t_lo, out.t_hi, out.points = float(t[rows[0]]), float(t[rows[-1]]), int(len(rows))
    out.rate, out.rate_stderr, out.rate_change = K, kse, change
    out.cube0 = K * out.t_lo + c0
    out.rows = rows
    return out


def local_exponent(t, length, rows):
    """``(1/L, n)`` at the midpoints of consecutive ``rows``: n = Δln L / Δln t."""
    t, length = np.asarray(t, float)[rows], np.asarray(length, float)[rows]
    n = np.diff(np.log(length)) / np.diff(np.log(t))
    inv = 1.0 / np.sqrt(length[1:] * length[:-1])
    return inv, n


def huse_extrapolation(inv, n):
    """``(n∞, its standard error, slope)`` of the line n = n∞ + c/L through the local exponents
    (Huse 1986: n(L) = 1/3 − O(1/L)); None with fewer than 4 finite points."""
    inv, n = np.asarray(inv, float), np.asarray(n, float)
    ok = np.isfinite(inv) & np.isfinite(n)
    if ok.sum() < 4:
        return None
    c, n_inf, _ = _ols(inv[ok], n[ok])
    x, m = inv[ok], ok.sum()
    resid = n[ok] - (c * x + n_inf)
    s2 = float((resid ** 2).sum()) / (m - 2)
    sxx = float(((x - x.mean()) ** 2).sum())
    se = float(np.sqrt(s2 * (1.0 / m + x.mean() ** 2 / sxx))) if sxx > 0 else float("nan")
    return n_inf, se, c


def box_side(scenario) -> float:
    """The smallest box side N·h of a field scenario (inf when unknown)."""
    grid = (scenario or {}).get("grid") or {}
    shape = grid.get("shape")
    if not shape:
        return float("inf")
    return float(min(shape)) * float(grid.get("spacing", 1.0))


def fits(obs, scenario=None) -> dict:
    """measure name -> :class:`CoarseningFit` for every measure the observables hold."""
    t = np.asarray(obs.get("time", []), dtype=np.float64)
    if not len(t):
        return {}
    ts = separation_time(t, obs["phi_min"], obs["phi_max"]) \
        if "phi_min" in obs and "phi_max" in obs else None
    box = box_side(scenario)
    ref = obs.get("length_energy")
    if ref is not None and not np.isfinite(np.asarray(ref, dtype=float)).any():
        ref = None
    out = {}
    for name, (col, _) in MEASURES.items():
        if col not in obs:
            continue
        vals = np.asarray(obs[col], dtype=np.float64)
        if not np.isfinite(vals).any():
            continue
        out[name] = fit_measure(t, vals, ts, box, vals if ref is None else ref, name, col)
    return out


def fit_lines(obs, scenario=None, rule: bool = False) -> list:
    """One line per measure (:meth:`CoarseningFit.line`), the default's first; with ``rule`` a
    last line states the window rule (what `simengine info` and `plot` print)."""
    lines = [f.line() for f in fits(obs, scenario).values()]
    return lines + [f"length fits: {RULE}"] if lines and rule else lines
