"""Durable, all-or-nothing file creation with plain system calls.

Every byte of an output reaches the disk through :func:`write_atomic`: the bytes go to
``NAME.tmp`` with ``os.write`` (looping over short writes), are fsynced, and the temporary name is
renamed to ``NAME`` (atomic on POSIX), then the directory is fsynced. A kill at any instant leaves
either no ``NAME`` (or the previous one) or the complete new one, never a torn file.

HDF5 never writes to disk itself (files are built in memory, :mod:`simengine.io.h5image`), so a
full disk, a quota, an I/O error or ``RLIMIT_FSIZE`` surface here as one ``OSError`` with an errno,
which becomes an :class:`~simengine.errors.OutputError` naming the path and the cause. The
temporary file is removed on failure.
"""
from __future__ import annotations

import errno
import os
import shutil
import signal
import stat
import threading
from pathlib import Path

from .. import profile
from ..errors import OutputError, UserError

TMP_SUFFIX = ".tmp"


def tmp_name(path) -> Path:
    path = Path(path)
    return path.with_name(path.name + TMP_SUFFIX)


def describe_oserror(exc: OSError) -> str:
    """'No space left on device (ENOSPC)' for an OSError."""
    code = errno.errorcode.get(exc.errno or 0, "")
    text = exc.strerror or str(exc)
    return f"{text} ({code})" if code else text


def write_failed(path, exc: OSError, what="cannot write") -> OutputError:
    return OutputError(f"{path}: {what}: {describe_oserror(exc)}")


def ignore_file_size_signal():
    """Make writes past ``ulimit -f`` fail with EFBIG instead of killing the process (SIGXFSZ)."""
    if hasattr(signal, "SIGXFSZ") and threading.current_thread() is threading.main_thread():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)


def fsync_dir(directory):
    fd = os.open(directory, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))
    try:
        os.fsync(fd)
    except OSError as exc:  # some file systems cannot fsync a directory; that is not a failure
        if exc.errno not in (errno.EINVAL, errno.ENOTSUP, errno.EBADF):
            raise
    finally:
        os.close(fd)


def _write_all(fd, data):
    view = memoryview(data).cast("B")
    while len(view):
        n = os.write(fd, view[: 1 << 30])
        if n <= 0:  # a write that makes no progress: treat as a full device
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        view = view[n:]


def _clear_tmp(path, tmp):
    """A leftover ``NAME.tmp`` of a killed write is removed; one that is not a regular file (a
    FIFO would block the open) is refused, naming the user's path."""
    try:
        st = os.lstat(tmp)
    except OSError:
        return
    if stat.S_ISREG(st.st_mode) or stat.S_ISLNK(st.st_mode):
        remove(tmp)
        return
    raise UserError(f"{path}: cannot write it: its temporary name {tmp.name} is taken by "
                    f"{special_kind(st.st_mode)}; remove it")


def write_atomic(path, data, sync=True, fault=None) -> None:
    """Create or replace ``path`` with the bytes ``data`` (or an object with ``write_to(fd)``),
    durably and atomically.

    ``sync=False`` skips the fsyncs (still atomic, not durable across a power failure): for files
    that are derived from others and rewritten at the next commit. Raises :class:`OutputError`
    (the temporary file removed, ``path`` untouched) on any failure. ``fault``: the kind of file
    for the fault-injection points ``<fault>.torn|written|renamed`` (:mod:`simengine.io.faults`).
    """
    from . import faults

    path = Path(path)
    tmp = tmp_name(path)
    check_replaceable(path)  # never a device, FIFO, socket or directory (UserError)
    _clear_tmp(path, tmp)
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_CLOEXEC | os.O_NOFOLLOW
                     | os.O_NONBLOCK, 0o644)
    except OSError as exc:
        raise write_failed(path, exc) from None  # the user's path, never NAME.tmp
    try:
        try:
            if hasattr(data, "write_to"):
                data.write_to(fd)   # an HDF5 image (simengine.io.h5image.Image)
            else:
                _write_all(fd, data)
            if sync:
                with profile.phase("fsync of a file"):
                    os.fsync(fd)
        finally:
            os.close(fd)  # close can report a deferred error (NFS, quotas): it is checked too
        if fault:
            faults.reached(f"{fault}.torn", tmp)
            faults.reached(f"{fault}.written")
        check_replaceable(path)  # again: something may have appeared at the path meanwhile
        os.replace(tmp, path)
        if fault:
            faults.reached(f"{fault}.renamed")
    except OSError as exc:
        remove(tmp)
        raise write_failed(path, exc) from None
    except BaseException:
        remove(tmp)
        raise
    if not sync:
        return
    try:
        fsync_dir(path.parent)
    except OSError as exc:
        err = write_failed(path.parent, exc, "cannot sync the directory")
        err.renamed = True  # ``path`` already holds the new bytes
        raise err from None


def write_index(path, data):
    """:func:`write_atomic` for a commit: raises a failure before the rename (nothing changed)
    and *returns* one after it (the new file is in place, only its directory entry may not be
    durable yet), so that the caller records the commit before reporting the error."""
    try:
        write_atomic(path, data, fault="index")
    except OutputError as exc:
        if getattr(exc, "renamed", False):
            return exc
        raise
    return None


def make_dirs(directory) -> None:
    directory = Path(directory)
    try:
        directory.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise write_failed(directory, exc, "cannot create the directory") from None


def remove(path) -> None:
    """Remove a file if it exists; errors are ignored (used for clean-up only)."""
    try:
        os.unlink(path)
    except OSError:
        pass


def remove_tree(path) -> None:
    path = Path(path)
    if path.is_dir() and not path.is_symlink():
        shutil.rmtree(path, ignore_errors=True)
    elif path.exists() or path.is_symlink():
        remove(path)


def special_kind(mode) -> str:
    """'a FIFO (named pipe)', 'a character device', … for a ``st_mode`` that is not a file."""
    for test, name in ((stat.S_ISFIFO, "a FIFO (named pipe)"), (stat.S_ISCHR, "a character device"),
                       (stat.S_ISBLK, "a block device"), (stat.S_ISSOCK, "a socket"),
                       (stat.S_ISDIR, "a directory")):
        if test(mode):
            return name
    return "not a regular file"


def same_file(a, b) -> bool:
    """True when paths ``a`` and ``b`` are the same existing file (device and inode)."""
    try:
        sa, sb = os.stat(a), os.stat(b)
    except (OSError, ValueError):
        return False
    return (sa.st_dev, sa.st_ino) == (sb.st_dev, sb.st_ino)


def check_replaceable(path, what="output"):
    """UserError when ``path`` exists and is not a regular file (a device, a FIFO, a socket, a
    directory): checked before a temporary file is created and again right before the rename
    (:mod:`simengine.io.output_write` adds the command-level checks)."""
    try:
        st = os.stat(path)
    except OSError:
        return
    if not stat.S_ISREG(st.st_mode):
        raise UserError(f"{path}: is {special_kind(st.st_mode)}; simengine replaces only regular "
                        f"files (give a file path for the {what})")
