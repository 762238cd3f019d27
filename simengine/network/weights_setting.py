"""The scenario key ``graph.weights`` applied to a built graph, and the weight checks a run needs.

Rule (``graph.weights``):

* absent — the graph's own weights: those a generator makes (``random_weighted``, or a generator
  spec with ``weights: {type: uniform_int, ...}``) or a file's weight column; unweighted otherwise.
  The log says which;
* ``none`` — unweighted (weights the graph has are dropped, and the log says so);
* ``file`` — the file's weight column is required; with a generator this is a contradiction and a
  one-line error;
* ``{type: uniform_int, low, high, seed}`` — integer weights drawn uniformly (they replace weights a
  generator made, and the log says so).

:func:`check_weight_values` rejects non-finite and negative weights with one line, so a run fails
before its output file is created.
"""
from __future__ import annotations

import numpy as np

from ..errors import UserError


def generator_makes_weights(spec: dict) -> bool:
    """True when the generator spec builds a weighted graph."""
    return spec.get("type") == "random_weighted" or spec.get("weights") is not None


def check_setting(setting, generator: dict | None, where: str = "graph.weights") -> None:
    """One-line UserError for a setting that contradicts the graph source."""
    if setting == "file" and generator is not None:
        kind = generator.get("type")
        hint = ("it makes its own weights: leave graph.weights out to keep them"
                if generator_makes_weights(generator) else
                "use {type: uniform_int, low, high, seed} to add weights")
        raise UserError(f"{where}: 'file' reads weights from a graph file, but the graph comes "
                        f"from generator {kind!r}; {hint}")


def apply_setting(graph, setting, source: str, log=None):
    """Apply ``graph.weights`` (already checked by :func:`check_setting`) to ``graph`` and log what
    happened.  ``source`` names where the graph came from (``generator 'gnm'``, ``FILE``)."""
    from .generators import random_weights

    log = log or (lambda msg: None)
    had = graph.weighted
    if setting is None:
        if had:
            w = graph.weights
            rng = f"{w.min():g}..{w.max():g}" if len(w) else "none"
            log(f"graph.weights not set: using the weights of {source} (range {rng}); set "
                f"graph.weights: none to ignore them")
        else:
            log(f"graph.weights not set: {source} has no weights, the graph is unweighted")
        return graph
    if setting == "none":
        if had:
            log(f"graph.weights: none: ignoring the weights of {source} (hop distances)")
            graph.weights = None
        return graph
    if setting == "file":
        return graph
    if had:
        log(f"graph.weights: uniform_int {setting.low}..{setting.high} replaces the weights of "
            f"{source}")
    return random_weights(graph, setting.low, setting.high, setting.seed)


def check_weight_values(graph, where: str) -> None:
    """UserError (one line, naming ``where``) for non-finite or negative weights."""
    w = graph.weights
    if w is None or len(w) == 0:
        return
    finite = np.isfinite(w)
    if not finite.all():
        bad = float(w[~finite][0])
        raise UserError(f"{where}: {int((~finite).sum())} edge weight(s) are not finite (e.g. "
                        f"{bad}); shortest paths need finite weights >= 0")
    lo = float(w.min())
    if lo < 0:
        raise UserError(f"{where}: negative edge weights are not supported by the shortest-path "
                        f"algorithms (min weight {lo:g})")
