"""Cheaper observations of a CUDA field run (simengine/control/field_job.py, observables.py): the length
scale of an observables-only stop is computed while the next steps run (``FieldJob._pipeline``),
and the wavenumbers of S(k) are computed once per grid — neither may change a number written.
"""
from __future__ import annotations

import h5py
import numpy as np
import pytest

from simengine import api
from simengine.control import field_job as fjob
from simengine.field import observables as obs


def _length_reference(phi, spacing=1.0):
    """characteristic_length as it was written before the wavenumber cache and the half
    spectrum (the full FFT)."""
    p = np.asarray(phi, dtype=np.float64)
    s = np.abs(np.fft.fftn(p - p.mean())) ** 2
    ks = np.meshgrid(*[2 * np.pi * np.fft.fftfreq(n, d=spacing) for n in p.shape], indexing="ij")
    kmag = np.sqrt(sum(k * k for k in ks))
    mask = kmag > 0
    st = float(s[mask].sum())
    if not np.isfinite(st):
        return float("nan")
    if st <= 1e-300 * max(1, p.size):
        return float("inf")
    return float(2 * np.pi / (float((kmag[mask] * s[mask]).sum()) / st))


@pytest.mark.parametrize("shape,spacing", [((200, 200), 1.0), ((37,), 0.5), ((13, 11), 0.9),
                                           ((6, 1, 7), 1.3), ((64, 48), 2.0), ((5, 4, 6), 0.7),
                                           ((2,), 1.0), ((3, 1), 1.0)])
def test_length_equals_the_full_fft_form(shape, spacing):
    """The half-spectrum S(k) (rfftn, doubled columns) equals the full-FFT definition within
    rounding, on even and odd last axes, 1-D to 3-D, and keeps its special values."""
    rng = np.random.default_rng(len(shape))
    for i in range(3):
        phi = rng.uniform(-1, 1, shape) * (i + 1)
        got, want = obs.characteristic_length(phi, spacing), _length_reference(phi, spacing)
        assert abs(got - want) <= 1e-14 * want
    # a flat field has no length scale, also where its mean is not exact (0.3): the full-FFT
    # form returned a length of the rounding noise there
    for value in (0.3, 0.0, -1.7):
        assert obs.characteristic_length(np.full(shape, value), spacing) == float("inf")
    tiny = 0.3 + 1e-9 * rng.uniform(-1, 1, shape)  # small but real structure
    if tiny.size > 1:
        got, want = obs.characteristic_length(tiny, spacing), _length_reference(tiny, spacing)
        assert np.isfinite(got) and abs(got - want) <= 1e-6 * want
    bad = rng.uniform(-1, 1, shape)
    bad.flat[0] = np.inf
    with np.errstate(invalid="ignore"):  # the FFT of inf is nan (what the test checks)
        assert np.isnan(obs.characteristic_length(bad, spacing))


SCENARIO = """\
kind: field
name: pipe
grid: {shape: [13, 11], spacing: 0.9}
boundary: {type: periodic}
model: {mobility: 1.0, kappa: 1.0, potential: {b: 1.0, u: 1.0}}
initial: {type: noise, mean: 0.1, amplitude: 0.3, seed: 5}
time: {dt: 0.01, steps: 7}
solver: {backend: cuda, precision: float64, block: [8, 4]}
output: {observables_every: 1, checkpoint_every: 3, snapshot_every: 3}
"""


@pytest.fixture(scope="module")
def serial_run(tmp_path_factory):
    """SCENARIO run without any pipelining (the reference of the pipelined runs), once."""
    pytest.importorskip("numba.cuda")
    from numba import cuda

    if not cuda.is_available():  # pragma: no cover
        pytest.skip("no CUDA device and not the simulator")
    init = fjob.FieldJob.__init__

    def serial_init(self, *a, **kw):
        init(self, *a, **kw)
        assert self._pipeline
        self._pipeline = False

    fjob.FieldJob.__init__ = serial_init
    try:
        return api.run(SCENARIO, tmp_path_factory.mktemp("serial") / "serial.h5")
    finally:
        fjob.FieldJob.__init__ = init


def _tables(path):
    with h5py.File(path, "r") as f:
        g = f["observables"]
        return {k: g[k][()] for k in g if k != "wall_time"}


def test_pipelined_observations_write_the_same_rows(tmp_path, monkeypatch, serial_run):
    pytest.importorskip("numba.cuda")
    from numba import cuda

    if not cuda.is_available():  # pragma: no cover
        pytest.skip("no CUDA device and not the simulator")
    pending = []
    finish = fjob.FieldJob.finish_observation

    def spy(self):
        pending.append(self._pending is not None)
        finish(self)

    monkeypatch.setattr(fjob.FieldJob, "finish_observation", spy)
    from simengine.io.field_output import FieldOutput

    behind = []
    write_behind = FieldOutput.write_behind

    def spy_behind(self):
        behind.append([step for step, _ in self.snaps])
        write_behind(self)

    monkeypatch.setattr(FieldOutput, "write_behind", spy_behind)
    from simengine.field.cuda_solver import AsyncObservation

    used = []
    result = AsyncObservation.result

    def spy_result(self):
        used.append(self)
        return result(self)

    monkeypatch.setattr(AsyncObservation, "result", spy_result)
    piped = api.run(SCENARIO, tmp_path / "piped.h5")
    # obs-only stops 1, 2, 4, 5 are completed later (during the next steps), and their device
    # part was enqueued behind the steps that reach them
    assert sum(pending) == 4
    assert len(used) == 4
    # the snapshot + checkpoint stops 0, 3 and 6 are written behind (the end, 7, at once)
    assert behind == [[0], [3], [6]]
    serial = serial_run
    a, b = _tables(piped), _tables(serial)
    assert sorted(a) == sorted(b) and list(a["step"]) == list(range(8))
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    assert np.all(np.isfinite(a["length"]))
    # the snapshots and the checkpoint too, bit for bit
    import simengine

    with simengine.open(piped) as p, simengine.open(serial) as q:
        assert p.complete and q.complete
        assert list(p.snapshot_steps) == list(q.snapshot_steps) == [0, 3, 6, 7]
        np.testing.assert_array_equal(p.phi[()], q.phi[()])
        assert p.checkpoint[1] == q.checkpoint[1] == 7
        np.testing.assert_array_equal(p.checkpoint[0], q.checkpoint[0])


def test_checkpoint_completes_the_pending_row(tmp_path):
    """An interrupt checkpoint writes the pending row first (rows in step order)."""
    from types import SimpleNamespace

    sc = api.load(SCENARIO)
    job = fjob.FieldJob(sc)
    assert job._pipeline
    job.start(True, None)
    writes = []
    out = SimpleNamespace(obs=[], snaps=[], ckpt=None,
                          write=lambda complete=False: writes.append(
                              [r["step"] for r in out.obs]),
                          write_behind=lambda: writes.append([r["step"] for r in out.obs]),
                          wait=lambda: None)
    job.at_stop(0, out, 0.0)  # everything due at 0: written (behind) with its row
    assert writes == [[0]] and job._pending is None
    job.solver.advance(1)
    job.at_stop(1, out, 0.1)  # observables only: pending
    assert job._pending is not None and [r["step"] for r in out.obs] == [0]
    job.solver.advance(1)
    job.checkpoint(2, out, 0.2)
    assert job._pending is None and writes[-1] == [0, 1]
    assert np.isfinite(out.obs[-1]["length"]) and out.obs[-1]["step"] == 1


def test_write_behind_error_and_interrupt(tmp_path, monkeypatch):
    """A write-behind's error is raised at the next wait (the interrupt checkpoint), and an
    interrupt right after a write-behind waits for it and counts its checkpoint."""
    from types import SimpleNamespace

    from simengine.errors import OutputError

    sc = api.load(SCENARIO)
    job = fjob.FieldJob(sc)
    job.start(True, None)

    class Out(SimpleNamespace):
        def write_behind(self):
            self.behind.append(self.ckpt[0])

        def wait(self):
            if self.fail:
                self.fail = False
                raise OutputError("disk full")

        def write(self, complete=False):
            self.sync.append(self.ckpt[0] if self.ckpt else None)

    out = Out(obs=[], snaps=[], ckpt=None, behind=[], sync=[], fail=False)
    job.solver.advance(3)
    job.at_stop(3, out, 0.1)  # snapshot + checkpoint due: behind
    assert out.behind == [3] and job.last_ckpt == 0 and job._writing is not None
    job.checkpoint(3, out, 0.2)  # waits for it: its checkpoint is the last one, no new write
    assert job.last_ckpt == 3 and out.sync == [] and job._writing is None
    job.solver.advance(3)
    job.at_stop(6, out, 0.3)
    out.fail = True
    with pytest.raises(OutputError, match="disk full"):
        job.checkpoint(6, out, 0.4)
    assert job.last_ckpt == 3  # the failed write did not count


@pytest.mark.parametrize("shape,bc", [((13, 11), "periodic"), ((4, 3, 5), "fixed"),
                                      ((29,), "mirror")])
def test_observe_async_equals_reductions_and_state(shape, bc):
    """The enqueued observation gives what ``reductions()`` and ``state()`` give, bit for bit, and
    a result stays valid while the next observation is enqueued (two host buffers alternate)."""
    pytest.importorskip("numba.cuda")
    from numba import cuda

    if not cuda.is_available():  # pragma: no cover
        pytest.skip("no CUDA device and not the simulator")
    from simengine.field.model import Boundary, CahnHilliard, Grid
    from simengine.field.backends import make_solver

    grid = Grid(shape, spacing=0.7)
    s = make_solver(CahnHilliard(), grid, Boundary(bc, 0.2), backend="cuda", dt=1e-3,
                    precision="float64")
    s.load(np.random.default_rng(3).uniform(-0.5, 0.5, shape))
    got = []
    for _ in range(3):
        s.advance(1)
        got.append((s.observe_async(), s.reductions(), s.state()))
        if len(got) > 1:  # the previous one, after this one was enqueued
            red, phi = got[-2][0].result()
            assert red == got[-2][1]
            np.testing.assert_array_equal(phi, got[-2][2])
    red, phi = got[-1][0].result()
    assert red == got[-1][1] and phi.shape == shape
    np.testing.assert_array_equal(phi, got[-1][2])
    assert not np.array_equal(got[0][2], got[-1][2])  # the field did move


def test_pieces_are_powers_of_two_near_a_third_of_a_second():
    """The controller's pieces of steps are powers of two (few distinct lengths, so a CUDA
    solver replays graphs it recorded instead of recording one per piece)."""
    seq, piece = [], 1
    for _ in range(40):  # a fast solver: 1 µs per step → doubles up to MAX_PIECE
        piece = fjob.piece_size(piece, piece, piece * 1e-6)
        seq.append(piece)
    assert seq[:4] == [2, 4, 8, 16] and seq[-1] == fjob.MAX_PIECE
    for n, secs in ((1000, 0.75), (777, 3.1), (5, 0.2001), (1, 9.0), (3000, 0.31)):
        p = fjob.piece_size(4096, n, secs)
        assert p & (p - 1) == 0 and 1 <= p <= max(1, n * 0.3 / secs)  # power of two ≤ target
        assert 2 * p > n * 0.3 / secs or p == fjob.MAX_PIECE


def test_large_fields_observe_at_the_stop(tmp_path, monkeypatch, serial_run):
    """Fields above ASYNC_OBSERVE_MAX_BYTES are not read back behind the steps (two pinned
    copies of a large field would be too much host memory); the rows are the same. (Below it
    the 4 observables-only stops are: test_pipelined_observations_write_the_same_rows.)"""
    from simengine.field.cuda_solver import CudaFieldSolver

    calls = []
    observe = CudaFieldSolver.observe_async

    def spy(self, *a, **kw):
        calls.append(1)
        return observe(self, *a, **kw)

    monkeypatch.setattr(CudaFieldSolver, "observe_async", spy)
    monkeypatch.setattr(fjob, "ASYNC_OBSERVE_MAX_BYTES", 13 * 11 * 8 - 1)
    a = _tables(serial_run)
    b = _tables(api.run(SCENARIO, tmp_path / "b.h5"))
    assert calls == []
    for k in a:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)


def _fast_steps(monkeypatch):
    """Make every FieldJob believe its steps are fast (run-ahead needs a measured rate, which a
    7-step simulator run never gets)."""
    init = fjob.FieldJob.__init__

    def fast_init(self, *a, **kw):
        init(self, *a, **kw)
        self._step_seconds = 1e-9

    monkeypatch.setattr(fjob.FieldJob, "__init__", fast_init)


def test_run_ahead_writes_the_same_files(tmp_path, monkeypatch, serial_run):
    """At a snapshot/checkpoint stop the following observables-only stops are enqueued ahead
    (steps and observations) and the write is synchronous; the files equal those of a run
    without any pipelining, bit for bit."""
    serial = serial_run
    _fast_steps(monkeypatch)
    ahead = []
    run_ahead = fjob.FieldJob._run_ahead

    def spy(self, done):
        n = run_ahead(self, done)
        ahead.append((done, [s for s, _ in self._ahead]))
        return n

    monkeypatch.setattr(fjob.FieldJob, "_run_ahead", spy)
    piped = api.run(SCENARIO, tmp_path / "ahead.h5")
    # the write stops 0, 3 and 6 enqueue the observables-only stops up to the next write; the
    # observables-only stops top the queue up (nothing more to enqueue before a write here)
    assert ahead == [(0, [1, 2]), (1, [2]), (2, []), (3, [4, 5]), (4, [5]), (5, []), (6, [])]
    a, b = _tables(piped), _tables(serial)
    for k in b:
        np.testing.assert_array_equal(a[k], b[k], err_msg=k)
    import simengine

    with simengine.open(piped) as p, simengine.open(serial) as q:
        assert list(p.snapshot_steps) == list(q.snapshot_steps) == [0, 3, 6, 7]
        np.testing.assert_array_equal(p.phi[()], q.phi[()])
        np.testing.assert_array_equal(p.checkpoint[0], q.checkpoint[0])


def test_interrupt_during_run_ahead_checkpoints_the_field_of_its_step(monkeypatch):
    """The GPU is past the controller's step while stops run ahead: an interrupt there
    checkpoints the host copy taken at that step — the field an uninterrupted run has there."""
    from types import SimpleNamespace

    _fast_steps(monkeypatch)
    sc = api.load(SCENARIO)
    job = fjob.FieldJob(sc)
    job.start(True, None)
    writes = []
    out = SimpleNamespace(obs=[], snaps=[], ckpt=None,
                          write=lambda complete=False: writes.append(out.ckpt),
                          write_behind=lambda: writes.append(out.ckpt), wait=lambda: None)
    job.at_stop(0, out, 0.0)  # writes (behind) after enqueueing stops 1 and 2
    assert [s for s, _ in job._ahead] == [1, 2] and len(writes) == 1
    progress = []
    assert job.advance(0, 1, lambda: False, progress.append) == 1 and progress == [1]
    job.at_stop(1, out, 0.1)
    assert [s for s, _ in job._ahead] == [2] and job._taken[0] == 1
    job.checkpoint(1, out, 0.2)  # the GPU has computed step 2 meanwhile
    step, phi = out.ckpt
    ref = fjob.FieldJob(sc)
    ref._pipeline = False
    ref.start(True, None)
    ref.solver.advance(1)
    assert step == 1 and job._ahead == [] and job.last_ckpt == 1
    np.testing.assert_array_equal(phi, ref.solver.state())
    assert not np.array_equal(phi, job.solver.state())  # the solver itself is at step 2


def test_run_ahead_keeps_a_time_budget_and_tops_up(monkeypatch):
    """At most RUN_AHEAD_SECONDS of steps are enqueued beyond the controller's step; taking a
    stop tops the queue up again."""
    from types import SimpleNamespace

    sc = api.load(SCENARIO.replace("checkpoint_every: 3, snapshot_every: 3",
                                   "checkpoint_every: 0, snapshot_every: 0"))
    job = fjob.FieldJob(sc)
    job.start(True, None)
    job._step_seconds = fjob.RUN_AHEAD_SECONDS / 2.5  # two 1-step stops fit, not three
    out = SimpleNamespace(obs=[], snaps=[], ckpt=None, write=lambda complete=False: None,
                          write_behind=lambda: None, wait=lambda: None)
    job.at_stop(0, out, 0.0)
    assert [s for s, _ in job._ahead] == [1, 2]
    for step in (1, 2, 3):
        assert job.advance(step - 1, step, lambda: False, lambda d: None) == step
        job.at_stop(step, out, 0.1 * step)
        assert [s for s, _ in job._ahead] == [s for s in (step + 1, step + 2) if s < 7]
    job.finish_observation()
    assert [r["step"] for r in out.obs] == [0, 1, 2, 3]
