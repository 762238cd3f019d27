"""Where the pieces of one output live, and the checks made before a run writes anything.

An output ``run.h5`` is:

* ``run.h5`` — the index: a small HDF5 file holding metadata, the series (steps, times,
  observables), results and virtual datasets (``/fields/phi``, ``/checkpoint/phi``,
  ``/distances``, ...) that join the parts. It is rewritten whole, atomically, at every commit.
* ``run.h5.parts/`` — the parts, each an HDF5 file written once, atomically, and never changed:
  ``phi/s<step>.r<lo>-<hi>.h5`` (rows lo:hi of axis 0 of the snapshot at ``step``),
  ``checkpoint/s<step>.r<lo>-<hi>.h5`` (the same for a checkpoint), ``sources.h5``,
  ``distances/r<first>-<end>.h5`` (rows of ``/distances``), ``checkpoint/d<done>.h5`` (network
  accumulators).
* ``run.xdmf`` — the snapshot series for ParaView/VisIt (field runs).
* ``run.h5.lock`` — the lock of the run writing the output (:mod:`simengine.io.lock`).

Virtual datasets name their parts relative to the index's directory (``run.h5.parts/...``, the
name the index had when it was written: HDF5 has no substitution for the virtual file's own
name). simengine's readers look for the parts in ``<the index's name>.parts/`` whatever that
name is, so a pair renamed or copied together by hand reads, verifies and resumes; ``simengine
mv`` / ``cp`` (:mod:`simengine.io.relocate`) also rewrite the mappings, so that plain h5py reads
the moved pair too.
"""
from __future__ import annotations

import errno
import os
from pathlib import Path

from ..errors import UserError
from .durable import TMP_SUFFIX, describe_oserror, remove, remove_tree

FORMAT_VERSION = 5
#: formats ``info --verify`` checks in full (part digests, the checkpoint digest, the datasets
#: the stored scenario implies): 3 (plain SHA-256 part digests, no index digest) and 5 (SHA-256
#: tree part digests, :mod:`simengine.io.tree_hash`, the index digest
#: ``/integrity@index_digest``, and a field checkpoint taken at a snapshot's step mapping the
#: snapshot's parts instead of its own). 4 was a development format, never released. Only
#: :data:`FORMAT_VERSION` is resumed: a format-3 index has no index digest, so its stored scenario
#: and format version are bound by nothing, and a resume would seal whatever they were edited to
#: (docs/output.md)
DIGESTED_VERSIONS = (3, 5)
#: the first format whose index carries ``/integrity@index_digest`` (checked by ``--resume``,
#: ``info --verify`` and the readers, :mod:`simengine.io.file_checks`)
INDEX_DIGEST_FROM = 5
#: observables columns every field index holds, in file order
REQUIRED_SERIES = ("step", "time", "mass", "free_energy", "phi_min", "phi_max", "length",
                   "wall_time")
#: the coarsening measures (simengine.field.lengths.COLUMNS; indexes written before them lack
#: them: read as NaN)
MEASURE_SERIES = ("length_energy", "interface_density", "length_interface", "length_shell",
                  "length_correlation")
#: observables columns of a field index, in file order
SERIES = REQUIRED_SERIES + MEASURE_SERIES
#: the optional series of the radial S(k) (``output.structure_factor``): one row of shells per
#: observables row, and the shells' mean |k| (``observables/structure_factor_k``)
RADIAL = "structure_factor"


def check_version(output, version, verifying=False):
    """UserError (one line, exit 2) unless an index of format ``version`` is resumed (only
    :data:`FORMAT_VERSION`) or, ``verifying`` (``info --verify``), checked (:data:`DIGESTED_VERSIONS`)."""
    if version == FORMAT_VERSION or (verifying and version in DIGESTED_VERSIONS):
        return
    why = ""
    if version == 3:
        why = (" (a format-3 index has no index digest: its stored scenario is bound by nothing; "
               "`simengine info --verify` still checks it)")
    raise UserError(f"{output}: written with output format {version}; it can be read but not "
                    f"resumed by this simengine (format {FORMAT_VERSION}){why}; run again with "
                    f"--overwrite")


def parts_dir(output) -> Path:
    output = Path(output)
    return output.with_name(output.name + ".parts")


def parts_ref(output) -> str:
    """The parts directory as virtual datasets name it (relative to the index's directory)."""
    return Path(output).name + ".parts"


def xdmf_path(output) -> Path:
    return Path(output).with_suffix(".xdmf")


def block_name(kind, step, lo, hi) -> str:
    """``phi/s000000000100.r0-96.h5`` — a snapshot (kind ``phi``) or ``checkpoint`` block."""
    return f"{kind}/s{int(step):012d}.r{int(lo)}-{int(hi)}.h5"


def rows_name(first, end) -> str:
    return f"distances/r{int(first):012d}-{int(end):012d}.h5"


def network_checkpoint_name(done) -> str:
    return f"checkpoint/d{int(done):012d}.h5"


SOURCES_NAME = "sources.h5"


def mapped_ref(f, output) -> str:
    """The parts directory the index ``f`` maps, as its virtual datasets name it: the root
    attribute ``parts`` (bound by the index digest), which is ``<its name when written>.parts``.
    It differs from :func:`parts_ref` after the pair was renamed or copied by hand; the parts are
    then read from the index's own ``<name>.parts/`` (:func:`check_parts_beside`)."""
    try:
        ref = f.attrs.get("parts")
    except Exception:  # noqa: BLE001 - an unreadable attribute: the index's own name
        ref = None
    ref = ref.decode("utf-8", "replace") if isinstance(ref, bytes) else ref
    if isinstance(ref, str) and ref.endswith(".parts") and "/" not in ref and ref != ".parts":
        return ref
    return parts_ref(output)


def own_part(file, ref):
    """The part name (relative to the parts directory) of the mapped file name ``file``, or None
    when ``file`` is not under ``ref/`` (the parts directory the index maps)."""
    file = str(file)
    return file[len(ref) + 1:] if file.startswith(ref + "/") else None


def foreign_parts(output, file, ref=None) -> str:
    """Why an index may not map ``file``: every mapping names a part of the one parts directory
    the index was written with (``ref``, :func:`mapped_ref`)."""
    ref = ref or parts_ref(output)
    return f"maps an unexpected part {str(file)[:80]!r} (not a part of {ref!r})"


def check_parts_beside(output, ref):
    """UserError-free check that the parts of an index mapping ``ref`` are where readers look:
    ``<its own name>.parts/``. Returns None when they are there (or when nothing of them is
    anywhere: the usual missing-part messages follow), else the one-line reason: the index was
    renamed or copied while its parts stayed under the name it was written with."""
    output = Path(output)
    if ref == parts_ref(output) or parts_dir(output).is_dir():
        return None
    if (output.parent / ref).is_dir():
        old = output.with_name(ref[:-len(".parts")])
        return (f"its parts directory {parts_dir(output).name} is missing; {ref} beside it holds "
                f"the parts of the file it was copied or renamed from "
                f"(`simengine cp {old} {output}` copies an output with its parts)")
    return None


def list_parts(output):
    """All part files under the parts directory, as names relative to it."""
    root = parts_dir(output)
    out = set()
    if not root.is_dir():
        return out
    for dirpath, _, files in os.walk(root):
        for name in files:
            out.add(str(Path(dirpath, name).relative_to(root)))
    return out


def remove_output(output):
    """Delete an output and everything that belongs to it (not its lock)."""
    output = Path(output)
    for p in (output, output.with_name(output.name + TMP_SUFFIX), xdmf_path(output),
              xdmf_path(output).with_name(xdmf_path(output).name + TMP_SUFFIX)):
        remove(p)
    remove_tree(parts_dir(output))


def check_utf8(path):
    """UserError for a path that is not valid UTF-8 (an undecodable byte reaches Python as a lone
    surrogate): HDF5 virtual datasets name their parts by UTF-8 file names."""
    text = str(path)
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = text.encode("utf-8", "surrogateescape").decode("utf-8", "replace")
        raise UserError(f"{shown[:200]}: the path is not valid UTF-8; rename it (simengine names "
                        f"its part files by UTF-8 paths)") from None


def check_output_path(output, inputs=()):
    """One-line errors (exit 2) for an output path that cannot work, before anything is written:
    also an output (or its ``.xdmf``) that exists as anything but a regular file, and an output
    that is one of the run's ``inputs`` (:mod:`simengine.io.output_write`)."""
    from .durable import check_replaceable, same_file

    check_utf8(output)
    output = Path(output)
    if not str(output).strip() or str(output) == ".":
        raise UserError(f"{str(output)!r}: an empty output path; give a file name such as "
                        f"outputs/run.h5")
    if output.is_dir():
        raise UserError(f"{output}: the output is a directory; give a file name such as "
                        f"{output / 'run.h5'}")
    for p in (output, xdmf_path(output)):
        check_replaceable(p)
    for given in inputs:
        if given is not None and same_file(output, given):
            raise UserError(f"{output}: is this run's input ({given}); writing the output there "
                            f"would destroy it (give another --output)")
    parent = output.parent
    for p in [parent, *parent.parents]:
        if p.exists() and not p.is_dir():
            raise UserError(f"{output}: cannot create the output: {p} is a file, not a directory")
    try:
        parent.mkdir(parents=True, exist_ok=True)
    except OSError as exc:
        raise UserError(f"{output}: cannot create the directory {parent}: "
                        f"{describe_oserror(exc)}") from None
    if parts_dir(output).exists() and not parts_dir(output).is_dir():
        raise UserError(f"{output}: {parts_dir(output)} exists and is not a directory")


def probe_writable(output):
    """Create and remove a file beside ``output`` (exit 2 when the directory is not writable)."""
    output = Path(output)
    probe = output.with_name(f".{output.name}.probe-{os.getpid()}")
    try:
        fd = os.open(probe, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        os.close(fd)
        os.unlink(probe)
    except OSError as exc:
        if exc.errno in (errno.ENOSPC, errno.EDQUOT):
            return  # a full disk is reported by the first write (exit 1), not as a bad path
        raise UserError(f"{output}: cannot write in {output.parent or Path('.')}: "
                        f"{describe_oserror(exc)}") from None


def retire_checkpoint_parts(output, previous: set, old: set, current: set, complete: bool) -> set:
    """After an index naming checkpoint parts ``current`` was committed: delete the parts of
    earlier checkpoints, except those of the checkpoint just replaced (``old``), kept one more
    commit for readers that opened the previous index (none are kept once the run is complete).
    Returns the names to keep for the next commit (``previous``)."""
    from .durable import remove

    keep = current if complete else current | old
    for name in (previous | old) - keep:
        remove(parts_dir(output) / name)
    return keep - current
