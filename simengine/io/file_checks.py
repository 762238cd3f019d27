"""Readers validate before they allocate: what ``info``, ``plot`` and ``report`` (and
``simengine.open``) check of an output before reading its data.

:func:`check_output` runs when a :class:`~simengine.io.reader.Result` opens a file. It reads only
attributes, shapes, types and the small series, never a snapshot, and stops at the first problem
with one line naming the dataset (:class:`~simengine.errors.UserError`, exit 2):

* every attribute must decode (UTF-8) and hold the kind of value the format gives it (a number
  where a number belongs, finite and positive spacing, dt and bin width);
* every dataset has the type and shape the format allows (real floating-point fields of the grid's
  shape, integer steps, one row per observation, non-negative finite histogram counts, per-vertex
  arrays of one length, row numbers within it) — **sizes come from the data** (the dataset shapes
  and the parts a virtual dataset maps), never from an attribute such as ``graph_n``;
* a virtual dataset's parts cover it exactly (a crafted shape of (3, 10⁶, 10⁶) over no parts
  would read as a 7 TiB fill);
* one read is bounded: a series larger than :func:`read_limit` (a quarter of the memory this
  process may allocate) is refused instead of being read; a snapshot of any size is valid —
  readers take planes, slices or a stride of it (the limit bounds memory, never validity);
* where the index carries a digest (format ≥ 5), the index must match it.
"""
from __future__ import annotations

import math

import h5py
import numpy as np

from ..errors import UserError
from .layout import FORMAT_VERSION, INDEX_DIGEST_FROM

#: histogram bins an output may hold (the engines' cap,
#: :data:`simengine.network.statistics.HIST_MAX_BINS`)
HIST_MAX_BINS = 1 << 22
KINDS = ("field", "network")


class _Bad(Exception):
    pass


#: environment variable: the bytes one read of a reader may allocate (tests lower it; default a
#: quarter of what this process may allocate)
READ_LIMIT_ENV = "SIMENGINE_READ_LIMIT"


def read_limit() -> int:
    """Bytes one read of a reader may allocate: :data:`READ_LIMIT_ENV` when set, else a quarter
    of what this process may allocate (at least 64 MiB). It bounds memory, never validity: a
    snapshot larger than it is read by planes, slices or a stride
    (:meth:`~simengine.io.reader.Result.plane`), and verified by chunks."""
    import os

    given = os.environ.get(READ_LIMIT_ENV)
    if given:
        try:
            return max(1 << 10, int(float(given)))
        except ValueError:
            raise UserError(f"{READ_LIMIT_ENV}={given[:40]!r}: expected a number of bytes") \
                from None
    from ..machine import host_available

    try:
        return max(1 << 26, int(host_available()[0]) // 4)
    except Exception:  # noqa: BLE001 - no figure: a fixed 1 GiB
        return 1 << 30


def _fail(path, name, why):
    where = f"{path}: /{name.lstrip('/')}" if name else f"{path}"
    raise UserError(f"{where}: {why}; not a valid simengine output")


def _attr(path, obj, key, kind=None, required=True):
    """An attribute of ``obj`` as a Python value checked against ``kind`` (int, float, 'pos',
    str, 'ints'), or UserError naming it."""
    name = f"{obj.name}@{key}" if obj.name != "/" else f"@{key}"
    try:
        if key not in obj.attrs:
            if required:
                _fail(path, name, "missing")
            return None
        v = obj.attrs[key]
    except UserError:
        raise
    except (UnicodeDecodeError, ValueError, OSError, TypeError, KeyError) as exc:
        _fail(path, name, f"unreadable attribute ({type(exc).__name__}; not UTF-8 text?)")
    if isinstance(v, np.ndarray) and v.ndim == 0:
        v = v[()]
    if isinstance(v, np.generic):
        v = v.item()
    if isinstance(v, bytes):
        try:
            v = v.decode("utf-8")
        except UnicodeDecodeError:
            _fail(path, name, "is not UTF-8 text")
    if kind is str and not isinstance(v, str):
        _fail(path, name, f"expected text, got {type(v).__name__}")
    if kind is int and (isinstance(v, bool) or not isinstance(v, int)):
        _fail(path, name, f"expected an integer, got {str(v)[:40]!r}")
    if kind in (float, "pos"):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
            _fail(path, name, f"expected a finite number, got {str(v)[:40]!r}")
        if kind == "pos" and v <= 0:
            _fail(path, name, f"expected a positive number, got {v!r}")
    if kind == "ints":
        a = np.asarray(v)
        if a.ndim != 1 or a.dtype.kind not in "iu" or not 1 <= a.size <= 3 or (a < 1).any():
            _fail(path, name, f"expected 1 to 3 positive integers, got {str(v)[:40]!r}")
        v = tuple(int(x) for x in a)
    return v


def _dataset(path, f, name, kinds=None, ndim=None, required=True):
    obj = f.get(name)
    if obj is None:
        if required:
            _fail(path, name, "missing")
        return None
    if not isinstance(obj, h5py.Dataset):
        _fail(path, name, "not a dataset")
    try:
        dtype, shape = obj.dtype, obj.shape
    except Exception as exc:  # noqa: BLE001
        _fail(path, name, f"unreadable ({type(exc).__name__})")
    if shape is None:
        _fail(path, name, "has no shape (an empty dataspace)")
    if ndim is not None and len(shape) not in (ndim if isinstance(ndim, tuple) else (ndim,)):
        _fail(path, name, f"has {len(shape)} dimensions, expected {ndim}")
    if kinds is not None and dtype.kind not in kinds:
        want = {"f": "floating-point", "iu": "integer", "iuf": "real numbers",
                "iufb": "real numbers"}.get(kinds, kinds)
        _fail(path, name, f"has type {dtype}, expected {want}")
    _covered(path, name, obj)
    return obj


def _covered(path, name, ds):
    """A virtual dataset's mapped parts must cover it exactly (no fill values read as data)."""
    if not ds.is_virtual:
        return
    from .h5image import virtual_mappings

    total = 0
    for start, stop, _, _ in virtual_mappings(ds):
        if len(start) != len(ds.shape) or any(a < 0 or b > n or a >= b for a, b, n in
                                              zip(start, stop, ds.shape)):
            _fail(path, name, "maps a part outside its shape")
        total += int(np.prod([b - a for a, b in zip(start, stop)], dtype=object))
    size = int(np.prod(ds.shape, dtype=object))
    if total != size:
        _fail(path, name, f"its parts hold {total} of its {size} values")


def _small(path, ds, name):
    """The whole of a small dataset (a series, a histogram), its size bounded first."""
    if ds.size * ds.dtype.itemsize > read_limit():
        _fail(path, name, f"{ds.size} values are more than a reader may hold")
    try:
        return ds[()]
    except Exception as exc:  # noqa: BLE001
        from .integrity import reason

        _fail(path, name, reason(exc))


def _finite(path, name, a):
    if a.dtype.kind == "f" and not np.isfinite(a).all():
        _fail(path, name, "holds NaN or infinite values")


def check_output(f, path) -> None:
    """UserError (one line naming the dataset) unless the open output ``f`` holds what the format
    allows; reads attributes, shapes and the small series only."""
    objs = [f]
    try:
        f.visititems(lambda name, obj: objs.append(obj) if len(objs) < 100_000 else None)
        for obj in objs:   # every attribute decodes (UTF-8 text, readable values)
            for key in list(obj.attrs.keys()):
                _attr(path, obj, key)
    except UserError:
        raise
    except Exception as exc:  # noqa: BLE001 - names that do not decode
        _fail(path, "", f"unreadable attributes ({type(exc).__name__})")
    kind = _attr(path, f, "kind", str)
    if kind not in KINDS:
        _fail(path, "@kind", f"expected field or network, got {kind[:40]!r}")
    _attr(path, f, "simengine_version", str)
    version = _attr(path, f, "format_version", int, required=False)
    if version is not None and not 1 <= version <= FORMAT_VERSION:
        _fail(path, "@format_version", f"{version} is not a format this simengine reads "
                                       f"(1-{FORMAT_VERSION})")
    scenario = _attr(path, f, "scenario", str, required=False)
    if scenario is not None:
        import yaml

        try:
            ok = isinstance(yaml.safe_load(scenario), dict)
        except yaml.YAMLError:
            ok = False
        if not ok:
            _fail(path, "@scenario", "is not a scenario (a YAML mapping)")
    (_field if kind == "field" else _network)(f, path)
    if version is not None and version >= INDEX_DIGEST_FROM:
        from . import checksum

        try:
            ok = checksum.index_matches(f)
        except Exception:  # noqa: BLE001 - what cannot be hashed does not match
            ok = False
        if not ok:
            _fail(path, "integrity@index_digest", "the index does not match its digest (the "
                                                  "file was modified after it was written)")


def _field(f, path):
    g = f.get("fields")
    if not isinstance(g, h5py.Group):
        _fail(path, "fields", "missing")
    _attr(path, g, "spacing", "pos", required=False)
    _attr(path, g, "dt", "pos", required=False)
    grid = _attr(path, g, "grid_shape", "ints", required=False)
    phi = _dataset(path, f, "fields/phi", "f", (2, 3, 4))
    version = f.attrs.get("format_version", 1)
    if isinstance(version, (int, np.integer)) and version >= 2 and not phi.is_virtual:
        _fail(path, "fields/phi", f"is not a virtual dataset (format {int(version)} maps each "
                                  f"snapshot's parts; its size comes from them)")
    if phi.dtype.itemsize not in (4, 8):
        _fail(path, "fields/phi", f"has type {phi.dtype}, expected float32 or float64")
    if grid is not None and tuple(phi.shape[1:]) != grid:
        _fail(path, "fields/phi", f"shape {phi.shape} does not match /fields@grid_shape {grid}")
    steps = _small(path, _dataset(path, f, "fields/step", "iu", 1), "fields/step")
    times = _dataset(path, f, "fields/time", "f", 1, required=False)
    if len(steps) != phi.shape[0]:
        _fail(path, "fields/step", f"{len(steps)} steps for {phi.shape[0]} snapshots")
    if times is not None:
        t = _small(path, times, "fields/time")
        _finite(path, "fields/time", t)
        if len(t) != len(steps):
            _fail(path, "fields/time", f"{len(t)} times for {len(steps)} steps")
    obs = f.get("observables")
    rows = None
    if obs is not None:
        if not isinstance(obs, h5py.Group):
            _fail(path, "observables", "not a group")
        for k in obs:
            name = f"observables/{k}"
            ds = _dataset(path, f, name, "iuf", (1, 2) if k == "structure_factor" else 1)
            if k == "structure_factor_k":
                continue
            n = ds.shape[0]
            if rows is not None and n != rows:
                _fail(path, name, f"{n} rows, but other observables have {rows}")
            rows = n
            if ds.ndim == 1 and k in ("step", "time"):
                _finite(path, name, _small(path, ds, name))
        if "structure_factor" in obs:
            sk = _dataset(path, f, "observables/structure_factor", "f", 2)
            kk = _dataset(path, f, "observables/structure_factor_k", "f", 1)
            if sk.shape[1] != kk.shape[0]:
                _fail(path, "observables/structure_factor", f"{sk.shape[1]} shells but "
                      f"/observables/structure_factor_k has {kk.shape[0]}")
    ck = _dataset(path, f, "checkpoint/phi", "f", None, required=False)
    if ck is not None:
        if tuple(ck.shape) != tuple(phi.shape[1:]) or ck.dtype != phi.dtype:
            _fail(path, "checkpoint/phi", f"holds {ck.dtype} {ck.shape}, expected {phi.dtype} "
                                          f"{tuple(phi.shape[1:])}")
        _attr(path, ck, "step", int)
        _attr(path, ck, "time", float)


def _network(f, path):
    n_attr = _attr(path, f, "graph_n", int, required=False)
    lengths = {}
    v = f.get("vertex")
    if v is not None:
        if not isinstance(v, h5py.Group):
            _fail(path, "vertex", "not a group")
        for k in v:
            ds = _dataset(path, f, f"vertex/{k}", None if k == "id" else "iufb", 1)
            if k == "id" and ds.dtype.kind not in "iuSO":
                _fail(path, "vertex/id", f"has type {ds.dtype}, expected integers or text")
            lengths[f"vertex/{k}"] = ds.shape[0]
    dist = _dataset(path, f, "distances", "uif", 2, required=False)
    if dist is not None:
        if dist.dtype.kind == "f" and dist.dtype.itemsize != 8 or \
                dist.dtype.kind in "iu" and dist.dtype.str[1:] not in ("u1", "u2", "u4"):
            _fail(path, "distances", f"has type {dist.dtype}, expected uint8/16/32 or float64")
        lengths["distances (columns)"] = dist.shape[1]
        pred = _dataset(path, f, "predecessors", "i", 2, required=False)
        if pred is not None and pred.shape != dist.shape:
            _fail(path, "predecessors", f"shape {pred.shape} differs from /distances' {dist.shape}")
    if len(set(lengths.values())) > 1:
        by_size = sorted(lengths.items(), key=lambda x: x[1])
        (a, na), (b, nb) = by_size[0], by_size[-1]
        _fail(path, b, f"{nb} vertices, but /{a} has {na}")
    n = next(iter(lengths.values()), None)
    if n is not None and n_attr is not None and n_attr != n:
        _fail(path, "@graph_n", f"is {n_attr}, but the per-vertex data hold {n} vertices")
    src = _dataset(path, f, "sources", "iu", 1, required=False)
    if src is not None and src.size:
        s = _small(path, src, "sources")
        top = n if n is not None else n_attr
        if s.min() < 0 or (top is not None and s.max() >= top):
            _fail(path, "sources", f"row numbers outside 0..{top}")
    hist = _dataset(path, f, "distance_histogram", "iuf", 1, required=False)
    if hist is not None:
        if hist.shape[0] > HIST_MAX_BINS:
            _fail(path, "distance_histogram", f"{hist.shape[0]} bins, more than the "
                                              f"{HIST_MAX_BINS} the format allows")
        h = _small(path, hist, "distance_histogram")
        _finite(path, "distance_histogram", h)
        if (h < 0).any():
            _fail(path, "distance_histogram", "holds negative counts")
        _attr(path, hist, "bin_width", "pos", required=False)
    st = f.get("statistics")
    if st is not None:
        if not isinstance(st, h5py.Group):
            _fail(path, "statistics", "not a group")
        for k in st:
            ds = _dataset(path, f, f"statistics/{k}", "iufb", None)
            if ds.size > 1 << 20:
                _fail(path, f"statistics/{k}", f"{ds.size} values for a statistic")
    c = f.get("checkpoint")
    if isinstance(c, h5py.Group) and "done" in c.attrs:
        _attr(path, c, "done", int)
        _attr(path, c, "total", int)
