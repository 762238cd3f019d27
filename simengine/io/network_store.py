"""Network output: sources, rows of ``/distances`` and checkpoints are parts; the index joins them.

* :class:`NetworkParts` writes ``sources.h5`` (once), ``distances/r<first>-<end>.h5`` (the rows
  of the sources processed since the last write) and ``checkpoint/d<done>.h5`` (the accumulators
  of :class:`~simengine.network.statistics.PathStatistics`), each durable and atomic.
* :class:`NetworkIndex` commits them: ``/sources``, ``/distances`` and the arrays of
  ``/checkpoint`` are virtual datasets over the parts; ``/statistics``, ``/vertex`` and
  ``/distance_histogram`` (written at the end) live in the index itself.

A write event costs the new distance rows plus one checkpoint (O(n) accumulators) plus the index
(about 100 bytes per committed row block). Same crash rules as field outputs
(:mod:`simengine.io.field_store`).
"""
from __future__ import annotations

from pathlib import Path

import h5py
import numpy as np

from ..errors import UserError
from . import checksum, faults, integrity, part_digests
from .durable import make_dirs, remove, write_index
from .h5image import Image, put_array, put_scalar, put_virtual, virtual_mappings
from .integrity import DAMAGE, Corrupt
from .layout import (FORMAT_VERSION, check_version, SOURCES_NAME, foreign_parts, list_parts,
                     network_checkpoint_name, parts_dir, parts_ref,
                     check_parts_beside, mapped_ref, retire_checkpoint_parts,
                     rows_name)


class NetworkParts:
    def __init__(self, output, compression="none", run_id=None):
        self.output = Path(output)
        self.root = parts_dir(output)
        self.compression = compression or "none"
        self.run_id = run_id
        self.digests = {}

    def _write(self, name, fill):
        image = Image()
        with image as f:
            fill(f, image)
            if self.run_id is not None:
                f.attrs["run_id"] = self.run_id
        make_dirs((self.root / name).parent)
        kind = "sources" if name == SOURCES_NAME else name.split("/")[0]
        digest = part_digests.write_hashed(self.root / name, image, kind)
        self.digests[name] = digest

    def take_digests(self) -> dict:
        out, self.digests = self.digests, {}
        return out

    def write_sources(self, sources):
        sources = np.asarray(sources, dtype=np.int64)
        self._write(SOURCES_NAME, lambda f, image: put_array(f, "sources", sources,
                                                             self.compression, image=image))

    def append_rows(self, first, rows, predecessors=None):
        """Rows ``first:first+len(rows)`` of ``/distances`` (and of ``/predecessors``, in the same
        part); returns ``(first, end)``."""
        rows = np.ascontiguousarray(rows)
        end = int(first) + rows.shape[0]

        def fill(f, image):
            put_array(f, "distances", rows, self.compression, image=image)
            if predecessors is not None:
                put_array(f, "predecessors", np.ascontiguousarray(predecessors, np.int32),
                          self.compression, image=image)
            f.attrs.update({"first": int(first), "end": end})
        self._write(rows_name(first, end), fill)
        return int(first), end

    def write_checkpoint(self, done, state):
        """The accumulator arrays after ``done`` sources; returns {name: (shape, dtype)}."""
        def fill(f, image):
            g = f.create_group("checkpoint")
            g.attrs["done"] = int(done)
            for k, v in state.items():
                put_array(g, k, np.asarray(v), self.compression, image=image)
        self._write(network_checkpoint_name(done), fill)
        return {k: (list(np.shape(v)), np.asarray(v).dtype.str) for k, v in state.items()}

    def read_checkpoint(self, done, layout):
        """The accumulator arrays of the committed checkpoint, verified against ``layout``."""
        name = network_checkpoint_name(done)
        where = f"{self.output}: checkpoint after {done} sources ({self.root / name})"
        f = integrity.open_part(self.root / name, where)
        try:
            got = integrity.attr(f.get("checkpoint", f), "done", where, int)
            if got != done:
                raise Corrupt(where, f"attribute 'done' is {got}, expected {done}")
            state = {}
            for k, (shape, dtype) in layout.items():
                a = integrity.read(f, f"checkpoint/{k}", f"{where}: /checkpoint/{k}")
                if list(a.shape) != list(shape) or a.dtype.str != dtype:
                    raise Corrupt(f"{where}: /checkpoint/{k}", f"holds {a.dtype} {a.shape}, "
                                                            f"expected {dtype} {tuple(shape)}")
                state[k] = a
            return state
        finally:
            f.close()


class NetworkIndex(part_digests.DigestedIndex):
    """The committed state of a network output and the writer of its index (one process)."""

    def __init__(self, output, attrs, n, total, store_dtype=None, unreachable=None,
                 compression="none"):
        self.output = Path(output)
        self.attrs = dict(attrs)
        self.n = int(n)
        self.total = int(total)
        self.store_dtype = None if store_dtype is None else np.dtype(store_dtype)
        self.unreachable = unreachable
        self.compression = compression or "none"
        self.rows = []            # committed (first, end) blocks of /distances
        self.done = None
        self.elapsed = 0.0
        self.layout = {}          # checkpoint arrays: name -> (shape, dtype)
        self.small = {}           # checkpoint arrays stored in the index itself (scalars)
        self.results = None       # (scalars, vertex arrays, histogram, bin_width)
        self.complete = False
        self.previous_ckpt = set()
        self.vertex_id = None     # the input's ids of the vertices (int64 or strings), if any
        self.source_rows = None   # the row numbers of the sources (what /sources holds), if known
        self.predecessors = False  # /predecessors beside /distances (same row parts)
        self.run_id = self.attrs.setdefault("run_id", part_digests.new_run_id())
        self.digests = {}         # part name -> SHA-256, for every mapped part
        self.hook = None

    # ------------------------------------------------------------------ committing
    def commit(self, rows=(), checkpoint=None, results=None, complete=False, digests=None):
        """``rows`` = [(first, end)], ``checkpoint`` = (done, elapsed, layout, small arrays),
        ``results`` = (scalars, vertex, histogram, bin_width), ``digests`` = {part: SHA-256} of
        the new parts. Parts must be durable already."""
        new_rows = list(self.rows) + [(int(a), int(b)) for a, b in rows]
        done, elapsed, layout, small = self.done, self.elapsed, self.layout, self.small
        if checkpoint is not None:
            done, elapsed, layout, small = checkpoint
        if done is None:
            raise ValueError("the first commit must include a checkpoint")
        state = dict(rows=new_rows, done=int(done), elapsed=float(elapsed), layout=dict(layout),
                     small=dict(small), results=results if results is not None else self.results,
                     complete=bool(complete))
        state["digests"] = part_digests.complete(
            self.output, self._mapped(new_rows, done, layout, small),
            {**self.digests, **(digests or {})})
        old = self.checkpoint_names()
        image = Image()
        with image as f:
            self._build(f, **state)
        after = write_index(self.output, image)
        faults.reached("commit.done")
        for k, v in state.items():
            setattr(self, k, v)
        self.previous_ckpt = retire_checkpoint_parts(self.output, self.previous_ckpt, old,
                                                     self.checkpoint_names(), complete)
        faults.reached("commit.retired")
        if after is not None:
            after.committed = True  # the new index is in place: its parts must stay
            raise after

    def checkpoint_names(self):
        return set() if self.done is None else {network_checkpoint_name(self.done)}

    def _mapped(self, rows, done, layout, small):
        names = {rows_name(a, b) for a, b in rows} if self.store_dtype is not None else set()
        if self.total:
            names.add(SOURCES_NAME)
        if any(k not in small for k in layout):
            names.add(network_checkpoint_name(done))
        return names

    def mapped(self):
        """Part names the committed index maps."""
        return self._mapped(self.rows, self.done, self.layout, self.small)

    def referenced(self):
        names = {SOURCES_NAME} | self.checkpoint_names() | self.previous_ckpt
        return names | {rows_name(a, b) for a, b in self.rows}

    def record(self, rows, done, elapsed, layout, small, complete, digests=None, version=None):
        return {"kind": "network", "format": version or FORMAT_VERSION, "n": self.n,
                "total": self.total,
                "done": done, "elapsed": elapsed, "complete": bool(complete),
                "rows": [list(r) for r in rows],
                "layout": {k: [list(s), d] for k, (s, d) in layout.items()},
                "small": {k: checksum.array_digest(np.asarray(v)) for k, v in small.items()},
                "run_id": self.run_id,
                "parts": part_digests.record(self.digests if digests is None else digests)}

    def _build(self, f, rows, done, elapsed, layout, small, results, complete, digests):
        ref = parts_ref(self.output)
        for k, v in self.attrs.items():
            f.attrs[k] = v
        f.attrs["format_version"] = FORMAT_VERSION
        f.attrs["kind"] = "network"
        f.attrs["complete"] = bool(complete)
        f.attrs["parts"] = ref
        put_virtual(f, "sources", (self.total,), np.int64,
                    [((0,), (self.total,), f"{ref}/{SOURCES_NAME}", "sources")] if self.total else [])
        if self.store_dtype is not None:
            nrows = rows[-1][1] if rows else 0
            put_virtual(f, "distances", (nrows, self.n), self.store_dtype,
                        [((a, 0), (b - a, self.n), f"{ref}/{rows_name(a, b)}", "distances")
                         for a, b in rows],
                        fill=self.unreachable,
                        attrs={"unreachable": self.unreachable,
                               "rows": "one row per entry of /sources, in order"})
            if self.predecessors:
                put_virtual(f, "predecessors", (nrows, self.n), np.int32,
                            [((a, 0), (b - a, self.n), f"{ref}/{rows_name(a, b)}", "predecessors")
                             for a, b in rows], fill=-1,
                            attrs={"none": -1, "rows": "one row per entry of /sources, in order",
                                   "meaning": "vertex before t on a shortest path from the row's "
                                              "source (0-based row numbers; /vertex/id names "
                                              "them); -1: t is the source or unreachable"})
        if self.vertex_id is not None:
            ids = np.asarray(self.vertex_id)
            if ids.dtype.kind in "iu":
                ds = put_array(f.require_group("vertex"), "id", ids, self.compression)
            else:
                # variable-length strings cannot pass HDF5 filters: a stored digest instead
                labels = [str(x) for x in ids.tolist()]
                ds = f.require_group("vertex").create_dataset(
                    "id", data=labels, dtype=h5py.string_dtype())
                ds.attrs["sha256"] = checksum.digest(labels)
            ds.attrs["meaning"] = ("the input's id of vertex i (row i of /vertex/*, column i of "
                                   "/distances); /sources holds row numbers")
        if self.source_rows is not None and len(self.source_rows):
            src_rows = np.asarray(self.source_rows, dtype=np.int64)
            ids = src_rows if self.vertex_id is None else np.asarray(self.vertex_id)[src_rows]
            if ids.dtype.kind in "iu":
                ds = put_array(f, "source", ids.astype(np.int64), self.compression)
            else:
                ds = f.create_dataset("source", data=[str(x) for x in ids.tolist()],
                                      dtype=h5py.string_dtype())
            ds.attrs["meaning"] = ("the input's id of each row's source (the vertex that /sources "
                                   "names by its row number): the source coordinate of "
                                   "/distances and /predecessors")
        c = f.create_group("checkpoint")
        c.attrs.update({"done": int(done), "total": self.total, "elapsed": float(elapsed)})
        for k, (shape, dtype) in layout.items():
            if k in small:
                put_array(c, k, np.asarray(small[k]))
            else:
                shape = tuple(int(x) for x in shape)
                put_virtual(c, k, shape, dtype,
                            [((0,) * len(shape), shape, f"{ref}/{network_checkpoint_name(done)}",
                              f"checkpoint/{k}")])
        part_digests.put(f, digests)
        c.attrs["digest"] = checksum.digest(self.record(rows, done, elapsed, layout, small,
                                                        complete, digests))
        if results is not None:
            scalars, vertex, hist, bin_width, scope = results[:5]
            edge = results[5] if len(results) > 5 else None
            s = f.create_group("statistics")
            s.attrs["scope"] = scope
            for k, v in scalars.items():
                put_scalar(s, k, v)
            if vertex:
                g = f.require_group("vertex")
                for k, v in vertex.items():
                    v = np.asarray(v)   # integer arrays (core numbers) stay integers
                    put_array(g, k, v if v.dtype.kind in "iu" else v.astype(np.float64),
                              self.compression)
            if edge:
                put_edges(f, edge, self.vertex_id, self.compression)
            if hist is not None:
                put_array(f, "distance_histogram", np.asarray(hist),
                          attrs={"bin_width": float(bin_width),
                                 "meaning": "count of ordered pairs s != t with d(s,t) in "
                                            "[i*w, (i+1)*w)"})
        if self.hook is not None:
            self.hook(f)
        checksum.seal_index(f)  # last: binds every attribute, dataset and mapping of the index

    # ------------------------------------------------------------------ resuming
    @classmethod
    def load(cls, output, check_checkpoint=True, legacy=False):
        """The committed state of ``output``, steering values checked (UserError otherwise).
        With ``check_checkpoint`` also returns the verified accumulator arrays. ``legacy``: also
        a format-3 file (``info --verify``)."""
        from .reader import open_output

        output = Path(output)
        f = open_output(output, relinked=True)  # a pair renamed by hand: its own parts
        try:
            self = cls._load(output, f, legacy)
            state = self.read_state() if check_checkpoint else None
        except Corrupt as exc:
            raise UserError(f"{exc}; cannot resume") from None
        except DAMAGE as exc:  # h5py on a damaged index: one line, never a traceback
            raise UserError(f"{output}: damaged index ({integrity.reason(exc)}); "
                            f"cannot resume") from None
        finally:
            f.close()
        if state is not None:
            self._check_state(state)
        return self, state

    @classmethod
    def _load(cls, output, f, legacy=False):
        at = lambda name: f"{output}: /{name}"  # noqa: E731
        version = integrity.attr(f, "format_version", str(output))
        check_version(output, version, verifying=legacy)  # format 3: verified, not resumed
        integrity.check_required(f, output)  # every dataset the stored scenario implies
        if "checkpoint" not in f:
            raise Corrupt(at("checkpoint"), "missing")
        c = f["checkpoint"]
        n = integrity.attr(f, "graph_n", str(output), int)
        total = integrity.attr(c, "total", at("checkpoint"), int)
        dist = f.get("distances")
        store_dtype = dist.dtype if dist is not None else None
        unreachable = integrity.attr(dist, "unreachable", at("distances")) if dist is not None \
            else None
        attrs = {k: v for k, v in f.attrs.items()
                 if k not in ("format_version", "kind", "complete", "parts")}
        self = cls(output, attrs, n, total, store_dtype, unreachable)
        self.format = version
        self.predecessors = dist is not None and "predecessors" in f
        self.complete = bool(integrity.attr(f, "complete", str(output)))
        self.done = integrity.attr(c, "done", at("checkpoint"), int)
        self.elapsed = integrity.attr(c, "elapsed", at("checkpoint"), float)
        if "vertex/id" in f:
            ids = integrity.read(f, "vertex/id", at("vertex/id"), 1)
            self.vertex_id = ids if ids.dtype.kind in "iu" else \
                np.array([x.decode() if isinstance(x, bytes) else str(x) for x in ids.tolist()],
                         dtype=object)
        mapped = mapped_ref(f, output)   # the name it was written with (renamed pairs differ)
        ref = mapped + "/"
        files = []
        if dist is not None:
            for start, stop, file, _ in virtual_mappings(dist):
                files.append(("distances", file, rows_name(start[0], stop[0]), (start[1], stop[1])))
                self.rows.append((start[0], stop[0]))
            self.rows.sort()
            if self.predecessors:
                blocks = sorted((start[0], stop[0]) for start, stop, file, _ in
                                virtual_mappings(f["predecessors"]))
                if blocks != self.rows:
                    raise Corrupt(at("predecessors"), "its row parts differ from /distances'")
        for k, ds in c.items():
            if ds.is_virtual:
                for _, _, file, _ in virtual_mappings(ds):
                    files.append((f"checkpoint/{k}", file, network_checkpoint_name(self.done), None))
            else:
                self.small[k] = integrity.read(f, f"checkpoint/{k}", at(f"checkpoint/{k}"))
            self.layout[k] = (list(ds.shape), ds.dtype.str)
        self.run_id = part_digests.run_id_of(f, str(output))
        self.digests = part_digests.get(f, str(output))
        stored = integrity.attr(c, "digest", at("checkpoint"))
        if not checksum.matches(self.record(self.rows, self.done, self.elapsed, self.layout,
                                            self.small, self.complete, self.digests, version),
                                stored):
            raise Corrupt(at("checkpoint"), "done/total/elapsed or the parts list do not match "
                                            "their digest (the file was modified)")
        self._check(at)
        src = f.get("sources")
        if src is None or src.shape != (total,):
            raise Corrupt(at("sources"), f"missing or not of length {total} (checkpoint 'total')")
        if total:
            self.source_rows = integrity.read(f, "sources", at("sources"), 1, "iu")
        for name, file, expected, cols in files:
            if file != ref + expected or (cols is not None and cols != (0, n)):
                raise Corrupt(at(name), foreign_parts(output, file, mapped))
        why = check_parts_beside(output, mapped)
        if why is not None:
            raise Corrupt(str(output), why)
        self._check(at)
        missing = self.mapped() - set(self.digests)
        if missing:
            raise Corrupt(at("integrity"), f"no digest for part {sorted(missing)[0]!r}")
        integrity.check_bound(f, output, self.format)  # required datasets, the index digest
        return self

    def _check(self, at):
        if not 0 <= self.done <= self.total:
            raise Corrupt(at("checkpoint"), f"done = {self.done} is outside 0..total = {self.total}")
        if self.elapsed < 0:
            raise Corrupt(at("checkpoint"), f"elapsed = {self.elapsed} is negative")
        if self.complete and self.done != self.total:
            raise Corrupt(str(self.output), f"marked complete after {self.done} of {self.total} "
                                            f"sources")
        edge = 0
        for a, b in self.rows:
            if a != edge or b <= a:
                raise Corrupt(at("distances"), "row blocks are not contiguous")
            edge = b
        if self.store_dtype is not None and edge != self.done:
            raise Corrupt(at("distances"), f"holds {edge} rows but {self.done} sources are done")

    def read_state(self):
        """Accumulator arrays of the committed checkpoint (parts verified), small ones included."""
        parts = NetworkParts(self.output)
        big = {k: v for k, v in self.layout.items() if k not in self.small}
        state = parts.read_checkpoint(self.done, big)
        state.update(self.small)
        return state

    def _check_state(self, state):
        done = state.get("done")
        meta = state.get("meta")
        where = f"{self.output}: /checkpoint"
        if done is None or meta is None:
            raise UserError(f"{where}: accumulators 'done'/'meta' missing; cannot resume")
        if int(np.count_nonzero(done)) != self.done:
            raise UserError(f"{where}: 'done' = {self.done} contradicts the {np.count_nonzero(done)} "
                            f"sources marked done in the accumulators; cannot resume")
        if len(done) != self.n or int(meta[0]) != self.n:
            raise UserError(f"{where}: accumulators are for a graph of another size; cannot resume")


def clean_parts(index: NetworkIndex):
    keep = index.referenced()
    root = parts_dir(index.output)
    for name in list_parts(index.output) - keep:
        remove(root / name)


def put_edges(f, edge, vertex_id, compression):
    """``/edge``: one row per arc — ``betweenness`` and the arc's endpoints ``source``/``target``
    as the input's vertex ids (row numbers when the graph has none)."""
    g = f.require_group("edge")
    ds = put_array(g, "betweenness", np.asarray(edge["edge_betweenness"], dtype=np.float64),
                   compression)
    ds.attrs["meaning"] = ("edge betweenness of the arc source -> target (networkx "
                           "edge_betweenness_centrality; an undirected edge's value on both "
                           "of its arcs)")
    for k in ("source", "target"):
        idx = np.asarray(edge[f"edge_{k}"], dtype=np.int64)
        ids = idx if vertex_id is None else np.asarray(vertex_id)[idx]
        if ids.dtype.kind in "iu":
            d = put_array(g, k, ids.astype(np.int64), compression)
        else:
            d = g.create_dataset(k, data=[str(x) for x in ids.tolist()],
                                 dtype=h5py.string_dtype())
        d.attrs["meaning"] = f"the input's id of each arc's {k} vertex (coordinate of /edge/*)"
