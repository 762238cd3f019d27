"""The GPU Brandes engine's entry point: a batch of sources goes to the levels engine
(:mod:`.brandes`), the thread-block-per-source engine for deep graphs (:mod:`.brandes_deep`) or,
on weighted graphs, the distance-bucket engine (:mod:`.brandes_weighted`); the per-batch sums are
:mod:`.brandes_sums`'. (Kept apart from the engines so that none of them imports another back.)"""
from __future__ import annotations

import numpy as np

from . import brandes as lv, device_graph, on_device
from .brandes_deep import deep_partials
from .brandes_sums import _columns, empty_rows, rows_from_counts, store_levels
from ..statistics import ChunkPartial


def brandes_partials(graph, sources, store=None, batch=None, device=None, engine=None,
                     squares=True, paths=True, columns=None, bin_width=1.0):
    """One ChunkPartial per batch of sources (``btw``/``btw_sq``, and with ``paths`` the path
    statistics), in source order, on GPU ``device``. Weighted graphs run
    :mod:`.brandes_weighted` (histogram bins of ``bin_width``). ``engine``: ``levels``,
    ``blocks`` or None (:func:`engine_for`). ``squares=False`` (exact runs: no standard error) skips the Σ δ² sums
    (``btw_sq`` = 0); ``paths=False`` (betweenness alone) skips the path statistics (the
    partial's are zeros; ``store`` still gets the distances); ``columns`` (a
    :class:`.columns.DeviceColumns`) takes the column sums on the device."""
    sources = np.ascontiguousarray(sources, dtype=np.int64)
    if graph.weighted:                         # weights > 0 (brandes_weighted.can_run)
        from .brandes_weighted import weighted_partials

        return on_device(weighted_partials(graph, sources, store, batch, squares, paths,
                                           columns, bin_width), device)
    return on_device(batch_partials(graph, sources, store, batch, engine, squares, paths,
                                    columns), device)


def batch_partials(graph, sources, store, batch, engine, squares, paths, columns):
    """The generator behind :func:`brandes_partials` (runs with the device current)."""
    n = graph.n
    if len(sources) == 0:
        return
    dg = device_graph(graph)
    if (engine or lv.engine_for(graph, dg)) == "blocks":
        yield from deep_partials(graph, dg, sources, store, batch, squares, paths, columns,
                                 betweenness=True)
        return
    dtype = lv.level_type(graph, dg)
    B = int(batch) if batch else lv.default_batch(n, len(sources), lv.bytes_per_entry(dtype))
    B = max(1, min(B, len(sources)))
    buf = lv.BrandesBuffers(n, B, dtype)
    for lo in range(0, len(sources), B):
        s = sources[lo:lo + B]
        while True:
            try:
                deepest = lv.brandes_batch(dg, s, buf, squares, paths=paths)
                break
            except lv.LevelOverflow:          # levels beyond the type: the next wider one
                k = lv.LEVEL_TYPES.index(buf.dtype)
                del buf
                buf = lv.BrandesBuffers(n, B, lv.LEVEL_TYPES[k + 1])
        if store is not None:
            store_levels(buf, len(s), n, store, lo)
        if paths:
            counts = buf.lvl[:deepest + 1].copy_to_host()[:, :len(s)]
            rs, rr, rm, rh, hist = rows_from_counts(counts)
            part = ChunkPartial(s.copy(), rs, rr, rm, rh, *_columns(buf, columns), hist)
        else:
            part = empty_rows(s, n)
        part.btw = buf.btw.copy_to_host()
        part.btw_sq = buf.btw_sq.copy_to_host() if squares else np.zeros(n)
        yield part
