"""The one vocabulary of shortest-path algorithms, shared by the scenario schema, the CPU engine and
the CUDA engine.

Pure Python (no numba, no engine imports), so ``config/schema.py`` can take its list of accepted
names from here.  Which backend runs which algorithm, and what replaces an algorithm a backend
lacks, is decided in :mod:`simengine.network.backends`.
"""
from __future__ import annotations

from ..errors import UserError
from .weights import dial_applicable

#: concrete algorithms: name → (needs an unweighted graph, one-line description)
ALGORITHMS: dict[str, tuple[bool, str]] = {
    "msbfs": (True, "multi-source BFS, many sources per sweep in bitsets"),
    "bfs": (True, "level-synchronous BFS, one source at a time"),
    "dobfs": (True, "direction-optimising BFS, every core (or the GPU) on one source at a time"),
    "dijkstra": (False, "Dijkstra with a binary heap"),
    "dial": (False, "Dijkstra with Dial's bucket queue (integer weights 0..4096)"),
    "frontier": (False, "label-correcting frontier SSSP with atomic minimum (GPU)"),
    "nearfar": (False, "near-far frontier SSSP (GPU)"),
    "fw": (False, "blocked Floyd-Warshall on the dense n x n matrix"),
    "bfs_blocks": (True, "BFS with a thread block per source, all its levels in one launch (GPU; "
                         "graphs of many levels)"),
}

#: other spellings accepted in scenarios and in the Python API
ALIASES: dict[str, str] = {
    "floyd_warshall": "fw",
    "frontier_sssp": "frontier",
    "near_far": "nearfar",
}

#: every name a scenario may give for ``metrics.algorithm``
NAMES: tuple[str, ...] = ("auto",) + tuple(ALGORITHMS) + tuple(ALIASES)


def canonical(name: str) -> str:
    """The canonical name of ``name`` (``auto`` or a key of :data:`ALGORITHMS`); UserError if it is
    not in the vocabulary."""
    a = str(name).lower()
    a = ALIASES.get(a, a)
    if a != "auto" and a not in ALGORITHMS:
        raise UserError(f"unknown shortest-path algorithm {name!r}; expected one of "
                        f"{', '.join(NAMES)}")
    return a


def check_applicable(graph, algorithm: str) -> None:
    """UserError when the concrete ``algorithm`` cannot give correct distances on ``graph``:
    the BFS engines ignore weights, Dial's algorithm needs integer weights in [0, 4096]."""
    needs_unweighted = ALGORITHMS[algorithm][0]
    if needs_unweighted and graph.weighted:
        raise UserError(f"algorithm {algorithm!r} ignores weights; use auto or a weighted "
                        f"algorithm (dijkstra, dial, frontier, nearfar, fw) for a weighted graph")
    if algorithm == "dial" and not dial_applicable(graph):
        raise UserError("algorithm 'dial' needs integer weights in [0, 4096]")
