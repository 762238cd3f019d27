"""Field output at any scale: snapshot and checkpoint blocks are parts; the index joins them.

Two roles, so that several processes can write one field without sending it to one process:

* :class:`FieldParts` — any process (an MPI rank holding rows ``lo:hi`` of axis 0) writes its own
  block of a snapshot (:meth:`FieldParts.append_snapshot`) or of a checkpoint
  (:meth:`FieldParts.write_checkpoint`) as one part file, durable and atomic, and reads any rows of
  the committed checkpoint back (:func:`load_checkpoint`, with any split into blocks).
* :class:`FieldIndex` — one process (rank 0), after every writer's parts are durable (a barrier),
  commits them: the index ``<output>`` is rebuilt in memory with the new rows and written
  atomically, then ``<stem>.xdmf``. ``/fields/phi`` and ``/checkpoint/phi`` are virtual datasets
  over the parts, so plain h5py reads them like ordinary datasets.

Cost of a write event: the bytes of the new block(s) (each written once), plus rewriting the
index, whose size is about 100 bytes per stored (snapshot × block) plus 64 bytes per observables
row — independent of the field size.

Crash safety: a part becomes visible only when an index naming it is committed (``os.replace``);
parts of a write that did not commit are unreferenced and deleted on ``--resume``. The parts of
the previous checkpoint are deleted only at the commit after the next one, so a reader that opened
the index just before a commit still finds them.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..errors import OutputError, UserError
from . import faults
from . import checksum, integrity, part_digests
from .durable import make_dirs, remove, write_index
from .h5image import Image, put_array, put_virtual, virtual_mappings
from .integrity import DAMAGE, Corrupt
from .layout import (FORMAT_VERSION, check_version, block_name, foreign_parts, list_parts,
                     check_parts_beside, mapped_ref, parts_dir,
                     parts_ref, retire_checkpoint_parts, xdmf_path)
from .layout import MEASURE_SERIES, RADIAL, REQUIRED_SERIES, SERIES  # noqa: F401 (re-exported)
from .xdmf import write_xdmf


def _blocks(blocks, n0, where):
    """Sorted ((lo, hi), ...) covering 0..n0 exactly, or ValueError/Corrupt."""
    blocks = tuple(sorted((int(lo), int(hi)) for lo, hi in blocks))
    edge = 0
    for lo, hi in blocks:
        if lo != edge or hi <= lo:
            break
        edge = hi
    else:
        if edge == n0:
            return blocks
    raise Corrupt(where, f"blocks {list(blocks)} do not cover rows 0..{n0} exactly once")


class FieldParts:
    """Writes the blocks of one process into the parts directory of ``output``."""

    def __init__(self, output, grid_shape, dtype, compression="none", run_id=None):
        self.output = Path(output)
        self.root = parts_dir(output)
        self.grid_shape = tuple(int(n) for n in grid_shape)
        self.dtype = np.dtype(dtype)
        self.compression = compression or "none"
        self.run_id = run_id       # written into every part (the index's run id)
        self.digests = {}          # part name -> SHA-256 of the parts written by this writer
        self._dirs = set()

    def append_snapshot(self, step, block, lo=0):
        """Write rows ``lo:lo+len(block)`` of the snapshot at ``step``; returns ``(lo, hi)``."""
        return self._write("phi", step, block, lo)

    def write_checkpoint(self, step, block, lo=0):
        """Write rows ``lo:lo+len(block)`` of the checkpoint at ``step``; returns ``(lo, hi)``."""
        return self._write("checkpoint", step, block, lo)

    def path_of(self, kind, step, lo, hi) -> Path:
        return self.root / block_name(kind, step, lo, hi)

    def _write(self, kind, step, block, lo):
        from .. import profile

        if not hasattr(block, "window"):  # else a device array (io/part_stream.py)
            block = np.ascontiguousarray(block, dtype=self.dtype)
        elif block.dtype != self.dtype:
            raise ValueError(f"a {block.dtype} block for a {self.dtype} output")
        lo = int(lo)
        hi = lo + (block.shape[0] if block.ndim else 0)
        if block.shape[1:] != self.grid_shape[1:] or not 0 <= lo < hi <= self.grid_shape[0]:
            raise ValueError(f"block of shape {block.shape} at row {lo} does not fit the grid "
                             f"{self.grid_shape}")
        image = Image()
        with profile.phase("part: HDF5 structure built in memory"), image as f:
            put_array(f, "phi", block, self.compression, image=image)
            f.attrs.update({"kind": kind, "step": int(step), "lo": lo, "hi": hi,
                            "grid_shape": list(self.grid_shape)})
            if self.run_id is not None:
                f.attrs["run_id"] = self.run_id
        if kind not in self._dirs:
            make_dirs(self.root / kind)
            self._dirs.add(kind)
        with profile.phase(f"part: {kind} written (streamed, hashed, fsynced, renamed)",
                           image.nbytes):
            digest = part_digests.write_hashed(self.path_of(kind, step, lo, hi), image, kind)
        self.digests[block_name(kind, step, lo, hi)] = digest
        return lo, hi

    def take_digests(self) -> dict:
        """The digests of the parts written since the last call (handed to the index)."""
        out, self.digests = self.digests, {}
        return out

    def read(self, kind, step, lo, hi, rows=None, check_all=False):
        """Rows ``rows`` (absolute, default all) of the committed block ``lo:hi``; Corrupt if bad."""
        path = self.path_of(kind, step, lo, hi)
        where = f"{self.output}: {kind} block rows {lo}:{hi} at step {step} ({path})"
        f = integrity.open_part(path, where)
        try:
            ds = f.get("phi")
            if ds is None:
                raise Corrupt(where, "dataset 'phi' is missing")
            for key, want in (("kind", kind), ("step", step), ("lo", lo), ("hi", hi)):
                got = integrity.attr(f, key, where)
                if (got.decode() if isinstance(got, bytes) else got) != want:
                    raise Corrupt(where, f"attribute {key!r} is {got!r}, expected {want!r}")
            if ds.shape != (hi - lo, *self.grid_shape[1:]) or ds.dtype != self.dtype:
                raise Corrupt(where, f"holds {ds.dtype} {ds.shape}, expected {self.dtype} "
                                     f"{(hi - lo, *self.grid_shape[1:])}")
            if check_all:
                integrity.check_dataset(ds, where)
            a, b = rows if rows is not None else (lo, hi)
            try:
                return ds[a - lo:b - lo]
            except (OSError, RuntimeError) as exc:
                raise Corrupt(where, integrity.reason(exc)) from None
        finally:
            f.close()


class FieldIndex(part_digests.DigestedIndex):
    """The committed state of a field output and the writer of its index (one process)."""

    def __init__(self, output, grid_shape, spacing, dt, dtype, attrs, steps_total,
                 structure_factor=False):
        self.output = Path(output)
        self.grid_shape = tuple(int(n) for n in grid_shape)
        self.spacing = float(spacing)
        self.dt = float(dt)
        self.dtype = np.dtype(dtype)
        self.attrs = dict(attrs)             # root attributes written as they are
        self.steps_total = int(steps_total)
        self.complete = False
        self.steps = []                      # snapshot steps
        self.snap_blocks = []                # per snapshot: ((lo, hi), ...)
        self.obs = {k: [] for k in SERIES + ((RADIAL,) if structure_factor else ())}
        self.radial_k = None                 # the shells' mean |k| (with RADIAL)
        self.ckpt_step = None
        self.ckpt_blocks = ()
        self.ckpt_kind = "checkpoint"        # or "phi": the checkpoint maps the snapshot's parts
        self.previous_ckpt = set()           # part names kept one more commit for readers
        self.run_id = self.attrs.setdefault("run_id", part_digests.new_run_id())
        self.digests = {}                    # part name -> SHA-256, for every mapped part
        self.hook = None                     # optional callable(h5py.File) run before an index is sealed

    # ------------------------------------------------------------------ committing
    def time_of(self, step):
        """t = t₀ + step·dt; t₀ is the root attribute ``time_origin`` (0 unless the run started
        from a stored field with ``initial.time_from_file``)."""
        return float(self.attrs.get("time_origin", 0.0)) + step * self.dt

    def commit(self, snapshots=(), checkpoint=None, observations=(), complete=False,
               digests=None):
        """Commit new parts and rows: ``snapshots`` = [(step, blocks)], ``checkpoint`` =
        (step, blocks) or (step, blocks, kind) or None — ``kind`` "phi": the checkpoint is the
        snapshot at ``step`` (its parts, written once), else its own "checkpoint" parts —
        ``observations`` = [row dict], ``digests`` = {part name: SHA-256}
        of the new parts (:meth:`FieldParts.take_digests`; a part without one is hashed from its
        file). The parts must be durable already (written by every writer). Raises OutputError;
        then nothing changed."""
        n0 = self.grid_shape[0]
        new_steps = list(self.steps)
        new_blocks = list(self.snap_blocks)
        for step, blocks in snapshots:
            step = int(step)
            if new_steps and step <= new_steps[-1]:
                raise ValueError(f"snapshot step {step} is not after {new_steps[-1]}")
            new_steps.append(step)
            new_blocks.append(_blocks(blocks, n0, str(self.output)))
        new_obs = {k: list(v) for k, v in self.obs.items()}
        for row in observations:
            for k in new_obs:
                new_obs[k].append(row[k])
        ckpt_step, ckpt_blocks, ckpt_kind = self.ckpt_step, self.ckpt_blocks, self.ckpt_kind
        if checkpoint is not None:
            ckpt_step, ckpt_blocks = int(checkpoint[0]), _blocks(checkpoint[1], n0, str(self.output))
            ckpt_kind = checkpoint[2] if len(checkpoint) > 2 else "checkpoint"
            if ckpt_kind == "phi" and (ckpt_step not in new_steps or tuple(ckpt_blocks) !=
                                       tuple(new_blocks[new_steps.index(ckpt_step)])):
                raise ValueError(f"a checkpoint at step {ckpt_step} mapping a snapshot that "
                                 f"is not there with the same blocks")
        if ckpt_step is None:
            raise ValueError("the first commit must include a checkpoint")
        old_ckpt = self.checkpoint_names()
        state = dict(steps=new_steps, snap_blocks=new_blocks, obs=new_obs, ckpt_step=ckpt_step,
                     ckpt_blocks=ckpt_blocks, ckpt_kind=ckpt_kind, complete=bool(complete))
        state["digests"] = part_digests.complete(
            self.output, self._mapped(new_steps, new_blocks, ckpt_step, ckpt_blocks, ckpt_kind),
            {**self.digests, **(digests or {})})
        from .. import profile

        with profile.phase("index: commit (built and written)"):
            image = Image()
            with image as f:
                self._build(f, **state)
            after = write_index(self.output, image)
        faults.reached("commit.done")
        for k, v in state.items():
            setattr(self, k, v)
        try:
            write_xdmf(xdmf_path(self.output), self.output, self.grid_shape, self.dtype,
                       self.spacing, [self.time_of(s) for s in self.steps])
        except OutputError as exc:
            after = after or exc
        if checkpoint is not None:  # a checkpoint's own parts only: snapshots stay
            own = lambda names: {n for n in names if n.startswith("checkpoint/")}  # noqa: E731
            self.previous_ckpt = retire_checkpoint_parts(
                self.output, self.previous_ckpt, own(old_ckpt), own(self.checkpoint_names()),
                complete)
        faults.reached("commit.retired")
        if after is not None:
            after.committed = True  # the new index is in place: its parts must stay
            raise after

    @staticmethod
    def _mapped(steps, snap_blocks, ckpt_step, ckpt_blocks, ckpt_kind="checkpoint"):
        names = {block_name(ckpt_kind, ckpt_step, lo, hi) for lo, hi in ckpt_blocks}
        for step, blocks in zip(steps, snap_blocks):
            names |= {block_name("phi", step, lo, hi) for lo, hi in blocks}
        return names

    def mapped(self):
        """Part names the committed index maps (its virtual datasets)."""
        return self._mapped(self.steps, self.snap_blocks, self.ckpt_step, self.ckpt_blocks,
                            self.ckpt_kind)

    def checkpoint_names(self):
        if self.ckpt_step is None:
            return set()
        return {block_name(self.ckpt_kind, self.ckpt_step, lo, hi)
                for lo, hi in self.ckpt_blocks}

    def referenced(self):
        """Part names the committed index refers to."""
        names = self.checkpoint_names() | self.previous_ckpt
        for step, blocks in zip(self.steps, self.snap_blocks):
            names |= {block_name("phi", step, lo, hi) for lo, hi in blocks}
        return names

    def record(self, steps, snap_blocks, obs, ckpt_step, ckpt_blocks, complete, digests=None,
               version=None, ckpt_kind=None):
        """What the checkpoint digest covers: everything that steers a resume or the series,
        the run id, the parts' digests and, when the checkpoint maps a snapshot's parts, that
        (``"source": "phi"``; absent otherwise, as in format 3 and 4 records)."""
        ckpt_kind = self.ckpt_kind if ckpt_kind is None else ckpt_kind
        checkpoint = {"step": ckpt_step, "time": self.time_of(ckpt_step),
                      "blocks": [list(b) for b in ckpt_blocks]}
        if ckpt_kind != "checkpoint":
            checkpoint["source"] = ckpt_kind
        flat = np.array([(i, lo, hi) for i, b in enumerate(snap_blocks) for lo, hi in b],
                        dtype=np.int64).reshape(-1, 3)
        return {"kind": "field", "format": version or FORMAT_VERSION,
                "grid_shape": list(self.grid_shape),
                "dtype": self.dtype.str, "spacing": self.spacing, "dt": self.dt,
                "steps_total": self.steps_total, "complete": bool(complete),
                "checkpoint": checkpoint,
                **({"time_origin": float(self.attrs["time_origin"])}
                   if float(self.attrs.get("time_origin", 0.0)) else {}),
                "snapshots": checksum.array_digest(np.asarray(steps, dtype=np.int64)),
                "snapshot_blocks": checksum.array_digest(flat),
                "observables": {k: checksum.array_digest(self._column(obs, k)) for k in obs},
                "run_id": self.run_id,
                "parts": part_digests.record(self.digests if digests is None else digests),
                # the adaptive controller's state at the checkpoint (field/timed.py), if any
                **({"integrator_state": self.attrs["integrator_state"]}
                   if "integrator_state" in self.attrs else {})}

    def _column(self, obs, k):
        if k == RADIAL:  # rows × shells
            shells = len(self.radial_k) if self.radial_k is not None else 0
            return np.asarray(obs[k], dtype=np.float64).reshape(len(obs[k]), shells)
        return np.asarray(obs[k], dtype=np.int64 if k == "step" else np.float64)

    def _build(self, f, steps, snap_blocks, obs, ckpt_step, ckpt_blocks, ckpt_kind, complete,
               digests):
        ref = parts_ref(self.output)
        for k, v in self.attrs.items():
            f.attrs[k] = v
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["kind"] = "field"
        f.attrs["steps_total"] = self.steps_total
        f.attrs["complete"] = bool(complete)
        f.attrs["parts"] = ref
        g = f.create_group("fields")
        g.attrs["grid_shape"] = list(self.grid_shape)
        g.attrs["spacing"] = self.spacing
        g.attrs["dt"] = self.dt
        put_array(g, "step", np.asarray(steps, dtype=np.int64))
        put_array(g, "time", np.asarray([self.time_of(s) for s in steps], dtype=np.float64))
        row_shape = self.grid_shape[1:]
        put_virtual(g, "phi", (len(steps), *self.grid_shape), self.dtype,
                    [((i, lo, *[0] * len(row_shape)), (hi - lo, *row_shape),
                      f"{ref}/{block_name('phi', s, lo, hi)}", "phi")
                     for i, (s, blocks) in enumerate(zip(steps, snap_blocks)) for lo, hi in blocks])
        o = f.create_group("observables")
        for k in obs:
            put_array(o, k, self._column(obs, k))
        if RADIAL in obs:
            put_array(o, RADIAL + "_k", np.asarray(
                self.radial_k if self.radial_k is not None else [], dtype=np.float64))
        c = f.create_group("checkpoint")
        put_virtual(c, "phi", self.grid_shape, self.dtype,
                    [((lo, *[0] * len(row_shape)), (hi - lo, *row_shape),
                      f"{ref}/{block_name(ckpt_kind, ckpt_step, lo, hi)}", "phi")
                     for lo, hi in ckpt_blocks],
                    attrs={"step": int(ckpt_step), "time": self.time_of(ckpt_step)})
        part_digests.put(f, digests)
        c.attrs["digest"] = checksum.digest(self.record(steps, snap_blocks, obs, ckpt_step,
                                                        ckpt_blocks, complete, digests,
                                                        ckpt_kind=ckpt_kind))
        if self.hook is not None:
            self.hook(f)
        checksum.seal_index(f)  # last: binds every attribute, dataset and mapping of the index

    # ------------------------------------------------------------------ resuming
    def truncate(self, step):
        """Forget snapshots and observables rows after ``step`` (the checkpoint a resume starts
        from); committed by the next :meth:`commit`."""
        keep = int(np.searchsorted(np.asarray(self.steps, dtype=np.int64), step, side="right"))
        self.steps, self.snap_blocks = self.steps[:keep], self.snap_blocks[:keep]
        keep = int(np.searchsorted(np.asarray(self.obs["step"], dtype=np.int64), step, side="right"))
        self.obs = {k: v[:keep] for k, v in self.obs.items()}

    @classmethod
    def load(cls, output, check_checkpoint=True, legacy=False):
        """The committed state of ``output``, every steering value checked; UserError (exit 2)
        for a foreign, truncated, corrupted or tampered file. ``legacy``: also a format-3 file
        (``info --verify``; it has no index digest and is never resumed)."""
        from .reader import open_output

        output = Path(output)
        f = open_output(output, relinked=True)  # a pair renamed by hand: its own parts
        try:
            return cls._load(output, f, check_checkpoint, legacy)
        except Corrupt as exc:
            raise UserError(f"{exc}; cannot resume") from None
        except DAMAGE as exc:  # h5py on a damaged index: one line, never a traceback
            raise UserError(f"{output}: damaged index ({integrity.reason(exc)}); "
                            f"cannot resume") from None
        finally:
            f.close()

    @classmethod
    def _load(cls, output, f, check_checkpoint, legacy=False):
        at = lambda name: f"{output}: /{name}"  # noqa: E731
        version = integrity.attr(f, "format_version", f"{output}")
        check_version(output, version, verifying=legacy)  # format 3: verified, not resumed
        integrity.check_required(f, output)  # every dataset the stored scenario implies
        if "fields" not in f:
            raise Corrupt(at("fields"), "missing")
        g = f["fields"]
        shape = tuple(int(n) for n in integrity.attr(g, "grid_shape", at("fields")))
        spacing = integrity.attr(g, "spacing", at("fields"), float)
        dt = integrity.attr(g, "dt", at("fields"), float)
        if "phi" not in g or not g["phi"].is_virtual:
            raise Corrupt(at("fields/phi"), "missing or not a virtual dataset")
        dtype = g["phi"].dtype
        attrs = {k: v for k, v in f.attrs.items()
                 if k not in ("format_version", "kind", "steps_total", "complete", "parts")}
        self = cls(output, shape, spacing, dt, dtype, attrs,
                   integrity.attr(f, "steps_total", str(output), int))
        self.format = version
        self.complete = bool(integrity.attr(f, "complete", str(output)))
        steps = integrity.read(f, "fields/step", at("fields/step"), 1, "iu").astype(np.int64)
        times = integrity.read(f, "fields/time", at("fields/time"), 1, "f")
        self.obs = {k: integrity.read(f, f"observables/{k}", at(f"observables/{k}"), 1,
                                      "iu" if k == "step" else "f").tolist()
                    for k in SERIES if k in REQUIRED_SERIES or f"observables/{k}" in f}
        if f"observables/{RADIAL}" in f:
            self.radial_k = integrity.read(f, f"observables/{RADIAL}_k",
                                           at(f"observables/{RADIAL}_k"), 1, "f")
            rows = integrity.read(f, f"observables/{RADIAL}", at(f"observables/{RADIAL}"), 2,
                                  "f")
            self.obs[RADIAL] = list(rows)
        self.steps = steps.tolist()
        snap_maps = self._mappings(g["phi"], at("fields/phi"), (len(self.steps), *shape), 1)
        self.snap_blocks = [tuple(sorted((lo, hi) for j, lo, hi, _ in snap_maps if j == i))
                            for i in range(len(self.steps))]
        if "checkpoint" not in f or "phi" not in f["checkpoint"]:
            raise Corrupt(at("checkpoint/phi"), "missing")
        ck = f["checkpoint/phi"]
        self.ckpt_step = integrity.attr(ck, "step", at("checkpoint/phi"), int)
        ck_time = integrity.attr(ck, "time", at("checkpoint/phi"), float)
        ck_maps = self._mappings(ck, at("checkpoint/phi"), shape, 0)
        self.ckpt_blocks = tuple(sorted((lo, hi) for _, lo, hi, _ in ck_maps))
        mapped = mapped_ref(f, output)   # the name it was written with (renamed pairs differ)
        ref = mapped + "/"
        # the kind of parts the checkpoint maps (the digest below covers it; each file is
        # checked below to be that kind's part at the checkpoint's step)
        self.ckpt_kind = "phi" if ck_maps and ck_maps[0][3].startswith(
            ref + "phi/") else "checkpoint"
        self.run_id = part_digests.run_id_of(f, str(output))
        self.digests = part_digests.get(f, str(output))
        stored = integrity.attr(f["checkpoint"], "digest", at("checkpoint"))
        record = self.record(self.steps, self.snap_blocks, self.obs, self.ckpt_step,
                             self.ckpt_blocks, self.complete, self.digests, version,
                             self.ckpt_kind)
        if not checksum.matches(record, stored):
            raise Corrupt(at("checkpoint"), "the checkpoint's step, the series or the parts list "
                                            "do not match their digest (the file was modified)")
        self._check(times, ck_time, at)
        for k in MEASURE_SERIES:  # an index written before the coarsening measures (its
            self.obs.setdefault(k, [float("nan")] * len(self.obs["step"]))  # digest: without)
        self.snap_blocks = [_blocks(b, shape[0], at("fields/phi")) for b in self.snap_blocks]
        self.ckpt_blocks = _blocks(self.ckpt_blocks, shape[0], at("checkpoint/phi"))
        for kind, maps, name in (("phi", snap_maps, "fields/phi"),
                                 (self.ckpt_kind, ck_maps, "checkpoint/phi")):
            for i, lo, hi, file in maps:
                step = self.steps[i] if name == "fields/phi" else self.ckpt_step
                if file != ref + block_name(kind, step, lo, hi):
                    raise Corrupt(at(name), foreign_parts(output, file, mapped))
        why = check_parts_beside(output, mapped)
        if why is not None:
            raise Corrupt(str(output), why)
        missing = self.mapped() - set(self.digests)
        if missing:
            raise Corrupt(at("integrity"), f"no digest for part {sorted(missing)[0]!r}")
        integrity.check_bound(f, output, self.format)  # required datasets, the index digest
        if check_checkpoint:
            parts = FieldParts(output, self.grid_shape, self.dtype)
            for lo, hi in self.ckpt_blocks:
                parts.read(self.ckpt_kind, self.ckpt_step, lo, hi, rows=(lo, lo),
                           check_all=True)
        return self

    def _check(self, times, ck_time, at):
        """Values that contradict each other (even with a recomputed digest) are rejected."""
        s = self.ckpt_step
        if not 0 <= s <= self.steps_total:
            raise Corrupt(at("checkpoint/phi"), f"step {s} is outside 0..{self.steps_total}")
        if ck_time != self.time_of(s):
            raise Corrupt(at("checkpoint/phi"), f"time {ck_time!r} is not t₀ + step·dt = "
                                                f"{self.time_of(s)!r}")
        if self.ckpt_kind == "phi" and s not in self.steps:
            raise Corrupt(at("checkpoint/phi"), f"maps the snapshot at step {s}, which is not "
                                                f"in /fields/step")
        if self.ckpt_kind == "phi" and self.format < FORMAT_VERSION:
            raise Corrupt(at("checkpoint/phi"), f"maps a snapshot's parts, which format "
                                                f"{self.format} never did")
        if self.complete and s != self.steps_total:
            raise Corrupt(str(self.output), f"marked complete but the checkpoint is at step {s} "
                                            f"of {self.steps_total}")
        for name, steps in (("fields/step", self.steps), ("observables/step", self.obs["step"])):
            a = np.asarray(steps, dtype=np.int64)
            if len(a) and (a[0] < 0 or np.any(np.diff(a) <= 0) or a[-1] > self.steps_total):
                raise Corrupt(at(name), "steps are not increasing within 0..steps_total")
        if len(times) != len(self.steps) or any(t != self.time_of(st)
                                                for t, st in zip(times, self.steps)):
            raise Corrupt(at("fields/time"), "does not match t₀ + /fields/step·dt")
        lengths = {len(v) for v in self.obs.values()}
        if len(lengths) != 1:
            raise Corrupt(at("observables"), "columns have different lengths")

    @staticmethod
    def _mappings(ds, where, shape, axis):
        """[(index along the leading axis or 0, lo, hi, file)] of a virtual dataset's parts."""
        if tuple(ds.shape) != tuple(shape):
            raise Corrupt(where, f"shape {ds.shape} does not match {tuple(shape)}")
        out = []
        for start, stop, file, _ in virtual_mappings(ds):
            out.append((start[0] if axis else 0, start[axis], stop[axis], file))
            if axis and not 0 <= start[0] < shape[0]:
                raise Corrupt(where, f"maps a part outside the dataset: {file!r}")
        return out

    def read_checkpoint(self, lo=0, hi=None):
        """Rows ``lo:hi`` of the committed checkpoint, from whichever blocks hold them."""
        hi = self.grid_shape[0] if hi is None else int(hi)
        parts = FieldParts(self.output, self.grid_shape, self.dtype)
        pieces = []
        try:
            for blo, bhi in self.ckpt_blocks:
                a, b = max(lo, blo), min(hi, bhi)
                if a < b:
                    pieces.append(parts.read(self.ckpt_kind, self.ckpt_step, blo, bhi,
                                             rows=(a, b)))
        except Corrupt as exc:
            raise UserError(f"{exc}; cannot resume") from None
        return np.concatenate(pieces) if pieces else np.empty((0, *self.grid_shape[1:]),
                                                              self.dtype)


def load_checkpoint(output, lo=0, hi=None):
    """``(step, rows lo:hi of the checkpoint)`` of a committed field output (any block split)."""
    index = FieldIndex.load(output, check_checkpoint=False)
    return index.ckpt_step, index.read_checkpoint(lo, hi)


def clean_parts(index: FieldIndex):
    """Delete parts the committed index does not refer to (uncommitted or superseded writes)."""
    keep = index.referenced()
    root = parts_dir(index.output)
    for name in list_parts(index.output) - keep:
        remove(root / name)

