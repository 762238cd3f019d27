"""``simengine info --verify FILE``: read every byte of an output and check what steers a resume.

Every dataset of the index and every part its virtual datasets map is read in full, so HDF5
verifies each chunk's fletcher32 checksum (and the metadata checksums); a missing part, a part of
the wrong shape or type, and a checkpoint whose steering values do not match their digest or
contradict each other are reported too. One line per problem.
"""
from __future__ import annotations

from pathlib import Path

import h5py

from ..errors import UserError
from . import checksum, integrity
from .h5image import virtual_mappings
from .integrity import Corrupt
from .layout import (DIGESTED_VERSIONS, check_parts_beside, foreign_parts, mapped_ref, own_part,
                     parts_dir)


def _datasets(f):
    out = []
    f.visititems(lambda name, obj: out.append(name) if isinstance(obj, h5py.Dataset) else None)
    return out


def _check_virtual(path, name, ds, problems, good=frozenset(), ref=None):
    ref = ref or mapped_ref(ds.file, path)
    checked = 0
    for start, stop, file, dset in virtual_mappings(ds):
        part_name = own_part(file, ref)
        where = f"{path}: /{name} part {file}"
        if part_name is None:
            problems.append(f"{where}: {foreign_parts(path, file, ref)}")
            continue
        src = parts_dir(path) / part_name   # the index's own parts, whatever it was renamed to
        where = f"{path}: /{name} part {parts_dir(path).name}/{part_name}"
        try:
            part = integrity.open_part(src, where)
        except Corrupt as exc:
            problems.append(str(exc))
            continue
        try:
            sds = part.get(dset)
            shape = tuple(b - a for a, b in zip(start, stop))
            if not isinstance(sds, h5py.Dataset):
                raise Corrupt(where, f"dataset {dset!r} is missing")
            if sds.dtype != ds.dtype or sds.size != int(_prod(shape)):
                raise Corrupt(where, f"holds {sds.dtype} {sds.shape}, expected {ds.dtype} with "
                                     f"{int(_prod(shape))} values")
            if part_name not in good:
                # a part whose digest matched holds the bytes written, fletcher32 included;
                # any other is read in full (HDF5 checks every chunk's fletcher32)
                integrity.check_dataset(sds, where)
            checked += 1
        except Corrupt as exc:
            problems.append(str(exc))
        finally:
            part.close()
    return checked


def _prod(shape):
    n = 1
    for s in shape:
        n *= s
    return n


def verify_file(path):
    """``(problems, datasets_checked, parts_checked)``; UserError if the file cannot be opened."""
    from .reader import open_output

    path = Path(path)
    f = open_output(path)
    problems, ndata, nparts = [], 0, 0
    kind = version = None
    try:
        names = _datasets(f)
        ref = mapped_ref(f, path)
        foreign = [file for name in names if f[name].is_virtual
                   for _, _, file, _ in virtual_mappings(f[name])
                   if own_part(file, ref) is None]
        beside = check_parts_beside(path, ref)
    except Exception as exc:  # noqa: BLE001 - a damaged index: one line, never a traceback
        f.close()
        return [f"{path}: {integrity.reason(exc)}"], 0, 0
    if foreign:  # one line for the whole file: none of its parts are its own
        f.close()
        return [f"{path}: {foreign_parts(path, foreign[0], ref)}"], 0, 0
    if beside is not None:
        f.close()
        return [f"{path}: {beside}"], 0, 0
    try:
        kind = f.attrs.get("kind")
        kind = kind.decode() if isinstance(kind, bytes) else str(kind)
        version = f.attrs.get("format_version")
    except Exception as exc:  # noqa: BLE001
        problems.append(f"{path}: root attributes: {integrity.reason(exc)}")
    steering, good = [], set()
    if version in DIGESTED_VERSIONS:  # the parts' digests first: matching parts need no read
        steering = _check_steering(path, kind, good)
    try:
        for name in names:
            try:
                ds = f[name]
                virtual = ds.is_virtual
            except Exception as exc:  # noqa: BLE001
                problems.append(f"{path}: /{name}: {integrity.reason(exc)}")
                continue
            if virtual:
                try:
                    nparts += _check_virtual(path, name, ds, problems, good, ref)
                except Exception as exc:  # noqa: BLE001
                    problems.append(f"{path}: /{name}: {integrity.reason(exc)}")
            else:
                try:
                    integrity.check_dataset(ds, f"{path}: /{name}")
                    if "sha256" in ds.attrs:  # data HDF5 cannot checksum (variable-length strings)
                        values = [x.decode() if isinstance(x, bytes) else str(x)
                                  for x in ds[()].tolist()]
                        if not checksum.matches(values, ds.attrs["sha256"]):
                            raise Corrupt(f"{path}: /{name}", "does not match its sha256 digest")
                except Corrupt as exc:
                    problems.append(str(exc))
            ndata += 1
    finally:
        f.close()
    problems += _unreported(steering, problems)
    return problems, ndata, nparts


def _unreported(lines, known):
    """``lines`` (the steering checks' problems) not already reported by the reads: a part or a
    value is not reported twice."""
    out = []
    for line in lines:
        if line.startswith("\0"):  # a part's digest problem
            line = line[1:]
            part = line.split(": part ", 1)[-1].split(": ", 1)[0]
            name = part.split(".parts/", 1)[-1]
            if not any(name in k for k in known):
                out.append(line)
        elif not any(line in k or k in line for k in known):
            out.append(line)
    return out


def _check_steering(path, kind, good):
    """The checks ``--resume`` makes (digest, contradictions) and the digest of every part (the
    parts that match are added to ``good``); part lines are marked with a leading NUL."""
    try:
        if kind == "field":
            from .field_store import FieldIndex

            index = FieldIndex.load(path, check_checkpoint=False, legacy=True)
        else:
            from .network_store import NetworkIndex

            index, _ = NetworkIndex.load(path, check_checkpoint=True, legacy=True)  # as --resume
    except UserError as exc:
        return [str(exc).removesuffix("; cannot resume")]
    return ["\0" + str(p) for p in index.check_parts(good=good)]
