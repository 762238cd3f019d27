"""Crash-safe updates of an HDF5 output file.

An HDF5 file that is killed while being written can be left unreadable, so the live output file is
never written in place. Each update copies it to ``NAME.h5.tmp``, changes the copy, flushes it to
disk and renames it over the original (``os.replace`` is atomic on POSIX). A kill at any instant
leaves either the previous complete file or the new complete file; a stale ``.tmp`` is removed by
the next update. The cost is one file copy per update, so updates happen only at snapshot and
checkpoint events.
"""
from __future__ import annotations

import os
import shutil
from contextlib import contextmanager
from pathlib import Path

import h5py


def _fsync_path(path, directory=False):
    flags = os.O_RDONLY | (getattr(os, "O_DIRECTORY", 0) if directory else 0)
    try:
        fd = os.open(path, flags)
    except OSError:
        return
    try:
        os.fsync(fd)
    except OSError:
        pass
    finally:
        os.close(fd)


def tmp_path(path) -> Path:
    path = Path(path)
    return path.with_name(path.name + ".tmp")


@contextmanager
def atomic_update(path, fresh=False):
    """Yield an open, writable ``h5py.File`` whose changes replace ``path`` atomically on exit.

    ``fresh=True`` starts from an empty file instead of a copy of ``path``. If the body raises, the
    original file is untouched and the temporary copy is removed.
    """
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = tmp_path(path)
    if tmp.exists():
        tmp.unlink()
    if path.exists() and not fresh:
        shutil.copyfile(path, tmp)
        mode = "r+"
    else:
        mode = "w"
    try:
        with h5py.File(tmp, mode) as f:
            yield f
            f.flush()
        _fsync_path(tmp)
        os.replace(tmp, path)
        _fsync_path(path.parent, directory=True)
    except BaseException:
        if tmp.exists():
            tmp.unlink()
        raise
