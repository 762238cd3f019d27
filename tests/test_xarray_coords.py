"""xarray: every group opened alone has its coordinates; the network coordinates of /distances
are the graph's vertex ids: ``source`` (rows) and ``target`` (columns); ``sources`` (the row
numbers that drive resume) rides along the rows."""
import networkx as nx
import numpy as np
import pytest
import xarray as xr

import simengine


def test_field_groups_have_space_and_time_coordinates(tmp_path):
    out = simengine.run({"kind": "field", "name": "xr", "grid": {"shape": [8, 12], "spacing": 0.5},
                         "time": {"dt": 0.001, "steps": 20}, "solver": {"backend": "cpu"},
                         "output": {"snapshot_every": 10, "checkpoint_every": 10}},
                        tmp_path / "f.h5", log=lambda m: None)
    with xr.open_dataset(out, engine="h5netcdf", group="fields") as ds:
        assert ds["phi"].dims == ("time", "y", "x")
        np.testing.assert_allclose(ds["x"], np.arange(12) * 0.5)
        np.testing.assert_allclose(ds["y"], np.arange(8) * 0.5)
        np.testing.assert_allclose(ds["time"], [0.0, 0.01, 0.02])
        assert ds["x"].attrs["units"] and ds["x"].attrs["description"]
        assert float(ds["phi"].sel(x=1.5, y=2.0).isel(time=-1)) == pytest.approx(
            float(ds["phi"][-1, 4, 3]))
    with xr.open_dataset(out, engine="h5netcdf", group="checkpoint") as ds:
        np.testing.assert_allclose(ds["x"], np.arange(12) * 0.5)
    with simengine.open(out) as r:
        assert "x" not in r.observables and r.final_field.shape == (8, 12)


def test_network_coordinates_are_vertex_ids(tmp_path):
    edges = [(1, 2), (2, 3), (3, 4), (4, 5), (5, 6), (2, 6)]
    (tmp_path / "g.txt").write_text("".join(f"{u} {v}\n" for u, v in edges))
    out = simengine.run({"kind": "network", "name": "ids",
                         "graph": {"file": {"path": str(tmp_path / "g.txt")}},
                         "metrics": {"sources": [5, 2], "store_distances": True},
                         "solver": {"backend": "cpu"}}, tmp_path / "n.h5", log=lambda m: None)
    d = dict(nx.shortest_path_length(nx.Graph(edges)))
    with xr.open_dataset(out, engine="h5netcdf") as ds:
        assert ds["distances"].dims == ("source", "target")
        np.testing.assert_array_equal(ds["target"], [1, 2, 3, 4, 5, 6])
        np.testing.assert_array_equal(ds["source"], [5, 2])   # the ids, not the row numbers
        np.testing.assert_array_equal(ds["sources"], [4, 1])  # row numbers, along "source"
        assert ds["sources"].dims == ("source",)
        assert int(ds["distances"].sel(source=5, target=1)) == d[5][1]
        assert int(ds["distances"].sel(source=2, target=6)) == d[2][6]
    # kept through a resume (the index is rebuilt from the file)
    with simengine.open(out) as r:
        np.testing.assert_array_equal(r.source_ids, [5, 2])
