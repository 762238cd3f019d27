"""The read cap bounds memory, never validity: an output whose snapshot is larger than a reader
may hold reads (``info``), verifies (``info --verify``, by chunks and part digests) and draws
(``plot``, ``report``: a 3D field's mid-plane read alone, a stride past the cap, S(k) from
snapshots skipped with a line saying why). The cap is lowered for the test
(``SIMENGINE_READ_LIMIT``); every view is compared with plain h5py's strided read of the same
data."""
import h5py
import numpy as np
import pytest

from integrity_helpers import run, scenario
from simengine.cli import main
from simengine.io.file_checks import READ_LIMIT_ENV, read_limit

FIELD3D = ("kind: field\nname: cap3\ngrid: {shape: [16, 12, 10], spacing: 1.0}\n"
           "time: {dt: 0.01, steps: 20}\nsolver: {backend: cpu}\n"
           "output: {snapshot_every: 10, checkpoint_every: 10, observables_every: 10}\n")
FIELD2D = ("kind: field\nname: cap2\ngrid: {shape: [40, 36], spacing: 1.0}\n"
           "time: {dt: 0.01, steps: 20}\nsolver: {backend: cpu}\n"
           "output: {snapshot_every: 10, checkpoint_every: 10, observables_every: 10}\n")
#: bytes a reader may hold in these tests: less than one snapshot (3D: 15 KiB, 2D: 11 KiB) and
#: than one 2D snapshot's plane
CAP = 2000


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    d = tmp_path_factory.mktemp("cap")
    out = {}
    for name, text in (("3d", FIELD3D), ("2d", FIELD2D)):
        sc = scenario(d, name, text)
        assert run(sc, d / f"{name}.h5") == 0
        out[name] = d / f"{name}.h5"
    return out


def test_the_cap_is_configurable_and_bounds_a_reader(monkeypatch):
    monkeypatch.setenv(READ_LIMIT_ENV, "123456")
    assert read_limit() == 123456
    monkeypatch.delenv(READ_LIMIT_ENV)
    assert read_limit() >= 1 << 26      # a quarter of what this process may allocate


@pytest.mark.parametrize("name", ["3d", "2d"])
def test_info_verify_plot_report_of_an_output_past_the_cap(outputs, name, tmp_path, monkeypatch,
                                                           capsys):
    monkeypatch.setenv(READ_LIMIT_ENV, str(CAP))
    out = outputs[name]
    with h5py.File(out, "r") as f:
        assert np.prod(f["fields/phi"].shape[1:]) * 8 > CAP   # one snapshot is past the cap
    assert main(["info", str(out)]) == 0
    assert main(["info", "--verify", str(out)]) == 0
    assert "verified" in capsys.readouterr().out
    assert main(["plot", str(out), "--out", str(tmp_path / "p")]) == 0
    captured = capsys.readouterr()
    drawn = {p.rsplit("/", 1)[-1] for p in captured.out.split()}
    assert {"field.png", "snapshots.png", "phi_histogram.png", "observables.png"} <= drawn
    assert "structure_factor.png" not in drawn
    assert "structure factor figure skipped" in captured.err and "read cap" in captured.err
    assert main(["report", str(out), "--out", str(tmp_path / "r.html")]) == 0
    capsys.readouterr()


@pytest.mark.parametrize("name", ["3d", "2d"])
def test_views_are_within_the_cap_and_equal_plain_h5py(outputs, name, monkeypatch):
    import simengine

    monkeypatch.setenv(READ_LIMIT_ENV, str(CAP))
    with h5py.File(outputs[name], "r") as f:
        phi = f["fields/phi"][()]
        ck = f["checkpoint/phi"][()]
    with simengine.open(outputs[name]) as r:
        for i in range(phi.shape[0]):
            view, k, s = r.plane(i)
            assert view.nbytes <= CAP
            want = phi[i][k] if phi.ndim == 4 else phi[i]
            np.testing.assert_array_equal(view, want[(slice(None, None, s),) * want.ndim])
            assert (s > 1) == (want.nbytes > CAP)
            values, s2 = r.sample(i)
            assert values.nbytes <= CAP and s2 > 1
            fifth, s5 = r.sample(i, 0.2)     # what the histogram holds of 4 curves, each
            assert fifth.nbytes <= CAP / 5 and s5 >= s2
            np.testing.assert_array_equal(
                fifth, phi[i][(slice(None, None, s5),) * (phi.ndim - 1)].ravel())
            np.testing.assert_array_equal(
                values, phi[i][(slice(None, None, s2),) * (phi.ndim - 1)].ravel())
        view, k, s = r.plane()           # the latest field: the checkpoint (step 20)
        want = ck[k] if ck.ndim == 3 else ck
        np.testing.assert_array_equal(view, want[(slice(None, None, s),) * want.ndim])
        assert not r.snapshot_fits()
    monkeypatch.delenv(READ_LIMIT_ENV)
    with simengine.open(outputs[name]) as r:  # the default cap: every point
        view, _, s = r.plane(0)
        assert s == 1 and r.snapshot_fits()
