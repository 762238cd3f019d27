"""Writing an HDF5 image to disk in one streamed pass: data, checksums and digest together.

:meth:`~simengine.io.h5image.Image.write_to` calls :func:`write_image`: the image's metadata (a
few kB built by h5py) and its bulk chunks are put in file order into a
:class:`~simengine.io.tree_hash.TreeWriter`, which writes each 16 MiB leaf of the file with one
``pwritev`` and hashes it, in the hashing threads. The bulk data comes from a *source* window by
window (:data:`WINDOW_BYTES` of whole chunks): a NumPy array gives views of itself (no copy); a
device array (:class:`DeviceSource`) copies each window into one of a few pinned host buffers,
reused once the leaves that point into it are written. Each chunk's fletcher32 (HDF5's checksum
of the chunk, stored after it) is computed in threads of its own (:func:`sum_pool`) before its
window is put. Host memory beyond the source itself: the pinned windows (device sources) and
nothing else; the file's digest needs no second read.
"""
from __future__ import annotations

import threading
from concurrent.futures import ThreadPoolExecutor

import numpy as np
from numba import njit

from .. import profile
from . import tree_hash

#: bytes of whole chunks taken from a source at once
WINDOW_BYTES = 64 << 20
_M = 65535


@njit(cache=True, nogil=True)
def _sums16(w16):
    """(Σ w, Σ i·w) mod 65535 of the big-endian 16-bit words ``w16`` (a native uint16 view)."""
    n = w16.size
    s1 = np.uint64(0)
    t = np.uint64(0)
    m = np.uint64(_M)
    base = 0
    while base < n:
        stop = min(base + 65536, n)
        a = np.uint64(0)
        b = np.uint64(0)
        for i in range(base, stop):
            v = np.uint64(w16[i])
            w = ((v & np.uint64(0xff)) << np.uint64(8)) | (v >> np.uint64(8))
            a += w
            b += np.uint64(i - base) * w
        s1 = (s1 + a) % m
        t = (t + (np.uint64(base) % m) * (a % m) + b) % m
        base = stop
    return s1, t


def fletcher32(data, pad=0) -> int:
    """HDF5's fletcher32 of the bytes ``data`` followed by ``pad`` zero bytes — the same value as
    :func:`simengine.io.h5image.fletcher32` (HDF5's loop), from its closed form: with words
    w_0..w_{N-1}, sum1 = Σ w and sum2 = Σ (N−k)·w_k, each reduced to 1..65535 (0 only when
    every word is 0: HDF5 folds the sums every 360 words, which keeps them in that range)."""
    data = np.asarray(data).reshape(-1).view(np.uint8)
    n = data.size
    even = n - n % 2
    s1, t = _sums16(data[:even].view(np.uint16))
    s1, t = int(s1), int(t)
    if n % 2:
        w = int(data[-1]) << 8
        s1, t = (s1 + w) % _M, (t + (even // 2) * w) % _M
    if s1 == 0 and not data.any():
        return 0
    words = (n + pad + 1) // 2
    s2 = (words * s1 - t) % _M
    return (((s2 - 1) % _M + 1) << 16) | ((s1 - 1) % _M + 1)


class HostSource:
    """Bulk data from a C-contiguous NumPy array (views, no copy)."""

    def __init__(self, array):
        self.array = np.ascontiguousarray(array)
        self.flat = self.array.reshape(-1).view(np.uint8)
        self.nbytes = self.flat.size

    def window(self, a, b, fence_of_previous):
        return self.flat[a:b]

    def done(self, fence):
        pass


class DeviceSource:
    """Bulk data from a flat device array (numba): each window is copied into one of ``slots``
    pinned host buffers; a buffer is reused only after the leaves pointing into it are written
    (the writer's fence)."""

    def __init__(self, device_flat, shape, dtype, slots=3):
        from numba import cuda

        # a writer thread copies on this device (the simulator's device has no id: 0)
        self.device = getattr(cuda.get_current_device(), "id", 0)
        self.dev = device_flat
        self.shape = tuple(shape)
        self.dtype = np.dtype(dtype)
        self.nbytes = int(np.prod(self.shape, dtype=np.int64)) * self.dtype.itemsize
        self.slots = slots
        self._bufs = []
        self._fences = []
        self._next = 0

    @property
    def ndim(self):
        return len(self.shape)

    def to_host(self) -> np.ndarray:
        """The whole array on the host (for compressed parts, which HDF5's filters write)."""
        from numba import cuda

        with cuda.gpus[self.device]:
            return self.dev.copy_to_host().reshape(self.shape)

    def window(self, a, b, fence):
        from numba import cuda

        with cuda.gpus[self.device]:
            return self._window(a, b)

    def _window(self, a, b):
        from numba import cuda

        item = self.dtype.itemsize
        if a % item or b % item:
            raise ValueError("a window of a device array must hold whole values")
        size = b - a
        i = self._next % self.slots
        self._next += 1
        if len(self._bufs) <= i or self._bufs[i].nbytes < size:
            if len(self._bufs) > i:
                self._fences[i]()
                self._bufs[i] = None
            buf = cuda.pinned_array(max(size, min(WINDOW_BYTES, self.nbytes)) // item,
                                    dtype=self.dtype)
            if len(self._bufs) <= i:
                self._bufs.append(buf)
                self._fences.append(lambda: None)
            else:
                self._bufs[i] = buf
        else:
            self._fences[i]()       # the leaves that still point into this buffer
        host = self._bufs[i][:size // item]
        with profile.phase("snapshot: device to pinned host window", size):
            self.dev[a // item:b // item].copy_to_host(host)
        self._last = i
        return host.view(np.uint8)

    def done(self, fence):
        self._fences[self._last] = fence


def write_image(image, fd) -> str:
    """Write ``image`` (an :class:`~simengine.io.h5image.Image`) to ``fd`` from offset 0 and
    return the tree digest of the file (:mod:`simengine.io.tree_hash`)."""
    items = [(pos, None, buf) for pos, buf in image._segments() if len(buf)]
    marked = iter(image._sink.marked)
    for d, (source, cbytes, stored) in enumerate(image._direct):
        items += [(next(marked)[0], d, k) for k in stored]
    items.sort(key=lambda it: it[0])
    writer = tree_hash.TreeWriter(fd)
    try:
        i = 0
        while i < len(items):
            pos, d, what = items[i]
            if d is None:
                writer.put(pos, what)
                i += 1
                continue
            j = i + 1  # a run of chunks of one source, consecutive in it
            while j < len(items) and items[j][1] == d and items[j][2] == items[j - 1][2] + 1:
                j += 1
            source, cbytes, _ = image._direct[d]
            _put_direct(writer, source, cbytes, [(p, k) for p, _, k in items[i:j]])
            i = j
        end = image._sink.end
        if writer.at > end:
            raise RuntimeError("HDF5 image pieces past its end")
        if writer.at < end:
            writer.put(end, b"")  # a file ending in a gap: its zeros
        return writer.finish()
    except BaseException:
        try:
            writer.wait()  # nothing may write to fd after this returns
        except BaseException:  # noqa: BLE001 - the first error is the one raised
            pass
        raise


_sum_pool = None
_sum_lock = threading.Lock()


def sum_pool() -> ThreadPoolExecutor:
    """The threads of the chunks' fletcher32 — not the leaves' (tree_hash.pool): a window's sums
    queued behind the leaves being written would wait for them, and the writes would then wait
    for the sums, leaving the disk idle between windows."""
    global _sum_pool
    with _sum_lock:
        if _sum_pool is None:
            _sum_pool = ThreadPoolExecutor(max_workers=tree_hash.threads(),
                                           thread_name_prefix="simengine-sum")
        return _sum_pool


def _put_direct(writer, source, cbytes, slots):
    """The chunks ``slots`` = [(file position, chunk index)] (consecutive chunks) of
    ``source``, each followed by its fletcher32, window by window."""
    pool = sum_pool()
    total = source.nbytes
    per = max(1, WINDOW_BYTES // max(cbytes, 1))
    fence = None
    for i in range(0, len(slots), per):
        run = slots[i:i + per]
        a = run[0][1] * cbytes
        b = min(run[-1][1] * cbytes + cbytes, total)
        win = source.window(a, b, fence)
        pieces = [win[(k * cbytes - a):min((k + 1) * cbytes, total) - a] for _, k in run]
        with profile.phase("part: fletcher32 of the chunks", b - a):
            sums = list(pool.map(lambda p: fletcher32(p, cbytes - len(p)), pieces))
        for (pos, _), piece, s in zip(run, pieces, sums):
            writer.put(pos, piece)
            writer.put(pos + cbytes, int(s).to_bytes(4, "little"))
        fence = writer.fence()
        source.done(fence)


def device_snapshot(device_flat, shape, dtype):
    """A :class:`DeviceSource` over a copy, on the device, of the flat device array
    ``device_flat`` (the steps may go on while it is written), or None when the device has no
    room for the copy (the caller then copies the field to the host)."""
    from numba import cuda
    from numba.cuda.cudadrv.driver import CudaAPIError

    try:
        with profile.phase("snapshot: device to device copy", device_flat.nbytes):
            copy = cuda.device_array(device_flat.shape, dtype)
            copy.copy_to_device(device_flat)
    except (CudaAPIError, MemoryError):
        return None
    return DeviceSource(copy, shape, dtype)
