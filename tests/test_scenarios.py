"""Shipped scenarios do what their comments say."""
from pathlib import Path

import numpy as np
import pytest
import yaml
from scipy import ndimage

import simengine
from simengine.config import load_scenario

SCENARIO_DIR = Path(__file__).resolve().parents[1] / "scenarios"
SCENARIOS = sorted(SCENARIO_DIR.glob("*.yaml"))


def periodic_regions(mask):
    """Sizes of the connected regions of ``mask`` on a periodic grid (4-/6-connectivity)."""
    lab, n = ndimage.label(mask)
    parent = np.arange(n + 1)

    def find(a):
        while parent[a] != a:
            parent[a] = parent[parent[a]]
            a = parent[a]
        return a

    for ax in range(mask.ndim):
        for a, b in zip(np.take(lab, 0, axis=ax).ravel(), np.take(lab, -1, axis=ax).ravel()):
            if a and b:
                parent[find(a)] = find(b)
    roots = np.array([find(i) for i in range(n + 1)])
    sizes = np.bincount(roots[lab[mask]], minlength=n + 1)
    return sorted(sizes[sizes > 0].tolist(), reverse=True)


def test_periodic_regions_merges_across_the_boundary():
    m = np.zeros((6, 6), bool)
    m[2, 0] = m[2, 5] = True     # one region wrapped around x
    m[4, 3] = True
    assert periodic_regions(m) == [2, 1]


@pytest.mark.parametrize("path", SCENARIOS, ids=lambda p: p.name)
def test_every_shipped_scenario_validates(path):
    assert load_scenario(path).name == path.stem


def test_droplets_2d_ends_as_droplets_in_a_matrix(tmp_path):
    """The shipped composition, boundary and duration on a 64² box (the 256² run is ~4× as long).

    Droplets, not a bicontinuous pattern and not wall layers: the majority phase is one connected
    matrix at φ ≈ −1, the minority phase (about a quarter of the area) is several separate regions
    none of which holds most of it.
    """
    sc = yaml.safe_load((SCENARIO_DIR / "droplets-2d.yaml").read_text())
    assert sc["boundary"]["type"] == "periodic"
    out = simengine.run(sc, tmp_path / "d.h5", overrides=[
        "grid.shape=[64, 64]", "solver.backend=cpu", "output.snapshot_every=0",
        "output.checkpoint_every=0", "output.observables_every=0"])
    with simengine.open(out) as r:
        phi = r.final_field
        t = r.checkpoint[2]
    assert t == pytest.approx(sc["time"]["dt"] * sc["time"]["steps"])
    minority = phi > 0
    assert 0.15 < minority.mean() < 0.3
    # separated phases (the initial field is −0.5 ± 0.05 everywhere); small droplets keep the matrix
    # slightly above −1 (Gibbs–Thomson) and have a large share of interface cells
    assert np.median(phi[~minority]) < -0.85 and np.median(phi[minority]) > 0.75
    assert len(periodic_regions(~minority)) == 1            # one matrix
    drops = periodic_regions(minority)
    assert len(drops) >= 4 and drops[0] < 0.5 * minority.sum()
