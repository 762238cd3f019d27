"""Which vertices a run takes as sources."""
from __future__ import annotations

import numpy as np

from ..errors import UserError


def choose_sources(n: int, spec="all", seed=None) -> tuple[np.ndarray, bool]:
    """Sources for a run and whether they are a sample.

    ``spec``: ``"all"`` (every vertex), ``{"sample": K, "seed": s}`` (K distinct vertices drawn
    uniformly without replacement with ``numpy.random.default_rng(s)``, returned sorted), or an
    explicit list of vertex ids (kept in the given order; duplicates are an error).
    """
    if spec is None or (isinstance(spec, str) and spec == "all"):
        return np.arange(n, dtype=np.int64), False
    if isinstance(spec, dict):
        if set(spec) - {"sample", "seed"} or "sample" not in spec:
            raise UserError(f"sources: expected {{sample: K, seed: S}}, got {spec!r}")
        K = spec["sample"]
        if not isinstance(K, (int, np.integer)) or isinstance(K, bool) or K < 1:
            raise UserError(f"sources.sample must be a positive integer, got {K!r}")
        K = int(K)
        if K >= n:
            return np.arange(n, dtype=np.int64), False
        rng = np.random.default_rng(spec.get("seed", seed))
        return np.sort(rng.choice(n, size=K, replace=False)).astype(np.int64), True
    if isinstance(spec, str):
        raise UserError(f"sources: expected 'all', {{sample: K, seed: S}} or a list, got {spec!r}")
    arr = np.asarray(spec)
    if arr.ndim != 1 or (len(arr) and arr.dtype.kind not in "iu"):
        raise UserError("sources: an explicit list must be a flat list of vertex ids")
    arr = arr.astype(np.int64)
    if len(arr) and (arr.min() < 0 or arr.max() >= n):
        raise UserError(f"sources: vertex id out of range 0..{n - 1}")
    if len(np.unique(arr)) != len(arr):
        raise UserError("sources: duplicate vertex ids")
    return arr, False


def check_sources(n: int, sources) -> np.ndarray:
    """``sources`` as a contiguous int64 array; ValueError if an id is outside 0..n-1."""
    s = np.ascontiguousarray(np.asarray(sources).ravel(), dtype=np.int64)
    if len(s) and (s.min() < 0 or s.max() >= n):
        raise ValueError(f"source id out of range 0..{n - 1}")
    return s
