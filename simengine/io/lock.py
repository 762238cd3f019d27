"""One run per output: an exclusive OS lock on ``<output>.lock``, taken before anything is written.

The lock is ``flock(LOCK_EX | LOCK_NB)`` on a small file beside the output that names its holder
(host, pid, start time). The kernel drops the lock when the holding process ends in any way,
SIGKILL included, so a lock file left behind by a killed run does not block a later ``--resume``;
the holder line in it is only informative. A second run on a locked output is refused with one
line naming the file and the holder.

What it relies on (see docs/output.md): local file systems (ext4, xfs, btrfs, tmpfs) and NFS (the
Linux client maps ``flock`` to NFS byte-range locks, NFSv4 or NFSv3 with lockd) honour the lock
between hosts; Lustre needs the ``flock`` mount option (``localflock`` only protects one node);
GPFS/Spectrum Scale and BeeGFS support it. HDF5's own file locking is not used: the writer never
keeps an HDF5 file open.
"""
from __future__ import annotations

import errno
import fcntl
import os
import socket
import time
from pathlib import Path

from ..errors import UserError
from .durable import describe_oserror


def lock_path(output) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".lock")


class OutputLock:
    """``with OutputLock(output): ...`` or ``acquire()`` / ``release()``."""

    def __init__(self, output):
        self.output = Path(output)
        self.path = lock_path(output)
        self.fd = None

    def acquire(self):
        from .durable import check_replaceable

        check_replaceable(self.path, "lock file")  # a FIFO would block the open, a device be lost
        for _ in range(100):  # retried only when another process removed the file meanwhile
            try:
                # read-only: the lock holds no file open for writing during the run
                fd = os.open(self.path, os.O_RDONLY | os.O_CREAT | os.O_CLOEXEC, 0o644)
            except OSError as exc:
                raise UserError(f"{self.output}: cannot create the lock file {self.path}: "
                                f"{describe_oserror(exc)}") from None
            try:
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except OSError as exc:
                    if exc.errno != errno.EBADF:
                        raise
                    # NFS emulates flock with byte-range locks, which need a writable descriptor
                    os.close(fd)
                    fd = -1
                    fd = os.open(self.path, os.O_RDWR | os.O_CLOEXEC)
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except OSError as exc:
                if fd >= 0:
                    os.close(fd)
                if exc.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                    raise UserError(f"{self.output}: in use by another run ({self.holder()}); "
                                    f"wait for it to end or stop it first") from None
                raise UserError(f"{self.output}: cannot lock {self.path}: "
                                f"{describe_oserror(exc)}") from None
            if self._same_file(fd):
                self.fd = fd
                self._write_holder()
                return self
            os.close(fd)
        raise UserError(f"{self.output}: cannot lock {self.path}: it keeps being replaced")

    def _same_file(self, fd):
        try:
            a, b = os.fstat(fd), os.stat(self.path)
        except FileNotFoundError:
            return False
        return (a.st_dev, a.st_ino) == (b.st_dev, b.st_ino)

    def _write_holder(self):
        line = (f"host {socket.gethostname()} pid {os.getpid()} since "
                f"{time.strftime('%Y-%m-%dT%H:%M:%S%z')}\n").encode()
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_TRUNC | os.O_CLOEXEC)
            try:
                os.write(fd, line)
            finally:
                os.close(fd)  # flock belongs to the locked descriptor: closing this one keeps it
        except OSError:
            pass  # the lock holds without the note; a refused run then says 'holder unknown'

    def holder(self) -> str:
        try:
            with open(self.path, "rb") as fh:
                text = fh.read(200).decode(errors="replace").strip()
        except OSError:
            text = ""
        return text if text.startswith("host ") else "holder unknown"

    def release(self):
        if self.fd is None:
            return
        try:
            os.unlink(self.path)  # while still holding it; a waiting opener then retries
        except OSError:
            pass
        os.close(self.fd)
        self.fd = None

    def __enter__(self):
        return self.acquire()

    def __exit__(self, *exc):
        self.release()
