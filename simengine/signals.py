"""SIGINT and SIGTERM for a whole command: stop at once in start-up, checkpoint in the run loop.

The CLI wraps every command in :func:`stop_on_signals` before doing any work, so a signal during
start-up (reading files, generating a graph, compiling kernels) never takes the default action
(exit 143, no message): the handler raises :class:`Stopped`, a ``KeyboardInterrupt``, so that no
``except Exception`` swallows it; the CLI prints one line and exits with 130.

A run loop that can write a checkpoint wraps itself in :func:`checkpointable`. While inside, the
first signal only sets ``state.caught``; the loop checks it between pieces of work, writes a
checkpoint and stops (exit 130). A second Ctrl-C there gives up at once (:class:`Stopped`).

Once the command is stopping — a :class:`Stopped` was raised, or the command is reporting its
outcome (:func:`absorb`) — further signals are absorbed, so a second Ctrl-C 50 ms after the first
never interrupts the clean-up or the one-line message with a traceback. The command line
(``python -m simengine`` / the ``simengine`` script) leaves the handler absorbing until the
process ends, so a signal during interpreter shutdown is absorbed too.

Python runs signal handlers between bytecodes of the main thread, so a single long native call
(one numba-compiled kernel invocation) delays the reaction until it returns.
"""
from __future__ import annotations

import signal
import threading
from contextlib import contextmanager

SIGNALS = (signal.SIGINT, signal.SIGTERM)


class Stopped(KeyboardInterrupt):
    """A SIGINT/SIGTERM that ended the command outside a checkpointing loop."""

    def __init__(self, signum, phase="start-up"):
        super().__init__(signum, phase)
        self.signum = signum
        self.phase = phase

    @property
    def signal_name(self) -> str:
        try:
            return signal.Signals(self.signum).name
        except ValueError:
            return f"signal {self.signum}"

    def __str__(self):
        if self.phase == "start-up":
            return (f"interrupted by {self.signal_name} during start-up, before the run began; "
                    f"no output was written")
        return f"interrupted by {self.signal_name}"


class SignalState:
    """What the handler knows: whether a loop defers signals, and the signal it deferred."""

    def __init__(self):
        self.caught = None        # signal number caught inside checkpointable(), else None
        self.deferring = False    # inside checkpointable()
        self.phase = "start-up"   # "start-up" until a checkpointable loop began, then "run"
        self.absorbing = False    # stopping or reporting: later signals are ignored


state = SignalState()


def _handler(signum, frame):
    if state.absorbing:
        return
    if state.deferring:
        if state.caught is None:
            state.caught = signum
            return
        if signum == signal.SIGINT:  # a second Ctrl-C: give up at once
            _stop(signum, frame)
        return
    _stop(signum, frame)


#: code whose frames are finalisers or weakref callbacks: an exception raised there is printed
#: as "Exception ignored in ..." and lost (a WeakValueDictionary's remove, weakref.finalize)
_CALLBACK_FILES = ("weakref.py", "_weakrefset.py")


def in_callback(frame) -> bool:
    """True when ``frame`` (or a caller) is a finaliser (``__del__``) or a weakref callback."""
    while frame is not None:
        code = frame.f_code
        if code.co_name == "__del__" or code.co_filename.endswith(_CALLBACK_FILES):
            return True
        frame = frame.f_back
    return False


def _stop(signum, frame):
    """Raise :class:`Stopped`, unless the interpreter is inside a finaliser or weakref callback:
    there the exception would be swallowed with an 'Exception ignored' message, so the signal is
    delivered again 20 ms later (``_thread.interrupt_main``), outside the callback."""
    if in_callback(frame):
        import _thread

        t = threading.Timer(0.02, _thread.interrupt_main, args=(signum,))
        t.daemon = True
        t.start()
        return
    state.absorbing = True
    raise Stopped(signum, state.phase)


def absorb():
    """From now on (until the next :func:`stop_on_signals`) SIGINT/SIGTERM are ignored: the
    command is reporting its outcome or shutting down."""
    state.absorbing = True


def _install():
    """Install the handler; returns the previous handlers ({} outside the main thread)."""
    if threading.current_thread() is not threading.main_thread():
        return {}
    return {sig: signal.signal(sig, _handler) for sig in SIGNALS}


def _restore(old):
    for sig, handler in old.items():
        signal.signal(sig, handler if handler is not None else signal.SIG_DFL)


@contextmanager
def stop_on_signals(keep_absorbing=False):
    """For a whole command: SIGINT/SIGTERM raise :class:`Stopped` unless a loop defers them.
    ``keep_absorbing``: on leaving, keep a handler that ignores them (the process is ending)."""
    state.caught, state.deferring, state.phase = None, False, "start-up"
    state.absorbing = False
    old = _install()
    try:
        yield state
    finally:
        state.deferring = False
        if keep_absorbing and old:
            state.absorbing = True
            # the process is ending: ignore the signals at the OS level, since interpreter
            # shutdown resets a Python handler to the default action (a second Ctrl-C there
            # killed the process, exit -2, after its one line had been printed)
            for sig in old:
                signal.signal(sig, signal.SIG_IGN)
        else:
            _restore(old)


@contextmanager
def checkpointable():
    """For a run loop: the first SIGINT/SIGTERM sets ``state.caught`` instead of stopping.

    Installs the handler itself when no :func:`stop_on_signals` is active (library use)."""
    installed = threading.current_thread() is threading.main_thread() and \
        all(signal.getsignal(sig) is _handler for sig in SIGNALS)
    old = {} if installed else _install()
    if not installed:
        state.absorbing = False
    state.caught, state.deferring, state.phase = None, True, "run"
    try:
        yield state
    finally:
        state.deferring = False
        _restore(old)
