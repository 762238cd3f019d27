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
