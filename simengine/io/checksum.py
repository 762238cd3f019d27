"""Digests of the values that steer a resume (checkpoint step/time, done/total, the parts).

Bulk data is protected by HDF5's fletcher32 filter (:mod:`simengine.io.h5image`); an attribute can
be rewritten with h5py without breaking any HDF5 checksum, so the attributes that decide where a
run continues are bound together by a SHA-256 digest stored beside them (attribute ``digest``).
Changing one value without recomputing the digest is detected on ``--resume`` and by
``simengine info --verify``.
"""
from __future__ import annotations

import hashlib
import json

import numpy as np


def _plain(v):
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _plain(x) for k, x in v.items()}
    if isinstance(v, bytes):
        return v.decode()
    if isinstance(v, np.ndarray):
        return _plain(v.tolist())
    if isinstance(v, (np.integer,)):
        return int(v)
    if isinstance(v, (np.floating, float)):
        return repr(float(v))  # exact: the shortest repr round-trips
    if isinstance(v, (np.bool_,)):
        return bool(v)
    return v


def digest(record) -> str:
    """SHA-256 (hex) of a canonical JSON form of ``record`` (a dict or a list)."""
    text = json.dumps(_plain(record), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()


def matches(record, stored) -> bool:
    if isinstance(stored, bytes):
        stored = stored.decode()
    return isinstance(stored, str) and stored == digest(record)


def array_digest(a) -> str:
    """SHA-256 (hex) of an array's dtype, shape and bytes."""
    a = np.ascontiguousarray(a)
    h = hashlib.sha256(f"{a.dtype.str}{a.shape}".encode())
    h.update(memoryview(a).cast("B"))
    return h.hexdigest()


#: where the digest of the whole index is stored (an attribute of ``/integrity``); format ≥ 5
INDEX_GROUP, INDEX_ATTR = "integrity", "index_digest"


def _attr_value(f, value):
    """An attribute value in a canonical form (references by the name of the object they
    point to: the dimension scales of the netCDF annotation)."""
    import h5py

    if isinstance(value, h5py.Reference):
        return "ref:" + (f[value].name if value else "")
    if isinstance(value, np.ndarray):
        if value.dtype.kind in "OV":
            return [_attr_value(f, x) for x in value.tolist()]
        return {"dtype": value.dtype.str, "shape": list(value.shape),
                "sha256": array_digest(value) if value.dtype.kind != "U" else value.tolist()}
    if isinstance(value, (list, tuple)):
        return [_attr_value(f, x) for x in value]
    if isinstance(value, bytes):   # a string read as bytes or as str hashes the same
        return ["str", value.decode("utf-8", "surrogateescape")]
    if isinstance(value, np.generic):
        return [value.dtype.str, _plain(value)]
    if isinstance(value, str):
        return ["str", value]
    return [type(value).__name__, _plain(value)]


def index_record(f) -> list:
    """Everything an index holds, in a canonical order: every group and dataset by name, every
    attribute (but :data:`INDEX_ATTR` itself), every dataset's type and shape, the data of the
    datasets stored in the index (SHA-256) and the part mappings of the virtual ones (their data
    is bound by the part digests)."""
    import h5py

    from .h5image import virtual_mappings

    items = []

    def attrs(obj):
        out = []
        for key in sorted(obj.attrs.keys()):
            if obj.name == "/" + INDEX_GROUP and key == INDEX_ATTR:
                continue
            out.append([key, _attr_value(f, obj.attrs[key])])
        return out

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset):
            entry = ["dataset", name, obj.dtype.str, list(obj.shape or ()), attrs(obj)]
            if obj.is_virtual:
                entry.append([list(map(list, m[:2])) + list(m[2:]) for m in virtual_mappings(obj)])
            elif obj.dtype.kind == "O":   # variable-length strings (labels): each, then a NUL
                h = hashlib.sha256()
                for x in np.ravel(obj[()]).tolist():
                    h.update(x if isinstance(x, bytes) else str(x).encode("utf-8", "surrogatepass"))
                    h.update(b"\0")
                entry.append(h.hexdigest())
            else:
                entry.append(array_digest(obj[()]))
            items.append(entry)
        elif isinstance(obj, h5py.Group):
            items.append(["group", name, attrs(obj)])
        else:
            items.append(["other", name])

    items.append(["group", "/", attrs(f)])
    f.visititems(visit)
    items.sort(key=lambda e: e[1])
    return items


def index_digest(f) -> str:
    """SHA-256 (hex) of :func:`index_record`: stored as ``/integrity@index_digest`` by the writer
    after everything else, checked by ``--resume`` and ``info --verify``."""
    return digest(index_record(f))


def seal_index(f) -> None:
    """Store the index digest of the open (in-memory) index ``f``: its last write."""
    f.require_group(INDEX_GROUP).attrs[INDEX_ATTR] = index_digest(f)


def index_matches(f) -> bool:
    g = f.get(INDEX_GROUP)
    if g is None or INDEX_ATTR not in g.attrs:
        return False
    return matches(index_record(f), g.attrs[INDEX_ATTR])
