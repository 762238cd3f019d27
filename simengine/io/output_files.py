"""The output as a whole, as the controller sees it before a run: lock, checks, removal, resume.

:func:`lock_output` checks the path (one-line errors, exit 2, before anything is written), takes
the run's exclusive lock and removes temporary files of a write that was killed;
:func:`check_resumable` verifies a committed output before a ``--resume`` reads it.
"""
from __future__ import annotations

from ..errors import UserError
from .durable import ignore_file_size_signal, remove, tmp_name
from .layout import check_output_path, probe_writable, remove_output  # noqa: F401 (re-export)
from .lock import OutputLock


def lock_output(output, inputs=()) -> OutputLock:
    """Check that ``output`` can be written (not a special file, not one of ``inputs``) and lock
    it for this run (UserError otherwise)."""
    check_output_path(output, inputs)
    probe_writable(output)
    lock = OutputLock(output).acquire()
    ignore_file_size_signal()
    remove(tmp_name(output))  # an index write killed before its rename; the real file is intact
    return lock


def check_resumable(output, kind):
    """Verify the committed checkpoint of ``output`` (digest, contradictions, checksummed parts)
    and the SHA-256 of every part the resumed file keeps (snapshots up to the checkpoint, the
    checkpoint, ``sources.h5``, every distance block); UserError (exit 2) for anything corrupted,
    tampered, foreign or missing. Parts after the checkpoint are dropped and rewritten."""
    if kind == "field":
        from .field_store import FieldIndex

        # the parts' digests first (read in parallel): a checkpoint part that matches its
        # digest holds the bytes written and need not be read through HDF5 again; one that does
        # not is read in full, for the message the read gives
        index = FieldIndex.load(output, check_checkpoint=False)
        index.truncate(index.ckpt_step)
        good = set()
        problems = index.check_parts(good=good)
        if index.checkpoint_names() - good:
            FieldIndex.load(output, check_checkpoint=True)
    else:
        from .network_store import NetworkIndex

        index, _ = NetworkIndex.load(output, check_checkpoint=True)
        problems = index.check_parts()
    if problems:
        more = f" ({len(problems) - 1} more; 'simengine info --verify' lists them)" \
            if len(problems) > 1 else ""
        raise UserError(f"{problems[0]}; cannot resume{more}")
