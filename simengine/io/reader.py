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


def open_output(path, mode="r"):
    """Open ``path`` as a simengine HDF5 output, or raise a one-line UserError."""
    from .integrity import DAMAGE

    path = Path(path)
    check_input_file(path)
    try:
        f = h5py.File(path, mode)
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


class Result:
    """A read-only view of one output file (field or network run)."""

    def __init__(self, path):
        from .integrity import DAMAGE, reason
        from .layout import foreign_parts

        self.path = Path(path)
        self.file = open_output(self.path)
        try:
            missing, foreign = self.missing_parts(), self._foreign_parts()
        except DAMAGE as exc:
            self.file.close()
            raise UserError(f"{self.path}: damaged output ({reason(exc)})") from None
        if foreign:
            self.file.close()
            raise UserError(f"{self.path}: {foreign_parts(self.path, foreign[0])}")
        if missing:
            self.file.close()
            raise UserError(f"{self.path}: {len(missing)} part file(s) are missing, e.g. "
                            f"{missing[0]} (the .parts directory must stay beside the file)")
        from .file_checks import check_output

        try:
            check_output(self.file, self.path)  # before anything is read or allocated
        except BaseException:
            self.file.close()
            raise

    def _foreign_parts(self) -> list:
        """Mapped files outside this index's own ``<name>.parts/`` (a renamed or copied index)."""
        from .h5image import virtual_mappings
        from .layout import parts_ref

        own, out = parts_ref(self.path) + "/", []

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.is_virtual:
                out.extend(f for _, _, f, _ in virtual_mappings(obj) if not f.startswith(own))
        if int(self.file.attrs.get("format_version", 0)) >= 2:
            self.file.visititems(visit)
        return out

    def missing_parts(self) -> list:
        """Part files that the virtual datasets name but that do not exist (they would read as
        NaN or fill values through plain h5py)."""
        from .h5image import virtual_mappings

        out, seen = [], set()

        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and obj.is_virtual:
                for _, _, file, _ in virtual_mappings(obj):
                    if file not in seen:
                        seen.add(file)
                        if not (self.path.parent / file).is_file():
                            out.append(file)
        self.file.visititems(visit)
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
            lines.append(f"parts:      {self.path.parent / _str(a['parts'])} (layout "
                         f"{int(a.get('format_version', 0))}; check every byte with "
                         f"'simengine info --verify')")
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
