"""The transpose of a slab-distributed spectrum between ranks, and its two transports.

Before the transpose a rank holds its rows of axis 0 with the axes after it transformed; after
it, every rank holds all of axis 0 for its range of columns of axis 1 (:func:`split_cols`), so
that it can transform axis 0 and sum over its share of k-space. The layout is one for every
transport (:class:`TransposeLayout`): a rank packs the blocks addressed to ranks 0 … P−1 one
after the other into one flat send buffer (:func:`pack`, on the device); the block from rank q
lands in the receiver's flat buffer at q's first row, so the receive buffer *is* the transposed
array (no unpacking). Transports move the blocks:

* :class:`HostTransport`: the blocks through host memory and ``alltoall`` (mpi4py's contract;
  MPI need not be CUDA-aware);
* :class:`PeerTransport`: ranks whose GPUs share a node pull the blocks addressed to them
  straight from the peers' send buffers (CUDA IPC handles exchanged once; device-to-device
  copies over NVLink/PCIe): pack, barrier, pull (:func:`pull`), barrier.

Everything but the copies is written once for NumPy and CuPy (``xp``), so that the simulator
tests exercise the packing and the pull's offsets with host arrays.
"""
from __future__ import annotations

import numpy as np

from .observables import split_cols
from .spectrum import FOURIER, transform_axis


class TransposeLayout:
    """Offsets (in elements) of the blocks of a slab transpose. ``rows``: (start, stop) of axis
    0 per rank, contiguous; ``n1``: the length of the axis that is split; ``tail``: the shape of
    the axes after it (whole on every rank)."""

    def __init__(self, rows, n1: int, tail=()):
        self.rows = [(int(a), int(b)) for a, b in rows]
        self.parts = len(self.rows)
        self.n0 = self.rows[-1][1] - self.rows[0][0]
        self.n1 = int(n1)
        self.tail = tuple(int(n) for n in tail)
        self.cols = split_cols(self.n1, self.parts)
        self._t = int(np.prod(self.tail, dtype=np.int64))

    def owned(self, r: int) -> int:
        return self.rows[r][1] - self.rows[r][0]

    def width(self, r: int) -> int:
        return self.cols[r][1] - self.cols[r][0]

    def send_count(self, r: int) -> int:
        return self.owned(r) * self.n1 * self._t

    def recv_count(self, r: int) -> int:
        return self.n0 * self.width(r) * self._t

    def block_count(self, sender: int, receiver: int) -> int:
        return self.owned(sender) * self.width(receiver) * self._t

    def send_offset(self, sender: int, receiver: int) -> int:
        """Where the block for ``receiver`` starts in ``sender``'s send buffer."""
        return self.owned(sender) * self.cols[receiver][0] * self._t

    def recv_offset(self, receiver: int, sender: int) -> int:
        """Where the block from ``sender`` starts in ``receiver``'s receive buffer."""
        return (self.rows[sender][0] - self.rows[0][0]) * self.width(receiver) * self._t

    def transposed(self, recv_flat, r: int):
        """Rank ``r``'s receive buffer as the transposed array ``(n0, width, *tail)``."""
        return recv_flat[:self.recv_count(r)].reshape((self.n0, self.width(r)) + self.tail)


def pack(x, layout: TransposeLayout, rank: int, send_flat):
    """Copy ``x`` (``(owned, n1, *tail)``) into ``send_flat`` as the blocks ``x[:, cols[q]]`` for
    q = 0 … P−1, each C-contiguous, one after the other."""
    own = layout.owned(rank)
    for q, (c0, c1) in enumerate(layout.cols):
        n = layout.block_count(rank, q)
        if n:
            off = layout.send_offset(rank, q)
            send_flat[off:off + n].reshape((own, c1 - c0) + layout.tail)[...] = x[:, c0:c1]


def pull(layout: TransposeLayout, rank: int, copy):
    """The copies that fill ``rank``'s receive buffer: ``copy(sender, src_offset, dst_offset,
    count)`` for every sender with a non-empty block (its own block included)."""
    for q in range(layout.parts):
        n = layout.block_count(q, rank)
        if n:
            copy(q, layout.send_offset(q, rank), layout.recv_offset(rank, q), n)


def share_geometry(shape, kind: str):
    """``(n1, tail, dtype)`` of a slab after the transforms of the axes it holds whole
    (:func:`forward`): the length of the axis the transpose splits, the axes after it, the
    element type."""
    shape = tuple(int(n) for n in shape)
    nd = len(shape)
    if nd == 1:  # viewed as (n, 1): nothing to transform before the transpose
        return 1, (), np.dtype(np.float64)
    if kind != FOURIER:
        return shape[1], shape[2:], np.dtype(np.float64)
    if nd == 2:  # the half spectrum of axis 1 is split
        return shape[1] // 2 + 1, (), np.dtype(np.complex128)
    return shape[1], shape[2:-1] + (shape[-1] // 2 + 1,), np.dtype(np.complex128)


def forward(x, shape, kind: str, xp=np):
    """The transforms of the axes 1 … d−1 of a mean-free slab ``x`` (float64): ``rfftn`` over
    them (the last one halved) for ``fourier``, the cosine transform of each for ``cosine``; a
    1-D slab is viewed as ``(n, 1)``."""
    nd = len(shape)
    if nd == 1:
        return x[:, None]
    if kind == FOURIER:
        return xp.fft.rfftn(x, axes=tuple(range(1, nd)))
    for ax in range(1, nd):
        x = transform_axis(x, ax, kind, xp=xp)
    return x


def share_after(recv_flat, layout: TransposeLayout, rank: int, shape, kind: str, xp=np):
    """This rank's share of the whole spectrum from its receive buffer: the transform of axis 0.
    Returns ``(flat float64 view, shape for the kernel's geometry, (stored, offsets, half))``
    (:func:`simengine.field.spectrum_cuda.launch_sums`), or ``(None, …)`` for an empty share."""
    shape = tuple(int(n) for n in shape)
    nd = len(shape)
    c0, c1 = layout.cols[rank]
    if nd == 3:
        stored, offsets = (shape[0], c1 - c0, layout.tail[0]), (0, c0, 0)
    else:
        stored, offsets = (1, shape[0], c1 - c0), (0, 0, c0)
    geo_shape = shape if nd > 1 else (shape[0], 1)
    half = -1 if kind != FOURIER else (0 if nd == 1 else 1)
    if stored[0] * stored[1] * stored[2] == 0:
        return None, geo_shape, (stored, offsets, half)
    b = transform_axis(layout.transposed(recv_flat, rank), 0, kind, xp=xp)
    b = xp.ascontiguousarray(b)
    flat = b.view(np.float64).reshape(-1) if b.dtype.kind == "c" else b.reshape(-1)
    return flat, geo_shape, (stored, offsets, half)


def slab_share(x, shape, rows, rank: int, kind: str, transport, xp=np):
    """This rank's share of the whole spectrum of a slab-distributed mean-free field (``x``: its
    owned rows, float64, in ``xp``'s memory): :func:`forward`, :func:`pack` into the transport's
    send buffer, the transport's exchange, :func:`share_after`. Collective."""
    layout = transport.layout
    y = forward(x, shape, kind, xp)
    x = None  # the memory of the slab and of its transform goes back to the pool before the
    pack(y, layout, rank, transport.send)  # transform of axis 0 (the caller keeps no reference)
    y = None
    transport.exchange()
    return share_after(transport.recv, layout, rank, shape, kind, xp)


def layout_for(shape, rows, kind: str):
    """``(TransposeLayout, dtype)`` of the transpose of a field of ``shape`` on slabs ``rows``."""
    n1, tail, dtype = share_geometry(shape, kind)
    return TransposeLayout(rows, n1, tail), dtype


class HostTransport:
    """The blocks through host memory and ``alltoall(sendlist) -> recvlist`` (mpi4py's contract;
    the host copies are the blocks, not the field). ``to_host`` copies a device block to a host
    array (``cupy.asnumpy``); buffers in ``xp``'s memory."""

    name = "host"

    def __init__(self, layout: TransposeLayout, rank: int, dtype, alltoall=None, xp=np,
                 to_host=np.asarray):
        self.layout, self.rank, self.xp = layout, int(rank), xp
        self.alltoall, self.to_host = alltoall, to_host
        self.send = xp.empty(max(1, layout.send_count(rank)), dtype=dtype)
        self.recv = xp.empty(max(1, layout.recv_count(rank)), dtype=dtype)

    def exchange(self):
        lay, r = self.layout, self.rank
        sends = []
        for q in range(lay.parts):
            off, n = lay.send_offset(r, q), lay.block_count(r, q)
            sends.append(self.to_host(self.send[off:off + n]))
        got = self.alltoall(sends)
        if len(got) != lay.parts:
            raise ValueError(f"alltoall returned {len(got)} blocks for {lay.parts} ranks")
        for q in range(lay.parts):
            off, n = lay.recv_offset(r, q), lay.block_count(q, r)
            if n:
                self.recv[off:off + n] = self.xp.asarray(np.asarray(got[q]).reshape(-1))


class PeerTransport:
    """Device-to-device blocks between ranks whose GPUs share a node (CUDA IPC).

    Each rank allocates its send and receive buffers once (numba allocations: one IPC handle per
    allocation) and every rank opens the others' send buffers (:meth:`connect`, collective).
    :meth:`exchange`: wait for this GPU (the packed blocks are final), a barrier (everyone's
    are), pull the blocks addressed to this rank with ``cudaMemcpyAsync`` (peer copies), wait
    for them, a barrier (no rank packs its next blocks while another still reads them)."""

    name = "peer"

    def __init__(self, comm, layout, rank, dtype, cp, send, recv, peers, handles=()):
        self.comm, self.layout, self.rank, self.cp = comm, layout, int(rank), cp
        self.dtype = np.dtype(dtype)
        self._own = (send, recv, peers, list(handles))  # keep allocations and handles alive
        self._ptr = {q: _pointer(a) for q, a in peers.items()}
        self._ptr[self.rank] = _pointer(send)
        self._recv_ptr = _pointer(recv)
        self.send = _cupy_flat(cp, send, self.dtype, max(1, layout.send_count(rank)))
        self.recv = _cupy_flat(cp, recv, self.dtype, max(1, layout.recv_count(rank)))
        self.seconds = 0.0

    @classmethod
    def connect(cls, comm, layout, dtype, cp, refuse=None):
        """``(PeerTransport, None)`` when every rank opened every other rank's send buffer,
        else ``(None, reason)`` on every rank (collective). ``refuse``: this rank's reason not
        to allocate the buffers (it still takes part in the collectives)."""
        from numba import cuda

        rank, dtype = comm.rank, np.dtype(dtype)
        why, handle, send, recv, peers = None, None, None, None, {}
        if refuse:
            why = f"rank {rank}: {refuse}"
        else:
            try:
                send = cuda.device_array(max(1, layout.send_count(rank)) * dtype.itemsize,
                                         np.uint8)
                recv = cuda.device_array(max(1, layout.recv_count(rank)) * dtype.itemsize,
                                         np.uint8)
                handle = send.get_ipc_handle()
            except Exception as exc:
                why = (f"rank {rank} cannot export a CUDA IPC handle "
                       f"({type(exc).__name__}: {exc})")
        handles = comm.allgather(handle)
        opened = []
        if why is None:
            try:
                for q, h in enumerate(handles):
                    if q != rank and h is not None:
                        peers[q] = h.open()
                        opened.append(h)
            except Exception as exc:
                why = (f"rank {rank} cannot open the CUDA IPC handle of rank {q} "
                       f"({type(exc).__name__}: {exc})")
        reasons = comm.allgather(why)
        why = next((w for w in reasons if w), None)
        if why is not None:
            for h in opened:
                _close(h)
            return None, why
        return cls(comm, layout, rank, dtype, cp, send, recv, peers, opened), None

    def exchange(self):
        import time

        cp, isz = self.cp, self.dtype.itemsize
        t = time.perf_counter()
        stream = cp.cuda.Stream.null
        stream.synchronize()
        self.comm.barrier()

        def copy(q, s0, d0, n):
            cp.cuda.runtime.memcpyAsync(self._recv_ptr + d0 * isz, self._ptr[q] + s0 * isz,
                                        n * isz, MEMCPY_DEFAULT, stream.ptr)

        pull(self.layout, self.rank, copy)
        stream.synchronize()
        self.comm.barrier()
        self.seconds += time.perf_counter() - t


#: ``cudaMemcpyDefault``: the direction from the pointers (unified addressing; peer copies)
MEMCPY_DEFAULT = 4


def _pointer(array) -> int:
    return int(array.__cuda_array_interface__["data"][0])


def _cupy_flat(cp, array, dtype, count):
    """A flat CuPy array of ``count`` ``dtype`` values over a device allocation (no copy)."""
    mem = cp.cuda.UnownedMemory(_pointer(array), count * np.dtype(dtype).itemsize, array)
    return cp.ndarray((count,), dtype=dtype, memptr=cp.cuda.MemoryPointer(mem, 0))


def _close(handle):
    try:
        close = getattr(handle, "close", None)
        if close is not None:
            close()
    except Exception:  # pragma: no cover - handle already gone
        pass
