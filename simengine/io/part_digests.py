"""Content digests of the parts and the run id that ties an index to its parts.

Every part's digest is computed from its bytes while it is written (a tree of SHA-256 leaf
digests, :mod:`simengine.io.tree_hash`, hashed in threads in the same pass as the write, no
read-back) and recorded in the index that commits it (``/integrity/part``,
``/integrity/sha256``: ``sha256tree24:<hex>``; outputs of format 3 hold the plain SHA-256 of
the whole file, 64 hex digits, and are checked that way), and the list itself is bound into the
checkpoint digest (:mod:`simengine.io.checksum`). The digest covers the whole file: the data,
every attribute (``step``, ``lo``, ``hi``, ``first``, ``end``, ``done``, ``run_id``) and HDF5's
structure, so a part rewritten through h5py (fletcher32 recomputed), a word flipped in a way
fletcher32 cannot see, a part of another run, or an earlier part put in place of a later one all
differ from the recorded digest.

The run id (``run_id``, 32 hex digits) is created when a run starts; the index holds it as a root
attribute and every part as an attribute, and the index may map only ``<its own name>.parts/``:
a renamed copy of an index, or a parts directory of another run, is refused with one line.

Checked by ``--resume`` for every part the resumed file keeps (the snapshots up to the checkpoint,
the checkpoint, ``sources.h5``, every distance block) and by ``info --verify`` for every part;
the leaves of a part are read and hashed in parallel.
"""
from __future__ import annotations

import os
import stat
import uuid
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import h5py
import numpy as np

from . import tree_hash
from .integrity import Corrupt, special_kind

GROUP = "integrity"


def new_run_id() -> str:
    return uuid.uuid4().hex


def write_hashed(path, image, fault) -> str:
    """Write the part ``image`` durably and atomically (:func:`~simengine.io.durable.write_atomic`)
    and return its digest, computed while it is written (a tree of SHA-256 leaf digests in the
    hashing threads, :mod:`simengine.io.tree_hash`; no read-back)."""
    from .durable import write_atomic

    write_atomic(path, image, fault=fault)
    return image.digest


def put(f, digests: dict):
    """``/integrity/part`` (names) and ``/integrity/sha256`` of the parts an index maps."""
    from .h5image import put_array

    names = sorted(digests)
    g = f.create_group(GROUP)
    width = max([len(n.encode()) for n in names] + [1])
    put_array(g, "part", np.array([n.encode() for n in names], dtype=f"S{width}"))
    sums = [digests[n].encode() for n in names]
    put_array(g, "sha256", np.array(sums, dtype=f"S{max([len(d) for d in sums] + [64])}"))


def get(f, where) -> dict:
    """The recorded digests ``{part name: hex}`` of an open index, or :class:`Corrupt`."""
    from . import integrity

    if GROUP not in f:
        raise Corrupt(f"{where}: /{GROUP}", "missing (no part digests)")
    names = integrity.read(f, f"{GROUP}/part", f"{where}: /{GROUP}/part", 1, "S")
    sums = integrity.read(f, f"{GROUP}/sha256", f"{where}: /{GROUP}/sha256", 1, "S")
    if len(names) != len(sums):
        raise Corrupt(f"{where}: /{GROUP}", "part names and digests differ in number")
    return {n.decode(errors="replace"): s.decode(errors="replace") for n, s in zip(names, sums)}


def complete(output, names, known) -> dict:
    """{name: SHA-256} for the part ``names`` an index is about to map: from ``known`` (handed
    over by the writers), or — library use that wrote parts without them — hashed from disk."""
    from ..errors import OutputError

    root = Path(output).with_name(Path(output).name + ".parts")
    out = {}
    for name in names:
        if name not in known:
            try:
                known[name] = digest_of(root / name)
            except OSError as exc:
                raise OutputError(f"{root / name}: cannot read: {exc.strerror}") from None
        out[name] = known[name]
    return out


def digest_of(path, like=None) -> str:
    """The digest of the file ``path`` in the form of ``like`` (a recorded digest; default the
    form this simengine writes, a SHA-256 tree)."""
    fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    try:
        return tree_hash.file_digest(fd, like or f"sha256tree{tree_hash.LEAF_LOG2}:")
    finally:
        os.close(fd)


def record(digests: dict) -> list:
    """What the checkpoint digest covers of the part digests."""
    return sorted([k, v] for k, v in digests.items())


def run_id_of(f, where) -> str:
    from . import integrity

    rid = integrity.attr(f, "run_id", where)
    rid = rid.decode(errors="replace") if isinstance(rid, bytes) else rid
    if not isinstance(rid, str) or len(rid) != 32:
        raise Corrupt(where, f"attribute 'run_id' is {str(rid)[:40]!r}, expected 32 hex digits")
    return rid


def open_regular(path, where=None) -> int:
    """A read-only descriptor of the regular file ``path`` (opened non-blocking, so a FIFO never
    hangs), or :class:`Corrupt` naming what it is."""
    where = where or str(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except FileNotFoundError:
        raise Corrupt(where, "missing (the .parts directory must stay beside the output "
                             "file)") from None
    except OSError as exc:
        raise Corrupt(where, f"cannot open: {exc.strerror}") from None
    mode = os.fstat(fd).st_mode
    if not stat.S_ISREG(mode):
        os.close(fd)
        raise Corrupt(where, f"is {special_kind(mode)}, not a regular file")
    return fd


def _check_one(root, name, want, run_id, output):
    path = Path(root) / name
    where = f"{output}: part {path}"
    fd = open_regular(path, where)
    try:
        got = tree_hash.file_digest(fd, want)
    except ValueError:
        return Corrupt(where, f"has a digest of an unknown form in the index ({want[:24]!r})")
    except OSError as exc:
        raise Corrupt(where, f"cannot read: {exc.strerror}") from None
    finally:
        os.close(fd)
    if got == want:
        return None
    other = _part_run_id(path)
    if other is not None and run_id is not None and other != run_id:
        return Corrupt(where, f"belongs to another run (run id {other[:12]}…, the index's is "
                              f"{run_id[:12]}…)")
    return Corrupt(where, "does not match its SHA-256 digest in the index (the part was changed, "
                          "damaged or replaced)")


def _part_run_id(path):
    try:
        with h5py.File(path, "r", locking=False) as f:
            rid = f.attrs.get("run_id")
    except Exception:  # noqa: BLE001 - a damaged part: no better message than the digest's
        return None
    return rid.decode(errors="replace") if isinstance(rid, bytes) else rid


def check(output, names, digests, run_id, threads=4, good=None) -> list:
    """:class:`Corrupt` for every part among ``names`` whose bytes do not match ``digests``
    (a few parts at a time, each part's leaves hashed in the hashing threads: hashlib releases
    the GIL), in name order; the names that match are added to the set ``good``."""
    root = Path(output).with_name(Path(output).name + ".parts")
    problems = []
    todo = []
    for name in sorted(names):
        if name not in digests:
            problems.append(Corrupt(f"{output}: part {root / name}", "has no digest in the index"))
        else:
            todo.append(name)

    def one(name):
        try:
            return _check_one(root, name, digests[name], run_id, output)
        except Corrupt as exc:
            return exc
    with ThreadPoolExecutor(max_workers=max(1, min(threads, len(todo)))) as pool:
        for name, p in zip(todo, pool.map(one, todo)):
            if p is not None:
                problems.append(p)
            elif good is not None:
                good.add(name)
    return problems


class DigestedIndex:
    """What an index with part digests offers: ``output``, ``digests``, ``run_id`` and
    ``mapped()`` (the part names its virtual datasets map) are the subclass's."""

    def check_parts(self, names=None, good=None) -> list:
        """:class:`Corrupt` for each part (default: every mapped part) not matching its digest
        (the names that match are added to the set ``good``)."""
        names = self.mapped() if names is None else names
        return check(self.output, names, self.digests, self.run_id, good=good)
