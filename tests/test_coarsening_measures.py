"""The coarsening length measures (simengine/field/lengths.py, interface_energy.py) against plain
NumPy computations on fields of known interface length and known S(k), their slab sums against
the whole field, and the fits (simengine/coarsening.py) against synthetic power laws."""
from __future__ import annotations

import math

import numpy as np
import pytest

from simengine import coarsening
from simengine.field import lengths
from simengine.field.interface_energy import (interface_constants, numeric_constants,
                                              quartic_constants)
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.observables import free_energy
from simengine.field.spectrum import radial_structure_factor


def _grid(n, d):
    x = np.arange(n) + 0.5
    return np.meshgrid(*([x] * d), indexing="ij")


def plain_area(phi, h, level, periodic):
    """The weighted crossings written edge by edge (the definition of lengths.interface_area)."""
    u = np.asarray(phi, dtype=np.float64) - level
    if u.ndim == 1:
        u = u[:, None]
        axes = [0]
    else:
        axes = list(range(u.ndim))
    shape = u.shape
    total = 0.0

    def at(idx):
        out = list(idx)
        for ax in axes:
            if out[ax] >= shape[ax]:
                if not periodic:
                    return None
                out[ax] -= shape[ax]
        return tuple(out)

    def fwd(idx, b):
        """Forward difference along b at cell idx (0 past a non-periodic end)."""
        nxt = list(idx)
        nxt[b] += 1
        j = at(nxt)
        return 0.0 if j is None else u[j] - u[idx]

    for idx in np.ndindex(shape):
        for a in axes:
            nxt = list(idx)
            nxt[a] += 1
            j = at(nxt)
            if j is None or (u[idx] >= 0) == (u[j] >= 0):
                continue
            g = [u[j] - u[idx] if b == a else 0.5 * (fwd(idx, b) + fwd(j, b)) for b in axes]
            g = np.array(g)
            total += np.sqrt((g * g).sum()) / np.abs(g).sum()
    return total * h ** (0 if len(axes) == 1 else u.ndim - 1)


@pytest.mark.parametrize("shape", [(40,), (11, 9), (6, 5, 7)])
@pytest.mark.parametrize("periodic", [True, False])
def test_interface_area_is_the_edge_by_edge_definition(shape, periodic):
    rng = np.random.default_rng(len(shape))
    phi = rng.standard_normal(shape)
    got = lengths.interface_area(phi, phi[0] if periodic else None, 0.7, 0.1, periodic)
    assert got == pytest.approx(plain_area(phi, 0.7, 0.1, periodic), rel=1e-12)


def test_interface_area_of_a_circle_a_sphere_and_oblique_stripes():
    X, Y = _grid(256, 2)
    R = 50.3
    circle = np.tanh((R - np.hypot(X - 128.2, Y - 127.7)) / math.sqrt(2))
    assert lengths.interface_area(circle, circle[0], 1.0, 0.0, True) == pytest.approx(
        2 * math.pi * R, rel=5e-3)
    # stripes along (2, 3): 2·√13 interfaces of length 256/√13·... (total 2√13·256)
    stripes = np.sin(2 * np.pi * (2 * X + 3 * Y + 0.1) / 256)
    assert lengths.interface_area(stripes, stripes[0], 1.0, 0.0, True) == pytest.approx(
        2 * math.sqrt(13) * 256, rel=1e-4)
    X, Y, Z = _grid(64, 3)
    R = 20.2
    sphere = np.tanh((R - np.sqrt((X - 32.1) ** 2 + (Y - 31.8) ** 2 + (Z - 32.3) ** 2))
                     / math.sqrt(2))
    # spacing 0.5: the same sphere in cells of half the size has a quarter of the area
    assert lengths.interface_area(sphere, sphere[0], 0.5, 0.0, True) == pytest.approx(
        4 * math.pi * R * R / 4, rel=5e-3)


@pytest.mark.parametrize("shape", [(30,), (17, 12), (9, 8, 6)])
@pytest.mark.parametrize("periodic", [True, False])
def test_interface_area_of_slabs_sums_to_the_whole_field(shape, periodic):
    rng = np.random.default_rng(7)
    phi = rng.standard_normal(shape)
    whole = lengths.interface_area(phi, phi[0] if periodic else None, 1.0, 0.0, periodic)
    for cuts in ([0, 3, shape[0]], [0, 1, 4, shape[0]]):
        parts = 0.0
        for i, (a, b) in enumerate(zip(cuts, cuts[1:])):
            last = i == len(cuts) - 2
            after = phi[b] if not last else (phi[0] if periodic else None)
            parts += lengths.interface_area(phi[a:b], after, 1.0, 0.0, periodic)
        assert parts == pytest.approx(whole, rel=1e-12)


def test_interface_constants_closed_form_numeric_and_the_energy_length_of_stripes():
    c = interface_constants(CahnHilliard())
    assert (c.low, c.high, c.sigma) == pytest.approx((-1.0, 1.0, 2 * math.sqrt(2) / 3))
    assert c.f_min(0.0) == pytest.approx(-0.25) and c.f_min(0.3) == pytest.approx(-0.25)
    asym = CahnHilliard(kappa=2.0, coefficients=(0.1, -1.0, 0.3, 1.0))
    a, b = quartic_constants(asym.coefficients, 2.0), numeric_constants(asym.f, 2.0)
    for x, y in ((a.low, b.low), (a.high, b.high), (a.sigma, b.sigma), (a.slope, b.slope),
                 (a.offset, b.offset)):
        assert x == pytest.approx(y, rel=1e-7, abs=1e-9)
    # the coexisting phases: equal slopes and the tangent through both
    for x in (a.low, a.high):
        assert asym.fprime(x) == pytest.approx(a.slope, abs=1e-12)
        assert asym.f(x) == pytest.approx(a.offset + a.slope * x, abs=1e-12)
    assert interface_constants(CahnHilliard(coefficients=(0.0, 1.0, 0.0, 1.0))) is None
    # stripes of equilibrium profiles tanh(x/√2), period λ: L_E = λ (2 interfaces per period);
    # the lattice's own σ differs from the continuum's by O(h²/ξ²): 1.6 % at h = 1
    m = CahnHilliard()
    lam = 32.0
    for h, tol in ((1.0, 0.025), (0.25, 0.002)):
        n = int(4 * lam / h)
        x = (np.arange(n) + 0.25) * h
        prof = np.tanh((lam / 4 - np.abs((x % lam) - lam / 2)) / math.sqrt(2))
        phi = np.tile(prof, (8, 1))
        F = free_energy(phi, m, Grid(phi.shape, h), Boundary("periodic"))
        le = lengths.energy_length(F, phi.mean(), phi.size, h, 2, c)
        assert le == pytest.approx(lam, rel=tol)
        area = lengths.interface_area(phi, phi[0], h, 0.0, True)
        assert phi.size * h * h / area == pytest.approx(lam / 2, rel=1e-9)  # 1/S_v = λ/2


def test_shell_length_is_the_unweighted_first_moment_of_the_radial_profile():
    rng = np.random.default_rng(3)
    phi = rng.standard_normal((48, 40))
    k, s = radial_structure_factor(phi, 0.5)
    assert lengths.shell_length(k, s) == pytest.approx(2 * np.pi * s.sum() / (k * s).sum(),
                                                      rel=1e-14)
    kk = np.array([1.0, 2.0, np.nan])
    assert lengths.shell_length(kk, np.array([1.0, 1.0, 5.0])) == pytest.approx(
        2 * np.pi * 2 / 3)


def test_correlation_zero_of_a_field_with_one_shell_of_modes():
    """φ = Σ cos(k·x) over the modes of one ring |k| ≈ k₀: C(r) = J₀(k₀ r), first zero
    2.4048/k₀; and against the plain mode sum Σ_k S(k) J₀(|k| r) from the FFT."""
    from scipy.optimize import brentq
    from scipy.special import j0

    n = 128
    X, Y = _grid(n, 2)
    f = np.fft.fftfreq(n) * n
    KX, KY = np.meshgrid(f, f, indexing="ij")
    ring = np.abs(np.hypot(KX, KY) - 10) < 0.5
    rng = np.random.default_rng(4)
    spec = np.where(ring, np.exp(2j * np.pi * rng.random(ring.shape)), 0)
    phi = np.fft.ifft2(spec).real
    k, s = radial_structure_factor(phi, 1.0)
    counts = lengths.shell_counts((n, n), 1.0)
    counts = counts[counts > 0]                     # the shells radial_structure_factor gives
    assert len(counts) == len(k)
    r0 = lengths.correlation_zero(k, s, counts, 2, n / 2, 1.0)
    k0 = 2 * np.pi * 10 / n
    assert r0 == pytest.approx(2.404825557695773 / k0, rel=0.02)
    S = np.abs(np.fft.fft2(phi - phi.mean())) ** 2
    kmag = 2 * np.pi / n * np.hypot(KX, KY)
    keep = (kmag > 0) & (kmag <= np.pi)

    def c(r):
        return float((S[keep] * j0(kmag[keep] * r)).sum())

    rr = np.arange(0.25, n / 2, 0.25)
    first = next(i for i, r in enumerate(rr) if c(r) <= 0)
    want = brentq(c, rr[first - 1], rr[first])
    assert r0 == pytest.approx(want, rel=0.01)


def test_correlation_zero_in_1d_and_3d_kernels():
    k = np.array([0.5])
    s = np.array([1.0])
    counts = np.array([1.0])
    assert lengths.correlation_zero(k, s, counts, 1, 100.0, 1.0) == pytest.approx(np.pi)
    assert lengths.correlation_zero(k, s, counts, 3, 100.0, 1.0) == pytest.approx(2 * np.pi)
    assert lengths.correlation_zero(k, s, counts, 1, 2.0, 1.0) == float("inf")


def test_measures_of_a_row_and_the_shell_counts_are_the_radial_profile_of_ones():
    from simengine.field.spectrum import radial_sums

    phi = np.random.default_rng(5).standard_normal((20, 16))
    counts, _, _ = radial_sums(phi, 1.0)
    np.testing.assert_array_equal(lengths.shell_counts((20, 16), 1.0), counts)
    m = CahnHilliard()
    F = free_energy(phi, m, Grid(phi.shape), Boundary("periodic"))
    k, s = radial_structure_factor(phi, 1.0)
    from simengine.field.spectrum import shell_profile

    row = lengths.measures(F, phi.mean(), 40.0, shell_profile(*radial_sums(phi, 1.0)),
                           phi.shape, 1.0, "periodic", interface_constants(m))
    assert row["interface_density"] == pytest.approx(40.0 / 320)
    assert row["length_interface"] == pytest.approx(8.0)
    assert row["length_shell"] == pytest.approx(lengths.shell_length(k, s))
    assert set(row) == set(lengths.COLUMNS)


# ------------------------------------------------------------------------------------- fits
def _series(t, n=1 / 3, noise=0.01, seed=0, a=1.7):
    rng = np.random.default_rng(seed)
    return a * t ** n * np.exp(noise * rng.standard_normal(len(t)))


def test_power_law_fit_on_log_spaced_rows_recovers_the_exponent_with_its_error():
    t = np.linspace(1, 1e4, 20000)                 # uniform rows: most in the last decade
    hits = 0
    for seed in range(20):
        f = coarsening.fit_measure(t, _series(t, seed=seed), t_sep=10.0)
        assert f.ok and f.t_lo == pytest.approx(100, rel=0.01) and f.t_hi == 1e4
        assert 19 <= f.points <= 21                 # 10 rows per decade over two decades
        hits += abs(f.exponent - 1 / 3) <= 2 * f.stderr
        assert f.stderr < 0.01
    assert hits >= 17                               # ≈ 95 % within 2σ
    rows = coarsening.log_rows(t, t >= 100)
    per_decade = np.histogram(np.log10(t[rows]), bins=[2, 3, 4.0001])[0]
    assert abs(per_decade[0] - per_decade[1]) <= 1


def test_cube_law_fit_recovers_K_and_the_box_rule_stops_the_window():
    t = np.geomspace(1, 1e5, 400)
    L0, K, t0 = 5.0, 2.5, 100.0
    L = np.cbrt(L0 ** 3 + K * (t - t0).clip(0))
    f = coarsening.fit_measure(t, L, t_sep=100.0)
    assert f.rate == pytest.approx(K, rel=1e-9) and f.rate_change == pytest.approx(0, abs=1e-9)
    assert f.cube0 == pytest.approx(L0 ** 3 + K * (f.t_lo - t0), rel=1e-9)
    box = 4 * L[np.searchsorted(t, 3e4)]             # L reaches a quarter of the box at 3·10⁴
    g = coarsening.fit_measure(t, L, t_sep=100.0, box=box)
    assert g.t_hi < 3e4 and g.t_hi > 2.5e4
    h = coarsening.fit_measure(t, L, t_sep=100.0, box=4 * L[np.searchsorted(t, 500)])
    assert not h.ok and "less than the 1 needed" in h.note and "of the box" in h.note
    assert h.line().startswith("length ?: no fit (")
    # a box the domains fill at separation already: no window, said so (t ≈ the start)
    k = coarsening.fit_measure(t, L, t_sep=100.0, box=L[0])
    assert not k.ok and "t spans 0.00 decades" in k.note and "(t ≈ 100)" in k.note, k.note


def test_a_drifting_exponent_widens_the_error_and_lines_are_the_stated_format():
    t = np.geomspace(10, 1e4, 301)
    L = t ** (0.25 + 0.03 * np.log10(t / 10))      # the local exponent drifts 0.25 → 0.34
    f = coarsening.fit_measure(t, L, measure="energy", column="length_energy")
    assert f.stderr >= 0.02                         # half the halves' difference, not 1e-4
    import re

    assert re.fullmatch(r"length energy: exponent n = 0\.\d+ ± 0\.\d+ over t in \[100, 10000\]; "
                        r"L³ − L₀³ = K\(t − t₀\), K = .+ \(second half / first [+-]\d+\.\d%\); "
                        r"\d+ log-spaced rows", f.line()), f.line()
    inv, n = coarsening.local_exponent(t, L, f.rows)
    assert np.all(np.diff(n) > 0) and np.all(np.diff(inv) < 0)


def test_fits_use_the_energy_length_for_the_box_rule_and_skip_missing_measures():
    t = np.geomspace(1, 1e4, 200)
    obs = {"time": t, "phi_min": -np.ones_like(t), "phi_max": np.ones_like(t),
           "length_energy": 2 * t ** 0.33, "length": t ** 0.25,
           "length_shell": np.full_like(t, np.nan)}
    got = coarsening.fits(obs, {"grid": {"shape": [400, 400], "spacing": 1.0}})
    assert list(got) == ["energy", "moment"]        # the default first; all-NaN left out
    # L_E = 2 t^0.33 reaches 100 at t ≈ 1.4·10⁵: no cut; with a 100-cell box at t ≈ 9.7·10³
    assert got["energy"].t_hi == pytest.approx(1e4)
    small = coarsening.fits(obs, {"grid": {"shape": [100, 100]}})
    assert small["moment"].t_hi == small["energy"].t_hi < 1e4


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(64,), (63, 50), (20, 17, 12)], ids=str)
@pytest.mark.parametrize("boundary", ["periodic", "mirror"])
def test_device_interface_area_and_shells_equal_the_host(shape, boundary):
    """The CuPy twin (the same code on the device field, summed with its S(k)): the host's
    interface area within 1e-12 and the row's measures within 1e-10."""
    import numba
    from numba import cuda

    from simengine.field import spectrum_cuda as spc
    from simengine.field.measuring import Measurer
    from simengine.field.observables import length_and_radial

    cp, why = spc.cupy_or_reason()
    if cp is None or numba.config.ENABLE_CUDASIM:
        pytest.skip(why or "needs a real GPU")
    phi = np.random.default_rng(2).standard_normal(shape) * 0.5 + 0.05
    grid, bnd = Grid(shape, 0.6), Boundary(boundary)
    ms = Measurer(CahnHilliard(), grid, bnd)
    ds = spc.DeviceSpectrum(shape, 0.6, boundary, radial=True, level=ms.area_level)
    pending = ds.enqueue(cuda.to_device(phi.reshape(-1)))
    length, radial = pending.result()
    assert pending.interface_area() == pytest.approx(ms.host_area(phi), rel=1e-12)
    row = ms.complete({"free_energy": 1.0, "mass": 0.0}, pending.interface_area(), radial)
    _, host_radial = length_and_radial(phi, 0.6, boundary, radial=True)
    ref = ms.complete({"free_energy": 1.0, "mass": 0.0}, ms.host_area(phi), host_radial)
    for k in lengths.COLUMNS:
        assert row[k] == pytest.approx(ref[k], rel=1e-10), k


@pytest.mark.parametrize("shape", [(13,), (7, 6), (5, 4, 3)], ids=str)
@pytest.mark.parametrize("periodic", [True, False])
@pytest.mark.parametrize("with_after", [True, False])
def test_the_cuda_kernel_is_the_numpy_definition(shape, periodic, with_after):
    """simengine/field/lengths_cuda.py (the CUDA simulator here, the GPU on a GPU machine)
    against lengths.interface_area on the same block, with and without the next row."""
    from numba import cuda

    from simengine.field.lengths_cuda import device_area

    rng = np.random.default_rng(sum(shape))
    phi = rng.standard_normal(shape).astype(np.float32 if len(shape) == 2 else np.float64)
    after = rng.standard_normal(shape[1:] or (1,)) if with_after else None
    want = lengths.interface_area(phi, after if len(shape) > 1 else
                                  (None if after is None else after[0]), 0.5, 0.2, periodic)
    got = device_area(cuda.to_device(phi.reshape(-1)), shape, 0.5, 0.2, periodic,
                      None if after is None else cuda.to_device(after.reshape(-1)))
    assert want > 0 and got == pytest.approx(want, rel=1e-12)


SWEEP = """\
kind: field
name: cs
grid: {shape: [128, 128], spacing: 1.0}
boundary: {type: periodic}
model: {mobility: 1.0, kappa: 1.0, potential: {b: 1.0, u: 1.0}}
initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}
time: {end: 1000, dt: 0.01, adaptive: true, tolerance: 0.001}
solver: {integrator: spectral, backend: cpu, precision: float64}
output: {observables_dt: 5, snapshot_dt: 500, checkpoint_dt: 1000}
sweep:
  initial.seed: [1, 2]
"""


def test_sweep_summaries_info_and_plot_carry_the_fits(tmp_path, capsys):
    """Two seeds of a small coarsening run: the summary's exponent and K columns are each
    output's fits, the grouped table their mean ± s.e.; `info` and `plot` print one line per
    measure in the stated format; the coarsening figure is written."""
    import csv
    import re

    from simengine.cli import main
    from simengine.io.reader import Result

    p = tmp_path / "s.yaml"
    p.write_text(SWEEP)
    d = tmp_path / "out"
    assert main(["sweep", str(p), "-d", str(d), "-q"]) == 0
    assert main(["sweep", str(p), "-d", str(d), "--collect"]) == 0
    capsys.readouterr()
    with open(d / "cs-summary.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    with open(d / "cs-grouped.csv", newline="") as fh:
        grouped = list(csv.DictReader(fh))
    want = []
    for row in rows:
        with Result(d / f"{row['name']}.h5") as r:
            f = coarsening.fits(r.observables, r.scenario)
        assert f["energy"].ok, f["energy"].note
        assert float(row["exponent_energy"]) == f["energy"].exponent
        assert float(row["K_energy_se"]) == f["energy"].rate_stderr
        assert float(row["exponent_moment"]) == f["moment"].exponent
        want.append(f["energy"].exponent)
    assert float(grouped[0]["exponent_energy_mean"]) == pytest.approx(np.mean(want), rel=1e-12)
    assert float(grouped[0]["exponent_energy_se"]) == pytest.approx(
        np.std(want, ddof=1) / np.sqrt(2), rel=1e-12)
    out = d / f"{rows[0]['name']}.h5"
    line = re.compile(r"length (energy|interface|shell|correlation|moment): exponent n = "
                      r"\d\.\d+ ± \d\.\d+ over t in \[[\d.e+]+, [\d.e+]+\]; .+")
    assert main(["info", str(out)]) == 0
    info = capsys.readouterr().out.splitlines()
    fits = [ln for ln in info if ln.startswith("length ")]
    assert [ln.split(":")[0] for ln in fits] == [
        "length energy", "length interface", "length shell", "length correlation",
        "length moment", "length fits"]
    assert all(line.fullmatch(ln) for ln in fits[:-1]), fits
    assert main(["plot", str(out), "--out", str(tmp_path / "png"), "--no-gif"]) == 0
    printed = capsys.readouterr().out.splitlines()
    assert printed[:6] == fits
    assert (tmp_path / "png" / "coarsening.png").stat().st_size > 10000


@pytest.mark.parametrize("shared", [True, False])
def test_shell_sums_after_the_first_call_add_only_S(shared, monkeypatch):
    """The device S(k) sums the shells' counts and Σ|k| once (``geometry``) and later only
    Σ S, in shared memory per block where the shells fit: the profile of a second field equals
    the host's (simulator or GPU)."""
    from numba import cuda

    from simengine.field import spectrum as sp
    from simengine.field import spectrum_cuda as spc

    if not shared:
        monkeypatch.setattr(spc, "SHARED_SHELLS", 0)
    shape, h, kind = (12, 10), 0.8, sp.FOURIER
    nb = sp.shells(shape, h, kind)
    bins_host = np.zeros(3 * nb)
    partial = cuda.device_array((spc.MAX_BLOCKS, 2), dtype=np.float64)
    rng = np.random.default_rng(9)
    for call in range(2):
        phi = rng.standard_normal(shape)
        spec = sp.spectrum(phi - phi.mean(), kind)
        flat = np.ascontiguousarray(spec.reshape(-1).view(np.float64))
        bins_host[2::3] = 0                        # what DeviceSpectrum zeroes after call 0
        bins = cuda.to_device(bins_host)
        spc.launch_sums(cuda.to_device(flat), shape, h, kind, partial, bins,
                        geometry=call == 0)
        bins_host = bins.copy_to_host()
        k_dev, s_dev = spc.radial_from_bins(bins_host, shape, kind)
        k, s = radial_structure_factor(phi, h)
        np.testing.assert_allclose(k_dev, k, rtol=1e-12)
        np.testing.assert_allclose(s_dev, s, rtol=1e-12)


def test_an_index_written_before_the_measures_resumes_with_them(tmp_path, monkeypatch):
    """An output whose index has only the columns written before the coarsening measures (the
    writer's column list of then) resumes: its digest holds, the rows before the resume read
    the new columns as NaN and the rows after carry them; the other columns equal an
    uninterrupted run's."""
    import h5py
    from integrity_helpers import run, scenario

    from simengine.io import faults, field_store

    sc = scenario(tmp_path, "field")
    ref = tmp_path / "ref.h5"
    assert run(sc, ref) == 0
    old = tmp_path / "old.h5"
    with monkeypatch.context() as m:
        m.setattr(field_store, "SERIES", field_store.REQUIRED_SERIES)
        faults.arm("commit.retired", 3)
        try:
            with pytest.raises(faults.FaultInjected):
                run(sc, old)
        finally:
            faults.disarm()
    with h5py.File(old, "r") as f:
        assert "observables/length_energy" not in f and "observables/length" in f
        before = len(f["observables/step"])
    assert run(sc, old, resume=True) == 0
    with h5py.File(old, "r") as f, h5py.File(ref, "r") as g:
        le = f["observables/length_energy"][()]
        assert np.isnan(le[:before]).all() and np.isfinite(le[before:]).all()
        np.testing.assert_array_equal(le[before:], g["observables/length_energy"][before:])
        for k in ("step", "mass", "free_energy", "length"):
            np.testing.assert_array_equal(f[f"observables/{k}"][()], g[f"observables/{k}"][()])


def test_huse_extrapolation_of_the_local_exponent():
    inv = np.linspace(0.01, 0.1, 12)
    n = 1 / 3 - 0.8 * inv + 1e-4 * np.random.default_rng(1).standard_normal(12)
    n_inf, se, c = coarsening.huse_extrapolation(inv, n)
    assert abs(n_inf - 1 / 3) < 4 * se and se < 1e-3 and c == pytest.approx(-0.8, rel=0.02)
    assert coarsening.huse_extrapolation(inv[:3], n[:3]) is None


def test_the_correlation_search_step_follows_the_domain_size():
    """A step of L/64 finds the same first zero as steps of h/4 (Brent's method refines both)."""
    nb = 400
    k = np.arange(1, nb) * 2 * np.pi / 800
    x = k * 120 / (2 * np.pi)
    s = x ** 2 / (1 + x ** 2) ** 3
    counts = 2 * np.pi * np.arange(1, nb)
    fine = lengths.correlation_zero(k, s, counts, 2, 400, 1.0)
    coarse = lengths.correlation_zero(k, s, counts, 2, 400, 1.0, lengths.shell_length(k, s))
    assert np.isfinite(fine) and coarse == pytest.approx(fine, rel=1e-8)
