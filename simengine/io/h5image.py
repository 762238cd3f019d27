"""HDF5 files built in memory, and the dataset options every simengine output uses.

Files are assembled with h5py on a ``BytesIO`` and written to disk in one piece by
:func:`simengine.io.durable.write_atomic`, so the HDF5 library never sees a failing disk (HDF5 can
misbehave, even crash, after a failed write) and a file is either absent or complete.

Format: ``libver=("v110", "v114")`` — version-2 object headers and superblock 3, whose metadata
carries checksums (a flipped byte in a header or attribute makes the open fail), readable by HDF5
1.10 and newer, including the HDF5 1.14 inside ParaView/VTK. Every non-scalar dataset is chunked
with the fletcher32 filter (checked by HDF5 on every read, by any program); scalars use the
compact layout, which stores the value inside the checksummed object header.
"""
from __future__ import annotations

import io
from contextlib import contextmanager

import h5py
import numpy as np
from h5py import h5d, h5p, h5s, h5t

LIBVER = ("v110", "v114")
#: target size of one chunk (bytes) of bulk data; one chunk is checksummed and compressed at once
CHUNK_BYTES = 4 << 20
COMPRESSIONS = ("none", "gzip", "lzf")


class Image:
    """``with Image() as f: ...`` builds a file in memory; ``image.data`` then holds its bytes."""

    def __init__(self):
        self._buf = io.BytesIO()
        self.file = None
        self.data = None

    def __enter__(self) -> h5py.File:
        self.file = h5py.File(self._buf, "w", libver=LIBVER)
        return self.file

    def __exit__(self, exc_type, exc, tb):
        self.file.close()
        if exc_type is None:
            self.data = self._buf.getbuffer()
        return False


@contextmanager
def read_only(path):
    """Open an HDF5 file for reading (no HDF5 file locking: the writer never holds files open)."""
    f = h5py.File(path, "r", locking=False)
    try:
        yield f
    finally:
        f.close()


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


def chunk_shape(shape, itemsize, target=CHUNK_BYTES):
    """Chunks of whole trailing rows along axis 0, about ``target`` bytes each."""
    shape = tuple(int(n) for n in shape)
    if not shape:
        return None
    row = itemsize
    for n in shape[1:]:
        row *= max(n, 1)
    rows = max(1, min(max(shape[0], 1), target // max(row, 1)))
    return (rows, *[max(n, 1) for n in shape[1:]])


def put_array(group, name, data, compression=None, attrs=None):
    """A chunked, fletcher32-checksummed dataset (scalars: compact layout)."""
    data = np.asarray(data)
    if data.ndim == 0:
        ds = put_scalar(group, name, data)
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

    ``mappings``: iterable of ``(start, block, file, dataset)`` — the source dataset (of shape
    ``block``) fills the box of that shape at index ``start`` (``len(block)`` may be shorter than
    ``shape``: leading axes then have extent 1). File names are relative to the directory of the
    file that holds the virtual dataset. Places no source covers read as ``fill`` (NaN for floats).
    """
    dtype = np.dtype(dtype)
    shape = tuple(int(n) for n in shape)
    if fill is None:
        fill = np.nan if dtype.kind == "f" else 0
    dcpl = h5p.create(h5p.DATASET_CREATE)
    dcpl.set_fill_value(np.array(fill, dtype=dtype))
    vspace = h5s.create_simple(shape, shape)
    sources = {}
    for start, block, file, dset in mappings:
        block = tuple(int(n) for n in block)
        full = (1,) * (len(shape) - len(block)) + block
        src = sources.get(block)
        if src is None:
            src = sources[block] = h5s.create_simple(block, block)
        vspace.select_hyperslab(tuple(int(s) for s in start), (1,) * len(shape), block=full)
        dcpl.set_virtual(vspace, str(file).encode(), str(dset).encode(), src)
    tid = h5t.py_create(dtype, logical=True)
    h5d.create(group.id, name.encode(), tid, h5s.create_simple(shape, shape), dcpl=dcpl)
    ds = group[name]
    for k, v in (attrs or {}).items():
        ds.attrs[k] = v
    return ds


def virtual_mappings(ds):
    """``[(start, stop, file, dataset)]`` of a virtual dataset (bounds of each mapped box)."""
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
