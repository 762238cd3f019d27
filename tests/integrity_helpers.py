"""Shared by the integrity tests: tiny field and network scenarios run in process, and what of
an output must equal an uninterrupted run's."""
import h5py
import numpy as np

#: checkpoints at 25 and 50 in their own parts, at 0 and 60 the snapshots' parts (a snapshot's
#: step): every commit point of a checkpoint part occurs twice
FIELD = ("kind: field\nname: kill\ngrid: {shape: [24, 20], spacing: 1.0}\n"
         "time: {dt: 0.01, steps: 60}\nsolver: {backend: cpu}\n"
         "output: {snapshot_every: 20, checkpoint_every: 25, observables_every: 10}\n")

NETWORK = """\
kind: network
name: net
graph: {generator: {type: erdos_renyi, n: 40, p: 0.1, seed: 3}}
metrics: {store_distances: true, statistics: [mean_distance, diameter, eccentricity, closeness]}
solver: {backend: cpu, batch: 8}
output: {checkpoint_every: 16}
"""

#: values that depend on the wall clock (not compared)
CLOCK = {"observables/wall_time", "statistics/elapsed", "statistics/normalized_time"}


def scenario(tmp, kind, text=None):
    from simengine.config import load_scenario

    p = tmp / f"{kind}.yaml"
    p.write_text(text or (FIELD if kind == "field" else NETWORK))
    return load_scenario(str(p))


def run(sc, out, **kw):
    from simengine.control.runner import run_scenario

    return run_scenario(sc, out, progress=False, log=lambda m: None, **kw)


def contents(path):
    """Every dataset of an output (virtual ones read through their parts) but the clock's."""
    out = {}
    with h5py.File(path, "r") as f:
        def visit(name, obj):
            if isinstance(obj, h5py.Dataset) and name not in CLOCK and \
                    not name.startswith(("integrity/", "checkpoint/")):
                out[name] = obj[()]
        f.visititems(visit)
        out["complete"] = bool(f.attrs["complete"])
    return out


def assert_same(got, ref):
    assert sorted(got) == sorted(ref)
    for k, v in ref.items():
        np.testing.assert_array_equal(got[k], v, err_msg=k)
