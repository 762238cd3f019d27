"""The scalable output layout: parts joined by virtual datasets, several block writers, plain h5py
reading, compression, resume on another block split, XDMF through VTK's own reader."""
import os
import subprocess
import sys

import h5py
import numpy as np
import pytest
import yaml

import simengine
from conftest import run_cli
from simengine.io.field_store import SERIES, FieldIndex, FieldParts, clean_parts, load_checkpoint
from simengine.io.layout import parts_dir, xdmf_path

SHAPE = (10, 6, 4)


def row(step):
    return {k: (step if k == "step" else float(step) * 0.5) for k in SERIES}


def write_run(out, fields, split, compression="none", total=10):
    """Every block writer writes its rows of each snapshot and checkpoint; one index commits."""
    writers = [FieldParts(out, SHAPE, np.float64, compression) for _ in split]
    index = FieldIndex(out, SHAPE, 0.5, 0.1, np.float64,
                       {"simengine_version": simengine.__version__, "name": "multi"}, total)
    for step, phi in fields.items():
        snap = [w.append_snapshot(step, phi[lo:hi], lo) for w, (lo, hi) in zip(writers, split)]
        ck = [w.write_checkpoint(step, phi[lo:hi], lo) for w, (lo, hi) in zip(writers, split)]
        index.commit([(step, snap)], (step, ck), [row(step)], complete=step == total)
    return index


@pytest.fixture
def fields():
    rng = np.random.default_rng(11)
    return {step: rng.standard_normal(SHAPE) for step in (0, 5, 10)}


def test_several_writers_build_one_field(tmp_path, fields):
    out = tmp_path / "multi.h5"
    write_run(out, fields, [(0, 4), (4, 7), (7, 10)])
    # analysis scripts: plain h5py, from another working directory
    code = ("import h5py, numpy as np, sys; f = h5py.File(sys.argv[1], 'r'); "
            "np.save(sys.argv[2], f['fields/phi'][()]); print(f['fields/step'][()].tolist(), "
            "f['checkpoint/phi'].attrs['step'])")
    r = subprocess.run([sys.executable, "-c", code, str(out), str(tmp_path / "phi.npy")],
                       cwd="/", capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split() == ["[0,", "5,", "10]", "10"]
    np.testing.assert_array_equal(np.load(tmp_path / "phi.npy"), np.stack(list(fields.values())))
    with h5py.File(out, "r") as f:
        np.testing.assert_array_equal(f["fields/time"][()], [0.0, 0.5, 1.0])
        np.testing.assert_array_equal(f["checkpoint/phi"][()], fields[10])
        np.testing.assert_array_equal(f["observables/step"][()], [0, 5, 10])
        assert len(f["fields/phi"].virtual_sources()) == 9 and f.attrs["complete"]
    with simengine.open(out) as r:
        np.testing.assert_array_equal(r.final_field, fields[10])


@pytest.mark.parametrize("split", [[(0, 10)], [(0, 5), (5, 10)], [(0, 1), (1, 3), (3, 8), (8, 10)]])
def test_checkpoint_reads_back_with_any_block_split(tmp_path, fields, split):
    out = tmp_path / "multi.h5"
    write_run(out, fields, [(0, 4), (4, 7), (7, 10)])
    pieces = []
    for lo, hi in split:
        step, block = load_checkpoint(out, lo, hi)
        assert step == 10 and block.shape == (hi - lo, *SHAPE[1:])
        pieces.append(block)
    np.testing.assert_array_equal(np.concatenate(pieces), fields[10])


def test_resume_on_another_number_of_blocks(tmp_path, fields):
    out = tmp_path / "multi.h5"
    write_run(out, {s: fields[s] for s in (0, 5)}, [(0, 4), (4, 7), (7, 10)])
    ref = tmp_path / "ref.h5"
    write_run(ref, fields, [(0, 10)])
    # a run killed after writing its parts of step 10 but before the commit: nothing visible
    stray = FieldParts(out, SHAPE, np.float64).append_snapshot(10, fields[10][:4], 0)
    with h5py.File(out, "r") as f:
        assert f["fields/phi"].shape[0] == 2
    index = FieldIndex.load(out)
    index.truncate(5)
    index.commit()
    clean_parts(index)
    assert not (parts_dir(out) / f"phi/s{10:012d}.r{stray[0]}-{stray[1]}.h5").exists()
    two = [(0, 6), (6, 10)]
    phi = np.concatenate([load_checkpoint(out, lo, hi)[1] for lo, hi in two])
    np.testing.assert_array_equal(phi, fields[5])  # what two new ranks resume from
    writers = [FieldParts(out, SHAPE, np.float64) for _ in two]
    snap = [w.append_snapshot(10, fields[10][lo:hi], lo) for w, (lo, hi) in zip(writers, two)]
    ck = [w.write_checkpoint(10, fields[10][lo:hi], lo) for w, (lo, hi) in zip(writers, two)]
    index.commit([(10, snap)], (10, ck), [row(10)], complete=True)
    with h5py.File(out, "r") as a, h5py.File(ref, "r") as b:
        for k in ("fields/phi", "fields/step", "fields/time", "checkpoint/phi", "observables/step",
                  "observables/mass"):
            np.testing.assert_array_equal(a[k][()], b[k][()], err_msg=k)
    r = run_cli("info", "--verify", out)
    assert r.returncode == 0 and "verified" in r.stdout, r.stderr


def test_blocks_must_cover_the_grid(tmp_path, fields):
    out = tmp_path / "bad.h5"
    w = FieldParts(out, SHAPE, np.float64)
    index = FieldIndex(out, SHAPE, 1.0, 0.1, np.float64, {"name": "x"}, 10)
    blocks = [w.append_snapshot(0, fields[0][:4], 0)]
    with pytest.raises(Exception, match="do not cover"):
        index.commit([(0, blocks)], (0, blocks), [row(0)])
    assert not out.exists()
    with pytest.raises(ValueError):
        w.append_snapshot(0, fields[0][:4], 8)  # rows 8:12 do not fit a grid of 10 rows


SCENARIO = {
    "kind": "field", "name": "xdmf",
    "grid": {"shape": [24, 20], "spacing": 0.7},
    "model": {"mobility": 1.0, "kappa": 1.0, "potential": {"b": 1.0, "u": 1.0}},
    "initial": {"type": "noise", "mean": 0.0, "amplitude": 0.05, "seed": 4},
    "time": {"dt": 0.002, "steps": 40},
    "solver": {"integrator": "rk2", "kernel": "texture", "backend": "cpu", "precision": "float64"},
    "output": {"snapshot_every": 20, "checkpoint_every": 20, "observables_every": 10},
}


def run_scenario(tmp_path, name="run.h5", **changes):
    data = yaml.safe_load(yaml.safe_dump(SCENARIO))
    for key, value in changes.items():
        a, b = key.split("__")
        data[a][b] = value
    scen = tmp_path / "s.yaml"
    scen.write_text(yaml.safe_dump(data))
    out = tmp_path / name
    r = run_cli("run", scen, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    return out


@pytest.mark.parametrize("shape", [[30], [24, 20], [8, 7, 6]])
def test_xdmf_opens_in_vtk_reader(tmp_path, shape):
    pytest.importorskip("vtkmodules.vtkIOXdmf2")
    from vtkmodules.util.numpy_support import vtk_to_numpy
    from vtkmodules.vtkCommonExecutionModel import vtkStreamingDemandDrivenPipeline
    from vtkmodules.vtkIOXdmf2 import vtkXdmfReader

    out = run_scenario(tmp_path, grid__shape=shape)
    xdmf = xdmf_path(out)
    assert xdmf.name == "run.xdmf"
    with h5py.File(out, "r") as f:
        last, times = f["fields/phi"][-1], f["fields/time"][()]
    cwd = os.getcwd()
    os.chdir("/")  # the reader resolves the HDF5 file and its parts relative to the XDMF file
    try:
        reader = vtkXdmfReader()
        reader.SetFileName(str(xdmf))
        reader.UpdateInformation()
        steps = reader.GetOutputInformation(0).Get(vtkStreamingDemandDrivenPipeline.TIME_STEPS())
        np.testing.assert_allclose(steps, times, rtol=0, atol=1e-15)
        reader.UpdateTimeStep(steps[-1])
        image = reader.GetOutputDataObject(0)
        values = vtk_to_numpy(image.GetPointData().GetArray("phi"))
    finally:
        os.chdir(cwd)
    dims = image.GetDimensions()  # x, y, z = the numpy axes reversed
    assert tuple(d for d in dims if d > 1) == tuple(reversed(shape))
    assert image.GetSpacing() == pytest.approx((0.7, 0.7, 0.7))
    np.testing.assert_array_equal(values.reshape(shape), last)


@pytest.mark.parametrize("compression", ["gzip", "lzf"])
def test_compression_is_per_part_and_lossless(tmp_path, compression):
    plain = run_scenario(tmp_path, "plain.h5")
    packed = run_scenario(tmp_path, "packed.h5", output__compression=compression)
    with h5py.File(plain, "r") as a, h5py.File(packed, "r") as b:
        for k in ("fields/phi", "checkpoint/phi", "observables/free_energy"):
            np.testing.assert_array_equal(a[k][()], b[k][()], err_msg=k)
        src = b["fields/phi"].virtual_sources()[0]
        with h5py.File(packed.parent / src.file_name, "r") as part:
            ds = part[src.dset_name]
            assert ds.compression == compression and ds.fletcher32 and ds.shuffle


@pytest.mark.parametrize("shape,dtype,chunks", [((1500, 1024), np.float64, 3),
                                                ((33, 257, 257), np.float64, 5),
                                                ((4194305,), np.uint8, 2),  # odd chunks, 1 byte pad
                                                ((70000,), np.bool_, 1)])
def test_direct_chunks_carry_hdf5_checksums(tmp_path, shape, dtype, chunks):
    """Uncompressed bulk data goes from NumPy to disk beside the image HDF5 built; its chunk
    checksums (computed here) are the ones HDF5 verifies, edge chunks included."""
    from simengine.io.durable import write_atomic
    from simengine.io.h5image import Image, put_array

    rng = np.random.default_rng(5)
    a = (rng.standard_normal(shape) * 100).astype(dtype)
    image = Image()
    with image as f:
        put_array(f, "x", a, image=image)
    assert image._direct, "the direct path was not taken"
    path = tmp_path / "p.h5"
    write_atomic(path, image)
    with h5py.File(path, "r") as f:
        assert f["x"].fletcher32 and f["x"].id.get_num_chunks() == chunks
        np.testing.assert_array_equal(f["x"][()], a)
        info = f["x"].id.get_chunk_info(f["x"].id.get_num_chunks() - 1)  # the edge chunk
    data = bytearray(path.read_bytes())
    data[info.byte_offset] ^= 0x01
    path.write_bytes(bytes(data))
    with h5py.File(path, "r") as f, pytest.raises(OSError):
        f["x"][()]
