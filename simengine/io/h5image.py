"""HDF5 files built in memory, written to disk in one go, and the dataset options outputs use.

A file is assembled by h5py on an in-memory file object (:class:`Image`) and written to disk by
:func:`simengine.io.durable.write_atomic` with plain system calls, so the HDF5 library never sees
a failing disk (HDF5 can misbehave, even crash, after a failed write) and a file is either absent
or complete. Bulk data that is not compressed never passes through HDF5 at all: its chunks are
only *allocated* in the image (``write_direct_chunk`` of a marker buffer, recognised by address),
and :meth:`Image.write_to` writes them straight from the NumPy array with ``os.pwrite``, followed
by each chunk's fletcher32 checksum computed here (:func:`fletcher32`, the same function HDF5
uses). Compressed data goes through HDF5's filters into the image.

Format: ``libver=("v110", "v114")`` — version-2 object headers and superblock 3, whose metadata
carries checksums (a flipped byte in a header or attribute makes the open fail), readable by HDF5
1.10 and newer, including the HDF5 1.14 inside ParaView/VTK. Every non-scalar dataset is chunked
with the fletcher32 filter (checked by HDF5 on every read, by any program); scalars use the
compact layout, which stores the value inside the checksummed object header.
"""
from __future__ import annotations

import bisect
import os

import h5py
import numpy as np
from h5py import h5d, h5p, h5s, h5t
from numba import njit

LIBVER = ("v110", "v114")
#: target size of one chunk (bytes) of bulk data; one chunk is checksummed and compressed at once
CHUNK_BYTES = 4 << 20
#: uncompressed datasets at least this large go from NumPy to disk without a copy into the image
DIRECT_BYTES = 1 << 16
COMPRESSIONS = ("none", "gzip", "lzf")


@njit(cache=True, nogil=True)
def fletcher32(data, pad):
    """HDF5's fletcher32 checksum (``H5_checksum_fletcher32``) of the bytes ``data`` (uint8)
    followed by ``pad`` zero bytes (the unused end of an edge chunk)."""
    n = data.size
    total = n + pad
    nwords = total // 2
    full = n // 2
    sum1 = np.uint32(0)
    sum2 = np.uint32(0)
    w = 0
    while w < nwords:
        stop = min(w + 360, nwords)
        k = w
        top = min(stop, full)
        while k < top:
            sum1 += (np.uint32(data[2 * k]) << np.uint32(8)) | np.uint32(data[2 * k + 1])
            sum2 += sum1
            k += 1
        while k < stop:  # words past the data: an odd last data byte, then zeros
            v = np.uint32(0)
            if 2 * k < n:
                v = np.uint32(data[2 * k]) << np.uint32(8)
            sum1 += v
            sum2 += sum1
            k += 1
        w = stop
        sum1 = (sum1 & np.uint32(0xffff)) + (sum1 >> np.uint32(16))
        sum2 = (sum2 & np.uint32(0xffff)) + (sum2 >> np.uint32(16))
    if total % 2:
        v = np.uint32(0)
        if 2 * nwords < n:
            v = np.uint32(data[2 * nwords]) << np.uint32(8)
        sum1 += v
        sum2 += sum1
        sum1 = (sum1 & np.uint32(0xffff)) + (sum1 >> np.uint32(16))
        sum2 = (sum2 & np.uint32(0xffff)) + (sum2 >> np.uint32(16))
    sum1 = (sum1 & np.uint32(0xffff)) + (sum1 >> np.uint32(16))
    sum2 = (sum2 & np.uint32(0xffff)) + (sum2 >> np.uint32(16))
    return (sum2 << np.uint32(16)) | sum1


class _Sink:
    """The file object h5py writes the image to: keeps HDF5's own writes (metadata and filtered
    chunks) in order, and records the position of writes of the marker buffer (direct chunks)."""

    def __init__(self):
        self.pos = 0
        self.end = 0
        self.writes = []        # (position, bytes), in order
        self.marked = []        # positions of marker writes, in order
        self.marker = None      # address of the current marker buffer

    def write(self, b):
        n = len(b)
        if n and self.marker is not None and \
                np.frombuffer(b, np.uint8).ctypes.data == self.marker:
            self.marked.append((self.pos, n))
        else:
            self.writes.append((self.pos, bytes(b)))
        self.pos += n
        self.end = max(self.end, self.pos)
        return n

    def read(self, n=-1):
        n = self.end - self.pos if n < 0 else max(0, min(n, self.end - self.pos))
        out = bytearray(n)
        for p, b in self.writes:
            a0, a1 = max(p, self.pos), min(p + len(b), self.pos + n)
            if a0 < a1:
                out[a0 - self.pos:a1 - self.pos] = b[a0 - p:a1 - p]
        self.pos += n
        return bytes(out)

    def readinto(self, buf):
        data = self.read(len(buf))
        memoryview(buf).cast("B")[:len(data)] = data
        return len(data)

    def seek(self, off, whence=0):
        self.pos = off if whence == 0 else (self.pos + off if whence == 1 else self.end + off)
        return self.pos

    def tell(self):
        return self.pos

    def truncate(self, size=None):
        self.end = self.pos if size is None else size
        return self.end

    def flush(self):
        pass


class Image:
    """``with Image() as f: ...`` builds an HDF5 file in memory; :meth:`write_to` writes it.

    Pass the image to :func:`put_array` so that large uncompressed arrays are written straight
    from NumPy (their chunks are allocated in the image and filled by :meth:`write_to`).
    """

    def __init__(self):
        self._sink = _Sink()
        self._direct = []       # (source, chunk bytes, indices of the stored chunks), in order
        self.file = None
        self.digest = None      # the tree digest of the bytes written (write_to)

    def __enter__(self) -> h5py.File:
        self.file = h5py.File(self._sink, "w", libver=LIBVER)
        return self.file

    def __exit__(self, exc_type, exc, tb):
        self.file.close()
        return False

    def direct(self, ds, data):
        """Allocate the chunks of ``ds`` (chunked, fletcher32 only) for ``data`` (C order) that
        hold a non-zero byte; an all-zero chunk is left unallocated, which HDF5 reads as the
        dataset's fill value, zero (a network checkpoint of a few sources of a big graph is
        mostly zeros: at n = 10⁷ they were most of the 0.9 GB written and checksummed).
        ``data`` may also be a source of :mod:`simengine.io.part_stream` that is not on the
        host (a device array): then every chunk is allocated."""
        from .part_stream import HostSource

        rows = ds.chunks[0]
        shape = tuple(ds.shape)
        row_bytes = ds.dtype.itemsize * int(np.prod(shape[1:], dtype=np.int64))
        cbytes = rows * row_bytes
        nchunks = -(-shape[0] // rows)
        if isinstance(data, np.ndarray):
            source = HostSource(data)
            flat = source.flat
            stored = [k for k in range(nchunks) if _nonzero(flat[k * cbytes:(k + 1) * cbytes])]
        else:
            source, stored = data, list(range(nchunks))
        marker = np.empty(cbytes + 4, np.uint8)
        before = len(self._sink.marked)
        self._sink.marker = marker.ctypes.data
        try:
            for k in stored:
                ds.id.write_direct_chunk((k * rows,) + (0,) * (len(shape) - 1), marker, 0)
        finally:
            self._sink.marker = None
        if len(self._sink.marked) - before != len(stored) or any(
                n != cbytes + 4 for _, n in self._sink.marked[before:]):
            raise RuntimeError("HDF5 copied a direct chunk write; cannot place chunks directly")
        self._direct.append((source, cbytes, stored))

    def pieces(self):
        """``(position, bytes)`` of everything the file holds (gaps read as zeros), in the order
        :meth:`write_to` writes them; direct chunks are followed by their fletcher32 checksum."""
        yield from self._segments()
        marked = iter(self._sink.marked)
        for source, cbytes, stored in self._direct:
            flat = source.flat
            for k in stored:
                pos, _ = next(marked)
                piece = flat[k * cbytes:(k + 1) * cbytes]
                yield pos, piece
                check = int(fletcher32(piece, cbytes - len(piece)))
                yield pos + cbytes, check.to_bytes(4, "little")

    def write_to(self, fd):
        """Write the complete file to the open descriptor ``fd`` (at offset 0), streamed and
        hashed in one pass (:func:`simengine.io.part_stream.write_image`); the file's tree
        digest is then :attr:`digest`."""
        from .part_stream import write_image

        self.digest = write_image(self, fd)
        os.ftruncate(fd, self._sink.end)

    def sha256(self) -> str:
        """SHA-256 (hex) of the bytes :meth:`write_to` puts on disk, computed from memory (the
        same value :func:`file_sha256` gives for the written file)."""
        import hashlib

        h = hashlib.sha256()
        at = 0
        for pos, b in sorted(self.pieces(), key=lambda pb: pb[0]):
            n = len(memoryview(b).cast("B"))
            if pos < at:
                raise RuntimeError("overlapping pieces in an HDF5 image; cannot hash it")
            _zeros(h, pos - at)
            h.update(memoryview(b).cast("B"))
            at = pos + n
        _zeros(h, self._sink.end - at)
        return h.hexdigest()

    def _segments(self):
        """HDF5's writes merged into contiguous runs (later writes win), one buffer per run."""
        spans = sorted((p, p + len(b)) for p, b in self._sink.writes if len(b))
        runs = []
        for a, b in spans:
            if runs and a <= runs[-1][1]:
                runs[-1][1] = max(runs[-1][1], b)
            else:
                runs.append([a, b])
        bufs = [bytearray(b - a) for a, b in runs]
        starts = [a for a, _ in runs]
        for p, b in self._sink.writes:
            if len(b):
                i = bisect.bisect_right(starts, p) - 1
                bufs[i][p - starts[i]:p - starts[i] + len(b)] = b
        return list(zip(starts, bufs))

    @property
    def nbytes(self):
        return self._sink.end


def _nonzero(piece) -> bool:
    """Whether the bytes ``piece`` hold anything but zeros (the ends first: real data almost
    always has a non-zero byte there, so most chunks are not scanned)."""
    if piece[:8].any() or piece[-8:].any():
        return True
    return bool(piece.any())


def _zeros(h, n):
    block = bytes(min(n, 1 << 20))
    while n > 0:
        h.update(block[:n])
        n -= len(block)


def file_sha256(fd_or_path) -> str:
    """SHA-256 (hex) of a whole file, read in 4 MiB blocks (a path or an open descriptor)."""
    import hashlib

    own = not isinstance(fd_or_path, int)
    fd = os.open(fd_or_path, os.O_RDONLY | os.O_CLOEXEC) if own else fd_or_path
    try:
        h = hashlib.sha256()
        pos = 0
        while True:
            b = os.pread(fd, 4 << 20, pos)
            if not b:
                return h.hexdigest()
            h.update(b)
            pos += len(b)
    finally:
        if own:
            os.close(fd)


def filters(compression) -> dict:
    """h5py keyword arguments for ``output.compression`` (fletcher32 always, after compression)."""
    kw = {"fletcher32": True}
    if compression in (None, "none"):
        return kw
    if compression == "gzip":
        kw.update(compression="gzip", compression_opts=4, shuffle=True)
    elif compression == "lzf":
        kw.update(compression="lzf", shuffle=True)
    else:
        raise ValueError(f"unknown compression {compression!r} (expected one of {COMPRESSIONS})")
    return kw


def chunk_shape(shape, itemsize, target=None):
    """Chunks of whole trailing rows along axis 0, about ``target`` bytes (default
    :data:`CHUNK_BYTES`) each."""
    target = CHUNK_BYTES if target is None else target
    shape = tuple(int(n) for n in shape)
    if not shape:
        return None
    row = itemsize
    for n in shape[1:]:
        row *= max(n, 1)
    n0 = max(shape[0], 1)
    rows = max(1, min(n0, target // max(row, 1)))
    rows = -(-n0 // -(-n0 // rows))  # the same number of chunks, as even as possible
    return (rows, *[max(n, 1) for n in shape[1:]])


def put_array(group, name, data, compression=None, attrs=None, image=None):
    """A chunked, fletcher32-checksummed dataset (scalars: compact layout). With ``image``, a
    large uncompressed array is written from NumPy directly by :meth:`Image.write_to` (keep the
    array unchanged until then)."""
    streamed = hasattr(data, "window")  # a part_stream source (a device array)
    if streamed and (image is None or compression not in (None, "none")):
        data = data.to_host()  # compressed data goes through HDF5's filters in memory
        streamed = False
    if not streamed:
        data = np.asarray(data)
    if not streamed and data.ndim == 0:
        ds = put_scalar(group, name, data)
    elif image is not None and compression in (None, "none") and \
            (streamed or data.nbytes >= DIRECT_BYTES):
        if not streamed:
            data = np.ascontiguousarray(data)
        ds = group.create_dataset(name, shape=data.shape, dtype=data.dtype, fletcher32=True,
                                  chunks=chunk_shape(data.shape, data.dtype.itemsize))
        image.direct(ds, data)
    else:
        ds = group.create_dataset(name, data=data, chunks=chunk_shape(data.shape, data.dtype.itemsize),
                                  maxshape=(None,) * data.ndim if data.size == 0 else None,
                                  **filters(compression))
    for k, v in (attrs or {}).items():
        ds.attrs[k] = v
    return ds


def put_scalar(group, name, value):
    value = np.asarray(value)
    if value.dtype == np.bool_:
        # h5py stores numpy booleans as an HDF5 enum; keep that representation
        return group.create_dataset(name, data=value)
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_layout(h5d.COMPACT)
    tid = h5t.py_create(value.dtype, logical=True)
    dsid = h5d.create(group.id, name.encode(), tid, h5s.create(h5s.SCALAR), dcpl=dcpl)
    dsid.write(h5s.ALL, h5s.ALL, np.ascontiguousarray(value))
    return group[name]


def put_virtual(group, name, shape, dtype, mappings, fill=None, attrs=None):
    """A virtual dataset of ``shape`` joining source datasets in other files.

    ``mappings``: iterable of ``(start, block, file, dataset)`` (tuples of ints, strings) — the
    source dataset (of shape ``block``, all of the same rank) fills the box of that shape at index ``start`` (``len(block)`` may be shorter than
    ``shape``: leading axes then have extent 1). File names are relative to the directory of the
    file that holds the virtual dataset. Places no source covers read as ``fill`` (NaN for floats).
    """
    dtype = np.dtype(dtype)
    shape = tuple(int(n) for n in shape)
    if fill is None:
        fill = np.nan if dtype.kind == "f" else 0
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_layout(h5d.VIRTUAL)  # virtual even with no part yet (a valid layout from the start)
    dcpl.set_fill_value(np.array(fill, dtype=dtype))
    vspace = h5s.create_simple(shape, shape)
    sources = {}
    ones = (1,) * len(shape)
    lead = ones[:0]
    for start, block, file, dset in mappings:  # tuples of Python ints
        src = sources.get(block)
        if src is None:
            src = sources[block] = h5s.create_simple(block, block)
            lead = ones[:len(shape) - len(block)]
        vspace.select_hyperslab(start, ones, block=lead + block)
        dcpl.set_virtual(vspace, file.encode(), dset.encode(), src)
    tid = h5t.py_create(dtype, logical=True)
    h5d.create(group.id, name.encode(), tid, h5s.create_simple(shape, shape), dcpl=dcpl)
    ds = group[name]
    for k, v in (attrs or {}).items():
        ds.attrs[k] = v
    return ds


def virtual_mappings(ds):
    """``[(start, stop, file, dataset)]`` of a virtual dataset (bounds of each mapped box); none
    for a dataset that is not virtual (an empty one written by an earlier simengine)."""
    if not ds.is_virtual:
        return []
    dcpl = ds.id.get_create_plist()
    out = []
    for i in range(dcpl.get_virtual_count()):
        lo, hi = dcpl.get_virtual_vspace(i).get_select_bounds()
        out.append((tuple(int(x) for x in lo), tuple(int(x) + 1 for x in hi),
                    dcpl.get_virtual_filename(i), dcpl.get_virtual_dsetname(i)))
    return out


def read_chunks(ds):
    """Read every byte of a dataset, chunk by chunk (checksums verified by HDF5); raises OSError."""
    if ds.shape is None or ds.size == 0:
        return
    if ds.chunks is None:
        ds[()]
        return
    for sl in ds.iter_chunks():
        ds[sl]
