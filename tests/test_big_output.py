"""Big field outputs (issue 44): parts streamed and hashed in one pass (SHA-256 tree digests,
io/tree_hash.py, io/part_stream.py), the closed-form fletcher32, format-3 outputs still verified
and resumed, the host memory a snapshot needs, the initial noise drawn in threads and loaded onto
a device window by window — each against a plain reference."""
from __future__ import annotations

import hashlib
import os
import tracemalloc

import h5py
import numpy as np
import pytest

from simengine import api
from simengine.io import part_stream, tree_hash
from simengine.io.field_store import FieldIndex, FieldParts
from simengine.io.h5image import fletcher32 as hdf5_fletcher32


def _cuda():
    pytest.importorskip("numba.cuda")
    from numba import cuda

    if not cuda.is_available():  # pragma: no cover
        pytest.skip("no CUDA device and not the simulator")
    return cuda


# ----------------------------------------------------------------------------- the digests
def test_tree_writer_equals_the_plain_tree_and_the_file(tmp_path):
    """Pieces put at increasing positions with gaps (zeros), across leaf boundaries: the
    file holds them, and the digest equals the tree computed plainly from its bytes and the
    digest read back from disk in parallel."""
    rng = np.random.default_rng(1)
    k = 12  # 4 KiB leaves: many leaves in a small file
    for trial in range(6):
        path = tmp_path / f"t{trial}"
        want = bytearray()
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_TRUNC)
        try:
            w = tree_hash.TreeWriter(fd, leaf_log2=k, inflight=3)
            for _ in range(int(rng.integers(0, 40))):
                gap = int(rng.integers(0, 3000)) * int(rng.integers(0, 2))
                piece = rng.integers(0, 256, int(rng.integers(1, 9000)), dtype=np.uint8)
                want += bytes(gap) + piece.tobytes()
                w.put(len(want) - piece.size, piece)
            digest = w.finish()
            os.ftruncate(fd, len(want))
            assert path.read_bytes() == bytes(want)
            assert digest == tree_hash.reference(bytes(want), k)
            assert tree_hash.file_digest(fd, digest) == digest
        finally:
            os.close(fd)
    # the form: one leaf of the default size is SHA-256 of the prefix, sizes and the leaf
    data = b"simengine"
    leaf = hashlib.sha256(data).digest()
    root = hashlib.sha256(tree_hash.PREFIX + (1 << 24).to_bytes(8, "little")
                          + len(data).to_bytes(8, "little") + leaf).hexdigest()
    assert tree_hash.reference(data) == f"sha256tree24:{root}"
    # a plain digest (format 3) is the SHA-256 of the whole file
    fd = os.open(tmp_path / "t0", os.O_RDONLY)
    try:
        assert tree_hash.file_digest(fd, "0" * 64) == \
            hashlib.sha256((tmp_path / "t0").read_bytes()).hexdigest()
    finally:
        os.close(fd)


@pytest.mark.parametrize("n,pad", [(0, 0), (1, 0), (2, 3), (7, 1), (720, 0), (721, 5),
                                   (1000, 4), (12345, 17), (262144, 0)])
def test_closed_form_fletcher32_is_hdf5s(n, pad):
    rng = np.random.default_rng(n + pad)
    for data in (rng.integers(0, 256, n, dtype=np.uint8), np.zeros(n, np.uint8),
                 np.full(n, 255, np.uint8), rng.integers(0, 2, n, dtype=np.uint8) * 255):
        assert part_stream.fletcher32(data, pad) == int(hdf5_fletcher32(data, pad))
        if n > 3:  # a piece at an odd address (uint8 rows of odd length)
            assert part_stream.fletcher32(data[1:], pad) == int(hdf5_fletcher32(data[1:], pad))


# ----------------------------------------------------------------------- streamed parts
def _part_content(path):
    with h5py.File(path, "r") as f:
        ds = f["phi"]
        return (dict(f.attrs), ds[()], ds.chunks, ds.fletcher32, ds.compression,
                dict(ds.attrs))


def _same(a, b):
    (fa, da, *ra), (fb, db, *rb) = a, b
    assert fa.keys() == fb.keys() and all(np.array_equal(fa[k], fb[k]) for k in fa)
    assert da.dtype == db.dtype and np.array_equal(da, db)
    assert ra == rb


def test_streamed_device_part_equals_the_host_part(tmp_path, monkeypatch):
    """A part streamed from a device array through small pinned windows holds the same datasets
    and attributes as the part written from the host array; each file's recorded digest is the
    digest of its bytes on disk."""
    cuda = _cuda()
    monkeypatch.setattr(part_stream, "WINDOW_BYTES", 3 * 40 * 24 * 8)  # 3 chunks of rows
    monkeypatch.setattr("simengine.io.h5image.CHUNK_BYTES", 40 * 24 * 8)  # one row a chunk
    rng = np.random.default_rng(3)
    field = rng.uniform(-1, 1, (17, 40, 24))
    field[4:6] = 0.0  # all-zero chunks: skipped from the host, stored from the device
    host = FieldParts(tmp_path / "host.h5", field.shape, np.float64, run_id="a" * 32)
    dev = FieldParts(tmp_path / "dev.h5", field.shape, np.float64, run_id="a" * 32)
    host.append_snapshot(5, field)
    src = part_stream.device_snapshot(cuda.to_device(field.reshape(-1)), field.shape,
                                      np.float64)
    dev.append_snapshot(5, src)
    dev.write_checkpoint(5, src)
    hp = host.path_of("phi", 5, 0, 17)
    dp = dev.path_of("phi", 5, 0, 17)
    _same(_part_content(hp), _part_content(dp))
    ck = _part_content(dev.path_of("checkpoint", 5, 0, 17))  # the same source, written again
    assert ck[0]["kind"] == "checkpoint" and np.array_equal(ck[1], field)
    for parts, path in ((host, hp), (dev, dp)):
        digest = parts.digests[path.relative_to(parts.root).as_posix()]
        fd = os.open(path, os.O_RDONLY)
        try:
            assert digest.startswith("sha256tree24:")
            assert tree_hash.file_digest(fd, digest) == digest
        finally:
            os.close(fd)
        assert tree_hash.reference(path.read_bytes()) == digest


def test_snapshot_host_memory_is_a_few_windows(tmp_path, monkeypatch):
    """Writing a 24 MiB snapshot part from the host array allocates no copy of it (one chunk:
    the marker HDF5 allocates the chunks with); from a device array, the pinned windows more
    (3 × 1 MiB here) and at most one leaf copied (the leaf being filled when a window is
    reused)."""
    from simengine.io import h5image

    cuda = _cuda()
    monkeypatch.setattr(part_stream, "WINDOW_BYTES", 1 << 20)
    monkeypatch.setattr("simengine.io.h5image.CHUNK_BYTES", 1 << 18)  # one row a chunk
    monkeypatch.setattr(tree_hash, "LEAF_LOG2", 18)  # leaves smaller than a window, as at scale
    field = np.random.default_rng(4).uniform(-1, 1, (96, 128, 256))  # 24 MiB
    parts = FieldParts(tmp_path / "m.h5", field.shape, np.float64, run_id="b" * 32)
    parts.append_snapshot(0, field)  # compile and warm up first
    tracemalloc.start()
    try:
        parts.append_snapshot(1, field)
        host_peak = tracemalloc.get_traced_memory()[1]
        src = part_stream.device_snapshot(cuda.to_device(field.reshape(-1)), field.shape,
                                          np.float64)
        tracemalloc.reset_peak()
        before = tracemalloc.get_traced_memory()[0]
        parts.append_snapshot(2, src)
        dev_peak = tracemalloc.get_traced_memory()[1] - before
    finally:
        tracemalloc.stop()
    assert host_peak < h5image.CHUNK_BYTES + (1 << 20), host_peak
    assert dev_peak < 3 * (1 << 20) + (1 << 18) + (1 << 20), dev_peak
    with h5py.File(parts.path_of("phi", 2, 0, 96), "r") as f:
        assert np.array_equal(f["phi"][()], field)


# ----------------------------------------------------------------------- format 3 outputs
SCENARIO = """\
kind: field
name: big
grid: {shape: [24, 20], spacing: 1.0}
boundary: {type: periodic}
model: {mobility: 1.0, kappa: 1.0, potential: {b: 1.0, u: 1.0}}
initial: {type: noise, mean: 0.0, amplitude: 0.1, seed: 2}
time: {dt: 0.01, steps: 8}
solver: {backend: cpu, precision: float64}
output: {observables_every: 2, checkpoint_every: 4, snapshot_every: 4}
"""


def _as_format3(path, own=True):
    """Rewrite the index of ``path`` as simengine with format 3 wrote it: plain SHA-256 part
    digests, format_version 3, the checkpoint digest over both."""
    from simengine.io import field_store
    from simengine.io.metadata import annotate_field

    index = FieldIndex.load(path, check_checkpoint=False)
    index.hook = annotate_field
    root = path.with_name(path.name + ".parts")
    if own and index.ckpt_kind == "phi":  # format 3 always wrote the checkpoint in its own parts
        parts = FieldParts(path, index.grid_shape, index.dtype, run_id=index.run_id)
        parts.write_checkpoint(index.ckpt_step, index.read_checkpoint(), 0)
        index.ckpt_kind, index.ckpt_blocks = "checkpoint", ((0, index.grid_shape[0]),)
    index.digests = {n: hashlib.sha256((root / n).read_bytes()).hexdigest()
                     for n in index.mapped()}
    old, seal = field_store.FORMAT_VERSION, field_store.checksum.seal_index
    field_store.FORMAT_VERSION = 3
    field_store.checksum.seal_index = lambda f: None   # format 3 had no index digest
    try:
        index.commit(digests=dict(index.digests), complete=index.complete)
    finally:
        field_store.FORMAT_VERSION, field_store.checksum.seal_index = old, seal
    with h5py.File(path, "r") as f:
        assert f.attrs["format_version"] == 3
        assert all(len(d) == 64 for d in f["integrity/sha256"][()])
        assert "index_digest" not in f["integrity"].attrs


def test_format3_outputs_verify_and_are_not_resumed(tmp_path):
    """Format 3 (plain part digests, no index digest): ``info --verify`` checks it; ``--resume``
    refuses it with one line saying why (its stored scenario is bound by no index digest, a
    resume would seal an edit of it), the file left as it was."""
    from simengine.errors import UserError
    from simengine.io.verify import verify_file

    full = tmp_path / "full.h5"
    api.run(SCENARIO, full)
    half = tmp_path / "half.h5"
    api.run(SCENARIO, half, overrides=["time.steps=4"])
    shared = tmp_path / "shared.h5"
    api.run(SCENARIO, shared)
    for p in (full, half):
        _as_format3(p)
        problems, _, nparts = verify_file(p)
        assert problems == [] and nparts >= 2
    # a checkpoint mapping a snapshot's parts (format 5) in a file claiming format 3: refused
    _as_format3(shared, own=False)
    problems = verify_file(shared)[0]
    assert len(problems) == 1 and "format 3 never did" in problems[0], problems
    before = half.read_bytes()
    with pytest.raises(UserError) as e:
        api.run(SCENARIO, half, resume=True)
    line = str(e.value)
    assert "\n" not in line and "format 3" in line and "not resumed" in line
    assert "index digest" in line and "--overwrite" in line
    assert half.read_bytes() == before and verify_file(half)[0] == []
    # the stored scenario of a format-3 file is bound by nothing: an edit of it still verifies
    # (what the refusal to resume protects against)
    with h5py.File(half, "r+") as f:
        text = f.attrs["scenario"]
        assert "kappa: 1.0" in text
        f.attrs["scenario"] = text.replace("kappa: 1.0", "kappa: 1.3")
    assert verify_file(half)[0] == []
    with pytest.raises(UserError, match="not resumed"):
        api.run(SCENARIO.replace("kappa: 1.0", "kappa: 1.3"), half, resume=True)
    # a changed byte in an old (plain-digest) part is still found
    part = sorted((full.with_name(full.name + ".parts") / "phi").iterdir())[0]
    with h5py.File(part, "r") as f:
        at = f["phi"].id.get_chunk_info(0).byte_offset + 100
    data = bytearray(part.read_bytes())
    data[at] ^= 0x01
    part.write_bytes(bytes(data))
    problems = verify_file(full)[0]
    assert len(problems) == 1 and part.name in problems[0] and "checksum" in problems[0]


def test_verify_skips_the_read_of_matching_parts_only(tmp_path, monkeypatch):
    """``info --verify`` reads a part in full (fletcher32 through HDF5) only when its digest
    did not match; a part changed in place is still reported by both checks."""
    from simengine.io import integrity, verify

    out = tmp_path / "v.h5"
    api.run(SCENARIO, out)
    read = []
    check = integrity.check_dataset
    monkeypatch.setattr(integrity, "check_dataset",
                        lambda ds, where: (read.append(where), check(ds, where))[1])
    assert verify.verify_file(out)[0] == []
    assert not any(" part " in w for w in read)   # index datasets only
    part = sorted((out.with_name(out.name + ".parts") / "phi").iterdir())[-1]
    with h5py.File(part, "r+") as f:  # HDF5 recomputes fletcher32: only the digest sees it
        f["phi"][0, 0] += 1.0
    read.clear()
    problems = verify.verify_file(out)[0]
    assert len(problems) == 1 and "does not match its SHA-256 digest" in problems[0]
    assert any(part.name in w for w in read)


# ----------------------------------------------------------------------- the initial field
def test_noise_rows_in_threads_is_noise(monkeypatch):
    from simengine.field import initial

    monkeypatch.setattr(initial, "PIECE_VALUES", 1000)  # many pieces, uneven edges
    for dtype in (np.float64, np.float32):
        ref = initial.noise((13, 17, 9), 0.2, 0.05, 11, dtype)
        for a, b in ((0, 13), (2, 7), (12, 13)):
            got = initial.noise_rows((13, 17, 9), a, b, 0.2, 0.05, 11, dtype)
            assert got.dtype == dtype and np.array_equal(got, ref[a:b])


def test_initial_noise_loaded_onto_the_device_by_windows(monkeypatch):
    """A CUDA job loads the seeded noise window by window through pinned buffers: the same field
    as the CPU job's, bit for bit."""
    _cuda()
    from simengine.control import field_job as fjob

    monkeypatch.setattr(fjob, "INIT_WINDOW_BYTES", 3 * 20 * 8)  # 3 rows a window
    sc = api.load(SCENARIO.replace("backend: cpu", "backend: cuda"))
    job = fjob.FieldJob(sc)
    job.start(True, None)
    cpu = fjob.FieldJob(api.load(SCENARIO))
    cpu.start(True, None)
    assert np.array_equal(job.solver.state(), cpu.solver.state())
    assert np.array_equal(cpu.solver.state(), cpu.initial_field())


def test_unbounded_check():
    from simengine.control.field_job import BLOWUP, _unbounded

    x = np.zeros(1000)
    assert not _unbounded(x, BLOWUP)
    for bad in (np.nan, np.inf, -np.inf, 2 * BLOWUP, -2 * BLOWUP):
        x[517] = bad
        assert _unbounded(x, BLOWUP)
    x[517] = BLOWUP
    assert not _unbounded(x, BLOWUP)


def test_device_snapshots_written_behind_are_the_host_snapshots(tmp_path, monkeypatch):
    """A one-process CUDA run whose write stops keep the field on the device (as when S(k) is
    computed on the GPU: observe returns no host field) writes, behind the steps, the same
    snapshots, checkpoint and rows as the run that copies the field to the host."""
    _cuda()
    from simengine.control import field_job as fjob

    sc = SCENARIO.replace("backend: cpu", "backend: cuda")
    ref = tmp_path / "ref.h5"
    api.run(sc, ref)
    used = []
    to_write = fjob.FieldJob._field_to_write
    observe = fjob.FieldJob.observe

    def spy(self):
        src = to_write(self)
        used.append(type(src).__name__)
        return src

    def host_free(self, step, wall, defer_length=False):
        row, phi = observe(self, step, wall, defer_length)
        return row, (None if self.due(step) & {"snap", "ckpt"} else phi)

    monkeypatch.setattr(fjob.FieldJob, "_field_to_write", spy)
    monkeypatch.setattr(fjob.FieldJob, "observe", host_free)
    out = tmp_path / "dev.h5"
    api.run(sc, out)
    assert used and set(used) == {"DeviceSource"}
    with h5py.File(ref, "r") as f, h5py.File(out, "r") as g:
        for name in ("fields/phi", "checkpoint/phi", "fields/step", "observables/free_energy",
                     "observables/length"):
            assert np.array_equal(f[name][()], g[name][()]), name
    from simengine.io.verify import verify_file

    assert verify_file(out)[0] == []


def test_observation_without_a_field_copy_pins_no_field_buffer(monkeypatch):
    """observe_async(copy_field=False) (S(k) on the GPU, a big field) holds no pinned host
    buffer of the field's size; a later observation that copies the field gets one and gives
    the state bit for bit."""
    cuda = _cuda()
    from simengine.control import field_job as fjob

    sizes = []
    pinned = cuda.pinned_array

    def spy(shape, dtype=np.float64, **kw):
        a = pinned(shape, dtype=dtype, **kw)
        sizes.append(a.size)
        return a

    sc = api.load(SCENARIO.replace("backend: cpu", "backend: cuda"))
    job = fjob.FieldJob(sc)
    job.start(True, None)
    solver = job.solver
    monkeypatch.setattr(cuda, "pinned_array", spy)
    red, phi = solver.observe_async(slots=3, copy_field=False).result()
    assert phi is None and sizes and max(sizes) < solver.cells
    assert red == solver.reductions()
    sizes.clear()
    red, phi = solver.observe_async(slots=3, copy_field=True).result()
    assert sizes == [solver.cells]
    assert np.array_equal(phi, solver.state())


def _part_names(out):
    root = out.with_name(out.name + ".parts")
    return sorted(str(p.relative_to(root)) for p in root.rglob("*.h5"))


def test_checkpoint_at_a_snapshot_step_maps_the_snapshot_parts(tmp_path):
    """A checkpoint taken at a snapshot's step writes no bytes of its own: /checkpoint/phi maps
    the snapshot's part; verify, resume (from such a checkpoint) and the retirement of an
    earlier checkpoint's own parts keep every snapshot, and the results equal a run whose
    checkpoints are never at a snapshot step."""
    from simengine.io.h5image import virtual_mappings
    from simengine.io.verify import verify_file

    full = tmp_path / "full.h5"
    api.run(SCENARIO, full)
    assert not [n for n in _part_names(full) if n.startswith("checkpoint/")]
    with h5py.File(full, "r") as f:
        (_, _, file, _), = virtual_mappings(f["checkpoint/phi"])
        assert file.endswith("phi/s000000000008.r0-24.h5")
        assert np.array_equal(f["checkpoint/phi"][()], f["fields/phi"][-1])
    assert verify_file(full)[0] == []
    index = FieldIndex.load(full)
    assert index.ckpt_kind == "phi" and index.ckpt_step == 8
    # resumed from a shared checkpoint at step 4: the same file as the uninterrupted run
    half = tmp_path / "half.h5"
    api.run(SCENARIO, half, overrides=["time.steps=4"])
    api.run(SCENARIO, half, resume=True)
    assert verify_file(half)[0] == []
    assert _part_names(half) == _part_names(full)
    with h5py.File(half, "r") as f, h5py.File(full, "r") as g:
        for name in ("fields/phi", "checkpoint/phi", "fields/step", "observables/free_energy"):
            assert np.array_equal(f[name][()], g[name][()]), name
    # checkpoints every 3 steps: own parts at 3 and 6, shared at 0 and 8 (the end); the own
    # ones are retired, no snapshot part is ever deleted
    odd = tmp_path / "odd.h5"
    api.run(SCENARIO.replace("checkpoint_every: 4", "checkpoint_every: 3"), odd)
    assert _part_names(odd) == _part_names(full)
    with h5py.File(odd, "r") as f, h5py.File(full, "r") as g:
        assert np.array_equal(f["checkpoint/phi"][()], g["checkpoint/phi"][()])
        assert np.array_equal(f["fields/phi"][()], g["fields/phi"][()])
    assert verify_file(odd)[0] == []

