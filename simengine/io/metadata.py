"""Self-describing outputs: ``units`` and ``description`` attributes and netCDF-style dimensions.

:func:`annotate` is called at the end of every write of an output file. It works on whatever
datasets exist (it never creates data the writer did not write, except small coordinate arrays) and
is idempotent, so calling it after every write costs little and leaves the same result.

What it adds
------------
* ``units`` and ``description`` on every dataset (observables, snapshots, checkpoints, statistics,
  per-vertex arrays, histograms, coordinates). The field model is non-dimensional: lengths are in
  the unit of ``grid.spacing``, times in the unit of ``time.dt``; network distances are hops for
  unweighted graphs and edge-weight units for weighted ones.
* HDF5 dimension scales in the layout netCDF-4 uses, so ``xarray.open_dataset(path,
  engine="h5netcdf", group=...)`` shows named dimensions with coordinates:

  ==================  ========================================================================
  group               dimensions (coordinate)
  ==================  ========================================================================
  ``/`` (field)       ``x`` / ``y`` / ``z`` cell positions i·h (grid axes ordered z, y, x; the
                      last axis is x, contiguous in memory)
  ``/fields``         ``time`` (``fields/time``; ``step`` as a further coordinate), then space
                      (``fields/x`` …: the group's own copies, so ``open_dataset(group=...)``
                      has positions; likewise ``/checkpoint``)
  ``/observables``    ``time`` (``observables/time``; ``step`` as a further coordinate)
  ``/checkpoint``     space (field runs)
  ``/`` (network)     ``sources`` (``/sources``, row numbers 0..n−1 of the sources), ``distance``
                      (lower bin edges of
                      ``/distance_histogram``), ``target`` (columns of ``/distances``: the
                      graph's vertex ids)
  ``/vertex``         ``vertex`` (0..n−1; ``id`` as a further coordinate when the file has one)
  ``/checkpoint``     ``checkpoint_vertex``, ``checkpoint_<name>_index`` (network runs: internal
                      accumulators; the dimensions are in the root group)
  ==================  ========================================================================

The ``vertex`` and ``checkpoint_*`` dimensions are netCDF "dimensions without a
variable" (a dataset whose ``NAME`` attribute says so); :func:`is_dimension_only` tells readers to
skip them.
"""
from __future__ import annotations

import h5py
import numpy as np
import yaml

#: the NAME attribute netCDF-4 gives a dimension that has no coordinate variable
NOT_A_VARIABLE = "This is a netCDF dimension but not a netCDF variable."

SPACE_DIMS = {1: ("x",), 2: ("y", "x"), 3: ("z", "y", "x")}

T, L, E = "model time unit", "model length unit", "model energy unit"

#: both kinds: the part digests (simengine/io/part_digests.py)
INTEGRITY = {
    "integrity/part": ("1", "part file names (relative to the parts directory) the index maps"),
    "integrity/sha256": ("1", "SHA-256 of each part file (row i: the part named in row i of "
                              "/integrity/part), checked by --resume and info --verify"),
}

#: field datasets: path -> (units, description)
FIELD = {
    "observables/step": ("1", "time step n of the row; t = n·dt"),
    "observables/time": (T, "simulated time t = step·dt (in the unit of time.dt)"),
    "observables/mass": ("1", "mass: mean of φ over the grid (conserved by Cahn–Hilliard)"),
    "observables/free_energy": (E, "Ginzburg–Landau free energy F = h^d Σ_cells [f(φ) + κ/2 |∇φ|²] "
                                   "(forward differences, boundary terms per docs/field.md)"),
    "observables/phi_min": ("1", "minimum of φ over the grid"),
    "observables/phi_max": ("1", "maximum of φ over the grid"),
    "observables/length": (L, "characteristic domain size L = 2π/k₁, k₁ the S(k)-weighted mean "
                              "wavenumber |k| (k ≠ 0) of the structure factor S(k) (FFT, or the cosine transform for mirror walls); "
                              "the moment length (readers also give it as length_moment)"),
    "observables/length_energy": (L, "energy length L_E = 2Vσ/(F − V f_min(⟨φ⟩)) (= 2V/A, A the "
                                     "interface area; σ and f_min of the model's free energy, "
                                     "docs/field.md \"Coarsening measures\")"),
    "observables/interface_density": ("1/" + L, "interface density S_v = A/V: the level-set "
                                      "crossings of φ between neighbouring cells, each weighted "
                                      "by h^(d−1)|∇φ|₂/|∇φ|₁ (any orientation counts its area)"),
    "observables/length_interface": (L, "1/S_v, the inverse interface density"),
    "observables/length_shell": (L, "2π/k̄₁, k̄₁ = Σ_s k_s S̄_s / Σ_s S̄_s over the radial shells of "
                                    "S(k) (shell averages, no shell weight: the Porod tail "
                                    "converges)"),
    "observables/length_correlation": (L, "first zero r₀ of C(r) = Σ_s n_s S̄_s j_d(k_s r), the "
                                          "inverse transform of the shell-averaged S(k) (inf: "
                                          "no zero within half the box)"),
    "observables/structure_factor": ("1", "radial structure factor S(k) per shell of |k| at each "
                                      "observation (output.structure_factor; NaN: no mode in "
                                      "the shell); the boundary's transform, docs/field.md"),
    "observables/structure_factor_k": ("1/" + L,
                                        "mean |k| of each shell's modes (angular wavenumber)"),
    "observables/wall_time": ("s", "wall-clock seconds of computation since the run started "
                                   "(summed over resumes)"),
    "fields/phi": ("1", "snapshots of the order parameter φ (composition; equilibrium phases "
                        "φ = ±√(b/u)); axes (time, [z,] [y,] x)"),
    "fields/step": ("1", "time step n of each snapshot"),
    "fields/time": (T, "simulated time t = step·dt of each snapshot"),
    "checkpoint/phi": ("1", "order parameter φ at the checkpoint (attributes step, time); "
                            "the state --resume continues from"),
    **INTEGRITY,
    "x": (L, "cell position x = i·h along the last grid axis"),
    "y": (L, "cell position y = j·h along the second-to-last grid axis"),
    "z": (L, "cell position z = k·h along the first grid axis (3D)"),
}

D = "{dist}"          # replaced by "hops" or "edge-weight units"
_DIST_STATS = {"mean_distance", "diameter", "radius", "mst_weight"}

#: network datasets: path -> (units, description)
NETWORK = {
    **INTEGRITY,
    "sources": ("1", "row numbers (0..n−1) of the source vertices in the order they were processed "
                     "(row i of /distances)"),
    "source": ("1", "the input's id of each row's source: the row coordinate of /distances "
                    "(.sel(source=5) is vertex 5's row)"),
    "target": ("1", "vertex id of each column of /distances (the input's ids)"),
    "distances": (D, "d(sources[i], t) for every target t; unreachable targets hold the value of "
                     "the attribute 'unreachable'"),
    "predecessors": ("1", "vertex before t on a shortest path from sources[i] (0-based row "
                          "number; /vertex/id names it); -1: t is the source or unreachable"),
    "distance_histogram": ("ordered pairs", "number of ordered pairs (s, t), s ≠ t, s a source, "
                                            "with d(s, t) in [i·w, (i+1)·w) (w = bin_width; hops "
                                            "d = i for unweighted graphs)"),
    "distance": (D, "lower edge i·w of each distance-histogram bin (the hop count for unweighted "
                    "graphs)"),
    "vertex/eccentricity": (D, "eccentricity: largest finite distance from the vertex (NaN for "
                               "vertices that were not sources)"),
    "vertex/closeness": (f"1/{D}", "closeness centrality (networkx closeness_centrality, inward "
                                   "distances, Wasserman–Faust scaling (r/S)·(r/(n−1)))"),
    "vertex/harmonic": (f"1/{D}", "harmonic centrality Σ_{s ≠ v} 1/d(s, v) (networkx "
                                  "harmonic_centrality; sampled runs scale to all sources)"),
    "vertex/betweenness": ("1", "betweenness centrality (networkx betweenness_centrality, "
                                "endpoints excluded: halved for undirected graphs, or divided by "
                                "(n−1)(n−2) when statistics/betweenness_normalized)"),
    "vertex/betweenness_stderr": ("1", "standard error of the sampled betweenness estimate"),
    "edge/betweenness": ("1", "edge betweenness of the arc source -> target (networkx "
                              "edge_betweenness_centrality; divided by n(n−1) when "
                              "statistics/betweenness_normalized)"),
    "edge/source": ("1", "the input's id of the arc's source vertex"),
    "edge/target": ("1", "the input's id of the arc's target vertex"),
    "statistics/betweenness_normalized": ("1", "true when vertex/betweenness is divided by "
                                               "(n−1)(n−2)"),
    "vertex/id": ("1", "the vertex's id in the input (file id or networkx label)"),
    "vertex/degree": ("1", "out-degree of the vertex"),
    "vertex/clustering": ("1", "local clustering coefficient (networkx clustering; Fagiolo's "
                               "directed form for directed graphs)"),
    "vertex/core_number": ("1", "largest k such that the vertex is in the k-core (networkx "
                                "core_number; in- + out-degree for directed graphs)"),
    "statistics/average_clustering": ("1", "mean local clustering coefficient over every vertex"),
    "statistics/transitivity": ("1", "3 × triangles / connected triples (networkx transitivity)"),
    "statistics/degree_assortativity": ("1", "Pearson correlation of the degrees at the two ends "
                                             "of an arc (out-degree → in-degree when directed)"),
    "statistics/degeneracy": ("1", "largest core number"),
    "statistics/n": ("1", "number of vertices"),
    "statistics/mean_distance": (D, "mean of d(s, t) over reachable ordered pairs s ≠ t"),
    "statistics/diameter": (D, "largest finite distance (a lower bound when sources are sampled)"),
    "statistics/radius": (D, "smallest eccentricity of a vertex that reaches another vertex (an "
                             "upper bound when sources are sampled)"),
    "statistics/efficiency": (f"1/{D}", "global efficiency Σ_{s≠t} 1/d(s, t) / (n(n−1))"),
    "statistics/reachable_pairs": ("ordered pairs", "ordered pairs (s, t), s ≠ t, with t reachable "
                                                    "from s"),
    "statistics/unreachable_pairs": ("ordered pairs", "ordered pairs (s, t), s ≠ t, with t not "
                                                      "reachable from s"),
    "statistics/connected": ("1", "true when every ordered pair is reachable (strongly connected)"),
    "statistics/sources_done": ("1", "number of sources processed"),
    "statistics/planned_sources": ("1", "number of sources the run planned"),
    "statistics/complete": ("1", "true when every vertex was a source"),
    "statistics/all_sources": ("1", "true when every vertex was a source"),
    "statistics/listed": ("1", "true when the sources are an explicit list (statistics over the "
                               "pairs (s, t) with s in the list)"),
    "statistics/sampled": ("1", "true when the sources are a uniform random sample"),
    "statistics/estimate": ("1", "true when the statistics are estimates from sampled sources"),
    "statistics/directed": ("1", "true for a directed graph"),
    "statistics/weighted": ("1", "true for a weighted graph"),
    "statistics/elapsed": ("s", "wall-clock seconds of the shortest-path computation"),
    "statistics/normalized_time": (f"s/{D}", "elapsed / mean_distance (Leist's normalised time)"),
    "statistics/components": ("1", "number of weakly connected components"),
    "statistics/weak_components": ("1", "number of weakly connected components"),
    "statistics/strong_components": ("1", "number of strongly connected components"),
    "statistics/largest_weak": ("1", "vertices in the largest weakly connected component"),
    "statistics/largest_strong": ("1", "vertices in the largest strongly connected component"),
    "statistics/mst_weight": (D, "total weight of a minimum spanning forest (hops = edges for "
                                 "unweighted graphs)"),
    "statistics/diameter_is_lower_bound": ("1", "true: diameter is the maximum over sampled "
                                                "sources only"),
    "statistics/radius_is_upper_bound": ("1", "true: radius is the minimum over sampled sources "
                                              "only"),
    "statistics/histogram_bin_width": (D, "width of the distance-histogram bins"),
}

CHECKPOINT_NETWORK = ("1", "accumulator state of the shortest-path statistics (internal; what "
                           "--resume continues from)")


def is_dimension_only(ds) -> bool:
    """True for a netCDF dimension that is not a variable (holds no data; readers skip it)."""
    name = ds.attrs.get("NAME", b"")
    name = name.decode() if isinstance(name, bytes) else str(name)
    return name.startswith(NOT_A_VARIABLE)


def describe(path: str, kind: str, weighted: bool = False):
    """``(units, description)`` for dataset ``path`` of a ``kind`` output, or ``None`` if unknown.

    ``*_se`` statistics are standard errors of the statistic without the suffix (same units).
    """
    path = path.strip("/")
    table = FIELD if kind == "field" else NETWORK
    entry = table.get(path)
    if entry is None and kind == "field" and path.split("/")[-1] in SPACE_DIMS[3]:
        entry = table.get(path.split("/")[-1])          # a group's copy of x/y/z
    if entry is None and path.startswith("statistics/") and path.endswith("_se"):
        base = table.get(path[:-3])
        if base is not None:
            entry = (base[0], f"standard error of {path[len('statistics/'):-3]} (estimate from "
                              f"sampled sources, finite-population corrected)")
    if entry is None and kind == "network" and path.startswith("checkpoint/"):
        entry = CHECKPOINT_NETWORK
    if entry is None:
        return None
    dist = "edge-weight units" if weighted else "hops"
    return entry[0].replace(D, dist), entry[1].replace(D, dist)


def plan_attributes(plan) -> dict:
    """The root attributes naming the run's plan (:mod:`simengine.plan`): ``plan`` (its line)
    and ``plan_record`` (its attributes as JSON, written out as the ``/plan`` group by
    :func:`annotate`)."""
    import json

    return {"plan": plan.line, "plan_record": json.dumps(plan.attributes())}


def _plan_group(f: h5py.File) -> None:
    """``/plan``: an attribute group naming the plan the run ran (from ``plan_record``)."""
    import json

    rec = f.attrs.get("plan_record")
    if rec is None:
        return
    g = f.require_group("plan")
    for k, v in json.loads(_str(rec)).items():
        if g.attrs.get(k) is None or (_str(g.attrs[k]) if isinstance(v, str) else
                                      g.attrs[k]) != v:
            g.attrs[k] = v


def annotate(f: h5py.File, kind: str | None = None) -> None:
    """Add units, descriptions and dimension scales to the open, writable output ``f``.

    Idempotent; works on whatever datasets exist. ``kind`` defaults to the file's ``kind``
    attribute.
    """
    kind = kind or _str(f.attrs.get("kind", ""))
    weighted = bool(f.attrs.get("graph_weighted", False))
    _plan_group(f)
    if kind == "field":
        _field_coordinates(f)
        _field_dimensions(f)
    elif kind == "network":
        _network_dimensions(f)
    else:
        return
    if "integrity/part" in f:
        g = f["integrity"]
        dim = _dimension_only(g, "part_index", g["part"].shape[0])
        for name in ("part", "sha256"):
            if name in g:
                _attach(g[name], [dim])

    def visit(name, obj):
        if isinstance(obj, h5py.Dataset) and not is_dimension_only(obj):
            entry = describe(name, kind, weighted)
            if entry is not None:
                _set_attr(obj, "units", entry[0])
                _set_attr(obj, "description", entry[1])

    f.visititems(visit)


def annotate_field(f: h5py.File) -> None:
    """:func:`annotate` for a field output (the hook the field index runs before sealing)."""
    annotate(f, "field")


def annotate_network(f: h5py.File) -> None:
    """:func:`annotate` for a network output (the hook the network index runs before sealing)."""
    annotate(f, "network")


# ------------------------------------------------------------------------------ helpers
def _str(v) -> str:
    return v.decode() if isinstance(v, bytes) else str(v)


def _set_attr(obj, key, value):
    old = obj.attrs.get(key)
    if old is None or _str(old) != value:
        obj.attrs[key] = value


def _scale(ds, name=None):
    """Make ``ds`` a dimension scale (once)."""
    if ds.attrs.get("CLASS") != b"DIMENSION_SCALE":
        ds.make_scale(name if name is not None else ds.name.rsplit("/", 1)[-1])
    return ds


def _attached(ds, axis):
    """The scale datasets attached to ``ds`` axis ``axis`` (empty when none or unreadable)."""
    try:
        return list(ds.dims[axis].values())
    except (KeyError, ValueError, RuntimeError):  # a reference to a deleted scale
        return None


def _attach(ds, dims):
    """Attach the scale datasets ``dims`` (one per axis) to ``ds`` unless already attached."""
    if ds.ndim != len(dims) or any(s is None or s.shape[0] != n for s, n in zip(dims, ds.shape)):
        return
    current = [_attached(ds, a) for a in range(ds.ndim)]
    if all(c is not None and len(c) == 1 and c[0] == s for c, s in zip(current, dims)):
        return
    if "DIMENSION_LIST" in ds.attrs and any(c is None or len(c) for c in current):
        # stale or different attachments (a scale was replaced): start from a clean slate
        del ds.attrs["DIMENSION_LIST"]
    for axis, s in enumerate(dims):
        ds.dims[axis].attach_scale(s)


def _coordinates(ds, names):
    _set_attr(ds, "coordinates", " ".join(names))


def _coordinate(f, name, values):
    """A coordinate dataset ``name`` of group ``f`` holding ``values`` (replaced if it differs)."""
    values = np.asarray(values)
    if name in f:
        ds = f[name]
        if ds.shape == values.shape and ds.dtype == values.dtype and np.array_equal(ds[()], values):
            return _scale(ds)
        del f[name]
    from .h5image import chunk_shape

    return _scale(f.create_dataset(name, data=values, fletcher32=True,
                                   chunks=chunk_shape(values.shape, values.dtype.itemsize)))


def _dimension_only(group, name, size):
    """A netCDF dimension without a variable: an empty dataset marked as a scale."""
    if name in group:
        ds = group[name]
        if ds.shape == (size,) and is_dimension_only(ds):
            return ds
        del group[name]
    ds = group.create_dataset(name, shape=(size,), dtype="f4")
    ds.make_scale(f"{NOT_A_VARIABLE}{size:10d}")
    return ds


# ------------------------------------------------------------------------------ field runs
def _grid(f):
    """(shape, spacing) of the field grid, from /fields attributes or the stored scenario."""
    shape = spacing = None
    if "fields" in f:
        a = f["fields"].attrs
        if "grid_shape" in a:
            shape = tuple(int(n) for n in a["grid_shape"])
        if "spacing" in a:
            spacing = float(a["spacing"])
    if shape is None or spacing is None:
        sc = yaml.safe_load(_str(f.attrs.get("scenario", "{}"))) or {}
        grid = sc.get("grid", {})
        shape = shape or tuple(grid.get("shape", ()))
        spacing = spacing if spacing is not None else float(grid.get("spacing", 1.0))
    return shape, spacing


def _field_coordinates(f):
    shape, h = _grid(f)
    if not shape or len(shape) not in SPACE_DIMS:
        return
    for name, n in zip(SPACE_DIMS[len(shape)], shape):
        ds = _coordinate(f, name, np.arange(n, dtype=np.float64) * h)
        _set_attr(ds, "axis", name.upper())


def _local_space(f, group):
    """The x/y/z coordinates as datasets of ``group`` itself (copies of the root's): xarray's
    ``open_dataset(path, engine="h5netcdf", group=...)`` reads one group, so a dimension whose
    coordinate lives in the root would come without positions."""
    out = []
    for d in SPACE_DIMS.get(len(_grid(f)[0]), ()):
        if d not in f:
            return []
        ds = _coordinate(f[group], d, f[d][()])
        _set_attr(ds, "axis", d.upper())
        out.append(ds)
    return out


def _field_dimensions(f):
    for group in ("observables", "fields"):
        if f"{group}/time" not in f:
            continue
        g = f[group]
        t = _scale(g["time"])
        for name, ds in g.items():
            if not isinstance(ds, h5py.Dataset) or name == "time" or not ds.ndim:
                continue
            if name == "structure_factor_k":  # the shells: a dimension of their own
                continue
            if name == "phi":
                space = _local_space(f, group)
                if space:
                    _attach(ds, [t, *space])
            elif name == "structure_factor" and "structure_factor_k" in g:
                _attach(ds, [t, _scale(g["structure_factor_k"], "k")])
            elif ds.ndim == 1 and name not in SPACE_DIMS[3]:
                _attach(ds, [t])
            if name != "step" and "step" in g and name not in SPACE_DIMS[3]:
                _coordinates(ds, ["step"])
    if "checkpoint/phi" in f:
        space = _local_space(f, "checkpoint")
        if space:
            _attach(f["checkpoint/phi"], space)


# ------------------------------------------------------------------------------ network runs
def _network_dimensions(f):
    n = int(f.attrs.get("graph_n", 0)) if "graph_n" in f.attrs else None
    if n is None and "vertex/eccentricity" in f:
        n = f["vertex/eccentricity"].shape[0]
    # rows of /distances and /predecessors: the dimension "source" whose coordinate is the sources'
    # ids (.sel(source=5) is the row of vertex 5); /sources (their row numbers) rides along it
    rows_dim = None
    if "source" in f:
        rows_dim = _scale(f["source"], "source")
        if "sources" in f:
            _attach(f["sources"], [rows_dim])
    elif "sources" in f:
        rows_dim = _scale(f["sources"])
    if "distance_histogram" in f:
        hist = f["distance_histogram"]
        w = float(hist.attrs.get("bin_width", 1.0))
        edges = np.arange(hist.shape[0]) * w
        dist = _coordinate(f, "distance", edges if w != 1.0 else edges.astype(np.int64))
        _attach(hist, [dist])
    if n is None:
        return
    if "vertex" in f:
        g = f["vertex"]
        dim = _dimension_only(g, "vertex", n)
        has_id = "id" in g
        for name, ds in g.items():
            if isinstance(ds, h5py.Dataset) and name != "vertex" and ds.ndim == 1:
                _attach(ds, [dim])
                if has_id and name != "id":
                    _coordinates(ds, ["id"])
    if "checkpoint" in f:
        _checkpoint_dimensions(f["checkpoint"], n)
    if "distances" in f and "sources" in f:
        # rows follow /sources; the target axis gets its own root dimension (an HDF5 group and a
        # dataset cannot share the name "vertex") whose coordinate is the graph's vertex ids, so
        # that .sel(target=5) is vertex 5 (/sources holds the sources' row numbers, 0..n−1)
        _attach(f["distances"], [rows_dim, _coordinate(f, "target", _vertex_ids(f, n))])
    if "predecessors" in f and "sources" in f:
        _attach(f["predecessors"], [rows_dim, _coordinate(f, "target", _vertex_ids(f, n))])


def _vertex_ids(f, n):
    """The graph's vertex ids (``/vertex/id`` when numeric), else 0..n−1."""
    ids = f["vertex/id"][()] if "vertex/id" in f else None
    if ids is None or ids.shape != (n,) or ids.dtype.kind not in "iu":
        return np.arange(n, dtype=np.int64)
    return ids.astype(np.int64)


def _checkpoint_dimensions(g, n):
    """Internal accumulator arrays: length-n arrays along ``checkpoint_vertex``, others along
    ``checkpoint_<name>_index``. The dimensions live in the root group: the checkpoint group holds
    exactly the accumulator arrays (its digest covers the list)."""
    root = g.file
    for name, ds in list(g.items()):
        if not isinstance(ds, h5py.Dataset) or is_dimension_only(ds) or ds.ndim != 1:
            continue
        dim = "checkpoint_vertex" if ds.shape[0] == n else f"checkpoint_{name}_index"
        _attach(ds, [_dimension_only(root, dim, ds.shape[0])])
