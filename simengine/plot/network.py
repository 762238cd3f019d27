"""Figures of a network run: distance histogram, vertex metrics, degree distribution (with the
power-law tail only where Clauset–Shalizi–Newman's test does not reject it), metrics and
clustering against degree, betweenness."""
from __future__ import annotations

from pathlib import Path

import numpy as np

from .. import tail_fits
from .common import Result, _mpl, _wrap, readable_log_axis


def _dist_unit(r):
    return "edge-weight units" if r.graph.get("weighted") else "hops"


def _source_note(r):
    """'' for all-source runs, else e.g. ' (from 2000 of 50000 sources)'."""
    st = r.statistics
    n = r.graph.get("n")
    k = st.get("sources_done")
    if n is None or k is None or int(k) >= int(n):
        return ""
    return f" (from {int(k)} of {int(n)} sources)"


def _hops(r):
    hist = r.file["distance_histogram"] if "distance_histogram" in r.file else None
    w = float(hist.attrs.get("bin_width", 1.0)) if hist is not None else 1.0
    return not r.graph.get("weighted") and w == 1.0 and (hist is None or len(hist) <= 4096)


def distance_histogram_figure(r: Result):
    """Ordered pairs by distance: centred integer bars for hops, [i·w, (i+1)·w) bins otherwise."""
    from matplotlib.ticker import MaxNLocator

    plt = _mpl()
    hist = r.distance_histogram
    if hist is None or hist.sum() == 0:
        return None
    w = float(r.file["distance_histogram"].attrs.get("bin_width", 1.0))
    if len(hist) > 4096:  # at most 4096 bars: merge neighbouring bins (a 2^22-bin file)
        m = -(-len(hist) // 4096)
        hist = np.pad(hist, (0, -len(hist) % m)).reshape(-1, m).sum(axis=1)
        w *= m
    fig, ax = plt.subplots(figsize=(6.8, 4.6), layout="constrained")
    d = np.arange(len(hist))
    if _hops(r):
        nz = hist > 0
        ax.bar(d[nz], hist[nz], width=0.8, align="center", color="C0")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_xlim(-0.6 if hist[0] else 0.4, d[nz].max() + 0.6)
        ax.set_xlabel("distance d (hops)")
    else:
        ax.bar(d * w, hist, width=w, align="edge", color="C0", edgecolor="white", lw=0.3)
        ax.set_xlabel(f"distance d ({_dist_unit(r)}), bins [i·w, (i+1)·w), w = {w:g}")
    pos = hist[hist > 0]
    if len(pos) > 1:                    # one bar: a linear count axis from 0
        ax.set_yscale("log")
        ax.set_ylim(pos.min() / 1.6, pos.max() * 1.6)
        readable_log_axis(ax.yaxis, pos.min() / 1.6, pos.max() * 1.6)
    st = r.statistics
    if "mean_distance" in st:
        ax.axvline(st["mean_distance"], color="k", ls="--", lw=1,
                   label=f"mean distance {st['mean_distance']:.4g}")
        ax.legend()
    ax.set_ylabel("ordered pairs (s, t), s ≠ t")
    ax.set_title(f"{r.name}: distance distribution{_source_note(r)}")
    return fig


def _units_of(r, path, default=""):
    ds = r.file[path] if path in r.file else None
    u = ds.attrs.get("units") if ds is not None else None
    u = (u.decode() if isinstance(u, bytes) else str(u)) if u is not None else default
    return "" if u in ("", "1") else f" ({u})"


METRIC_LABEL = {"eccentricity": "eccentricity", "closeness": "closeness centrality",
                "harmonic": "harmonic centrality", "degree": "degree"}


def vertex_metrics_figure(r: Result):
    """Histograms of the per-vertex metrics (eccentricity over sampled vertices when sampled)."""
    plt = _mpl()
    vert = {k: v for k, v in r.vertex.items() if k in METRIC_LABEL and k != "degree"}
    if not vert:
        return None
    names = sorted(vert)
    fig, axes = plt.subplots(1, len(names), figsize=(5.2 * len(names), 4.3), squeeze=False,
                             layout="constrained")
    note = _source_note(r)
    ids = r.vertex_ids
    for ax, k in zip(axes[0], names):
        v = vert[k][np.isfinite(vert[k])]
        label = METRIC_LABEL[k] + _units_of(r, f"vertex/{k}")
        if k == "eccentricity" and len(v) and np.all(v == np.rint(v)) and v.max() - v.min() <= 200:
            lo, hi = int(v.min()), int(v.max())
            counts = np.bincount(v.astype(np.int64) - lo)
            ax.bar(np.arange(lo, hi + 1), counts, width=0.8, align="center")
            from matplotlib.ticker import MaxNLocator

            ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        else:
            ax.hist(v, bins=40)
        if sum(p.get_height() > 0 for p in ax.patches) > 1:    # one bar: a linear count axis
            ax.set_yscale("log")
        ax.set_xlabel(label)
        sampled = k == "eccentricity" and note
        ax.set_ylabel("sampled vertices (the sources)" if sampled else "vertices")
        title = f"{METRIC_LABEL[k]}: {len(v)} " + ("sampled vertices" if sampled else "vertices")
        if k == "eccentricity":         # an isolated vertex (eccentricity 0) is no centre
            ecc = np.where(vert[k] > 0, vert[k], np.nan)
            i = int(np.nanargmin(ecc)) if np.isfinite(ecc).any() else None
        else:
            i = int(np.nanargmax(vert[k])) if len(v) else None
        if i is not None:               # the input's id of the extreme vertex
            title += f"\n{'min' if k == 'eccentricity' else 'max'} at vertex {str(ids[i])[:20]}"
        ax.set_title(title)
    fig.suptitle(f"{r.name}: per-vertex metrics{note}")
    return fig


def graph_degrees(r: Result):
    """(degrees, how) for a network output: ``/vertex/degree``, or the rebuilt graph's degrees.

    ``how`` says where they came from, or why there are none (degrees is then None).
    """
    if "vertex/degree" in r.file:
        return r.file["vertex/degree"][()], "stored /vertex/degree"
    sc = r.scenario
    g = sc.get("graph") or {}
    a = r.graph
    n = r.vertex_count  # sizes from the data: a rebuilt graph must match it before it is built
    spec = g.get("generator") if isinstance(g.get("generator"), dict) else {}
    if n is None or not isinstance(spec.get("n", n), int) or spec.get("n", n) != n:
        return None, "the stored graph description does not match the file's per-vertex data"
    try:
        from ..network import generators, readers

        if g.get("generator"):
            spec = dict(g["generator"])
            if g.get("directed"):
                spec.setdefault("directed", True)
            graph = generators.generate(spec)
            how = "graph rebuilt from the stored generator scenario"
        elif g.get("file"):
            p = Path(g["file"]["path"])
            if not p.is_absolute() and not p.exists():
                p = r.path.parent / p
            graph = readers.read_graph(p, g["file"].get("format"), directed=g.get("directed"))
            how = f"graph re-read from {p}"
        else:
            return None, "no graph description in the stored scenario"
    except Exception as exc:  # noqa: BLE001 - a figure is optional; say why it is missing
        return None, f"cannot rebuild the graph: {exc}"
    if a.get("n") is not None and (graph.n != int(a["n"]) or graph.num_arcs != int(a.get("arcs", -1))):
        return None, "the rebuilt graph differs from the one in the file (vertex/arc counts)"
    if not a.get("weighted") and a.get("hash") and graph.weights is None \
            and graph.content_hash() != str(a["hash"]):
        return None, "the rebuilt graph differs from the one in the file (content hash)"
    return graph.degree(), how


def ccdf(values, total=None):
    """(x, P(X ≥ x)) at each distinct value x of ``values``, as a fraction of ``total`` items
    (default ``len(values)``; pass the whole population when ``values`` is the positive part):
    the count of items ≥ x over ``total``, ties counted once per value."""
    vals, counts = np.unique(np.asarray(values), return_counts=True)
    total = len(np.asarray(values)) if total is None else int(total)
    at_least = np.cumsum(counts[::-1])[::-1]
    return vals, at_least / total


def degree_distribution_figure(r: Result, degrees, log=None):
    """P(k) (log-binned) and P(K ≥ k) on log–log axes; the fitted power-law tail only where
    Clauset–Shalizi–Newman's test does not reject it, else a note saying why there is no law
    (also to ``log``)."""
    plt = _mpl()
    k = np.asarray(degrees)
    k = k[k > 0]
    if not len(k):
        return None
    directed = bool(r.graph.get("directed"))
    what = "out-degree" if directed else "degree"
    fig, (ax0, ax1) = plt.subplots(1, 2, figsize=(12, 4.6), layout="constrained")
    vals, counts = np.unique(k, return_counts=True)
    ax0.loglog(vals, counts / len(k), "o", ms=3, alpha=0.35, color="C0", label="P(k)")
    if vals.max() > vals.min():
        edges = np.unique(np.geomspace(vals.min(), vals.max() + 1, 25).astype(np.int64))
        hc, _ = np.histogram(k, bins=edges)
        widths = np.diff(edges)
        centres = np.sqrt(edges[:-1] * np.maximum(edges[1:] - 1, edges[:-1]))
        ok = hc > 0
        ax0.loglog(centres[ok], hc[ok] / widths[ok] / len(k), "s-", ms=4, color="C1",
                   label="log-binned")
    readable_log_axis(ax0.xaxis, float(vals.min()), float(vals.max()))
    readable_log_axis(ax1.xaxis, float(vals.min()), float(vals.max()))
    ax0.set_xlabel(f"{what} k")
    ax0.set_ylabel("P(k): fraction of vertices")
    ax0.set_title("degree distribution")
    ax1.loglog(*ccdf(k), ".", ms=4, color="C0", label="P(K ≥ k)")
    # Clauset–Shalizi–Newman: the line only where the power law is not rejected (tail_fits)
    verdict = tail_fits.judge(k)
    fit = verdict.fit
    if log is not None:
        log(f"{getattr(r, 'path', r.name)}: {what} distribution: {verdict.reason}")
    if verdict.plausible:
        kk = np.geomspace(fit.k_min, vals.max(), 30)
        ax1.loglog(kk, fit.ccdf(kk), "-", color="C3", lw=2,
                   label=f"power-law tail k ≥ {fit.k_min}: α = {fit.alpha:.2f} ± {fit.stderr:.2f}"
                         f" (p = {verdict.p:.2f})")
        ax0.loglog(kk, fit.pmf(kk), "-", color="C3", lw=1.5,
                   label=f"P(k) ∝ k^−{fit.alpha:.2f}")
        ttl = (f"CCDF; MLE fit (KS-chosen k_min = {fit.k_min}, {fit.tail} vertices), "
               f"not rejected: p = {verdict.p:.2f}")
    else:
        ttl = "CCDF; no power law drawn"
    ax1.text(0.02, 0.02, _wrap(verdict.reason, 70), transform=ax1.transAxes, fontsize=7,
             va="bottom", ha="left", color="0.15",
             bbox={"boxstyle": "round", "fc": "white", "ec": "0.7", "alpha": 0.85})
    ax1.set_xlabel(f"{what} k")
    ax1.set_ylabel("P(K ≥ k)")
    ax1.set_title(ttl, fontsize="medium")
    ax0.legend(fontsize="small")
    ax1.legend(fontsize="small")
    fig.suptitle(f"{r.name}: {what} distribution, n = {len(degrees)}, mean {np.mean(degrees):.3g}")
    return fig


def plot_bin_means(ax, k, v):
    """The mean of ``v`` per log-spaced bin of the degrees ``k`` (16 edges), as a line."""
    if len(k) and k.max() > k.min():
        edges = np.geomspace(k.min(), k.max() * 1.0001, 16)
        which = np.digitize(k, edges)
        means = [(k[which == b].mean(), v[which == b].mean()) for b in np.unique(which)]
        ax.plot(*zip(*means), "o-", color="C3", ms=4, label="bin mean")
        ax.legend(fontsize="small")


def metric_vs_degree_figure(r: Result, degrees):
    """Each per-vertex metric against degree (points and the mean per log-spaced degree bin)."""
    plt = _mpl()
    vert = {k: v for k, v in r.vertex.items() if k in METRIC_LABEL and k != "degree"}
    deg = np.asarray(degrees, dtype=np.float64)
    if not vert or len(deg) != len(next(iter(vert.values()))):
        return None
    names = sorted(vert)
    fig, axes = plt.subplots(1, len(names), figsize=(5.2 * len(names), 4.3), squeeze=False,
                             layout="constrained")
    note = _source_note(r)
    what = "out-degree" if r.graph.get("directed") else "degree"
    for ax, name in zip(axes[0], names):
        v = vert[name]
        ok = np.isfinite(v) & (deg > 0)
        ax.plot(deg[ok], v[ok], ".", ms=2, alpha=0.25, color="C0", rasterized=True)
        plot_bin_means(ax, deg[ok], v[ok])
        ax.set_xscale("log")
        if ok.any():
            readable_log_axis(ax.xaxis, float(deg[ok].min()), float(deg[ok].max()))
        ax.set_xlabel(f"{what} k")
        ax.set_ylabel(METRIC_LABEL[name] + _units_of(r, f"vertex/{name}"))
        sampled = name == "eccentricity" and note
        ax.set_title(f"{METRIC_LABEL[name]} vs {what}" + (" (sampled vertices)" if sampled else ""))
    fig.suptitle(f"{r.name}: per-vertex metrics against {what}{note}")
    return fig


def clustering_vs_degree_figure(r: Result, degrees):
    """C(k) on log-log axes: each vertex's clustering coefficient (``/vertex/clustering``, the
    ``clustering`` statistic) against its degree, the mean of C per log-spaced degree bin (zeros
    included) and a k^-1 guide; None when the file has no clustering."""
    if "vertex/clustering" not in r.file:
        return None
    plt = _mpl()
    c = r.file["vertex/clustering"][()]
    deg = np.asarray(degrees, dtype=np.float64)
    if len(deg) != len(c):
        return None
    what = "out-degree" if r.graph.get("directed") else "degree"
    fig, ax = plt.subplots(figsize=(5.6, 4.4), layout="constrained")
    ok = (deg > 0) & (c > 0)
    ax.plot(deg[ok], c[ok], ".", ms=2, alpha=0.25, color="C0", rasterized=True,
            label=f"vertices with C > 0 ({int(ok.sum())} of {len(c)})")
    has = deg > 0
    if has.any() and deg[has].max() > deg[has].min():
        edges = np.geomspace(deg[has].min(), deg[has].max() * 1.0001, 16)
        which = np.digitize(deg[has], edges)
        kb = np.array([deg[has][which == b].mean() for b in np.unique(which)])
        cb = np.array([c[has][which == b].mean() for b in np.unique(which)])
        pos = cb > 0
        ax.plot(kb[pos], cb[pos], "o-", color="C3", ms=4, label="bin mean C(k)")
        if pos.any():
            k0, c0 = kb[pos][0], cb[pos][0]
            ax.plot(kb[pos], c0 * k0 / kb[pos], "--", color="0.5", lw=1, label="∝ 1/k")
    if ok.any():
        ax.set_xscale("log")
        ax.set_yscale("log")
        readable_log_axis(ax.xaxis, float(deg[ok].min()), float(deg[ok].max()))
        ax.legend(fontsize="small")
    ax.set_xlabel(f"{what} k")
    ax.set_ylabel("clustering coefficient C")
    st = r.statistics
    avg = st.get("average_clustering")
    ax.set_title(f"{r.name}: clustering vs {what}" +
                 (f"\naverage C = {avg:.4g}, transitivity = {st.get('transitivity', 0):.4g}"
                  if avg is not None else ""))
    return fig


def betweenness_figure(r: Result, degrees=None):
    """Betweenness: its distribution P(B ≥ b) and, with the degrees, B against degree (log–log,
    vertices with B > 0; the mean per log-spaced degree bin)."""
    b = r.vertex.get("betweenness")
    if b is None:
        return None
    plt = _mpl()
    b = np.asarray(b, dtype=np.float64)
    deg = None if degrees is None else np.asarray(degrees, dtype=np.float64)
    fig, axes = plt.subplots(1, 1 if deg is None else 2, figsize=(5.6 if deg is None else 11.5,
                             4.4), squeeze=False, layout="constrained")
    pos = np.sort(b[np.isfinite(b) & (b > 0)])
    ax = axes[0][0]
    if len(pos):
        ax.loglog(*ccdf(pos, total=len(b)), ".", ms=3, color="C0")
    ax.set_xlabel("betweenness B")
    ax.set_ylabel("P(B ≥ b): fraction of vertices")
    ax.set_title(f"betweenness distribution ({len(b) - len(pos)} of {len(b)} vertices have B = 0)",
                 fontsize="medium")
    if deg is not None and len(deg) == len(b):
        ax = axes[0][1]
        ok = np.isfinite(b) & (b > 0) & (deg > 0)
        ax.loglog(deg[ok], b[ok], ".", ms=2, alpha=0.3, color="C0", rasterized=True)
        plot_bin_means(ax, deg[ok], b[ok])
        what = "out-degree" if r.graph.get("directed") else "degree"
        ax.set_xlabel(f"{what} k")
        ax.set_ylabel("betweenness B")
        ax.set_title(f"betweenness vs {what}")
    what = ["normalised"] if r.statistics.get("betweenness_normalized") else []
    what += [_source_note(r).strip(" ()")] if _source_note(r) else []
    fig.suptitle(f"{r.name}: betweenness centrality" + (f" ({', '.join(what)})" if what else ""))
    return fig
