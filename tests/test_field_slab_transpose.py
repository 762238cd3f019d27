"""The slab spectrum's transpose (simengine/field/slab_transpose.py): the layout, the packing and
both transports' receive buffers, in one process with host arrays (the device path runs the same
code with CuPy arrays and CUDA IPC copies: tests/mpi/field_spectrum.py on a GPU machine), and the
reduction kernel on every rank's share against the one-process S(k)."""
from __future__ import annotations

import math

import numpy as np
import pytest
import scipy.fft

from simengine.field import observables as obs
from simengine.field import slab_transpose as st
from simengine.field import spectrum as sp
from simengine.field import spectrum_cuda as spc
from simengine.field.decomposition import split_rows


def _field(shape, seed=7):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def whole_spectrum(phi, kind):
    """The whole field's spectrum in the transposed share's layout: ``rfftn`` (a 1-D field: the
    full FFT, viewed as (n, 1)) or the orthonormal DCT-II."""
    x = phi - phi.mean()
    if kind == sp.COSINE:
        y = scipy.fft.dctn(x, type=2, norm="ortho")
    else:
        y = np.fft.fft(x) if x.ndim == 1 else np.fft.rfftn(x)
    return y[:, None] if y.ndim == 1 else y


class _Collected(Exception):
    pass


def exchanged(phi, shape, rows, kind):
    """Every rank's transport after packing and exchanging, through the host transport (a
    two-pass alltoall stand-in) and through :func:`st.pull` reading the other ranks' send
    buffers (what the peer transport does with device copies). Returns the host transports and
    the pulled receive buffers."""
    layout, dtype = st.layout_for(shape, rows, kind)
    mean = phi.mean()
    ts = [st.HostTransport(layout, r, dtype) for r in range(len(rows))]
    sends = {}
    for r, (a, b) in enumerate(rows):
        st.pack(st.forward(phi[a:b] - mean, shape, kind), layout, r, ts[r].send)

        def record(send, r=r):
            sends[r] = [np.array(s) for s in send]
            raise _Collected
        ts[r].alltoall = record
        with pytest.raises(_Collected):
            ts[r].exchange()
    pulled = []
    for r, t in enumerate(ts):
        t.alltoall = lambda send, r=r: [sends[q][r] for q in range(len(rows))]
        t.exchange()
        recv = np.full(max(1, layout.recv_count(r)), np.nan, dtype=dtype)

        def copy(q, s0, d0, n, recv=recv):
            recv[d0:d0 + n] = ts[q].send[s0:s0 + n]
        st.pull(layout, r, copy)
        pulled.append(recv)
    return ts, pulled


def test_layout_offsets_tile_the_buffers():
    """Blocks of every sender tile its send buffer and every receiver's buffer exactly once."""
    lay = st.TransposeLayout([(0, 3), (3, 5), (5, 9)], 7, (2, 3))
    for r in range(3):
        cover = np.zeros(lay.send_count(r), int)
        for q in range(3):
            o, n = lay.send_offset(r, q), lay.block_count(r, q)
            cover[o:o + n] += 1
        assert (cover == 1).all()
        cover = np.zeros(lay.recv_count(r), int)
        for q in range(3):
            o, n = lay.recv_offset(r, q), lay.block_count(q, r)
            cover[o:o + n] += 1
        assert (cover == 1).all()


@pytest.mark.parametrize("shape", [(16,), (12, 10), (7, 9), (9, 2), (6, 5, 8), (5, 4, 3),
                                   (7, 3, 5)], ids=str)
@pytest.mark.parametrize("kind", [sp.FOURIER, sp.COSINE])
def test_both_transports_give_each_rank_its_share_of_the_whole_spectrum(shape, kind):
    """Host and peer receive buffers are equal, and each rank's share (after the transform of
    axis 0) is its columns of the whole field's spectrum (1, 2, 3 ranks, uneven slabs)."""
    phi = _field(shape)
    whole = whole_spectrum(phi, kind)
    for parts in (1, 2, 3):
        rows = split_rows(shape[0], parts)
        ts, pulled = exchanged(phi, shape, rows, kind)
        lay = ts[0].layout
        for r, t in enumerate(ts):
            n = lay.recv_count(r)
            np.testing.assert_array_equal(pulled[r][:n], t.recv[:n])
            flat, geo, (stored, offsets, half) = st.share_after(t.recv, lay, r, shape, kind)
            c0, c1 = lay.cols[r]
            if flat is None:
                assert c1 == c0
                continue
            got = flat.view(np.complex128) if kind == sp.FOURIER else flat
            want = whole[:, c0:c1]
            np.testing.assert_allclose(got.reshape(want.shape), want, rtol=0,
                                       atol=1e-12 * np.abs(whole).max())


@pytest.mark.parametrize("shape", [(16,), (12, 10), (7, 9), (6, 5, 8), (5, 4, 3)], ids=str)
@pytest.mark.parametrize("kind", [sp.FOURIER, sp.COSINE])
def test_share_sums_on_the_device_give_the_one_process_spectrum(shape, kind):
    """The reduction kernel on every rank's share (offsets into the whole spectrum, the half
    last axis of ``rfftn``) sums to the one-process length and radial S(k) within 1e-12."""
    from numba import cuda

    phi = _field(shape)
    h = 0.7
    boundary = "mirror" if kind == sp.COSINE else "periodic"
    for parts in (1, 2, 3):
        rows = split_rows(shape[0], parts)
        ts, _ = exchanged(phi, shape, rows, kind)
        total = np.zeros(2)
        shell_total = 0
        for r, t in enumerate(ts):
            flat, geo, block = st.share_after(t.recv, t.layout, r, shape, kind)
            if flat is None:
                continue
            partial = cuda.device_array((spc.MAX_BLOCKS, 2), dtype=np.float64)
            bins = cuda.to_device(np.zeros(3 * sp.shells(shape, h, kind)))
            nblk = spc.launch_sums(cuda.to_device(np.ascontiguousarray(flat)), geo, h, kind,
                                   partial, bins, block=block, field_shape=shape)
            total += np.sum(partial.copy_to_host()[:nblk], axis=0)
            dev_shells = bins.copy_to_host().reshape(-1, 3).T
            if kind == sp.FOURIER:
                dev_shells[2] /= phi.size
            shell_total = shell_total + dev_shells
        assert 2 * math.pi * total[0] / total[1] == pytest.approx(
            obs.characteristic_length(phi, h, boundary=boundary), rel=1e-12)
        whole = sp.radial_sums(phi, h, boundary)
        np.testing.assert_allclose(shell_total, np.stack(whole), rtol=1e-12, atol=1e-300)


def test_transpose_mode_reads_the_environment(monkeypatch):
    for mode in ("auto", "host", "peer"):
        monkeypatch.setenv("SIMENGINE_TRANSPOSE", mode.upper())
        assert spc.transpose_mode() == mode
    monkeypatch.delenv("SIMENGINE_TRANSPOSE")
    assert spc.transpose_mode() == "auto"
    monkeypatch.setenv("SIMENGINE_TRANSPOSE", "nccl")
    with pytest.raises(ValueError, match="SIMENGINE_TRANSPOSE='nccl': expected auto, host or peer"):
        spc.transpose_mode()


def test_memory_decides_where_the_slab_spectrum_runs():
    """Temporaries that do not fit: S(k) on the host; buffers that do not fit beside them: the
    host transport; a rank that refuses still takes part in the handle exchange and every rank
    gets its reason."""
    from simengine.parallel import SerialComm

    gib = 1 << 30
    assert spc.slab_memory_reasons(30 * gib, 8 * gib, 16 * gib) == (None, None)
    dev, peer = spc.slab_memory_reasons(20 * gib, 8 * gib, 16 * gib)
    assert dev is None and peer.startswith("its buffers need 8") and "20" in peer
    dev, peer = spc.slab_memory_reasons(10 * gib, 8 * gib, 16 * gib)
    assert peer is None and dev.startswith("its transforms need about 16") and "10" in dev
    lay = st.TransposeLayout([(0, 4)], 4, (3,))
    got, why = st.PeerTransport.connect(SerialComm(), lay, np.complex128, None, refuse="full")
    assert got is None and why == "rank 0: full"
