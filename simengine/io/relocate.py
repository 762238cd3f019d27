"""``simengine mv`` / ``simengine cp``: move or copy an output with its parts, and relink it.

An index's virtual datasets name their parts by the parts directory the index had when it was
written (``run.h5.parts/phi/...``): HDF5 resolves a relative source name against the index's
directory but has no substitution for the index's own name (``%b`` in a source name is the block
number of an unlimited, printf-style mapping, not a file name). simengine's readers follow a
pair renamed by hand (they read ``<the index's name>.parts/``), plain h5py does not; these
commands also rewrite the index so that its mappings name the new parts directory
(:func:`relinked_index`: the same groups, datasets, attributes and data, the virtual datasets
re-made with the new names, annotated and sealed again — the checkpoint digest and the part
digests do not depend on the name and are kept as they are).

Order of a move (each step durable before the next), so that a move killed at any instant is
finished by running it again: the parts directory is renamed (``os.rename``; across file
systems copied, then the source deleted at the end), the relinked index is written under the new
name (atomically), then the old index and its ``.xdmf`` are removed and the new ``.xdmf``
written. A copy copies the parts into ``<dst>.parts.tmp``, fsyncs every file and renames the
directory, then writes the relinked index. Both hold the output's lock (no run may write it
meanwhile) and refuse a destination that exists (one line, exit 2).
"""
from __future__ import annotations

import errno
import os
import shutil
from pathlib import Path

import h5py
import numpy as np

from ..errors import UserError
from .durable import fsync_dir, remove, remove_tree, write_atomic
from .layout import check_output_path, mapped_ref, own_part, parts_dir, parts_ref, xdmf_path

#: attributes of HDF5 dimension scales (references between objects): re-made by the annotation
SCALE_ATTRS = ("DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME")


def _attrs(obj) -> dict:
    out = {}
    for k, v in obj.attrs.items():
        if k in SCALE_ATTRS or isinstance(v, h5py.Reference) or \
                (isinstance(v, np.ndarray) and v.dtype.kind in "OV" and v.size and
                 isinstance(v.flat[0], h5py.Reference)):
            continue
        out[k] = v
    return out


def _compression(ds):
    return {"gzip": "gzip", "lzf": "lzf"}.get(ds.compression, "none")


def relinked_index(src, dst):
    """An :class:`~simengine.io.h5image.Image` of the index ``src`` whose virtual datasets map
    ``<dst name>.parts/`` (its root attribute ``parts`` too), annotated and sealed again."""
    from . import checksum
    from .h5image import Image, put_array, put_virtual
    from .metadata import annotate, is_dimension_only

    new_ref = parts_ref(dst)
    image = Image()
    with h5py.File(src, "r", locking=False) as f, image as g:
        ref = mapped_ref(f, src)
        kind = f.attrs["kind"]
        kind = kind.decode() if isinstance(kind, bytes) else str(kind)
        for k, v in _attrs(f).items():
            g.attrs[k] = v
        g.attrs["parts"] = new_ref
        items = []
        f.visititems(lambda name, obj: items.append((name, obj)))
        for name, obj in items:
            if isinstance(obj, h5py.Group):
                grp = g.require_group(name)
                for k, v in _attrs(obj).items():
                    grp.attrs[k] = v
                continue
            if not isinstance(obj, h5py.Dataset) or is_dimension_only(obj):
                continue  # a netCDF dimension: the annotation makes it again
            parent, base = g.require_group(name.rpartition("/")[0] or "/"), name.rpartition("/")[2]
            if obj.is_virtual:
                maps = []
                dcpl = obj.id.get_create_plist()
                for i in range(dcpl.get_virtual_count()):
                    file = dcpl.get_virtual_filename(i)
                    part = own_part(file, ref)
                    if part is None:
                        raise UserError(f"{src}: /{name} maps an unexpected part {file[:80]!r}")
                    # the mapped box, full rank (a source selection is "all" of the source:
                    # HDF5 keeps no extent of it, only the count of values, which is the box's)
                    lo, hi = dcpl.get_virtual_vspace(i).get_select_bounds()
                    start = tuple(int(x) for x in lo)
                    block = tuple(int(b) - int(a) + 1 for a, b in zip(lo, hi))
                    maps.append((start, block,
                                 f"{new_ref}/{part}", dcpl.get_virtual_dsetname(i)))
                put_virtual(parent, base, obj.shape, obj.dtype, maps, fill=obj.fillvalue,
                            attrs=_attrs(obj))
            elif obj.dtype.kind == "O" or h5py.check_string_dtype(obj.dtype) is not None and \
                    obj.dtype.kind != "S":
                ds = parent.create_dataset(base, data=obj[()], dtype=obj.dtype)
                for k, v in _attrs(obj).items():
                    ds.attrs[k] = v
            else:
                put_array(parent, base, obj[()], _compression(obj), attrs=_attrs(obj))
        annotate(g, kind)
        checksum.seal_index(g)
    return image


def _lock(path):
    from .lock import OutputLock

    lock = OutputLock(path)
    lock.acquire()
    return lock


def _source(src):
    from .reader import check_input_file, open_output

    check_input_file(src)
    open_output(src).close()   # a simengine output (one line otherwise)
    return Path(src)


def _run_id(path):
    try:
        with h5py.File(path, "r", locking=False) as f:
            rid = f.attrs.get("run_id")
    except OSError:
        return None
    return rid.decode() if isinstance(rid, bytes) else rid


def _write_xdmf(dst):
    from .xdmf import write_xdmf

    with h5py.File(dst, "r", locking=False) as f:
        if f.attrs.get("kind") not in ("field", b"field") or "fields/phi" not in f:
            return
        g = f["fields"]
        shape = tuple(int(n) for n in g.attrs["grid_shape"])
        write_xdmf(xdmf_path(dst), dst, shape, g["phi"].dtype, float(g.attrs["spacing"]),
                   f["fields/time"][()].tolist())


def _check_destination(src, dst):
    check_output_path(dst)
    for p in (dst, parts_dir(dst)):
        if p.exists() or p.is_symlink():
            raise UserError(f"{dst}: exists already ({p}); remove it first or choose another "
                            f"name (nothing was changed)")


def _copy_tree(src_dir, dst_dir):
    """Copy the directory ``src_dir`` to ``dst_dir`` durably: every file fsynced, then every
    directory, under ``<dst_dir>.tmp``, renamed into place at the end."""
    tmp = dst_dir.with_name(dst_dir.name + ".tmp")
    remove_tree(tmp)
    try:
        shutil.copytree(src_dir, tmp, symlinks=False)
        for dirpath, _, files in os.walk(tmp):
            for name in files:
                fd = os.open(os.path.join(dirpath, name), os.O_RDONLY)
                try:
                    os.fsync(fd)
                finally:
                    os.close(fd)
            fsync_dir(dirpath)
        os.rename(tmp, dst_dir)
        fsync_dir(dst_dir.parent)
    except OSError as exc:
        remove_tree(tmp)
        raise UserError(f"{dst_dir}: cannot copy the parts: {exc.strerror or exc}") from None


def _write_index(src, dst):
    image = relinked_index(src, dst)
    write_atomic(dst, image)
    _write_xdmf(dst)


def relink(output):
    """Rewrite the index ``output`` in place so that its mappings name its own parts directory
    (a pair renamed by hand). Returns whether anything changed."""
    output = _source(output)
    with h5py.File(output, "r", locking=False) as f:
        ref = mapped_ref(f, output)
    if ref == parts_ref(output):
        return False
    if not parts_dir(output).is_dir():
        raise UserError(f"{output}: its parts directory {parts_dir(output)} is missing "
                        f"(nothing was changed)")
    lock = _lock(output)
    try:
        _write_index(output, output)
    finally:
        lock.release()
    return True


def move(src, dst):
    """Move the output ``src`` (index, parts, ``.xdmf``) to ``dst``; a move killed midway is
    finished by running it again."""
    src, dst = Path(src), Path(dst)
    if src.resolve() == dst.resolve():
        return relink(src)
    src = _source(src)
    resumed = not parts_dir(src).exists() and parts_dir(dst).is_dir() and \
        (not dst.exists() or _run_id(dst) == _run_id(src))
    if not resumed:
        _check_destination(src, dst)
        if not parts_dir(src).is_dir():
            raise UserError(f"{src}: its parts directory {parts_dir(src)} is missing (nothing "
                            f"was moved)")
    lock = _lock(src)
    try:
        across = False
        if not resumed:
            try:
                os.rename(parts_dir(src), parts_dir(dst))
                fsync_dir(parts_dir(dst).parent)
            except OSError as exc:
                if exc.errno != errno.EXDEV:
                    raise UserError(f"{dst}: cannot move {parts_dir(src)} there: "
                                    f"{exc.strerror}") from None
                _copy_tree(parts_dir(src), parts_dir(dst))  # another file system
                across = True
        _write_index(src, dst)   # from the index alone: no part is read
        for p in (src, xdmf_path(src)):
            remove(p)
        if across:
            remove_tree(parts_dir(src))
        fsync_dir(src.parent)
    finally:
        lock.release()
    return True


def copy(src, dst):
    """Copy the output ``src`` with its parts to ``dst`` (the copy keeps the run id: its parts
    are the same bytes)."""
    src, dst = _source(src), Path(dst)
    _check_destination(src, dst)
    if not parts_dir(src).is_dir():
        raise UserError(f"{src}: its parts directory {parts_dir(src)} is missing (nothing was "
                        f"copied)")
    lock = _lock(src)
    try:
        _copy_tree(parts_dir(src), parts_dir(dst))
        try:
            _write_index(src, dst)
        except BaseException:
            remove_tree(parts_dir(dst))
            raise
    finally:
        lock.release()
    return True
