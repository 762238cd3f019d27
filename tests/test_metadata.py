"""Outputs explain themselves: units/description on every dataset, named dimensions in xarray."""
import warnings

import h5py
import numpy as np
import pytest

import simengine
from simengine.io.metadata import annotate, describe, is_dimension_only

xr = pytest.importorskip("xarray")
pytest.importorskip("h5netcdf")

FIELD = {
    "kind": "field", "name": "meta-field",
    "grid": {"shape": [6, 8, 10], "spacing": 0.5},
    "boundary": {"type": "periodic"},
    "initial": {"type": "noise", "mean": 0.0, "amplitude": 0.05, "seed": 1},
    "time": {"dt": 0.0005, "steps": 40},
    "solver": {"backend": "cpu"},
    "output": {"snapshot_every": 20, "checkpoint_every": 20, "observables_every": 10},
}
NETWORK = {
    "kind": "network", "name": "meta-net",
    "graph": {"generator": {"type": "gnm", "n": 40, "m": 80, "seed": 2},
              "weights": {"type": "uniform_int", "low": 1, "high": 5, "seed": 1}},
    "metrics": {"sources": {"sample": 15, "seed": 3}, "store_distances": True,
                "histogram_bin_width": 2.0,
                "statistics": ["mean_distance", "diameter", "radius", "eccentricity",
                               "distance_histogram", "closeness", "harmonic", "efficiency",
                               "components", "mst_weight"]},
    "solver": {"backend": "cpu"},
    "output": {"checkpoint_every": 5},
}


def open_tree(path):
    with warnings.catch_warnings():
        warnings.simplefilter("error")      # a phony dimension would warn
        return xr.open_datatree(path, engine="h5netcdf")


def every_dataset(path):
    out = {}

    def visit(name, obj):           # returns None: visititems stops at a non-None return
        if isinstance(obj, h5py.Dataset) and not is_dimension_only(obj):
            out[name] = dict(obj.attrs)

    with h5py.File(path, "r") as f:
        f.visititems(visit)
    assert len(out) > 10
    return out


@pytest.fixture(scope="module")
def field_out(tmp_path_factory):
    return simengine.run(FIELD, tmp_path_factory.mktemp("m") / "f.h5")


@pytest.fixture(scope="module")
def net_out(tmp_path_factory):
    return simengine.run(NETWORK, tmp_path_factory.mktemp("m") / "n.h5")


@pytest.mark.parametrize("which", ["field_out", "net_out"])
def test_every_dataset_has_units_and_description(which, request):
    for name, attrs in every_dataset(request.getfixturevalue(which)).items():
        assert attrs.get("units") is not None and len(str(attrs.get("description", ""))) > 5, name


def test_field_output_in_xarray_has_named_dimensions_and_coordinates(field_out):
    tree = open_tree(field_out)
    with simengine.open(field_out) as r:
        phi = tree["fields"]["phi"]
        assert phi.dims == ("time", "z", "y", "x")
        np.testing.assert_array_equal(phi["time"], r.snapshot_times)
        np.testing.assert_array_equal(phi["step"], r.snapshot_steps)
        np.testing.assert_array_equal(phi["x"], np.arange(10) * 0.5)   # x = i·h
        np.testing.assert_array_equal(phi["z"], np.arange(6) * 0.5)
        np.testing.assert_array_equal(phi.isel(time=-1).values, r.phi[-1])
        obs = tree["observables"].to_dataset()
        np.testing.assert_array_equal(obs["time"], r.observables["time"])
        np.testing.assert_array_equal(obs["free_energy"], r.observables["free_energy"])
        assert obs["length"].dims == ("time",) and "step" in obs.coords
        assert obs["free_energy"].attrs["units"] == "model energy unit"
        assert tree["checkpoint"]["phi"].dims == ("z", "y", "x")
        # a time series selection works by coordinate
        assert float(obs["mass"].sel(time=0.01).values) == r.observables["mass"][2]


def test_network_output_in_xarray(net_out):
    tree = open_tree(net_out)
    with simengine.open(net_out) as r:
        vert = tree["vertex"].to_dataset()
        assert vert["closeness"].dims == ("vertex",) and vert.sizes["vertex"] == 40
        np.testing.assert_array_equal(vert["closeness"], r.vertex["closeness"])
        assert vert["closeness"].attrs["units"] == "1/edge-weight units"
        root = tree.to_dataset()
        hist = root["distance_histogram"]
        np.testing.assert_array_equal(hist["distance"], np.arange(len(r.distance_histogram)) * 2.0)
        assert root["distances"].dims == ("source", "target")
        np.testing.assert_array_equal(root["sources"], r.file["sources"][()])
        np.testing.assert_array_equal(root["source"], r.source_ids)
        st = tree["statistics"].to_dataset()
        assert st["mean_distance_se"].attrs["units"] == "edge-weight units"
        assert "standard error" in st["mean_distance_se"].attrs["description"]
        assert set(r.vertex) == {"eccentricity", "closeness", "harmonic"}   # no dimension datasets


def _attrs_snapshot(path):
    def plain(v):
        return v.tolist() if hasattr(v, "tolist") else v
    return {n: {k: plain(v) for k, v in a.items() if k not in ("DIMENSION_LIST", "REFERENCE_LIST")}
            for n, a in every_dataset(path).items()}


def test_annotate_is_idempotent_and_survives_replaced_datasets(net_out, tmp_path):
    copy = tmp_path / "c.h5"
    copy.write_bytes(net_out.read_bytes())
    with h5py.File(copy, "r+") as f:
        annotate(f)
    assert _attrs_snapshot(copy) == _attrs_snapshot(net_out)
    with h5py.File(copy, "r+") as f:
        hist = f["distance_histogram"][()]
        del f["distance_histogram"]                     # a writer replaces it with a longer one
        ds = f.create_dataset("distance_histogram", data=np.append(hist, 0))
        ds.attrs["bin_width"] = 2.0
        annotate(f)
        annotate(f)
    root = open_tree(copy).to_dataset()
    assert root["distance_histogram"].dims == ("distance",)
    np.testing.assert_array_equal(root["distance"], np.arange(len(hist) + 1) * 2.0)


def test_describe_knows_standard_errors_and_units():
    assert describe("statistics/diameter", "network", weighted=False)[0] == "hops"
    assert describe("statistics/efficiency_se", "network", weighted=True)[0] == "1/edge-weight units"
    assert describe("observables/time", "field")[0] == "model time unit"
    assert describe("statistics/no_such_thing", "network") is None


def test_vertex_ids_from_the_input_are_a_coordinate(tmp_path):
    (tmp_path / "g.txt").write_text("10 20\n20 30\n30 40\n40 10\n40 70\n")
    out = simengine.run({"kind": "network", "name": "ids",
                         "graph": {"file": {"path": str(tmp_path / "g.txt")}},
                         "solver": {"backend": "cpu"}}, tmp_path / "ids.h5")
    vert = open_tree(out)["vertex"].to_dataset()
    np.testing.assert_array_equal(vert["id"], [10, 20, 30, 40, 70])
    assert "id" in vert["closeness"].coords and vert["id"].attrs["units"] == "1"
    res = simengine.PathResults.from_output(out)
    assert res.closeness[40] == pytest.approx(0.8) and res.sources == (10, 20, 30, 40, 70)
