"""Is a degree distribution's tail a power law? Clauset, Shalizi & Newman (SIAM Review 51, 661,
2009; "CSN"), as the ``powerlaw`` package (Alstott et al. 2014) computes it, plus CSN's
goodness-of-fit p-value that ``powerlaw`` leaves out.

* The fit: :func:`simengine.analysis.degree_power_law` (discrete MLE α = 1 + m / Σ ln(k/(k_min − ½)),
  k_min minimising the Kolmogorov–Smirnov distance D).
* Goodness of fit (CSN §4.1): D of the data against D of ``sets`` synthetic data sets drawn from
  the fitted model — n draws each, a draw below k_min resampled from the data below k_min with
  probability (n − tail)/n, else from the fitted discrete power law (CSN Appendix D's rounding) —
  each refitted with its own k_min. p = the share of synthetic D at least the data's D. With
  ``sets`` = 100 the p-value is known to about ±0.05, enough for CSN's rule: p < 0.1 rejects the
  power law (``REJECT_BELOW``). The figure gives the bootstrap ``BUDGET`` seconds (at least 10
  sets): a huge graph uses fewer sets, and the note says how many.
* Alternatives (CSN §5): Vuong's normalised log-likelihood ratio R/(σ√m) of the power law against
  a discrete lognormal (MLE, CDF differences at k ± ½) and a discrete exponential (geometric, its
  exact MLE) on the same tail, with the two-sided p-value; R < 0 with p < 0.1 means the alternative
  fits better.

:func:`judge` returns a :class:`TailVerdict`: the fit, the p-value, the comparisons and one line
saying whether a line may be drawn, and if not why (the figure and the log print it). The fit
and the p-value need NumPy only; the comparisons need SciPy (the optional extra ``fits``; without
it the line says so). tests/test_tail_fits.py checks the numbers against ``powerlaw``.
"""
from __future__ import annotations

from dataclasses import dataclass, field

import numpy as np

#: CSN's rule: a power law is ruled out when fewer than 10 % of synthetic sets fit as badly
REJECT_BELOW = 0.1
#: synthetic data sets for the p-value (±0.05 at p ≈ 0.1; CSN's 2500 gives ±0.01)
DEFAULT_SETS = 100
#: a comparison counts when its two-sided p-value is below this
COMPARE_SIGNIFICANT = 0.1


@dataclass
class Comparison:
    """Power law against ``alternative`` on the tail: R > 0 favours the power law."""

    alternative: str
    R: float            # log-likelihood ratio, power law − alternative
    normalized: float   # R / (σ √m)
    p: float            # two-sided (Vuong)
    params: dict = field(default_factory=dict)

    @property
    def favours(self) -> str:
        """'power law', the alternative's name, or 'neither' (p ≥ COMPARE_SIGNIFICANT)."""
        if not np.isfinite(self.p) or self.p >= COMPARE_SIGNIFICANT:
            return "neither"
        return "power law" if self.R > 0 else self.alternative


@dataclass
class TailVerdict:
    fit: object                   # analysis.DegreeFit or None
    p: float                      # goodness-of-fit p-value (nan without a fit)
    sets: int
    comparisons: list
    plausible: bool               # draw the line
    reason: str                   # one line: the law, or why there is none

    def line(self) -> str:
        return self.reason


def _fit(k, min_tail):
    from .analysis import degree_power_law

    return degree_power_law(k, min_tail=min_tail)


def _draw_power_law(rng, m, alpha, k_min):
    """m draws of the discrete power law k ≥ k_min (CSN Appendix D: the continuous law from
    k_min − ½, rounded)."""
    u = rng.random(m)
    return np.floor((k_min - 0.5) * (1.0 - u) ** (-1.0 / (alpha - 1.0)) + 0.5)


def gof_pvalue(degrees, fit, sets=DEFAULT_SETS, seed=0, min_tail=50, budget=None):
    """CSN's semi-parametric bootstrap p-value of ``fit`` (a DegreeFit of ``degrees``):
    ``(p, synthetic sets used)``; with ``budget`` seconds it stops early (at least 10 sets), so
    a figure of a huge graph stays bounded — the sets used are then fewer, and said."""
    import time

    t0 = time.perf_counter()
    k = np.asarray(degrees, dtype=np.float64)
    k = k[k > 0]
    n = len(k)
    below = np.sort(k[k < fit.k_min])
    share = fit.tail / n
    rng = np.random.default_rng(seed)
    worse = 0
    done = 0
    for _ in range(int(sets)):
        if budget is not None and done >= 10 and time.perf_counter() - t0 > budget:
            break
        done += 1
        m_tail = int(rng.binomial(n, share))
        syn = _draw_power_law(rng, m_tail, fit.alpha, fit.k_min)
        if n - m_tail and len(below):
            syn = np.concatenate([syn, rng.choice(below, n - m_tail)])
        f = _fit(syn, min(min_tail, max(2, m_tail // 2)))
        if f is None or f.ks_distance >= fit.ks_distance:
            worse += 1
    return worse / done, done


# The log-likelihoods below take the tail's distinct degrees ``v`` and their counts ``c`` (a
# degree sequence has few distinct values: the fits and sums cost O(distinct), not O(vertices)).
def _ll_power_law(v, alpha, k_min):
    from scipy.special import zeta

    return -alpha * np.log(v) - np.log(zeta(alpha, k_min))


def _ll_exponential(v, c, k_min):
    """Discrete exponential P(k) = (1 − e^(−λ)) e^(−λ(k − k_min)), k ≥ k_min: exact MLE."""
    mean_excess = float(np.sum(c * (v - k_min)) / np.sum(c))
    lam = np.log1p(1.0 / mean_excess) if mean_excess > 0 else 50.0
    return np.log1p(-np.exp(-lam)) - lam * (v - k_min), {"lambda": float(lam)}


def _lognormal_ll(v, k_min, mu, sigma):
    from scipy.special import log_ndtr

    def logsf(x):  # log P(X > x) of the lognormal
        return log_ndtr(-(np.log(x) - mu) / sigma)

    lo, hi = logsf(v - 0.5), logsf(v + 0.5)
    # log(sf(lo) − sf(hi)) without cancellation, minus the normalisation log sf(k_min − ½)
    return lo + np.log(-np.expm1(np.minimum(hi - lo, -1e-300))) - logsf(k_min - 0.5)


def _ll_lognormal(v, c, k_min):
    from scipy.optimize import minimize

    def nll(p):
        mu, log_s = p
        ll = _lognormal_ll(v, k_min, mu, float(np.exp(log_s)))
        return -float(np.sum(c * ll)) if np.all(np.isfinite(ll)) else 1e300

    lv = np.log(v)
    w = c / np.sum(c)
    mean = float(np.sum(w * lv))
    spread = max(float(np.sqrt(np.sum(w * (lv - mean) ** 2))), 0.1)
    best = None
    # the tail's own log-moments, and a wide lognormal peaked well below k_min (a heavy tail)
    for start in ((mean, np.log(spread)), (0.0, np.log(2.0 * spread + 1.0))):
        r = minimize(nll, np.array(start), method="Nelder-Mead",
                     options={"xatol": 1e-8, "fatol": 1e-10, "maxiter": 4000})
        if best is None or r.fun < best.fun:
            best = r
    mu, sigma = float(best.x[0]), float(np.exp(best.x[1]))
    return _lognormal_ll(v, k_min, mu, sigma), {"mu": mu, "sigma": sigma}


def compare(degrees, fit) -> list:
    """Vuong's test of the power law against the lognormal and the exponential (CSN §5)."""
    from scipy.special import erfc

    k = np.asarray(degrees, dtype=np.float64)
    v, c = np.unique(k[k >= fit.k_min], return_counts=True)
    m = float(np.sum(c))
    pl = _ll_power_law(v, fit.alpha, fit.k_min)
    out = []
    for name, fn in (("lognormal", _ll_lognormal), ("exponential", _ll_exponential)):
        alt, params = fn(v, c, fit.k_min)
        d = pl - alt
        R = float(np.sum(c * d))
        sd = float(np.sqrt(max(np.sum(c * (d - R / m) ** 2) / m, 0.0)))
        z = R / (sd * np.sqrt(m)) if sd > 0 else 0.0
        p = float(erfc(abs(z) / np.sqrt(2))) if sd > 0 else 1.0
        out.append(Comparison(name, R, float(z), p, params))
    return out


#: seconds the figure's bootstrap may take (a graph of millions of vertices uses fewer sets)
BUDGET = 30.0


def judge(degrees, sets=DEFAULT_SETS, seed=0, min_tail=50, budget=BUDGET) -> TailVerdict:
    """Fit, test and compare; ``plausible`` says whether the figure may draw the law."""
    k = np.asarray(degrees, dtype=np.float64)
    k = k[k > 0]
    fit = _fit(k, min_tail) if len(k) else None
    if fit is None:
        return TailVerdict(None, float("nan"), 0, [], False,
                           f"no power-law fit: fewer than {min_tail} vertices with a positive "
                           f"degree in any tail")
    if k.max() < 10 * fit.k_min:      # the old figure's rule: a law needs a decade
        return TailVerdict(fit, float("nan"), 0, [], False,
                           f"no power-law fit: the degrees above k_min = {fit.k_min} span less "
                           f"than a decade (up to {int(k.max())})")
    p, sets = gof_pvalue(k, fit, sets=sets, seed=seed, min_tail=min_tail, budget=budget)
    try:
        comps = compare(k, fit)
    except ImportError:      # scipy: the optional extra 'fits'
        comps = None
    law = (f"α = {fit.alpha:.2f} ± {fit.stderr:.2f} for k ≥ {fit.k_min} ({fit.tail} of "
           f"{fit.n} vertices), KS D = {fit.ks_distance:.3f}, p = {p:.2f} ({sets} synthetic sets)")
    if comps is None:
        comps, vs = [], ("no comparison with the lognormal and exponential: they need scipy "
                         "(pip install 'simengine[fits]')")
    else:
        vs = "; ".join(f"vs {c.alternative}: R = {c.R:.3g}, p = {c.p:.2g} "
                       f"({'favours ' + c.favours if c.favours != 'neither' else 'undecided'})"
                       for c in comps)
    better = [c for c in comps if c.favours == c.alternative]
    if p < REJECT_BELOW:
        return TailVerdict(fit, p, sets, comps, False,
                           f"no power law: the best fit ({law}) is rejected (p < {REJECT_BELOW}: "
                           f"CSN's test); {vs}")
    note = f"power law not rejected: {law}; {vs}"
    if better:
        note += f" — the {' and '.join(c.alternative for c in better)} fits better"
    return TailVerdict(fit, p, sets, comps, True, note)
