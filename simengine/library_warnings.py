"""Library warnings never reach the command line's user as tracebacks of someone else's code.

numba's performance notes (``NumbaPerformanceWarning: Grid size 3 will likely result in GPU
under-utilization``) and numpy's ``RuntimeWarning`` (overflow, invalid value: a blowing-up field,
whose one-line error the run reports itself) are dropped; any other warning is printed as one line
``simengine: warning: <message>`` without the source line.  Only the CLI installs this; the Python
API leaves the caller's warning settings alone.
"""
from __future__ import annotations

import sys
import warnings

_DROPPED_MODULES = ("numba", "numba_cuda")


def _dropped(category) -> bool:
    if issubclass(category, RuntimeWarning):
        return True
    return any(c.__module__.split(".")[0] in _DROPPED_MODULES for c in category.__mro__)


def _show(message, category, filename, lineno, file=None, line=None):
    if _dropped(category):
        return
    text = str(message).strip().splitlines()
    print(f"simengine: warning: {text[0] if text else category.__name__}",
          file=file or sys.stderr, flush=True)


def install() -> None:
    """Route every warning of this process through the rules above."""
    warnings.showwarning = _show
