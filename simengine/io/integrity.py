"""Reading outputs defensively: every failure becomes a :class:`Corrupt` naming the dataset.

Used on ``--resume`` (where a problem is a one-line error, exit 2) and by ``simengine info
--verify`` (a line per bad dataset).
"""
from __future__ import annotations

import stat
from pathlib import Path

import h5py
import numpy as np

from .durable import special_kind  # noqa: F401 (re-export)
from .h5image import read_chunks


#: what h5py raises on a damaged file (bad metadata, a failed filter, a missing object, a
#: layout that is not what it claims); turned into one line naming the file
DAMAGE = (OSError, RuntimeError, ValueError, KeyError, TypeError, AttributeError, IndexError)


class Corrupt(Exception):
    """``where``: the file and dataset concerned; ``why``: what is wrong."""

    def __init__(self, where, why):
        super().__init__(f"{where}: {why}")
        self.where = where
        self.why = why


def reason(exc: Exception) -> str:
    text = str(exc)
    if "filter returned failure" in text or "checksum" in text.lower():
        return "checksum mismatch (the stored bytes were changed or damaged)"
    first = text.split("(")[0].strip().rstrip(":") or type(exc).__name__
    return f"unreadable ({first})"


def read(f, name, where=None, ndim=None, dtype_kind=None):
    """The whole dataset ``name`` of open file ``f`` as a NumPy array, or :class:`Corrupt`."""
    where = where or f"{f.filename}: /{name.lstrip('/')}"
    try:
        obj = f.get(name)
        if obj is None:
            raise Corrupt(where, "missing")
        if not isinstance(obj, h5py.Dataset):
            raise Corrupt(where, "not a dataset")
        data = obj[()]
    except Corrupt:
        raise
    except (OSError, RuntimeError, ValueError, KeyError, TypeError) as exc:
        raise Corrupt(where, reason(exc)) from None
    data = np.asarray(data)
    if ndim is not None and data.ndim != ndim:
        raise Corrupt(where, f"has {data.ndim} dimensions, expected {ndim}")
    if dtype_kind is not None and data.dtype.kind not in dtype_kind:
        raise Corrupt(where, f"has type {data.dtype}, expected a number")
    return data


def attr(obj, key, where, kind=None):
    """Attribute ``key`` of ``obj`` (a Python scalar), or :class:`Corrupt`."""
    try:
        value = obj.attrs[key]
    except (KeyError, OSError, RuntimeError) as exc:
        raise Corrupt(where, f"attribute {key!r} is missing ({reason(exc)})") from None
    if isinstance(value, np.ndarray) and value.ndim == 0:
        value = value[()]
    if isinstance(value, np.generic):
        value = value.item()
    if kind is int and not (isinstance(value, int) and not isinstance(value, bool)):
        raise Corrupt(where, f"attribute {key!r} is {value!r}, expected an integer")
    if kind is float:
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not np.isfinite(value):
            raise Corrupt(where, f"attribute {key!r} is {value!r}, expected a finite number")
        value = float(value)
    return value


def check_dataset(ds, where):
    """Read every chunk of ``ds`` (fletcher32 checked by HDF5), or :class:`Corrupt`."""
    try:
        read_chunks(ds)
    except (OSError, RuntimeError, ValueError) as exc:
        raise Corrupt(where, reason(exc)) from None


def open_part(path, where=None):
    """An open part file (read-only), or :class:`Corrupt` when it is missing, not a regular file
    (checked with ``stat``: a FIFO is never opened) or unreadable."""
    path = Path(path)
    where = where or str(path)
    try:
        mode = path.stat().st_mode
    except OSError:
        raise Corrupt(where, "missing (the .parts directory must stay beside the output "
                             "file)") from None
    if not stat.S_ISREG(mode):
        raise Corrupt(where, f"is {special_kind(mode)}, not a regular file")
    try:
        return h5py.File(path, "r", locking=False)
    except OSError as exc:
        raise Corrupt(where, reason(exc)) from None


def stored_scenario(f, where) -> dict:
    """The scenario stored in an index (a mapping), or :class:`Corrupt`."""
    import yaml

    if "scenario" not in f.attrs:   # an index written by library code without one
        return {}
    text = attr(f, "scenario", where)
    try:
        text = text.decode() if isinstance(text, bytes) else text
        data = yaml.safe_load(text) if isinstance(text, str) else None
    except (UnicodeDecodeError, yaml.YAMLError):
        data = None
    if not isinstance(data, dict):
        raise Corrupt(where, "attribute 'scenario' is not a scenario (a YAML mapping)")
    return data


def required_datasets(kind, scenario) -> list:
    """The datasets an index of ``kind`` written for ``scenario`` always holds (docs/output.md):
    a resume or ``info --verify`` of an index without one of them is refused."""
    out = scenario.get("output") or {}
    if kind == "field":
        from .layout import RADIAL, REQUIRED_SERIES

        names = ["fields/phi", "fields/step", "fields/time", "checkpoint/phi",
                 *(f"observables/{k}" for k in REQUIRED_SERIES)]
        if isinstance(out, dict) and out.get("structure_factor"):
            names += [f"observables/{RADIAL}", f"observables/{RADIAL}_k"]
    else:
        metrics = scenario.get("metrics") or {}
        metrics = metrics if isinstance(metrics, dict) else {}
        names = ["sources", "checkpoint/done", "checkpoint/meta"]
        if metrics.get("store_distances") or metrics.get("store_predecessors"):
            names.append("distances")
        if metrics.get("store_predecessors"):
            names.append("predecessors")
    return names + ["integrity/part", "integrity/sha256"]


def check_bound(f, output, version) -> None:
    """What binds an index as a whole (format ≥ 5): every dataset its stored scenario implies is
    there, and the index digest (:func:`simengine.io.checksum.index_digest`, over every
    attribute — the stored scenario, ``format_version``, the plan — every dataset and every part
    mapping) matches. :class:`Corrupt` naming the dataset, or the file."""
    from . import checksum

    check_required(f, output)
    from .layout import INDEX_DIGEST_FROM

    if version >= INDEX_DIGEST_FROM and not checksum.index_matches(f):
        raise Corrupt(str(output), "the index does not match its digest (/integrity@index_digest): "
                             "an attribute (the stored scenario, the format version, the plan), a "
                             "dataset or a part mapping was changed, added or removed")


def check_required(f, output) -> None:
    """:class:`Corrupt` naming the first dataset the stored scenario implies that is missing."""
    where = str(output)
    kind = attr(f, "kind", where)
    kind = kind.decode(errors="replace") if isinstance(kind, bytes) else str(kind)
    scenario = stored_scenario(f, where)
    for name in required_datasets(kind, scenario):
        if not isinstance(f.get(name), h5py.Dataset):
            raise Corrupt(f"{where}: /{name}", "missing (the stored scenario implies it)")
