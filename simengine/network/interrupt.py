"""Stopping a long kernel between its rounds (issue 48: a SIGTERM during Floyd–Warshall waited for
the whole matrix).

A run that can checkpoint installs a stop check (:func:`stop_check`, the run loop's
``stop_requested``); a kernel made of many rounds — Floyd–Warshall's k-blocks on the CPU and the
GPU — calls :func:`between_rounds` after each and, when a stop is pending, raises
:class:`RoundsStopped`. Its partial matrix is dropped: the caller checkpoints the sources done
before it and ``--resume`` computes the matrix again. Without a check installed (the Python API,
benchmarks, MPI ranks) nothing is checked and the GPU rounds are not synchronised."""
from __future__ import annotations

from contextlib import contextmanager

_check = None


class RoundsStopped(Exception):
    """A stop was requested after round ``done`` of ``total`` of ``what``."""

    def __init__(self, what: str, done: int, total: int):
        super().__init__(what, done, total)
        self.what, self.done, self.total = what, int(done), int(total)

    def __str__(self):
        return (f"{self.what} stopped after round {self.done} of {self.total}; its matrix is "
                f"not checkpointed: --resume computes it again from the start")


@contextmanager
def stop_check(fn):
    """While inside, :func:`between_rounds` asks ``fn()`` whether to stop."""
    global _check
    old, _check = _check, fn
    try:
        yield
    finally:
        _check = old


def active() -> bool:
    """Whether a stop check is installed (GPU rounds synchronise only then)."""
    return _check is not None


def between_rounds(what: str, done: int, total: int) -> None:
    """Raise :class:`RoundsStopped` when a stop is pending and rounds remain."""
    if _check is not None and done < total and _check():
        raise RoundsStopped(what, done, total)
