"""Reading simengine outputs from analysis scripts.

>>> import simengine
>>> with simengine.open("outputs/spinodal-2d.h5") as r:        # doctest: +SKIP
...     F = r.observables["free_energy"]; phi = r.final_field
"""
from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np
import yaml

from ..errors import UserError
from .layout import FORMAT_VERSION  # noqa: F401 (the layout this simengine writes)
from .metadata import is_dimension_only


def check_input_file(path, what="a simengine output file"):
    """One-line UserError unless ``path`` is an existing regular file with a UTF-8 name (checked
    with ``stat``, never opened: a FIFO would block)."""
    import stat

    from .integrity import special_kind
    from .layout import check_utf8

    check_utf8(path)
    path = Path(path)
    try:
        st_mode = path.stat().st_mode
    except FileNotFoundError:
        raise UserError(f"{path}: no such file") from None
    except OSError as exc:
        raise UserError(f"{path}: cannot read: {exc.strerror}") from None
    if not stat.S_ISREG(st_mode):
        raise UserError(f"{path}: is {special_kind(st_mode)}, not {what}")


def open_output(path, mode="r", cls=h5py.File, relinked=False):
    """Open ``path`` as a simengine HDF5 output, or raise a one-line UserError. ``relinked``: its
    virtual datasets read the index's own ``<name>.parts/`` even when the pair was renamed by
    hand (:class:`_RelinkedFile`)."""
    from .integrity import DAMAGE

    path = Path(path)
    check_input_file(path)
    if relinked:
        f = open_output(path, mode, _RelinkedFile)
        from .layout import mapped_ref, parts_dir, parts_ref

        try:
            ref = mapped_ref(f, path)
            if ref != parts_ref(path) and parts_dir(path).is_dir():
                f.relink(ref, parts_dir(path))
        except BaseException:
            f.close()
            raise
        return f
    try:
        f = cls(path, mode)
    except DAMAGE as exc:
        reason = str(exc).split("(")[0].strip() or "unreadable"
        raise UserError(f"{path}: not a readable HDF5 file (truncated or corrupted?): {reason}") from None
    try:
        ok = "simengine_version" in f.attrs and "kind" in f.attrs
    except DAMAGE:
        ok = False
    if not ok:
        f.close()
        raise UserError(f"{path}: not a simengine output (no 'simengine_version'/'kind' attributes)")
    return f


def _str(v):
    return v.decode() if isinstance(v, bytes) else str(v)


class _RelinkedFile(h5py.File):
    """An index whose pair was renamed or copied by hand: its virtual datasets name the parts
    directory it was written with, so they are opened with a virtual-dataset prefix under which
    that name is a symbolic link to the index's own ``<name>.parts/`` (HDF5 tries the prefix
    first, :func:`h5py.h5p.PropDAID.set_virtual_prefix`)."""

    def relink(self, ref, parts):
        import os
        import tempfile

        self._relink_dir = tempfile.mkdtemp(prefix="simengine-relink-")
        os.symlink(os.path.abspath(parts), os.path.join(self._relink_dir, ref))
        self._dapl = h5py.h5p.create(h5py.h5p.DATASET_ACCESS)
        self._dapl.set_virtual_prefix((self._relink_dir + "/").encode())

    def _with_prefix(self, name):
        """The dataset ``name`` opened with the prefix (before any other handle of it: HDF5
        shares an open dataset's source state between its handles), or None."""
        if getattr(self, "_dapl", None) is None or not isinstance(name, str):
            return None
        try:
            return h5py.Dataset(h5py.h5d.open(self.id, name.encode(), dapl=self._dapl))
        except (KeyError, ValueError, TypeError, RuntimeError, OSError):
            return None   # not a dataset (a group) or not there

    def __getitem__(self, name):
        ds = self._with_prefix(name)
        return ds if ds is not None else super().__getitem__(name)

    def get(self, name, default=None, **kw):
        ds = None if kw else self._with_prefix(name)
        return ds if ds is not None else super().get(name, default, **kw)

    def close(self):
        import shutil

        super().close()
        d, self._relink_dir = getattr(self, "_relink_dir", None), None
        if d:
            shutil.rmtree(d, ignore_errors=True)


class Result:
    """A read-only view of one output file (field or network run)."""

    def __init__(self, path):
        from .integrity import DAMAGE, reason
        from .layout import check_parts_beside, foreign_parts, mapped_ref, parts_dir, parts_ref

        self.path = Path(path)
        self.file = open_output(self.path, cls=_RelinkedFile)
        try:
            self.ref = mapped_ref(self.file, self.path)
            beside = check_parts_beside(self.path, self.ref)
            #: the pair was renamed or copied by hand: the index maps the name it was written
            #: with (set before any virtual dataset is opened: HDF5 shares an open dataset's
            #: source state between handles)
            self.renamed_from = None if self.ref == parts_ref(self.path) else self.ref
            if self.renamed_from is not None and beside is None:
                try:
                    self.file.relink(self.ref, parts_dir(self.path))
                except OSError as exc:
                    self.file.close()
                    raise UserError(f"{self.path}: its parts directory was renamed from "
                                    f"{self.ref}; cannot read it in place ({exc.strerror}); "
                                    f"`simengine mv {self.path} {self.path}` rewrites its "
                                    f"mappings") from None
            missing, foreign = self.missing_parts(), self._foreign_parts()
        except DAMAGE as exc:
            self.file.close()
            raise UserError(f"{self.path}: damaged output ({reason(exc)})") from None
        if foreign:
            self.file.close()
            raise UserError(f"{self.path}: {foreign_parts(self.path, foreign[0], self.ref)}")
        if beside is not None:
            self.file.close()
            raise UserError(f"{self.path}: {beside}")
        if missing:
            self.file.close()
            raise UserError(f"{self.path}: {len(missing)} part file(s) are missing, e.g. "
                            f"{parts_dir(self.path).name}/{missing[0]} (the .parts directory "
                            f"must stay beside the file)")
        from .file_checks import check_output

        try:
            check_output(self.file, self.path)  # before anything is read or allocated
        except BaseException:
            self.file.close()
            raise

    def _mappings(self):
        from .h5image import virtual_mappings

        out = []

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.is_virtual:
                out.extend(f for _, _, f, _ in virtual_mappings(obj))
        if int(self.file.attrs.get("format_version", 0)) >= 2:
            h5py.File.visititems(self.file, visit)
        return out

    def _foreign_parts(self) -> list:
        """Mapped files outside the parts directory the index was written with."""
        from .layout import own_part

        return [f for f in self._mappings() if own_part(f, self.ref) is None]

    def missing_parts(self) -> list:
        """Part files (names in the parts directory) that the virtual datasets name but that
        are not in the index's own ``<name>.parts/`` (they would read as NaN or fill values
        through plain h5py)."""
        from .layout import own_part, parts_dir

        root, out, seen = parts_dir(self.path), [], set()
        for file in self._mappings():
            name = own_part(file, self.ref)
            if name is not None and name not in seen:
                seen.add(name)
                if not (root / name).is_file():
                    out.append(name)
        return out

    # -- context manager
    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def close(self):
        self.file.close()

    # -- common
    @property
    def kind(self) -> str:
        return _str(self.file.attrs["kind"])

    @property
    def name(self) -> str:
        return _str(self.file.attrs.get("name", self.path.stem))

    @property
    def version(self) -> str:
        return _str(self.file.attrs["simengine_version"])

    @property
    def complete(self) -> bool:
        return bool(self.file.attrs.get("complete", False))

    @property
    def scenario(self) -> dict:
        return yaml.safe_load(_str(self.file.attrs.get("scenario", "{}")))

    def _group(self, name):
        if name not in self.file:
            return {}
        return {k: v[()] for k, v in self.file[name].items()
                if isinstance(v, h5py.Dataset) and not is_dimension_only(v)}

    # -- field runs
    @property
    def phi(self):
        """Snapshot dataset (snapshots × grid), read lazily like any h5py dataset."""
        return self.file["fields/phi"]

    @property
    def snapshot_steps(self):
        return self.file["fields/step"][()] if "fields/step" in self.file else np.zeros(0, int)

    @property
    def snapshot_times(self):
        return self.file["fields/time"][()] if "fields/time" in self.file else np.zeros(0)

    @property
    def observables(self) -> dict:
        """``/observables`` by column name; ``length`` also as ``length_moment`` (its alias,
        simengine.field.lengths.ALIAS)."""
        obs = self._group("observables")
        if "length" in obs:
            obs["length_moment"] = obs["length"]
        return obs

    @property
    def checkpoint(self):
        """(phi, step, time) of the last checkpoint, or None."""
        if "checkpoint/phi" not in self.file:
            return None
        ds = self.file["checkpoint/phi"]
        return ds[()], int(ds.attrs["step"]), float(ds.attrs["time"])

    @property
    def final_field(self):
        """The latest field stored: the checkpoint if newer than the last snapshot."""
        ck = self.checkpoint
        steps = self.snapshot_steps
        if ck is not None and (len(steps) == 0 or ck[1] >= steps[-1]):
            return ck[0]
        return self.phi[-1] if len(steps) else None

    # -- bounded reads (figures of fields of any size: the read cap bounds memory)
    def _latest(self):
        """(dataset, index or None, step, time) of the latest stored field: the checkpoint when
        it is not older than the last snapshot, else the last snapshot; nothing is read."""
        steps = self.snapshot_steps
        if "checkpoint/phi" in self.file:
            ds = self.file["checkpoint/phi"]
            step = int(ds.attrs["step"])
            if len(steps) == 0 or step >= steps[-1]:
                return ds, None, step, float(ds.attrs["time"])
        if not len(steps):
            return None
        return self.phi, len(steps) - 1, int(steps[-1]), float(self.snapshot_times[-1])

    @staticmethod
    def _stride(shape, itemsize, limit):
        """The smallest step s with prod(ceil(n / s)) · itemsize ≤ limit."""
        s = 1
        while int(np.prod([-(-n // s) for n in shape], dtype=np.float64)) * itemsize > limit:
            s += 1
        return s

    def plane(self, i=None):
        """``(array, k, stride)`` for figures of snapshot ``i`` (None: the latest field): a 1D or
        2D field whole, a 3D field's mid-plane z = k along the first axis, read alone (never the
        whole snapshot). An array larger than the read cap (:func:`file_checks.read_limit`)
        is read with a stride: every ``stride``-th point on each axis (``stride`` 1: all)."""
        from .file_checks import read_limit

        if i is None:
            latest = self._latest()
            if latest is None:
                return None
            ds, i, _, _ = latest
        else:
            ds = self.phi
        grid = ds.shape if i is None else ds.shape[1:]
        lead = () if i is None else (int(i),)
        k = grid[0] // 2 if len(grid) == 3 else None
        shape = grid[1:] if k is not None else grid
        s = self._stride(shape, ds.dtype.itemsize, read_limit())
        sel = lead + ((k,) if k is not None else ()) + (slice(None, None, s),) * len(shape)
        return ds[sel], k, s

    def sample(self, i, share=1.0):
        """Snapshot ``i`` as a flat float64 array of at most ``share`` of the read cap (every
        ``stride``-th point on each axis: ``(values, stride)``); a caller holding k samples at
        once while a histogram copies one passes ``share`` = 1 / (k + 1)."""
        from .file_checks import read_limit

        grid = self.phi.shape[1:]
        s = self._stride(grid, 8, max(1, int(read_limit() * share)))
        return np.asarray(self.phi[(int(i),) + (slice(None, None, s),) * len(grid)],
                          dtype=np.float64).ravel(), s

    def snapshot_fits(self) -> bool:
        """Whether one whole snapshot fits the read cap (what an FFT of it needs)."""
        from .file_checks import read_limit

        grid = self.phi.shape[1:]
        return int(np.prod(grid, dtype=np.float64)) * self.phi.dtype.itemsize <= read_limit()

    # -- network runs
    @property
    def statistics(self) -> dict:
        return {k: (v.item() if np.ndim(v) == 0 else v) for k, v in self._group("statistics").items()}

    @property
    def vertex(self) -> dict:
        """Per-vertex metrics (eccentricity, closeness, harmonic); row i is vertex ``vertex_ids[i]``."""
        return {k: v for k, v in self._group("vertex").items() if k != "id"}

    @property
    def vertex_ids(self) -> np.ndarray:
        """The input's id of each vertex (file ids or labels, networkx node labels; 0..n−1 when
        the input did not name its vertices): int64, or an object array of str."""
        if "vertex/id" in self.file:
            ds = self.file["vertex/id"]
            if ds.dtype.kind in "iu":
                return ds[()].astype(np.int64)
            out = np.empty(ds.shape[0], dtype=object)
            out[:] = [_str(v) for v in ds[()]]
            return out
        n = self.vertex_count
        return np.arange(n if n is not None else 0, dtype=np.int64)

    @property
    def vertex_count(self):
        """The number of vertices the data hold (per-vertex arrays, columns of /distances), or
        None: sizes come from the data, never from the ``graph_n`` attribute."""
        for name in ("vertex", "distances"):
            obj = self.file.get(name)
            if isinstance(obj, h5py.Dataset):
                return int(obj.shape[1])
            if isinstance(obj, h5py.Group):
                for ds in obj.values():
                    if isinstance(ds, h5py.Dataset) and ds.ndim == 1:
                        return int(ds.shape[0])
        return None

    @property
    def source_ids(self) -> np.ndarray:
        """The input's ids of the processed sources, in order (``/sources`` holds row numbers,
        ``/source`` their ids)."""
        if "sources" not in self.file:
            return np.zeros(0, dtype=np.int64)
        return self.vertex_ids[self.file["sources"][()]]

    def per_vertex(self, name) -> dict:
        """``{vertex id: value}`` of a per-vertex metric (e.g. ``"closeness"``)."""
        values = self.vertex[name]
        return dict(zip(self.vertex_ids.tolist(), values.tolist()))

    @property
    def scope(self) -> str:
        """Which pairs the statistics cover: ``all sources``, ``over 2 listed sources``, …"""
        if "statistics" in self.file and "scope" in self.file["statistics"].attrs:
            return _str(self.file["statistics"].attrs["scope"])
        return "all sources"

    @property
    def distance_histogram(self):
        return self.file["distance_histogram"][()] if "distance_histogram" in self.file else None

    @property
    def distances(self):
        return self.file["distances"] if "distances" in self.file else None

    @property
    def graph(self) -> dict:
        return {k[len("graph_"):]: (v.item() if hasattr(v, "item") else _str(v))
                for k, v in self.file.attrs.items() if k.startswith("graph_")}

    def summary(self) -> str:
        """Human-readable description used by ``simengine info``."""
        a = self.file.attrs
        lines = [f"file:       {self.path}",
                 f"kind:       {self.kind}   name: {self.name}   simengine {self.version}",
                 f"complete:   {'yes' if self.complete else 'no (resume with --resume)'}"]
        if "parts" in a:
            from .layout import parts_dir

            lines.append(f"parts:      {parts_dir(self.path)} (layout "
                         f"{int(a.get('format_version', 0))}; check every byte with "
                         f"'simengine info --verify')")
            if self.renamed_from is not None:
                lines.append(f"renamed:    written as {self.renamed_from[:-len('.parts')]}; its "
                             f"mappings still name {self.renamed_from}, so plain h5py reads NaN "
                             f"until `simengine mv {self.path} {self.path}` rewrites them")
        if self.kind == "field":
            sc = self.scenario
            lines.append(f"grid:       {sc.get('grid', {}).get('shape')}  boundary: "
                         f"{sc.get('boundary', {}).get('type')}  solver: {_str(a.get('solver', '?'))}")
            steps = self.snapshot_steps
            lines.append(f"snapshots:  {len(steps)}" + (f" (steps {steps[0]}..{steps[-1]})" if len(steps) else ""))
            ck = self.file["checkpoint/phi"].attrs if "checkpoint/phi" in self.file else None
            if ck is not None:
                lines.append(f"checkpoint: step {int(ck['step'])}, t = {float(ck['time']):.6g}")
            obs = self.observables
            if obs.get("step") is not None and len(obs["step"]):
                lines.append(f"observables: {len(obs['step'])} rows; last: step {obs['step'][-1]}, "
                             f"mass {obs['mass'][-1]:.6g}, F {obs['free_energy'][-1]:.6g}, "
                             f"L {obs['length'][-1]:.4g}")
        else:
            g = self.graph
            if g:
                lines.append(f"graph:      n = {g.get('n')}, arcs = {g.get('arcs')}, directed = "
                             f"{bool(g.get('directed'))}, weighted = {bool(g.get('weighted'))}")
            if "vertex/id" in self.file:
                ids = self.vertex_ids
                shown = ", ".join(str(v) for v in ids[:3].tolist()) + (", …" if len(ids) > 3 else "")
                lines.append(f"vertex ids: from the input ({shown}); /sources and the rows of "
                             "/vertex are numbered 0..n-1")
            if "checkpoint" in self.file:
                lines.append(f"checkpoint: {int(self.file['checkpoint'].attrs.get('done', 0))} of "
                             f"{int(self.file['checkpoint'].attrs.get('total', 0))} sources done")
            st = self.statistics
            if st:
                lines.append(f"statistics: {self.scope}")
            for k, v in st.items():
                if k == "complete":      # older files: "all vertices were sources", not the run
                    k = "all_sources"
                lines.append(f"  {k:20s} {v:.6g}" if isinstance(v, float) else f"  {k:20s} {v}")
            vert = self.vertex
            if "closeness" in vert and np.isfinite(vert["closeness"]).any():
                c = vert["closeness"]
                i = int(np.nanargmax(c))
                lines.append(f"  highest closeness    {c[i]:.6g} at vertex {self.vertex_ids[i]}")
        return "\n".join(lines)
