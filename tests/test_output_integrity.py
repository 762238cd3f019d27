"""Corruption never passes silently: flipped bytes in checkpoints, snapshots, distance rows and
compressed data, tampered or contradictory steering attributes, deleted checkpoint data. --resume
refuses with one line (exit 2); ``simengine info --verify`` names every bad dataset (exit 2)."""
import h5py
import numpy as np
import pytest

from conftest import run_cli
from simengine.io import checksum
from simengine.io.field_store import FieldIndex
from simengine.io.network_store import NetworkIndex

FIELD = """\
kind: field
name: integrity
grid: {shape: [24, 20], spacing: 1.0}
time: {dt: 0.01, steps: 60}
solver: {backend: cpu}
output: {snapshot_every: 20, checkpoint_every: 30, observables_every: 10, compression: COMP}
"""

NETWORK = """\
kind: network
name: integrity-net
graph: {generator: {type: barabasi_albert, n: 300, m: 3, seed: 1}}
metrics: {store_distances: true}
solver: {backend: cpu}
output: {checkpoint_every: 100}
"""


def field_run(tmp_path, compression="none"):
    scen = tmp_path / "f.yaml"
    scen.write_text(FIELD.replace("COMP", compression))
    out = tmp_path / "f.h5"
    assert run_cli("run", scen, "-o", out, "-q").returncode == 0
    return scen, out


def network_run(tmp_path):
    scen = tmp_path / "n.yaml"
    scen.write_text(NETWORK)
    out = tmp_path / "n.h5"
    assert run_cli("run", scen, "-o", out, "-q").returncode == 0
    return scen, out


def part_of(out, name, i=-1):
    """(part file, dataset name) behind the i-th mapping of virtual dataset ``name``."""
    with h5py.File(out, "r") as f:
        src = f[name].virtual_sources()[i]
    return out.parent / src.file_name, src.dset_name


def flip_stored_byte(path, dset):
    """Invert one byte in the middle of the first stored chunk of ``dset`` in file ``path``."""
    with h5py.File(path, "r") as f:
        info = f[dset].id.get_chunk_info(0)
    data = bytearray(path.read_bytes())
    data[info.byte_offset + info.size // 2] ^= 0xFF
    path.write_bytes(bytes(data))


def refused(r, *words):
    assert r.returncode == 2, r.stderr
    lines = [x for x in r.stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in lines[0], lines[0]
    return lines[0]


def verify_fails(out, *words):
    r = run_cli("info", "--verify", out)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    for w in words:
        assert w in r.stderr, r.stderr
    return r.stderr


def resume(scen, out, steps=90):
    return run_cli("run", scen, "-o", out, "-q", "--resume", "--set", f"time.steps={steps}")


@pytest.mark.parametrize("compression", ["none", "gzip"])
def test_flipped_checkpoint_byte_is_refused(tmp_path, compression):
    scen, out = field_run(tmp_path, compression)
    assert run_cli("info", "--verify", out).returncode == 0
    part, dset = part_of(out, "checkpoint/phi")
    flip_stored_byte(part, dset)
    refused(resume(scen, out), "checksum mismatch", "cannot resume", str(part))
    verify_fails(out, "/checkpoint/phi", "checksum mismatch")
    with h5py.File(out, "r") as f, pytest.raises(OSError):
        f["checkpoint/phi"][()]  # plain h5py readers are stopped too


def test_flipped_snapshot_byte_is_reported(tmp_path):
    scen, out = field_run(tmp_path)
    part, dset = part_of(out, "fields/phi", 1)
    flip_stored_byte(part, dset)
    verify_fails(out, "/fields/phi", str(part.name), "checksum mismatch")
    with h5py.File(out, "r") as f:
        with pytest.raises(OSError):
            f["fields/phi"][1]
        assert np.isfinite(f["fields/phi"][2]).all()


@pytest.mark.parametrize("value,words", [(10**9, ["digest"]), (-50, ["digest"]), (30, ["digest"])])
def test_tampered_checkpoint_step_is_refused(tmp_path, value, words):
    scen, out = field_run(tmp_path)
    with h5py.File(out, "r+") as f:
        f["checkpoint/phi"].attrs["step"] = value
    refused(resume(scen, out), *words)
    verify_fails(out, "digest")


@pytest.mark.parametrize("step,words", [(10**9, "outside"), (-50, "outside")])
def test_contradictory_step_with_recomputed_digest_is_refused(tmp_path, step, words):
    scen, out = field_run(tmp_path)
    idx = FieldIndex.load(out)
    record = idx.record(idx.steps, idx.snap_blocks, idx.obs, step, idx.ckpt_blocks, idx.complete)
    with h5py.File(out, "r+") as f:
        f["checkpoint/phi"].attrs["step"] = step
        f["checkpoint/phi"].attrs["time"] = step * 0.01
        f["checkpoint"].attrs["digest"] = checksum.digest(record)
    refused(resume(scen, out), words)


def test_deleted_checkpoint_data_is_refused(tmp_path):
    scen, out = field_run(tmp_path)
    part, _ = part_of(out, "checkpoint/phi")
    part.unlink()
    refused(resume(scen, out), "missing", str(part))
    verify_fails(out, "missing")
    again = tmp_path / "again"
    again.mkdir()
    scen, out = field_run(again)
    with h5py.File(out, "r+") as f:
        del f["checkpoint/phi"]
    refused(resume(scen, out), "/checkpoint/phi", "missing")


def test_network_checkpoint_and_distance_corruption(tmp_path):
    scen, out = network_run(tmp_path)
    assert run_cli("info", "--verify", out).returncode == 0
    part, dset = part_of(out, "distances", 1)
    flip_stored_byte(part, dset)
    verify_fails(out, "/distances", "checksum mismatch")
    with h5py.File(out, "r") as f, pytest.raises(OSError):
        f["distances"][()]
    part, dset = part_of(out, "checkpoint/row_sum")
    flip_stored_byte(part, dset)
    refused(run_cli("run", scen, "-o", out, "-q", "--resume"), "checksum mismatch", "row_sum")


@pytest.mark.parametrize("attr,value,word", [("done", 305, "digest"), ("total", 10, "digest"),
                                             ("done", -3, "digest")])
def test_network_tampered_counts_are_refused(tmp_path, attr, value, word):
    scen, out = network_run(tmp_path)
    with h5py.File(out, "r+") as f:
        f["checkpoint"].attrs[attr] = value
    refused(run_cli("run", scen, "-o", out, "-q", "--resume"), word)


def test_network_done_beyond_total_with_recomputed_digest(tmp_path):
    scen, out = network_run(tmp_path)
    idx, _ = NetworkIndex.load(out)
    record = idx.record(idx.rows, idx.total + 5, idx.elapsed, idx.layout, idx.small, False)
    with h5py.File(out, "r+") as f:
        f["checkpoint"].attrs["done"] = idx.total + 5
        f.attrs["complete"] = False
        f["checkpoint"].attrs["digest"] = checksum.digest(record)
    refused(run_cli("run", scen, "-o", out, "-q", "--resume"), "outside")


def test_edited_string_vertex_ids_are_reported(tmp_path):
    (tmp_path / "people.txt").write_text("alice bob\nbob carol\ncarol dave\nalice dave\n")
    scen = tmp_path / "p.yaml"
    scen.write_text("kind: network\nname: people\ngraph: {file: {path: people.txt}}\n")
    out = tmp_path / "p.h5"
    assert run_cli("run", scen, "-o", out, "-q").returncode == 0
    assert run_cli("info", "--verify", out).returncode == 0
    with h5py.File(out, "r+") as f:
        assert [x.decode() for x in f["vertex/id"][()]] == ["alice", "bob", "carol", "dave"]
        f["vertex/id"][0] = "mallory"
    verify_fails(out, "/vertex/id", "sha256")
