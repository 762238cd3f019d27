"""Error types that decide the CLI's exit code.

* :class:`UserError` -- bad input (scenario, file, option). The CLI prints its one-line message
  and exits with code 2, never a traceback.
* :class:`SimulationError` -- the run itself failed (blow-up, NaN). Exit code 1 after the last good
  checkpoint has been kept.
* :class:`OutputError` -- writing the output failed (disk full, quota, I/O error, read-only file
  system, permission). Exit code 1; nothing half-written was committed and the last checkpoint is
  intact.
"""


class UserError(Exception):
    """A mistake in the user's input. ``str(err)`` is the whole one-line message."""


class SimulationError(Exception):
    """The simulation could not go on (non-finite values, blow-up)."""


class OutputError(Exception):
    """A write to the output failed; ``str(err)`` names the path and the cause in one line."""
