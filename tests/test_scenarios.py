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


def _scenario_graph(path, overrides):
    """The graph a network scenario builds (generator, direction, weights), for the checks."""
    from simengine.network import generators, weights_setting

    g = load_scenario(path, overrides).spec.graph
    spec = dict(g.generator, **({"directed": True} if g.directed else {}))
    return weights_setting.apply_setting(generators.generate(spec), g.weights, "test")


def test_centrality_ba_gives_networkx_betweenness_clustering_and_cores(tmp_path):
    """centrality-ba.yaml at n = 300: every listed structure statistic equals networkx's."""
    import networkx as nx

    path = SCENARIO_DIR / "centrality-ba.yaml"
    over = ["graph.generator.n=300", "solver.backend=cpu"]
    out = simengine.run(load_scenario(path).data, tmp_path / "c.h5", overrides=over)
    G = _scenario_graph(path, over).to_networkx()
    order = sorted(G.nodes)
    with simengine.open(out) as r:
        vertex, stats = r.vertex, r.statistics
        assert r.vertex_ids.tolist() == order
    bc, cl, core = vertex["betweenness"], vertex["clustering"], vertex["core_number"]
    ref = nx.betweenness_centrality(G, normalized=False)
    np.testing.assert_allclose(bc, [ref[v] for v in order], rtol=1e-9, atol=1e-9)
    ref = nx.clustering(G)
    np.testing.assert_allclose(cl, [ref[v] for v in order], rtol=1e-12)
    ref = nx.core_number(G)
    assert core.tolist() == [ref[v] for v in order]
    np.testing.assert_allclose(stats["transitivity"], nx.transitivity(G), rtol=1e-12)
    np.testing.assert_allclose(stats["degree_assortativity"],
                               nx.degree_assortativity_coefficient(G), rtol=1e-9)


def test_apsp_dense_paths_stores_scipy_distances_and_real_paths(tmp_path):
    """apsp-dense-paths.yaml at n = 96: /distances equal scipy's Floyd–Warshall and every stored
    path is made of arcs of the graph whose weights add up to the distance."""
    from scipy.sparse.csgraph import floyd_warshall

    path = SCENARIO_DIR / "apsp-dense-paths.yaml"
    over = ["graph.generator.n=96", "solver.backend=cpu"]
    out = simengine.run(load_scenario(path).data, tmp_path / "p.h5", overrides=over)
    A = _scenario_graph(path, over).to_scipy()
    ref = floyd_warshall(A, directed=True)
    with simengine.open(out) as r:
        D = r.distances[()].astype(float)
        if "unreachable" in r.distances.attrs:
            D[r.distances[()] == r.distances.attrs["unreachable"]] = np.inf
        ids = r.vertex_ids
        assert r.source_ids.tolist() == ids.tolist()
        np.testing.assert_array_equal(D, ref)
        rng = np.random.default_rng(0)
        checked = 0
        for s, t in rng.integers(0, 96, size=(200, 2)):
            if s == t or not np.isfinite(ref[s, t]):
                continue
            walk = simengine.shortest_path(r, ids[s], ids[t])
            idx = [int(np.flatnonzero(ids == v)[0]) for v in walk]
            assert idx[0] == s and idx[-1] == t
            assert sum(A[a, b] for a, b in zip(idx, idx[1:])) == ref[s, t]
            checked += 1
    assert checked > 50


def test_coarsening_2d_fits_the_late_time_law(tmp_path):
    """The shipped integrator, tolerance and cadence on a 128² box to t = 10³ (the 256² run to
    10⁴ takes ~15 s): dt grows by two orders of magnitude, F never rises, mass is conserved,
    and the figures' fit window (after separation, ≥ 1 decade) holds an exponent near 1/3."""
    from simengine import analysis

    sc = yaml.safe_load((SCENARIO_DIR / "coarsening-2d.yaml").read_text())
    assert sc["solver"]["integrator"] == "spectral" and sc["time"]["adaptive"] is True
    out = simengine.run(sc, tmp_path / "c.h5", overrides=[
        "grid.shape=[128, 128]", "time.end=1000", "output.observables_dt=10",
        "output.snapshot_dt=500", "output.checkpoint_dt=500"])
    with simengine.open(out) as r:
        obs = {k: np.asarray(r.observables[k]) for k in
               ("time", "free_energy", "mass", "length", "phi_min", "phi_max")}
    t, L, F = obs["time"], obs["length"], obs["free_energy"]
    assert t[-1] == 1000.0 and np.all(np.diff(F) <= 1e-9 * np.abs(F[:-1]))
    assert abs(obs["mass"][-1] - obs["mass"][0]) < 1e-12
    ts = analysis.separation_time(t, obs["phi_min"], obs["phi_max"])
    win, note = analysis.coarsening_window(t, ts)
    assert win is not None, note
    fit = analysis.power_law_fit(t[win], L[win])
    assert 0.2 < fit.exponent < 0.4, fit
    # the default printed fit (energy length, log-spaced rows): Porod-insensitive, near 1/3
    from simengine import coarsening

    with simengine.open(out) as r:
        energy = coarsening.fits(r.observables, r.scenario)["energy"]
    assert energy.ok and 0.28 < energy.exponent < 0.38, energy.line()
    assert energy.exponent > fit.exponent + 0.03           # above the moment length's
