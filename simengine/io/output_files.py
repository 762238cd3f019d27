"""The output as a whole, as the controller sees it before a run: lock, checks, removal, resume.

:func:`lock_output` checks the path (one-line errors, exit 2, before anything is written), takes
the run's exclusive lock and removes temporary files of a write that was killed;
:func:`check_resumable` verifies a committed output before a ``--resume`` reads it.
"""
from __future__ import annotations

from .durable import ignore_file_size_signal, remove, tmp_name
from .layout import check_output_path, probe_writable, remove_output  # noqa: F401 (re-export)
from .lock import OutputLock


def lock_output(output) -> OutputLock:
    """Check that ``output`` can be written and lock it for this run (UserError otherwise)."""
    check_output_path(output)
    probe_writable(output)
    lock = OutputLock(output).acquire()
    ignore_file_size_signal()
    remove(tmp_name(output))  # an index write killed before its rename; the real file is intact
    return lock


def check_resumable(output, kind):
    """Verify the committed checkpoint of ``output`` (digest, contradictions, checksummed parts);
    UserError (exit 2) for anything corrupted, tampered or missing."""
    if kind == "field":
        from .field_store import FieldIndex

        FieldIndex.load(output, check_checkpoint=True)
    else:
        from .network_store import NetworkIndex

        NetworkIndex.load(output, check_checkpoint=True)
