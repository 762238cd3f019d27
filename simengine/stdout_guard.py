"""Standard output that fails (a reader that closed the pipe, a full device) ends a command
quietly with the right exit code, never as a traceback or as a complaint about an input file.

``simengine info OUT.h5 | true``: the reader is gone (EPIPE); nothing more can be said to it, so
the command stops without a message and exits 0 (a verification that failed still exits 2: its
lines go to stderr). ``simengine schema > /dev/full``: the text could not be written (ENOSPC,
EIO, …): one line on stderr naming standard output, exit 1. :class:`StdoutFailed` is a
``BaseException`` so that no ``except Exception`` of a command (nor the read guard that turns
h5py errors into "damaged output") mistakes it for a problem of what the command reads; the
Python-level stream is flushed before the command's exit code is returned, and standard output
is then pointed at ``/dev/null`` so that the interpreter's own final flush stays silent.
"""
from __future__ import annotations

import errno
import os
import sys
from contextlib import contextmanager


class StdoutFailed(BaseException):
    def __init__(self, exc: OSError):
        super().__init__(exc)
        self.exc = exc

    def exit_code(self) -> int:
        _silence()
        if self.exc.errno == errno.EPIPE:
            return 0
        from .io.durable import describe_oserror

        print(f"simengine: error: standard output: cannot write: {describe_oserror(self.exc)}",
              file=sys.stderr, flush=True)
        return 1


def _silence():
    """Point fd 1 at /dev/null: nothing is lost (the reader is gone or the device is full)."""
    try:
        fd = sys.__stdout__.fileno() if sys.__stdout__ is not None else 1
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, fd)
        os.close(null)
    except (OSError, ValueError, AttributeError):
        pass


class _Guarded:
    def __init__(self, stream):
        self._stream = stream

    def write(self, text):
        try:
            return self._stream.write(text)
        except OSError as exc:
            raise StdoutFailed(exc) from None

    def flush(self):
        try:
            return self._stream.flush()
        except OSError as exc:
            raise StdoutFailed(exc) from None

    def __getattr__(self, name):
        return getattr(self._stream, name)

    def finish(self, rc):
        """Flush what the command printed; the exit code, or the failing stdout's."""
        try:
            self.flush()
        except StdoutFailed as exc:
            code = exc.exit_code()
            return rc if code == 0 else max(code, rc or 0)
        return rc


@contextmanager
def guarded_stdout():
    old = sys.stdout
    guard = _Guarded(old)
    sys.stdout = guard
    try:
        yield guard
    finally:
        if sys.stdout is guard:
            sys.stdout = old
