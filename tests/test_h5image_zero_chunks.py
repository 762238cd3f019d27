"""All-zero chunks of directly written arrays are left unallocated (read back as zeros); the
stored chunks keep their checksums."""
from __future__ import annotations

import h5py
import numpy as np
import pytest


def test_zero_chunks_are_not_stored_and_read_back_as_zeros(tmp_path):
    from simengine.io.durable import write_atomic
    from simengine.io.h5image import CHUNK_BYTES, Image, file_sha256, put_array

    per_chunk = CHUNK_BYTES // 8
    a = np.zeros(3 * per_chunk + 5)            # four chunks, one of them with data
    a[per_chunk + 7] = 2.5
    flags = np.zeros(70000, bool)              # a small all-zero array: no chunk at all
    image = Image()
    with image as f:
        put_array(f, "a", a, image=image)
        put_array(f, "done", flags, image=image)
        put_array(f, "nz", np.arange(10.0), image=image)   # small: through HDF5 itself
    path = tmp_path / "p.h5"
    write_atomic(path, image)
    assert file_sha256(path) == image.sha256()
    with h5py.File(path, "r") as f:
        assert f["a"].id.get_num_chunks() == 1 and f["done"].id.get_num_chunks() == 0
        np.testing.assert_array_equal(f["a"][()], a)
        np.testing.assert_array_equal(f["done"][()], flags)
        info = f["a"].id.get_chunk_info(0)
    data = bytearray(path.read_bytes())        # the stored chunk is still checksummed
    data[info.byte_offset + 3] ^= 0x01
    path.write_bytes(bytes(data))
    with h5py.File(path, "r") as f, pytest.raises(OSError):
        f["a"][()]
