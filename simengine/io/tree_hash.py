"""Part digests computed at memory speed: a tree of SHA-256 leaf hashes.

A part file is cut into leaves of :data:`LEAF_BYTES` bytes at fixed offsets (the last one
shorter); each leaf is hashed with SHA-256 on its own, so leaves are hashed in as many threads
as there are cores (hashlib releases the GIL on large buffers), both while a part is written
(:class:`TreeWriter`, in the same pass as the write) and when it is verified
(:func:`file_digest`, ``info --verify`` and ``--resume``). The root is

    SHA-256( b"simengine-sha256-tree\\0" || leaf_bytes (u64 LE) || file size (u64 LE)
             || leaf digest 0 || leaf digest 1 || ... )

and is recorded as ``sha256tree<k>:<64 hex>`` (k = log2 of the leaf size). A digest of 64 hex
digits alone is the SHA-256 of the whole file (format 3 outputs, :func:`file_digest` reads both).
"""
from __future__ import annotations

import hashlib
import os
import threading
from concurrent.futures import ThreadPoolExecutor

from .. import profile

LEAF_LOG2 = 24
LEAF_BYTES = 1 << LEAF_LOG2          # 16 MiB
PREFIX = b"simengine-sha256-tree\0"
_ZEROS = bytes(1 << 20)

_pool = None
_pool_lock = threading.Lock()


def threads() -> int:
    """Hashing threads: the cores this process may use (at most 32)."""
    try:
        n = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        n = os.cpu_count() or 1
    return max(1, min(32, n))


def pool() -> ThreadPoolExecutor:
    """The process's leaf-hashing threads (made on first use)."""
    global _pool
    with _pool_lock:
        if _pool is None:
            _pool = ThreadPoolExecutor(max_workers=threads(), thread_name_prefix="simengine-hash")
        return _pool


def root(leaf_digests, size, leaf_log2=LEAF_LOG2) -> str:
    h = hashlib.sha256(PREFIX)
    h.update((1 << leaf_log2).to_bytes(8, "little"))
    h.update(int(size).to_bytes(8, "little"))
    for d in leaf_digests:
        h.update(d)
    return f"sha256tree{leaf_log2}:{h.hexdigest()}"


def is_tree(digest: str) -> bool:
    return digest.startswith("sha256tree")


def _leaf_log2(digest: str) -> int:
    head = digest.split(":", 1)[0]
    k = int(head[len("sha256tree"):])
    if not 12 <= k <= 40:
        raise ValueError(f"leaf size 2^{k}")
    return k


def reference(data: bytes, leaf_log2=LEAF_LOG2) -> str:
    """The tree digest of ``data`` computed plainly, one leaf after the other (tests)."""
    n = 1 << leaf_log2
    leaves = [hashlib.sha256(data[i:i + n]).digest() for i in range(0, max(len(data), 1), n)]
    return root(leaves, len(data), leaf_log2)


_local = threading.local()


def _hash_range(fd, pos, n):
    """SHA-256 of ``n`` bytes of ``fd`` at ``pos``, read into this thread's reused buffer."""
    buf = getattr(_local, "buf", None)
    if buf is None:
        buf = _local.buf = memoryview(bytearray(1 << 24))
    h = hashlib.sha256()
    end = pos + n
    while pos < end:
        got = os.preadv(fd, [buf[:min(end - pos, len(buf))]], pos)
        if got <= 0:
            raise OSError(5, "the file became shorter while it was read")
        h.update(buf[:got])
        pos += got
    return h.digest()


def file_digest(fd, kind: str) -> str:
    """The digest of the open file ``fd`` in the form ``kind`` (a recorded digest: a tree digest
    or a plain 64-hex SHA-256): leaves read and hashed in parallel; raises OSError."""
    size = os.fstat(fd).st_size
    if not is_tree(kind):
        with profile.phase("verify: hash (plain SHA-256)", size):
            return _hash_range(fd, 0, size).hex()
    k = _leaf_log2(kind)
    n = 1 << k
    starts = range(0, max(size, 1), n)
    with profile.phase("verify: hash (SHA-256 tree)", size):
        leaves = list(pool().map(lambda a: _hash_range(fd, a, min(n, size - a)), starts))
    return root(leaves, size, k)


class TreeWriter:
    """Writes a file at increasing positions and hashes it in the same pass.

    :meth:`put` takes the file's bytes in order (``pos`` never below the end of what was put;
    gaps read as zeros); each complete leaf is written with one ``os.pwritev`` of the pieces
    that make it (no copy) and hashed, in the hashing threads. The buffers handed to
    :meth:`put` must stay unchanged until :meth:`wait` returns or, for a buffer released with
    :meth:`fence`, until that fence's waiter returns. :meth:`finish` writes the last leaf and
    returns the root digest; errors (OSError) are raised there or at a fence.
    """

    def __init__(self, fd, leaf_log2=None, inflight=None):
        self.fd = fd
        self.k = LEAF_LOG2 if leaf_log2 is None else leaf_log2
        self.n = 1 << self.k
        self.at = 0                      # end of what was put
        self.leaf = 0                    # index of the leaf being filled
        self.pieces = []                 # memoryviews of the current leaf, in order
        self.futures = []                # per leaf: the future of its digest
        self.inflight = threading.BoundedSemaphore(inflight or 2 * threads())

    def put(self, pos, data):
        pos = int(pos)
        if pos < self.at:
            raise ValueError(f"write at {pos} before the end {self.at}")
        if pos > self.at:
            self._zeros(pos - self.at)
        view = memoryview(data).cast("B")
        while len(view):
            room = (self.leaf + 1) * self.n - self.at
            take = view[:room]
            self.pieces.append(take)
            self.at += len(take)
            view = view[len(take):]
            if self.at == (self.leaf + 1) * self.n:
                self._submit()

    def _zeros(self, count):
        while count > 0:
            take = min(count, len(_ZEROS))
            self.put(self.at, memoryview(_ZEROS)[:take])
            count -= take

    def _submit(self):
        pieces, start = self.pieces, self.leaf * self.n
        self.pieces = []
        self.leaf += 1
        self.inflight.acquire()     # bounded: at most this many leaves referenced at once
        try:
            self.futures.append(pool().submit(self._leaf, pieces, start))
        except BaseException:
            self.inflight.release()
            raise

    def _leaf(self, pieces, start):
        try:
            h = hashlib.sha256()
            nbytes = 0
            for p in pieces:
                h.update(p)
                nbytes += len(p)
            with profile.phase("part: write (pwritev into the page cache)", nbytes):
                _pwritev_all(self.fd, pieces, start)
            return h.digest()
        finally:
            self.inflight.release()

    def fence(self):
        """A callable that makes the buffers put so far free to reuse: it waits until the leaves
        holding them are written and hashed, and copies the pieces of the leaf still being
        filled, if that leaf holds some of them."""
        last = (self.at - 1) // self.n if self.at else -1

        def wait():
            if self.leaf <= last and self.pieces:
                self.pieces = [memoryview(b"".join(self.pieces))]
            for f in self.futures[:last + 1]:
                f.result()
        return wait

    def wait(self):
        """Wait for every leaf submitted (all of them, even after one failed); raise the first
        error. Call it before closing the file, also when the writing failed."""
        out, err = [], None
        for f in self.futures:
            try:
                out.append(f.result())
            except BaseException as exc:  # noqa: BLE001 - the others still finish first
                err = err or exc
        if err is not None:
            raise err
        return out

    def finish(self) -> str:
        if self.pieces or self.leaf == 0:
            self._submit()
        # the size is the end of what was put: a file ending in a gap is put with its zeros
        return root(self.wait(), self.at, self.k)


def _pwritev_all(fd, pieces, pos):
    pieces = [p for p in pieces if len(p)]
    while pieces:
        batch = pieces[:512]  # IOV_MAX is 1024 on Linux
        n = os.pwritev(fd, batch, pos)
        if n <= 0:
            import errno

            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        pos += n
        while n:
            if n >= len(pieces[0]):
                n -= len(pieces[0])
                pieces.pop(0)
            else:
                pieces[0] = pieces[0][n:]
                n = 0
