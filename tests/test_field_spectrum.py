"""S(k) per boundary (simengine/field/spectrum.py, spectrum_cuda.py): the cosine transform for
mirror walls, the host and device forms of the same definition, the radial profile."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.fft

from simengine.field import observables as obs
from simengine.field import spectrum as sp
from simengine.field import spectrum_cuda as spc

SHAPES = [(16,), (15,), (12, 10), (7, 9), (6, 5, 8), (5, 4, 3), (2,), (3, 1)]


def _field(shape, seed=3):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


@pytest.mark.parametrize("n", [1, 2, 3, 8, 9, 64, 65])
def test_dct2_equals_scipy(n):
    x = _field((4, n), n)
    for ax in (0, 1):
        got = sp.dct2(x, ax)
        want = scipy.fft.dct(x, type=2, norm="ortho", axis=ax)
        assert np.allclose(got, want, rtol=0, atol=1e-13)


def _brute_cosine_length(phi, h):
    """L from the explicit orthonormal cosine basis (cell-centred modes
    c_m cos(π m (i + 1/2) / N), c_0 = √(1/N), c_m = √(2/N): Σ S = Σ (φ − φ̄)²)."""
    p = np.asarray(phi, dtype=np.float64) - np.mean(phi)
    x = p
    for ax, n in enumerate(p.shape):
        i = np.arange(n)
        basis = np.cos(math.pi * np.outer(np.arange(n), i + 0.5) / n) * math.sqrt(2 / n)
        basis[0] /= math.sqrt(2)
        x = np.moveaxis(np.tensordot(basis, np.moveaxis(x, ax, 0), axes=(1, 0)), 0, ax)
    s = x * x
    ks = np.meshgrid(*[math.pi * np.arange(n) / (n * h) for n in p.shape], indexing="ij")
    kmag = np.sqrt(sum(k * k for k in ks))
    m = kmag > 0
    return 2 * math.pi * float(s[m].sum()) / float((kmag[m] * s[m]).sum())


@pytest.mark.parametrize("shape", SHAPES, ids=str)
def test_mirror_length_uses_the_cosine_modes(shape):
    phi = _field(shape)
    got = obs.characteristic_length(phi, 0.7, boundary="mirror")
    assert got == pytest.approx(_brute_cosine_length(phi, 0.7), rel=1e-12)
    # periodic and fixed keep the Fourier form
    assert obs.characteristic_length(phi, 0.7, boundary="fixed") == \
        obs.characteristic_length(phi, 0.7)
    assert obs.characteristic_length(np.full(shape, 0.3), 0.7, boundary="mirror") == math.inf


def test_cosine_sees_no_jump_at_mirror_walls():
    """A single smooth interface in a no-flux box: the periodic FFT sees the wrap-around jump
    and puts power at high k (a shorter L); the cosine transform sees one half-wave."""
    n = 128
    x = (np.arange(n) + 0.5) / n
    phi = np.tanh((x - 0.5) * 20)
    l_cos = obs.characteristic_length(phi, 1.0, boundary="mirror")
    l_fft = obs.characteristic_length(phi, 1.0, boundary="periodic")
    assert l_cos > 1.4 * n  # the fundamental k = π/(N h) dominates: L near 2N
    assert l_fft < 0.6 * l_cos  # the wrap-around jump's high-k power


@pytest.mark.parametrize("shape", SHAPES, ids=str)
@pytest.mark.parametrize("kind", [sp.FOURIER, sp.COSINE])
def test_device_sums_kernel_equals_host(shape, kind):
    """The reduction kernel (simulator or GPU) on the host's spectrum gives the host's length
    and radial profile."""
    from numba import cuda

    phi = _field(shape, 5)
    h = 0.8
    boundary = "mirror" if kind == sp.COSINE else "periodic"
    spec = sp.spectrum(phi - phi.mean(), kind)
    flat = spec.reshape(-1).view(np.float64) if kind == sp.FOURIER else spec.reshape(-1)
    partial = cuda.device_array((spc.MAX_BLOCKS, 2), dtype=np.float64)
    nb = sp.shells(shape, h, kind)
    bins = cuda.to_device(np.zeros(3 * nb))
    blocks = spc.launch_sums(cuda.to_device(np.ascontiguousarray(flat)), shape, h, kind,
                             partial, bins)
    st, wk = np.sum(partial.copy_to_host()[:blocks], axis=0)
    assert sp.length_of_sums(wk, st, phi.size) == pytest.approx(
        obs.characteristic_length(phi, h, boundary=boundary), rel=1e-12)
    # radial profile against the host tables
    kmag, weight = sp.mode_table(shape, h, kind)
    s = sp.power(spec, kind, phi.size)
    count, ksum, ssum = sp.radial_profile(s, kmag, weight, shape, h, kind)
    k_dev, s_dev = spc.radial_from_bins(bins.copy_to_host(), shape, kind)
    ok = count > 0
    assert np.allclose(k_dev, ksum[ok] / count[ok], rtol=1e-12)
    assert np.allclose(s_dev, ssum[ok] / count[ok], rtol=1e-12)


def test_radial_profile_matches_the_plot_form():
    """The periodic radial profile equals analysis.radial_structure_factor (the figures')."""
    from simengine import analysis

    phi = _field((12, 10), 9)
    kind = sp.FOURIER
    spec = sp.spectrum(phi - phi.mean(), kind)
    kmag, weight = sp.mode_table(phi.shape, 0.5, kind)
    count, ksum, ssum = sp.radial_profile(sp.power(spec, kind, phi.size), kmag, weight,
                                          phi.shape, 0.5, kind)
    ok = count > 0
    k, s = analysis.radial_structure_factor(phi, 0.5)
    assert np.allclose(ksum[ok] / count[ok], k, rtol=1e-12)
    assert np.allclose(ssum[ok] / count[ok], s, rtol=1e-12)


@pytest.mark.gpu
@pytest.mark.parametrize("shape", [(64,), (63, 50), (20, 17, 12)], ids=str)
@pytest.mark.parametrize("boundary", ["periodic", "mirror"])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_device_spectrum_equals_host(shape, boundary, dtype):
    """cuFFT (CuPy) + the kernel on the GPU: the host's length within 1e-12, radial S(k) too."""
    from numba import cuda

    cp, why = spc.cupy_or_reason()
    if cp is None or spc.cuda.is_available() is False or _simulated():
        pytest.skip(why or "needs a real GPU")
    phi = _field(shape, 11).astype(dtype)
    ds = spc.DeviceSpectrum(shape, 0.6, boundary, radial=True)
    length, (k, s) = ds.enqueue(cuda.to_device(phi.reshape(-1))).result()
    assert length == pytest.approx(obs.characteristic_length(phi, 0.6, boundary=boundary),
                                   rel=1e-12)
    kind = sp.transform_of(boundary)
    spec = sp.spectrum(phi.astype(np.float64) - phi.astype(np.float64).mean(), kind)
    kmag, weight = sp.mode_table(shape, 0.6, kind)
    count, ksum, ssum = sp.radial_profile(sp.power(spec, kind, phi.size), kmag, weight, shape,
                                          0.6, kind)
    k_host, s_host = sp.shell_profile(count, ksum, ssum)
    assert np.allclose(s, s_host, rtol=1e-10, equal_nan=True)
    assert np.allclose(k, k_host, rtol=1e-12, equal_nan=True)


def _simulated():
    import numba

    return bool(numba.config.ENABLE_CUDASIM)


RUN = """\
kind: field
name: spec
grid: {{shape: [40, 36], spacing: 0.9}}
boundary: {{type: {boundary}}}
model: {{mobility: 1.0, kappa: 1.0, potential: {{b: 1.0, u: 1.0}}}}
initial: {{type: noise, mean: 0.1, amplitude: 0.3, seed: 5}}
time: {{dt: 0.01, steps: 60}}
solver: {{backend: cuda, precision: float64}}
output: {{observables_every: 5, checkpoint_every: 20, snapshot_every: 20}}
"""


@pytest.mark.gpu
@pytest.mark.parametrize("boundary", ["periodic", "mirror"])
def test_cli_path_with_device_spectrum_writes_the_host_numbers(tmp_path, monkeypatch, boundary):
    """A CUDA run whose S(k) is computed on the GPU (forced for a small grid) writes the rows
    of the same run with S(k) on the host: every column equal, the length within 1e-12."""
    import h5py

    from simengine import api

    cp, why = spc.cupy_or_reason()
    if cp is None or _simulated():
        pytest.skip(why or "needs a real GPU")
    scen = RUN.format(boundary=boundary)
    monkeypatch.setattr(spc, "DEVICE_MIN_CELLS", 1 << 40)
    host = api.run(scen, tmp_path / "host.h5")
    monkeypatch.setattr(spc, "DEVICE_MIN_CELLS", 1)
    dev = api.run(scen, tmp_path / "dev.h5")
    with h5py.File(host, "r") as f, h5py.File(dev, "r") as g:
        for k in f["observables"]:
            if k == "wall_time":
                continue
            a, b = f["observables"][k][()], g["observables"][k][()]
            if k == "length":
                np.testing.assert_allclose(b, a, rtol=1e-12)
            elif k.startswith("length_") or k == "interface_density":
                # the coarsening measures: the same sums in another order (lengths_cuda.py,
                # the shells summed per block); the zero of C(r) found by Brent's method
                np.testing.assert_allclose(b, a, rtol=1e-8, err_msg=k)
            else:
                np.testing.assert_array_equal(a, b, err_msg=k)


def test_structure_factor_rows_are_stored_and_resume(tmp_path):
    """output.structure_factor: true stores the radial S(k) of every observation (the host form
    on the run's fields), keeps it through a resume, and refuses to mix it with rows without."""
    import h5py

    from simengine import api
    from simengine.errors import UserError

    scen = {"kind": "field", "name": "sk", "grid": {"shape": [24, 20], "spacing": 0.8},
            "boundary": {"type": "mirror"},
            "initial": {"type": "noise", "mean": 0.0, "amplitude": 0.3, "seed": 2},
            "time": {"dt": 0.01, "steps": 40},
            "solver": {"backend": "cpu"},
            "output": {"observables_every": 10, "snapshot_every": 20, "checkpoint_every": 20,
                       "structure_factor": True}}
    out = api.run(scen, tmp_path / "sk.h5")
    with h5py.File(out, "r") as f:
        rows = f["observables/structure_factor"][()]
        k = f["observables/structure_factor_k"][()]
        steps = list(f["observables/step"][()])
        snaps = list(f["fields/step"][()])
        phi = f["fields/phi"][()]
    assert rows.shape == (len(steps), len(k)) == (5, sp.shells((24, 20), 0.8, sp.COSINE))
    for j, s in enumerate(snaps):  # the stored rows are the host form of the stored fields
        want_k, want = sp.shell_profile(*sp.radial_sums(phi[j], 0.8, "mirror"))
        np.testing.assert_allclose(rows[steps.index(s)], want, rtol=1e-12, equal_nan=True)
        np.testing.assert_allclose(k, want_k, rtol=1e-12, equal_nan=True)
    # resume to more steps: the rows continue; a resume without structure_factor is refused
    scen["time"]["steps"] = 60
    api.run(scen, out, resume=True)
    with h5py.File(out, "r") as f:
        assert f["observables/structure_factor"].shape == (7, len(k))
    scen["output"]["structure_factor"] = False
    scen["time"]["steps"] = 80
    with pytest.raises(UserError, match="structure_factor"):
        api.run(scen, out, resume=True)


def test_structure_factor_figure_draws_the_stored_rows(tmp_path):
    """The S(k, t) figure plots the stored rows when the run kept them (one curve per picked
    observation time), else the snapshots' spectra."""
    from simengine import api, plot

    scen = {"kind": "field", "name": "skp", "grid": {"shape": [16, 16]},
            "boundary": {"type": "mirror"},
            "initial": {"type": "noise", "mean": 0.0, "amplitude": 0.3, "seed": 3},
            "time": {"dt": 0.01, "steps": 30}, "solver": {"backend": "cpu"},
            "output": {"observables_every": 5, "snapshot_every": 30,
                       "structure_factor": True}}
    out = api.run(scen, tmp_path / "skp.h5")
    import simengine

    with simengine.open(out) as r:
        fig = plot.structure_factor_figure(r)
        ax = fig.axes[0]
        assert len(ax.get_lines()) == 6          # observations at t > 0: steps 5 … 30
        assert "stored" in ax.get_title() and "cosine" in ax.get_ylabel()
        rows = r.file["observables/structure_factor"][()]
        k = r.file["observables/structure_factor_k"][()]
        line = ax.get_lines()[-1]
        ok = np.isfinite(rows[-1]) & (rows[-1] > 0)
        np.testing.assert_allclose(line.get_xdata(), k[ok])
        np.testing.assert_allclose(line.get_ydata(), rows[-1][ok])
