"""Which vertices a run takes as sources.

:func:`choose_sources` turns ``all``, ``{sample: K, seed}`` or a list of vertex indices into the
source array of a run.  A scenario's ``metrics.sources`` list names vertices by the input's ids: an
edge list's ids or labels as written, the 1-based numbers of DIMACS, Matrix Market and METIS files,
a networkx graph's node labels, and 0..n−1 for generated graphs; an integer also finds the label
with the same digits (:func:`listed_source_indices`).
"""
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


def describe_ids(graph) -> str:
    """A short phrase for the error messages: how this graph names its vertices."""
    if graph.ids is None:
        return f"its vertices are 0..{graph.n - 1}"
    ids = graph.ids
    if ids.dtype.kind in "iu":
        if len(ids) and np.array_equal(ids, np.arange(ids[0], ids[0] + len(ids))):
            return f"its vertices are {ids[0]}..{ids[-1]}"
        return f"its {len(ids)} vertex ids run from {ids.min()} to {ids.max()}"
    first = ", ".join(repr(str(v))[:24] for v in ids[:3].tolist())
    return f"its {len(ids)} vertices are labels such as {first}"


def listed_source_indices(graph, ids, where: str) -> list:
    """Vertex indices (0..n−1) of the listed source ids; ``where`` starts the error message."""
    try:
        idx = graph.index_of(ids).tolist()
    except KeyError as exc:
        bad = exc.args[0] if exc.args else "?"
        shown = repr(bad) if len(repr(bad)) <= 40 else repr(bad)[:40] + "…"
        raise UserError(f"{where}: vertex {shown} is not in the graph ({describe_ids(graph)})") \
            from None
    first = {}
    for i, v in zip(idx, ids):
        if i in first:
            raise UserError(f"{where}: vertices {first[i]!r} and {v!r} are the same vertex "
                            f"(listed twice)")
        first[i] = v
    return idx


def sample_note(spec, n: int) -> str | None:
    """The line logged when ``{sample: K}`` asks for at least the graph's ``n`` vertices (every
    vertex is then a source, the run is not a sample), else None."""
    k = getattr(spec, "sample", None)
    if k is None or int(k) < n:
        return None
    return (f"metrics.sources: a sample of {int(k)} from a graph of {n} vertices: all {n} "
            f"sources (not a sample)")
