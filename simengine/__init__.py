"""simengine: Cahn–Hilliard field and shortest-path network simulations from YAML scenarios.

Python API (docs/python.md): ``simengine.run(scenario)`` runs a scenario given as a dict, a YAML
path or YAML text and returns its output path; ``simengine.open(path)`` reads an output;
``simengine.path_statistics(graph)`` computes shortest-path statistics of a networkx graph or a
scipy sparse matrix and returns a ``PathResults`` keyed by the graph's own vertex labels.
"""
from .version import __version__  # noqa: F401
from . import numba_env as _numba_env

_numba_env.settle()   # numba's disk cache (and wait policy) before numba loads: docs/cluster.md

_API = ("run", "run_ensemble", "load", "path_statistics", "PathResults")


def open(path):  # noqa: A001 - deliberate: simengine.open(path) for analysis scripts
    """Open a simengine HDF5 output for analysis (see :class:`simengine.io.reader.Result`)."""
    from .io.reader import Result

    return Result(path)


def shortest_path(result_or_file, source, target):
    """The vertex ids of one shortest path from ``source`` to ``target`` in an output that stores
    ``/predecessors`` (see :func:`simengine.shortest_paths.shortest_path`)."""
    from .shortest_paths import shortest_path as path

    return path(result_or_file, source, target)


def __getattr__(name):  # the API imports numba lazily: `import simengine` stays light
    if name in _API:
        from . import api

        return getattr(api, name)
    raise AttributeError(f"module 'simengine' has no attribute {name!r}")


def __dir__():
    return sorted([*globals(), *_API])
