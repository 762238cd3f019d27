"""Path statistics: per-batch partial reductions (:class:`ChunkPartial`) and their accumulator.

Every APSP engine (CPU msbfs/BFS/Dijkstra/Floyd–Warshall, CUDA kernels) turns one batch of sources
into a :class:`ChunkPartial`; :class:`PathStatistics` accumulates them and derives the results.
:func:`reduce_block` is the reference reduction of an explicit distance block and the oracle the
fused reductions are tested against.  Definitions of every statistic: ``docs/network.md``.

Determinism: per-source quantities (row sums, counts, maxima, harmonic sums) are stored per source
id and summed at the end in vertex order, so totals do not depend on batching, resume or on how
the sources were split between accumulators; counts and histograms are integers.  The floating
column sums (distance and harmonic sums per target) are accumulated with a compensation term
(:func:`two_sum`), so adding or merging the same partials in any order gives the same result up
to ~1e-32 relative — in practice bitwise; partials of *differently composed* batches differ only by
their own rounding (~1e-16 relative).
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .accumulate import two_sum

__all__ = ["ChunkPartial", "reduce_block", "PathStatistics", "unreachable_sentinel",
           "graph_connected", "select_statistics", "two_sum", "wants_paths"]


def unreachable_sentinel(dtype) -> float | int:
    """The value that marks an unreachable target in a stored distance block of ``dtype``.

    ``inf`` for floating dtypes, the dtype's maximum (e.g. 255 for uint8) for integer dtypes.
    """
    dtype = np.dtype(dtype)
    if dtype.kind == "f":
        return np.inf
    return int(np.iinfo(dtype).max)


@dataclass
class ChunkPartial:
    """What one batch of B sources contributes (CPU and CUDA engines both produce it).

    Attributes
    ----------
    sources   : int64 (B,)   the batch's source ids
    row_sum   : float64 (B,) Σ_{t≠s, reachable} d(s,t)
    row_reach : int64 (B,)   number of t≠s reachable from s
    row_max   : float64 (B,) largest finite d(s,t) (eccentricity of s); 0 if none
    row_harm  : float64 (B,) Σ_{t≠s, d>0} 1/d(s,t)
    col_sum   : float64 (n,) Σ_{s in batch, s≠t, reachable} d(s,t)
    col_reach : int64 (n,)   number of batch sources s≠t that reach t
    col_harm  : float64 (n,) Σ_{s in batch, s≠t, d>0} 1/d(s,t)
    hist      : int64 (nbins,) counts of finite d(s,t), s≠t, by bin (hops for unweighted graphs,
                floor(d / bin_width) for weighted ones); any length, the accumulator pads
    btw, btw_sq : float64 (n,) or None — Σ_{s in batch} δ_s(v) and Σ δ_s(v)² (Brandes
                dependencies, :mod:`simengine.network.betweenness`); only from the Brandes engines

    ``col_sum``, ``col_reach`` and ``col_harm`` are None when a GPU engine folded them into the
    accumulator's device columns instead (:meth:`PathStatistics.deferred_columns`).
    """

    sources: np.ndarray
    row_sum: np.ndarray
    row_reach: np.ndarray
    row_max: np.ndarray
    row_harm: np.ndarray
    col_sum: np.ndarray
    col_reach: np.ndarray
    col_harm: np.ndarray
    hist: np.ndarray
    btw: np.ndarray | None = None
    btw_sq: np.ndarray | None = None

    @classmethod
    def empty(cls, n: int) -> "ChunkPartial":
        z = np.zeros(0)
        return cls(np.zeros(0, np.int64), z, np.zeros(0, np.int64), z.copy(), z.copy(),
                   np.zeros(n), np.zeros(n, np.int64), np.zeros(n), np.zeros(1, np.int64))

    @staticmethod
    def concat(parts: "list[ChunkPartial]", n: int) -> "ChunkPartial":
        """Merge consecutive partials (rows concatenated in order, columns and histograms added)."""
        if not parts:
            return ChunkPartial.empty(n)
        nb = max(len(p.hist) for p in parts)
        hist = np.zeros(nb, np.int64)
        col_sum, col_reach, col_harm = np.zeros(n), np.zeros(n, np.int64), np.zeros(n)
        for p in parts:
            hist[:len(p.hist)] += p.hist
            col_sum += p.col_sum
            col_reach += p.col_reach
            col_harm += p.col_harm
        cat = lambda name: np.concatenate([getattr(p, name) for p in parts])  # noqa: E731
        btw = (None, None) if any(p.btw is None for p in parts) else \
            (sum(p.btw for p in parts), sum(p.btw_sq for p in parts))
        return ChunkPartial(cat("sources").astype(np.int64), cat("row_sum"),
                            cat("row_reach").astype(np.int64), cat("row_max"), cat("row_harm"),
                            col_sum, col_reach, col_harm, hist, *btw)


#: the most bins a distance histogram has (the CPU engines' cap, cpu/sssp.py): a weight of 10^15
#: must not size an array by its distances
HIST_MAX_BINS = 1 << 22


def reduce_block(dist_block, sources, weighted: bool, bin_width: float = 1.0) -> ChunkPartial:
    """Reference reduction of a (B × n) distance block into a :class:`ChunkPartial`.

    ``dist_block[i, t]`` is d(sources[i], t); unreachable targets are ``inf`` (floating dtypes) or
    the dtype's maximum (integer dtypes, see :func:`unreachable_sentinel`).  Unweighted graphs bin
    the histogram by hops (bin = d), weighted graphs by ``floor(d / bin_width)``.
    """
    D = np.asarray(dist_block)
    sources = np.asarray(sources, dtype=np.int64).ravel()
    if D.ndim != 2 or D.shape[0] != len(sources):
        raise ValueError("dist_block must be (len(sources), n)")
    B, n = D.shape
    sent = unreachable_sentinel(D.dtype)
    finite = np.isfinite(D) if D.dtype.kind == "f" else (D != sent)
    finite[np.arange(B), sources] = False
    Df = np.where(finite, D, 0).astype(np.float64)
    pos = finite & (Df > 0)
    inv = np.zeros_like(Df)
    np.divide(1.0, Df, out=inv, where=pos)
    row_sum = Df.sum(axis=1)
    row_reach = finite.sum(axis=1).astype(np.int64)
    row_max = Df.max(axis=1) if n else np.zeros(B)
    row_harm = inv.sum(axis=1)
    col_sum = Df.sum(axis=0)
    col_reach = finite.sum(axis=0).astype(np.int64)
    col_harm = inv.sum(axis=0)
    vals = Df[finite]
    top = float(HIST_MAX_BINS - 1)   # the engines' cap: farther distances share the last bin
    if weighted:
        bins = np.minimum(np.floor(vals / float(bin_width)), top).astype(np.int64)
    else:
        bins = np.minimum(np.rint(vals), top).astype(np.int64)
    hist = np.bincount(bins, minlength=1).astype(np.int64) if len(bins) else np.zeros(1, np.int64)
    return ChunkPartial(sources, row_sum, row_reach, row_max, row_harm,
                        col_sum, col_reach, col_harm, hist)


class PathStatistics:
    """Accumulates :class:`ChunkPartial` s for one graph and derives the path statistics.

    Parameters
    ----------
    n, directed, weighted : the graph's size and kind.
    bin_width : histogram bin width for weighted graphs (unweighted graphs bin by hops).
    sampled : True when the sources are a uniform sample (without replacement) of the vertices;
        :meth:`results` then reports estimates with standard errors.
    planned_sources : how many sources the run will process; default n.  Fewer than n without
        ``sampled`` means an explicit source list (see :meth:`results`).
    betweenness : 0 (off), 1 or 2 (normalized): also accumulate the Brandes dependencies of the
        partials (``btw``, ``btw_sq`` with compensation terms; :mod:`.betweenness`).
    paths : False when the run wants betweenness alone (needs ``betweenness``): the engines skip
        the path statistics (:meth:`add` ignores any a partial carries) and :meth:`results` has
        only the betweenness and the keys that describe the run.

    The work done is a *set* of sources (``done``, a boolean mask over the vertices), not a prefix
    of a list: partials may arrive in any order and accumulators of disjoint source sets (other
    ranks, other devices, an earlier run) combine with :meth:`merge`.  Per-source values are kept
    per vertex id; the floating column sums carry a compensation term (``col_sum_lo``,
    ``col_harm_lo``), so the totals do not depend on the order of :meth:`add` / :meth:`merge`.
    Adding the same source twice raises ``ValueError``.  :meth:`state` / :meth:`from_state`
    round-trip the accumulator through a ``dict[str, np.ndarray]`` (HDF5 checkpoint, MPI message).
    """

    def __init__(self, n: int, directed: bool = False, weighted: bool = False,
                 bin_width: float = 1.0, sampled: bool = False, planned_sources: int | None = None,
                 betweenness: int = 0, paths: bool = True):
        if bin_width <= 0:
            raise ValueError("bin_width must be positive")
        self.n = int(n)
        self.directed = bool(directed)
        self.weighted = bool(weighted)
        self.bin_width = float(bin_width)
        self.sampled = bool(sampled)
        self.planned_sources = self.n if planned_sources is None else int(planned_sources)
        n = self.n
        self.done = np.zeros(n, dtype=bool)
        self.row_sum = np.zeros(n)
        self.row_reach = np.zeros(n, dtype=np.int64)
        self.row_max = np.zeros(n)
        self.row_harm = np.zeros(n)
        self.col_sum = np.zeros(n)
        self.col_sum_lo = np.zeros(n)
        self.col_reach = np.zeros(n, dtype=np.int64)
        self.col_harm = np.zeros(n)
        self.col_harm_lo = np.zeros(n)
        self.hist = np.zeros(1, dtype=np.int64)
        self.betweenness = int(betweenness)
        self.paths = bool(paths)
        if not self.paths and not self.betweenness:
            raise ValueError("an accumulator without path statistics must have betweenness on")
        for k in self._BTW if self.betweenness else ():
            setattr(self, k, np.zeros(n))
        #: column sums still held elsewhere (a GPU's running sums), added by :meth:`flush`
        self._deferred = {}

    @classmethod
    def for_graph(cls, graph, bin_width: float = 1.0, sampled: bool = False,
                  planned_sources: int | None = None, betweenness: int = 0,
                  paths: bool = True) -> "PathStatistics":
        return cls(graph.n, graph.directed, graph.weighted, bin_width, sampled, planned_sources,
                   betweenness, paths)

    def like(self) -> "PathStatistics":
        """An empty accumulator for the same graph and settings."""
        return PathStatistics(self.n, self.directed, self.weighted, self.bin_width, self.sampled,
                              self.planned_sources, self.betweenness, self.paths)

    # ------------------------------------------------------------------ the set of done sources
    @property
    def sources_done(self) -> int:
        return int(self.done.sum())

    def done_sources(self) -> np.ndarray:
        """The ids of the sources already accumulated (sorted int64)."""
        return np.flatnonzero(self.done).astype(np.int64)

    def pending(self, sources) -> np.ndarray:
        """The entries of ``sources`` not accumulated yet, in the given order (what a resumed or
        redistributed run still has to do, whatever split produced the done set)."""
        s = np.asarray(sources, dtype=np.int64).ravel()
        return s[~self.done[s]]

    # ------------------------------------------------------------------ deferred columns
    def deferred_columns(self, key, factory):
        """The holder of column sums kept outside this accumulator under ``key`` (created by
        ``factory()`` on first use): an object whose ``take()`` returns ``(col_sum, col_sum_lo,
        col_reach, col_harm, col_harm_lo)`` or None. Partials whose columns went there carry
        None columns; :meth:`flush` adds the held sums (every reader of the columns calls it)."""
        holder = self._deferred.get(key)
        if holder is None:
            holder = self._deferred[key] = factory()
        return holder

    def flush(self) -> None:
        """Add the column sums held outside (:meth:`deferred_columns`) to this accumulator."""
        for holder in self._deferred.values():
            got = holder.take()
            if got is not None:
                s, s_lo, reach, h, h_lo = got
                self._add_columns(s, s_lo, reach, h, h_lo, np.zeros(1, np.int64))

    # ------------------------------------------------------------------ accumulation
    @staticmethod
    def _add_compensated(pairs):
        """acc (+ lo) += x (+ xlo) for each (acc, lo, x, xlo); xlo an array or 0.0."""
        # in place and threaded (accumulate.py): the same TwoSum arithmetic as ``two_sum`` on the
        # arrays, without its n-long temporaries (0.45 s per batch at n = 10^7)
        from .accumulate import add_compensated

        for acc, lo, x, xlo in pairs:
            x = np.ascontiguousarray(x, dtype=np.float64)
            if x.shape != acc.shape:
                raise ValueError("partial is for a graph of another size")
            has_lo = not np.isscalar(xlo)
            xl = np.ascontiguousarray(xlo, dtype=np.float64) if has_lo else x[:1] * 0.0
            if not has_lo and xlo != 0.0:
                raise ValueError("a scalar compensation term must be 0.0")
            add_compensated(acc, lo, x, xl, has_lo)

    def _add_columns(self, col_sum, col_sum_lo, col_reach, col_harm, col_harm_lo, hist):
        from .accumulate import add_counts

        self._add_compensated(((self.col_sum, self.col_sum_lo, col_sum, col_sum_lo),
                               (self.col_harm, self.col_harm_lo, col_harm, col_harm_lo)))
        col_reach = np.ascontiguousarray(col_reach)
        if col_reach.shape != self.col_reach.shape:
            raise ValueError("partial is for a graph of another size")
        add_counts(self.col_reach, col_reach)
        self._add_hist(hist)

    def _add_hist(self, hist):
        h = np.asarray(hist, dtype=np.int64)
        if len(h) > len(self.hist):
            self.hist = np.concatenate([self.hist, np.zeros(len(h) - len(self.hist), np.int64)])
        self.hist[:len(h)] += h

    def add(self, p: ChunkPartial) -> None:
        """Add one batch's partial (any order)."""
        s = np.asarray(p.sources, dtype=np.int64)
        if len(s) and (s.min() < 0 or s.max() >= self.n):
            raise ValueError("source id out of range")
        if len(np.unique(s)) != len(s) or self.done[s].any():
            raise ValueError("a source was added twice")
        if p.col_sum is not None and len(p.col_sum) != self.n:
            raise ValueError("partial is for a graph of another size")
        self.done[s] = True
        if self.paths:
            self._add_paths(s, p)
        if self.betweenness:
            if p.btw is None:
                raise ValueError("betweenness is on but the partial has no dependencies (btw)")
            self._add_btw(p.btw, 0.0, p.btw_sq, 0.0)

    def _add_paths(self, s, p: ChunkPartial) -> None:
        self.row_sum[s] = p.row_sum
        self.row_reach[s] = p.row_reach
        self.row_max[s] = p.row_max
        self.row_harm[s] = p.row_harm
        if p.col_sum is None:       # the columns went to deferred_columns: the histogram only
            self._add_hist(p.hist)
        else:
            self._add_columns(p.col_sum, 0.0, p.col_reach, p.col_harm, 0.0, p.hist)

    def _add_btw(self, btw, btw_lo, sq, sq_lo):
        self._add_compensated(((self.btw, self.btw_lo, btw, btw_lo),
                               (self.btw_sq, self.btw_sq_lo, sq, sq_lo)))

    def is_empty(self) -> bool:
        """Nothing accumulated yet (no source, no column count)."""
        self.flush()
        return not self.done.any() and not self.col_reach.any() and not self.hist.any()

    def take(self, other: "PathStatistics") -> None:
        """Become ``other`` (same graph and settings) when nothing is accumulated yet: its arrays
        are taken over, not copied — for a temporary such as the union of the ranks'
        accumulators. ValueError otherwise."""
        if not self.is_empty():
            raise ValueError("take: this accumulator is not empty; use merge")
        self._check_same(other)
        other.flush()
        for k in self._names():
            setattr(self, k, getattr(other, k))

    def _check_same(self, other: "PathStatistics") -> None:
        if (other.n, other.directed, other.weighted, other.bin_width, other.sampled,
                other.betweenness, other.paths) != (self.n, self.directed, self.weighted,
                                                    self.bin_width, self.sampled,
                                                    self.betweenness, self.paths):
            raise ValueError("merge: the accumulators are for different graphs or settings")

    def merge(self, other: "PathStatistics") -> None:
        """Add the accumulator ``other`` of a disjoint set of sources (another rank, another device,
        an earlier part of the run).  ValueError if the graphs or settings differ or a source is in
        both."""
        self._check_same(other)
        if (self.done & other.done).any():
            raise ValueError("merge: a source was accumulated by both")
        other.flush()
        if self.is_empty():
            # nothing accumulated yet (the first merge of a run on ranks): adding to zeros is
            # exact, so the sums are the other's values — copies instead of compensated sums
            for k in self._names():
                setattr(self, k, getattr(other, k).copy())
            return
        m = other.done
        self.done |= m
        for k in ("row_sum", "row_reach", "row_max", "row_harm"):
            getattr(self, k)[m] = getattr(other, k)[m]
        self._add_columns(other.col_sum, other.col_sum_lo, other.col_reach, other.col_harm,
                          other.col_harm_lo, other.hist)
        if self.betweenness:
            self._add_btw(other.btw, other.btw_lo, other.btw_sq, other.btw_sq_lo)

    @property
    def column_sums(self) -> tuple[np.ndarray, np.ndarray]:
        """(Σ_s d(s,u), Σ_s 1/d(s,u)) per target u, compensation included."""
        self.flush()
        return self.col_sum + self.col_sum_lo, self.col_harm + self.col_harm_lo

    # ------------------------------------------------------------------ checkpoint
    _ARRAYS = ("done", "row_sum", "row_reach", "row_max", "row_harm",
               "col_sum", "col_sum_lo", "col_reach", "col_harm", "col_harm_lo", "hist")
    #: arrays that checkpoints written before they existed lack (restored as zeros)
    _OPTIONAL = ("col_sum_lo", "col_harm_lo")
    #: the betweenness sums (with their compensation terms), present when ``betweenness`` is on
    _BTW = ("btw", "btw_lo", "btw_sq", "btw_sq_lo")

    def _names(self):
        return self._ARRAYS + (self._BTW if self.betweenness else ())

    def state(self, copy: bool = True) -> dict:
        """All accumulator state as ``dict[str, np.ndarray]`` (copies), for an HDF5 checkpoint.
        ``done`` is the boolean mask of the sources accumulated. ``copy=False``: the arrays
        themselves, for a writer that is done with them before the next :meth:`add` (copying
        eleven n-long arrays cost 1.6 s at n = 10⁷ on a 2-core host)."""
        self.flush()
        st = {k: (getattr(self, k).copy() if copy else getattr(self, k)) for k in self._names()}
        st["meta"] = np.array([self.n, int(self.directed), int(self.weighted), int(self.sampled),
                               self.planned_sources] + ([self.betweenness] if self.betweenness
                                                        else [])
                              + ([] if self.paths else [0]), dtype=np.int64)
        st["bin_width"] = np.array(self.bin_width, dtype=np.float64)
        return st

    @classmethod
    def from_state(cls, state: dict) -> "PathStatistics":
        meta = np.asarray(state["meta"], dtype=np.int64)
        self = cls(int(meta[0]), bool(meta[1]), bool(meta[2]), float(np.asarray(state["bin_width"])),
                   bool(meta[3]), int(meta[4]), int(meta[5]) if len(meta) > 5 else 0,
                   bool(meta[6]) if len(meta) > 6 else True)
        for k in self._names():
            if k not in state and k in cls._OPTIONAL:
                continue
            a = np.asarray(state[k])
            setattr(self, k, a.astype(getattr(self, k).dtype, copy=True))
        return self

    # ------------------------------------------------------------------ results
    def scope(self, K: int | None = None) -> str:
        """Which pairs the statistics cover, in words: ``all sources``, ``over 2 listed
        sources``, ``estimated from a sample of 100 of 400 sources``."""
        n = self.n
        K = self.sources_done if K is None else K
        if K == n:
            return "all sources"
        if self.sampled:
            return f"estimated from a sample of {K} of {n} sources"
        if self.planned_sources < n:
            return f"over {K} listed source{'s' if K != 1 else ''}"
        return f"over {K} of {n} sources (run incomplete)"

    def results(self, elapsed: float | None = None, graph=None) -> dict:
        """Derived statistics (see docs/network.md for every definition and disconnected rule).

        Scalars are Python floats/ints; per-vertex values are float64 arrays of length n.
        ``elapsed`` (seconds) adds ``normalized_time = elapsed / mean_distance``.  ``graph`` (the
        CSRGraph) lets runs over some of the sources state ``connected`` for the whole graph
        (from its components); without it ``connected`` is left out of such runs.

        Three kinds of run (``scope``):

        * every vertex a source: exact whole-graph statistics;
        * a uniform sample (``sampled``): estimates with standard errors, diameter/radius bounds;
        * an explicit list of sources (or an unfinished run): statistics over the ordered pairs
          (s, t) with s a listed source (mean distance, pair counts, efficiency, histogram,
          eccentricity of the listed vertices); the diameter and radius of the whole graph are
          only bounded (``*_is_lower_bound`` / ``*_is_upper_bound``); closeness and harmonic
          centrality are exact for listed vertices of undirected graphs (their out-distances are
          their in-distances), NaN for the others, and left out for directed graphs.
        """
        self.flush()
        n = self.n
        done = self.done
        K = int(done.sum())
        idx = np.flatnonzero(done)
        rs, rr, rm, rh = self.row_sum[idx], self.row_reach[idx], self.row_max[idx], self.row_harm[idx]
        tot_sum = float(rs.sum())
        tot_reach = int(rr.sum())
        listed = not self.sampled and K < n
        out: dict = {"n": n, "directed": self.directed, "weighted": self.weighted,
                     "sources_done": K, "planned_sources": self.planned_sources,
                     "all_sources": K == n, "sampled": self.sampled,
                     "estimate": bool(self.sampled and K < n), "listed": listed,
                     "scope": self.scope(K)}
        if not self.paths:
            return self._betweenness_only(out, idx, K, elapsed, graph)
        mean = tot_sum / tot_reach if tot_reach else 0.0
        ecc = np.full(n, np.nan)
        ecc[idx] = rm
        has = rr > 0
        diameter = float(rm.max()) if K else 0.0
        radius = float(rm[has].min()) if has.any() else 0.0
        nb = self.hist.copy()
        out["distance_histogram"] = nb
        out["histogram_bin_width"] = self.bin_width if self.weighted else 1.0
        out["eccentricity"] = ecc
        # column-based centralities (inward distances, networkx definitions)
        col_sum, col_harm = self.column_sums
        if self.estimate_scale_needed(K):
            m_u = np.full(n, float(K))
            m_u[idx] -= 1.0                      # sampled sources other than u
            with np.errstate(divide="ignore", invalid="ignore"):
                frac = np.where(m_u > 0, self.col_reach / np.maximum(m_u, 1), 0.0)
                clo = np.where(col_sum > 0, self.col_reach / np.where(col_sum > 0,
                               col_sum, 1.0) * frac, 0.0)
                harm = np.where(m_u > 0, col_harm * (n - 1) / np.maximum(m_u, 1), 0.0)
            out["closeness"] = clo
            out["harmonic"] = harm
        elif listed:
            if not self.directed:                # out-distances of a listed vertex = in-distances
                clo = np.full(n, np.nan)
                harm = np.full(n, np.nan)
                with np.errstate(divide="ignore", invalid="ignore"):
                    clo[idx] = np.where(rs > 0, rr.astype(np.float64) ** 2 /
                                        np.where(rs > 0, rs, 1.0) / max(n - 1, 1), 0.0)
                harm[idx] = rh
                out["closeness"] = clo
                out["harmonic"] = harm
        else:
            with np.errstate(divide="ignore", invalid="ignore"):
                clo = np.where(col_sum > 0, self.col_reach.astype(np.float64) ** 2 /
                               np.where(col_sum > 0, col_sum, 1.0) / max(n - 1, 1), 0.0)
            out["closeness"] = clo
            out["harmonic"] = col_harm
        if not self.sampled or K == n:
            out["mean_distance"] = mean
            out["reachable_pairs"] = tot_reach
            out["unreachable_pairs"] = int(K * (n - 1) - tot_reach)
            out["diameter"] = diameter
            out["radius"] = radius
            if K == n:
                out["efficiency"] = float(rh.sum()) / (n * (n - 1)) if n > 1 else 0.0
                out["connected"] = bool(tot_reach == n * (n - 1))
            else:
                # over the pairs (s, t), s listed: the graph's diameter is at least, its radius
                # at most, what the listed sources show
                out["efficiency"] = float(rh.sum()) / (K * (n - 1)) if K and n > 1 else 0.0
                out["diameter_is_lower_bound"] = True
                out["radius_is_upper_bound"] = True
        else:
            # estimates from a uniform sample of K sources without replacement (finite-population
            # correction 1 - K/n); ratio estimator for the mean distance with linearised SE
            fpc = 1.0 - K / n
            out["mean_distance"] = mean
            if K > 1 and tot_reach:
                rbar = rr.mean()
                resid = rs - mean * rr
                out["mean_distance_se"] = float(np.sqrt(fpc * (resid ** 2).sum() / (K * (K - 1)))
                                                / rbar)
            else:
                out["mean_distance_se"] = float("nan")
            sd = lambda x: float(np.sqrt(fpc * x.var(ddof=1) / K)) if K > 1 else float("nan")  # noqa
            out["reachable_pairs"] = float(n * rr.mean()) if K else 0.0
            out["reachable_pairs_se"] = n * sd(rr.astype(np.float64))
            out["unreachable_pairs"] = float(n * (n - 1)) - out["reachable_pairs"]
            out["unreachable_pairs_se"] = out["reachable_pairs_se"]
            out["efficiency"] = float(rh.mean() / (n - 1)) if K and n > 1 else 0.0
            out["efficiency_se"] = sd(rh) / (n - 1) if n > 1 else float("nan")
            out["diameter"] = diameter          # lower bound: max over sampled sources
            out["diameter_is_lower_bound"] = True
            out["radius"] = radius              # upper bound: min over sampled sources
            out["radius_is_upper_bound"] = True
        if K < n:
            if tot_reach < K * (n - 1):
                out["connected"] = False         # a listed/sampled source misses a vertex
            elif graph is not None:
                out["connected"] = graph_connected(graph)
        if self.betweenness:
            from .betweenness import results as betweenness_results

            out.update(betweenness_results(self, idx))
        if elapsed is not None:
            out["elapsed"] = float(elapsed)
            out["normalized_time"] = float(elapsed) / mean if mean > 0 else float("nan")
        return out

    def _betweenness_only(self, out: dict, idx, K: int, elapsed, graph) -> dict:
        """:meth:`results` of a run without path statistics: the run's description, whether the
        graph is connected (from its components, when ``graph`` is given) and the betweenness."""
        from .betweenness import results as betweenness_results

        if graph is not None:
            out["connected"] = graph_connected(graph)
        out.update(betweenness_results(self, idx))
        if elapsed is not None:
            out["elapsed"] = float(elapsed)
        return out

    def estimate_scale_needed(self, K: int) -> bool:
        return self.sampled and K < self.n


def graph_connected(graph) -> bool:
    """Whether every vertex of ``graph`` reaches every other (strongly connected), from its
    components: the whole-graph fact that runs over some sources cannot see in their pairs."""
    from .components import strongly_connected_components

    if graph.n <= 1:
        return True
    count, _ = strongly_connected_components(graph)
    return count == 1


#: the result keys that belong to each entry of ``metrics.statistics``; every other key (vertex
#: and pair counts, connected, scope, timing) describes the run and is always kept
STATISTIC_KEYS = {
    "mean_distance": ("mean_distance", "mean_distance_se", "normalized_time"),
    "diameter": ("diameter", "diameter_is_lower_bound"),
    "radius": ("radius", "radius_is_upper_bound"),
    "eccentricity": ("eccentricity",),
    "distance_histogram": ("distance_histogram", "histogram_bin_width"),
    "closeness": ("closeness",),
    "harmonic": ("harmonic",),
    "efficiency": ("efficiency", "efficiency_se"),
    "betweenness": ("betweenness", "betweenness_stderr", "betweenness_normalized"),
}


def wants_paths(wanted) -> bool:
    """Whether a run whose ``metrics.statistics`` is ``wanted`` needs the path statistics (any
    entry of :data:`STATISTIC_KEYS` but ``betweenness``)."""
    return any(name in STATISTIC_KEYS for name in wanted if name != "betweenness")


def select_statistics(results: dict, wanted) -> dict:
    """The results a scenario's ``metrics.statistics`` asks for.

    The engines compute every path statistic in one fused pass (leaving one out saves no time),
    so the list decides what is stored and printed; ``components`` and ``mst_weight`` are extra
    passes and run only when listed.
    """
    wanted = set(wanted)
    drop = {k for name, keys in STATISTIC_KEYS.items() if name not in wanted for k in keys}
    return {k: v for k, v in results.items() if k not in drop}
