"""Fault injection at the commit points of a write (tests of "every kill is resumable").

``SIMENGINE_FAULT_AT=NAME[:K]`` ends the process with ``os._exit(137)`` (as abruptly as SIGKILL:
no clean-up, no ``finally``) the K-th time (default 1) the write sequence reaches the point
``NAME``. In-process tests call :func:`arm` instead, which raises :class:`FaultInjected` (a
``BaseException``, so no ``except Exception`` or ``except OutputError`` clean-up runs) and then
build a fresh runner for the ``--resume``.

The points, for each kind of file ``W`` (``phi``, ``checkpoint``, ``distances``, ``sources``,
``index``), are named in :data:`POINTS`:

* ``W.torn`` — the temporary file holds half its bytes (a kill in the middle of writing it);
* ``W.written`` — the temporary file is complete and fsynced, not yet renamed;
* ``W.renamed`` — renamed to its name, the directory not yet fsynced;
* ``commit.done`` — the index is committed, the superseded checkpoint parts not yet deleted;
* ``commit.retired`` — the superseded checkpoint parts are deleted (the end of a commit).
"""
from __future__ import annotations

import os

FILES = ("phi", "checkpoint", "distances", "sources", "index")
POINTS = tuple(f"{w}.{s}" for w in FILES for s in ("torn", "written", "renamed")) + \
    ("commit.done", "commit.retired")

_armed = {"name": None, "k": 1, "seen": 0, "raise": False}


class FaultInjected(BaseException):
    """Raised at an armed point by :func:`arm` (in-process tests)."""


def _from_env():
    spec = os.environ.get("SIMENGINE_FAULT_AT", "")
    if not spec or _armed["name"] is not None:
        return
    name, _, k = spec.partition(":")
    _armed.update(name=name, k=int(k) if k.isdigit() else 1, seen=0, **{"raise": False})


def arm(name, k=1):
    """Raise :class:`FaultInjected` the ``k``-th time point ``name`` is reached (this process)."""
    if name not in POINTS:
        raise ValueError(f"unknown fault point {name!r}; expected one of {POINTS}")
    _armed.update(name=name, k=int(k), seen=0, **{"raise": True})


def disarm():
    _armed.update(name=None, k=1, seen=0, **{"raise": False})


def active() -> bool:
    _from_env()
    return _armed["name"] is not None


def reached(name, tmp=None) -> None:
    """Called by the writers at point ``name``; ``tmp`` is the temporary file (for ``.torn``)."""
    if not active() or _armed["name"] != name:
        return
    _armed["seen"] += 1
    if _armed["seen"] != _armed["k"]:
        return
    if name.endswith(".torn") and tmp is not None:
        try:
            os.truncate(tmp, os.path.getsize(tmp) // 2)
        except OSError:
            pass
    if _armed["raise"]:
        _armed["name"] = None
        raise FaultInjected(name)
    os._exit(137)

