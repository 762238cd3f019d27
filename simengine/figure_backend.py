"""Matplotlib for files, not screens: :func:`pyplot` switches to the Agg backend unless a file
backend is already chosen (every figure module imports matplotlib through it)."""
from __future__ import annotations


def pyplot():
    """``matplotlib.pyplot``, on a non-interactive backend."""
    import matplotlib

    if matplotlib.get_backend().lower() not in ("agg", "pdf", "svg", "ps", "cairo"):
        matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    return plt
