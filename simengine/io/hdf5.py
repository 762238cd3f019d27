"""Small h5py helpers for the output layout: growable series, truncation, whole-dataset replace."""
from __future__ import annotations

import numpy as np


def _compression(compression):
    if compression in (None, "none"):
        return {}
    if compression == "gzip":
        return {"compression": "gzip", "compression_opts": 4, "shuffle": True}
    return {"compression": compression}


def ensure_series(f, name, dtype, item_shape=(), compression="gzip"):
    """A growable dataset ``name`` of items of ``item_shape`` (created empty if missing)."""
    if name in f:
        return f[name]
    chunk_items = 1 if item_shape else 1024
    return f.create_dataset(name, shape=(0, *item_shape), maxshape=(None, *item_shape),
                            dtype=dtype, chunks=(chunk_items, *item_shape),
                            **_compression(compression))


def append(f, name, values, dtype=None, compression="gzip"):
    """Append rows ``values`` (first axis) to the series ``name``."""
    values = np.asarray(values, dtype=dtype)
    ds = ensure_series(f, name, values.dtype, values.shape[1:], compression)
    n = ds.shape[0]
    ds.resize(n + values.shape[0], axis=0)
    ds[n:] = values
    return ds


def truncate(f, name, length):
    if name in f and f[name].shape[0] > length:
        f[name].resize(length, axis=0)


def replace(f, name, data, compression=None, attrs=None):
    """(Re)write dataset ``name`` with ``data``; in place when shape and dtype match."""
    data = np.asarray(data)
    if name in f:
        ds = f[name]
        if ds.shape == data.shape and ds.dtype == data.dtype:
            ds[...] = data
        else:
            del f[name]
            ds = None
    else:
        ds = None
    if ds is None:
        kw = _compression(compression) if data.ndim and data.size > 1024 else {}
        ds = f.create_dataset(name, data=data, **kw)
    for k, v in (attrs or {}).items():
        ds.attrs[k] = v
    return ds
