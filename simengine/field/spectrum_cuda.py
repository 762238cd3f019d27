"""S(k) and the length scale of a field on the GPU: cuFFT (through CuPy) and one reduction kernel.

The definition is :mod:`.spectrum`'s, with the same transforms and weights as the host form
(:func:`simengine.field.observables.characteristic_length`); only two float64 sums per block (and,
when asked, the radial profile's shell sums) come back to the host. The reduction kernel works
on any spectrum in device memory (it is tested under numba's CUDA simulator with a host FFT);
the transform needs CuPy (``cupy-cuda13x``, the ``cuda`` extra). Everything is enqueued on the
default stream behind the steps that produced the field: :meth:`DeviceSpectrum.enqueue` returns at
once and :meth:`PendingSpectrum.result` waits for the few bytes it reads.
"""
from __future__ import annotations

import functools
import math

import numba
import numpy as np
from numba import cuda

from .spectrum import (COSINE, FOURIER, KMAX_TOL, SHELL_NUDGE, length_of_sums, shell_width,
                       shells, transform_of)

THREADS = 256
MAX_BLOCKS = 1024
#: radial profiles of up to this many shells sum S per block in shared memory (one atomic per
#: shell and block to global memory), larger ones with an atomic per mode
SHARED_SHELLS = 4096
SIMULATED = bool(numba.config.ENABLE_CUDASIM)


def cupy_or_reason():
    """``(cupy module, None)`` when CuPy can run FFTs on this GPU, else ``(None, reason)``."""
    try:
        import cupy
        import cupy.fft  # noqa: F401
    except Exception as exc:  # pragma: no cover - depends on the install
        return None, f"CuPy is not importable ({type(exc).__name__}: {exc}); install the cuda extra"
    try:
        if cupy.cuda.runtime.getDeviceCount() < 1:  # pragma: no cover
            return None, "CuPy sees no GPU"
    except Exception as exc:  # pragma: no cover
        return None, f"CuPy cannot use the GPU ({type(exc).__name__})"
    return cupy, None


@functools.lru_cache(maxsize=None)
def sums_kernel(complex_spectrum: bool, radial: bool, shared_bins: bool = False):
    """Per-block ``[Σ w·P, Σ w·|k|·P]`` over a spectrum stored as ``(n0, n1, n2)`` (P = re² + im²
    of a complex entry, x² of a real one; w the entry's weight, 0 at k = 0), and with ``radial``
    the shell sums ``[Σ w, Σ w·|k|, Σ w·P]`` of shells 1 … nb−1 (|k| ≤ kmax) by atomics; with
    ``geometry`` false only Σ w·P (the counts and Σ w·|k| are the grid's, left as they are).
    ``shared_bins`` (nb ≤ :data:`SHARED_SHELLS`): Σ w·P is summed per block in shared memory
    first. The block may be part of a larger spectrum (offsets ``o0, o1, o2``; a rank's share
    on slabs). ``half``: 1 = the last axis is an ``rfftn`` half spectrum, 0 = full Fourier
    axes, −1 = cosine modes."""
    NTH = THREADS
    NUDGE = 0.5 + SHELL_NUDGE
    SH = SHARED_SHELLS if shared_bins else 1

    @cuda.jit
    def kernel(spec, n0, n1, n2, o0, o1, o2, full0, full1, full2, u0, u1, u2, half, dk, kmax,
               nb, partial, bins, geometry):
        s_p = cuda.shared.array(NTH, numba.float64)
        s_k = cuda.shared.array(NTH, numba.float64)
        s_bins = cuda.shared.array(SH, numba.float64)
        tid = cuda.threadIdx.x
        if radial and shared_bins:
            j = tid
            while j < nb:
                s_bins[j] = 0
                j += NTH
            cuda.syncthreads()
        total = n0 * n1 * n2
        acc_p = numba.float64(0)
        acc_k = numba.float64(0)
        t = numba.int64(cuda.blockIdx.x) * NTH + tid
        stride = numba.int64(cuda.gridDim.x) * NTH
        while t < total:
            i2 = t % n2 + o2        # o: the block's offset in the whole spectrum (slabs)
            r = t // n2
            i1 = r % n1 + o1
            i0 = r // n1 + o0
            m0 = i0 if (half < 0 or i0 < (full0 + 1) // 2) else i0 - full0
            m1 = i1 if (half < 0 or i1 < (full1 + 1) // 2) else i1 - full1
            if half == 1:      # the last axis is the half spectrum of rfftn
                m2 = i2
            elif half == 0:    # full Fourier axis
                m2 = i2 if i2 < (full2 + 1) // 2 else i2 - full2
            else:              # cosine modes
                m2 = i2
            k0 = m0 * u0
            k1 = m1 * u1
            k2 = m2 * u2
            kk = math.sqrt(k0 * k0 + k1 * k1 + k2 * k2)
            if kk > 0:
                w = numba.float64(1)
                if half == 1 and i2 > 0 and not (full2 % 2 == 0 and i2 == full2 // 2):
                    w = numba.float64(2)
                if complex_spectrum:
                    re = spec[2 * t]
                    im = spec[2 * t + 1]
                    p = re * re + im * im
                else:
                    x = spec[t]
                    p = x * x
                acc_p += w * p
                acc_k += w * kk * p
                if radial:
                    sh = numba.int64(math.floor(kk / dk + NUDGE))
                    if sh > 0 and sh < nb and kk <= kmax:
                        if geometry:
                            cuda.atomic.add(bins, 3 * sh, w)
                            cuda.atomic.add(bins, 3 * sh + 1, w * kk)
                        if shared_bins:
                            cuda.atomic.add(s_bins, sh, w * p)
                        else:
                            cuda.atomic.add(bins, 3 * sh + 2, w * p)
            t += stride
        s_p[tid] = acc_p
        s_k[tid] = acc_k
        cuda.syncthreads()
        if radial and shared_bins:
            j = tid
            while j < nb:
                if s_bins[j] != 0:
                    cuda.atomic.add(bins, 3 * j + 2, s_bins[j])
                j += NTH
            cuda.syncthreads()
        step = NTH // 2
        while step > 0:
            if tid < step:
                s_p[tid] += s_p[tid + step]
                s_k[tid] += s_k[tid + step]
            cuda.syncthreads()
            step //= 2
        if tid == 0:
            partial[cuda.blockIdx.x, 0] = s_p[0]
            partial[cuda.blockIdx.x, 1] = s_k[0]

    return kernel


def _geometry(shape, spacing: float, kind: str):
    """Launch arguments of :func:`sums_kernel` for a field of ``shape``: the stored spectrum's
    extents padded to 3-D, the full axis lengths, the wavenumber units and the half flag."""
    shape = tuple(int(n) for n in shape)
    full = (1,) * (3 - len(shape)) + shape
    if kind == FOURIER:
        stored = full[:2] + (full[2] // 2 + 1,)
        units = tuple(2 * math.pi / (n * spacing) for n in full)
        half = 1
    else:
        stored = full
        units = tuple(math.pi / (n * spacing) for n in full)
        half = -1
    return stored, full, units, half


def launch_sums(spec_flat, shape, spacing: float, kind: str, partial, bins=None, stream=0,
                block=None, field_shape=None, geometry=True):
    """Enqueue :func:`sums_kernel` on a device spectrum (flat float64: interleaved re/im for
    ``fourier``); ``partial``: a device (MAX_BLOCKS, 2) float64 array; ``bins``: a zeroed device
    float64 array of 3·shells, or None; ``block``: ``(stored, offsets, half)`` of a share of a
    full spectrum (default: the whole ``rfftn``/cosine spectrum of ``shape``); ``field_shape``:
    the field's shape for the radial shells where ``shape`` is padded (a 1-D field on slabs);
    ``geometry`` false: only the Σ S entries of ``bins`` are added to (the counts and Σ |k|
    entries keep a former call's). Returns the number of blocks written."""
    stored, full, units, half = _geometry(shape, spacing, kind)
    offsets = (0, 0, 0)
    if block is not None:
        stored, offsets, half = block
    cells = stored[0] * stored[1] * stored[2]
    blocks = max(1, min(MAX_BLOCKS, (cells + THREADS - 1) // THREADS))
    radial = bins is not None
    fshape = shape if field_shape is None else field_shape
    nb = shells(fshape, spacing, kind) if radial else 0
    kern = sums_kernel(kind == FOURIER, radial, radial and nb <= SHARED_SHELLS)
    out_bins = bins if radial else partial  # unused without radial
    kern[blocks, THREADS, stream](spec_flat, stored[0], stored[1], stored[2], offsets[0],
                                  offsets[1], offsets[2], full[0], full[1], full[2], units[0],
                                  units[1], units[2], half,
                                  shell_width(fshape, spacing, kind),
                                  math.pi / spacing * (1 + KMAX_TOL), nb,
                                  partial, out_bins, bool(geometry))
    return blocks


def radial_from_bins(bins, shape, kind: str, full: bool = False):
    """``(k, S)`` of the non-empty shells from the shell sums (host array of 3·shells); with
    ``full`` every shell, NaN where empty (:func:`.spectrum.shell_profile`)."""
    from .spectrum import shell_profile

    b = np.asarray(bins, dtype=np.float64).reshape(-1, 3)
    norm = int(np.prod(shape)) if kind == FOURIER else 1.0
    k, s = shell_profile(b[:, 0], b[:, 1], b[:, 2] / norm)
    if full:
        return k, s
    ok = b[:, 0] > 0
    return k[ok], s[ok]


#: one-process CUDA runs compute S(k) on the device from this many cells up; smaller fields
#: keep the host FFT, which the run overlaps with the next steps (a 200² field's host S(k)
#: takes ≈ 0.9 ms, hidden behind the GPU's steps; the device form costs several launches and a
#: synchronisation per observation, which the smallest grids' 2–3 µs steps would feel)
DEVICE_MIN_CELLS = 1 << 16


def device_spectrum_for(solver, grid, boundary, ranks: int, radial: bool = False, comm=None,
                        slabs=None, level=None):
    """``(DeviceSpectrum or None, why)``: where the run computes S(k) and why (one line for the
    start-up log); ``level``: the one-process device form also sums the interface crossings of
    the field at that level (:func:`simengine.field.lengths.interface_area_sum`). The environment variable ``SIMENGINE_SPECTRUM`` (``host`` / ``device`` /
    ``auto``) overrides the size rule, for benchmarks and diagnosis."""
    import os

    if getattr(solver, "backend", None) != "cuda" or not hasattr(solver, "owned_device"):
        return None, "S(k) on the host"
    forced = os.environ.get("SIMENGINE_SPECTRUM", "auto")
    if forced not in ("auto", "host", "device"):
        raise ValueError(f"SIMENGINE_SPECTRUM={forced!r}: expected auto, host or device")
    if forced == "host":
        return None, "S(k) on the host (SIMENGINE_SPECTRUM=host)"
    if SIMULATED:
        return None, "S(k) on the host (CUDA simulator)"
    cells = int(np.prod(grid.shape))
    if cells < DEVICE_MIN_CELLS and forced != "device":
        how = "slab transforms through MPI" if ranks > 1 else "overlapped with the steps"
        return None, f"S(k) on the host, {how} ({cells} cells < {DEVICE_MIN_CELLS})"
    try:
        why = None
        if ranks > 1:
            ds = DeviceSlabSpectrum(grid.shape, float(grid.spacing), boundary.kind,
                                    [(s.start, s.stop) for s in slabs], comm.rank)
            why, ds.peer_refusal = slab_memory_reasons(int(ds.cp.cuda.runtime.memGetInfo()[0]),
                                                       *ds.gpu_bytes())
        else:
            ds = DeviceSpectrum(grid.shape, float(grid.spacing), boundary.kind, radial=radial,
                                level=level)
    except RuntimeError as exc:
        ds, why = None, str(exc)
    if ranks > 1:  # all ranks take the same path (a rank without CuPy moves all to the host)
        bad = comm.allgather(why)
        why = next((w for w in bad if w), None)
        if why:
            ds = None
    if ds is None:
        return None, f"S(k) falls back to the host: {why}"
    if ranks > 1:
        try:
            ds.connect(comm, transpose_mode())
        except (RuntimeError, ValueError) as exc:  # SIMENGINE_TRANSPOSE: on every rank alike
            from ..errors import UserError

            raise UserError(str(exc)) from None
        return ds, (f"S(k) on the GPUs (cuFFT on each slab, {ds.kind} transform, the transpose "
                    f"{ds.transport_note})")
    return ds, f"S(k) on the GPU (cuFFT, {ds.kind} transform)"


def slab_memory_reasons(free: int, persistent: int, peak: int):
    """``(why S(k) cannot run on the GPU, why its transpose cannot go device to device)``, each
    None where it fits, for ``free`` bytes of GPU memory: one observation's temporaries
    (``peak``) must fit, and the device-to-device buffers (``persistent``) beside them
    (:meth:`DeviceSlabSpectrum.gpu_bytes`)."""
    from ..machine import fmt_bytes

    if free < peak:
        return (f"its transforms need about {fmt_bytes(peak)} of GPU memory, "
                f"{fmt_bytes(free)} free"), None
    if free < peak + persistent:
        return None, (f"its buffers need {fmt_bytes(persistent)} of GPU memory beside the "
                      f"transforms' {fmt_bytes(peak)}, {fmt_bytes(free)} free")
    return None, None


def transpose_mode() -> str:
    """``SIMENGINE_TRANSPOSE``: how the slab spectrum's transpose travels between ranks —
    ``auto`` (device to device where the ranks can open each other's CUDA IPC handles, else
    through host memory and MPI), ``host``, ``peer`` (fail rather than fall back)."""
    import os

    mode = os.environ.get("SIMENGINE_TRANSPOSE", "auto").strip().lower() or "auto"
    if mode not in ("auto", "host", "peer"):
        raise ValueError(f"SIMENGINE_TRANSPOSE={mode!r}: expected auto, host or peer")
    return mode


def _setup(obj, shape, spacing, boundary_kind):
    """The attributes both device forms share (``cp``, ``shape``, ``spacing``, ``kind``,
    ``cells``); RuntimeError with the reason when CuPy cannot run here."""
    cp, why = cupy_or_reason()
    if cp is None:
        raise RuntimeError(why)
    obj.cp = cp
    obj.shape = tuple(int(n) for n in shape)
    obj.spacing = float(spacing)
    obj.kind = transform_of(boundary_kind)
    obj.cells = int(np.prod(obj.shape))


class DeviceSpectrum:
    """The length scale (and optionally the radial S(k)) of device fields of one shape.

    ``DeviceSpectrum(shape, spacing, boundary_kind, radial=False, level=None)``; with a
    ``level`` each enqueued field's interface crossings are summed too
    (:meth:`PendingSpectrum.interface_area`). Raises RuntimeError with the reason when CuPy
    cannot run here (:func:`cupy_or_reason`)."""

    def __init__(self, shape, spacing: float, boundary_kind: str, radial: bool = False,
                 level=None):
        _setup(self, shape, spacing, boundary_kind)
        cp = self.cp
        self.radial = bool(radial)
        self.level = None if level is None else float(level)
        self.periodic = boundary_kind == "periodic"
        self.nb = shells(self.shape, self.spacing, self.kind)
        # device buffers owned by CuPy, seen by the numba kernel through views made without a
        # synchronisation (CUDA-array-interface imports otherwise wait for the exporter's stream,
        # i.e. for every step already enqueued)
        self._partial_cp = cp.zeros((MAX_BLOCKS, 2), dtype=cp.float64)
        self._partial = _numba_view(self._partial_cp)
        self._bins_cp = cp.zeros(3 * self.nb, dtype=cp.float64) if radial else None
        self._bins = _numba_view(self._bins_cp) if radial else None
        self._slots = []
        self._next = 0
        self._geometry_done = False
        self._area = None
        if self.level is not None:  # the interface crossings' block sums (lengths_cuda)
            from .lengths_cuda import MAX_BLOCKS as AREA_BLOCKS

            self._area = cuda.device_array(AREA_BLOCKS, dtype=np.float64)

    def _host_slot(self):
        """Pinned host buffers used in turn (a result stays valid until 3 more are enqueued)."""
        if len(self._slots) < 4:
            self._slots.append((cuda.pinned_array((MAX_BLOCKS, 2), dtype=np.float64),
                                cuda.pinned_array(3 * self.nb, dtype=np.float64)
                                if self.radial else None,
                                cuda.pinned_array(self._area.shape[0], dtype=np.float64)
                                if self._area is not None else None))
            return self._slots[-1]
        self._next = (self._next + 1) % len(self._slots)
        return self._slots[self._next]

    def enqueue(self, field) -> "PendingSpectrum":
        """Enqueue the transform and the sums of a device field (a numba device array or any
        array with ``__cuda_array_interface__`` holding ``prod(shape)`` values) on the default
        stream; returns at once."""
        from .spectrum import spectrum

        cp = self.cp
        view = _cupy_view(cp, field, self.shape)
        stream = cuda.default_stream()
        area_blocks = 0
        if self._area is not None:  # the interface crossings, one kernel on the field itself
            from .lengths_cuda import launch_area

            flat = view.reshape(-1)
            row = self.cells // self.shape[0]
            area_blocks = launch_area(_numba_view(flat), self.shape, self.level, self.periodic,
                                      self._area, _numba_view(flat[:row]) if self.periodic
                                      else None, stream=stream)
        a = view.astype(cp.float64)  # a copy: the field stays
        a -= a.mean()
        spec = spectrum(a, self.kind, xp=cp)
        flat = spec.view(cp.float64).reshape(-1) if self.kind == FOURIER else spec.reshape(-1)
        geometry = not self._geometry_done  # the shells' counts and Σ|k|: the first call only
        if self.radial and geometry:
            self._bins_cp.fill(0)
        elif self.radial:
            self._bins_cp[2::3] = 0
        nblk = launch_sums(_numba_view(flat), self.shape, self.spacing, self.kind,
                           self._partial, self._bins, stream=stream, geometry=geometry)
        self._geometry_done = self.radial
        host_partial, host_bins, host_area = self._host_slot()
        self._partial.copy_to_host(host_partial, stream=stream)
        if self.radial:
            self._bins.copy_to_host(host_bins, stream=stream)
        if self._area is not None:
            self._area.copy_to_host(host_area, stream=stream)
        event = cuda.event(timing=False)
        event.record(stream)
        return PendingSpectrum(self, event, host_partial, host_bins, nblk,
                               (host_area, area_blocks) if self._area is not None else None)

    def length(self, field, bounds=None) -> float:
        """The length scale of a device field (synchronous)."""
        return self.enqueue(field).result(bounds)[0]


class DeviceSlabSpectrum:
    """The slab-distributed twin of :class:`DeviceSpectrum` (one rank's part; collective): the
    device transforms the axes the rank holds whole, the slabs are transposed
    (:mod:`.slab_transpose`: device to device through CUDA IPC between GPUs of one node, else
    through host memory and MPI's ``alltoall``; MPI need not be CUDA-aware), the device
    transforms axis 0 and sums over the rank's share of k-space —
    :func:`simengine.field.observables.structure_factor_partials` on the GPU, with the same
    result within rounding. :meth:`connect` (collective) picks the transport."""

    def __init__(self, shape, spacing: float, boundary_kind: str, rows, rank: int):
        from .slab_transpose import layout_for

        _setup(self, shape, spacing, boundary_kind)
        cp = self.cp
        self.rows = [tuple(r) for r in rows]
        self.rank = int(rank)
        self._partial_cp = cp.zeros((MAX_BLOCKS, 2), dtype=cp.float64)
        self._partial = _numba_view(self._partial_cp)
        self.layout, self.dtype = layout_for(self.shape, self.rows, self.kind)
        self.transport = None
        self.transport_note = "through host memory and MPI"
        #: why the device-to-device buffers do not fit the GPU (None: they do)
        self.peer_refusal = None

    def gpu_bytes(self):
        """``(persistent, peak)``: the GPU bytes of the device-to-device transpose's two
        buffers, and (an estimate) of one observation's temporaries — the mean-free copy, the
        transforms' outputs and cuFFT work areas, about four blocks of the larger buffer's
        size at once."""
        lay, r = self.layout, self.rank
        block = max(lay.send_count(r), lay.recv_count(r), 1) * self.dtype.itemsize
        return 2 * block, 4 * block

    def connect(self, comm, mode: str = "auto"):
        """Choose the transpose's transport (collective): ``peer`` (CUDA IPC) unless ``mode`` is
        ``host`` or a rank cannot open the others' handles; ``mode`` ``peer`` raises
        RuntimeError then. Sets :attr:`transport_note` (what the start-up line says)."""
        from .slab_transpose import HostTransport, PeerTransport

        why = "SIMENGINE_TRANSPOSE=host"
        if mode != "host":
            peer, why = PeerTransport.connect(comm, self.layout, self.dtype, self.cp,
                                              refuse=self.peer_refusal)
            if peer is not None:
                self.transport = peer
                self.transport_note = "device to device (CUDA IPC)"
                return self
            if mode == "peer":
                raise RuntimeError(f"SIMENGINE_TRANSPOSE=peer: {why}")
        self.transport = HostTransport(self.layout, self.rank, self.dtype, None, xp=self.cp,
                                       to_host=self.cp.asnumpy)
        self.transport_note = f"through host memory and MPI ({why})"
        return self

    def partials(self, field, mean: float, alltoall, radial: bool = False):
        """``[Σ_{k≠0} |k|·S, Σ_{k≠0} S]`` over this rank's share (float64[2], unnormalised, as
        the host form) of the owned rows ``field`` (device, flat); with ``radial`` also the
        shell sums of the share (3 × shells, as
        :func:`simengine.field.observables.structure_factor_partials`). ``alltoall``: the
        host transport's exchange (unused by the peer transport)."""
        from .slab_transpose import HostTransport, slab_share

        cp, shape = self.cp, self.shape
        if self.transport is None:
            self.transport = HostTransport(self.layout, self.rank, self.dtype, None, xp=cp,
                                           to_host=cp.asnumpy)
        if isinstance(self.transport, HostTransport):
            self.transport.alltoall = alltoall
        start, stop = self.rows[self.rank]
        flat, geo_shape, block = slab_share(  # the mean-free float64 copy in one pass
            cp.subtract(_cupy_view(cp, field, (stop - start,) + shape[1:]), float(mean),
                        dtype=cp.float64), shape, self.rows, self.rank, self.kind,
            self.transport, xp=cp)
        nb = shells(shape, self.spacing, self.kind)
        if flat is None:
            return (np.zeros(2), np.zeros((3, nb))) if radial else np.zeros(2)
        bins = cp.zeros(3 * nb, dtype=cp.float64) if radial else None
        nblk = launch_sums(_numba_view(flat), geo_shape, self.spacing, self.kind,
                           self._partial, None if bins is None else _numba_view(bins),
                           stream=cuda.default_stream(), block=block, field_shape=shape)
        sums = np.sum(self._partial_cp[:nblk].get(), axis=0)
        out = np.array([float(sums[1]), float(sums[0])])
        if not radial:
            return out
        b = bins.get().reshape(-1, 3).T.copy()
        if self.kind == FOURIER:
            b[2] /= self.cells
        return out, b


def _numba_view(array):
    """A numba device array over a CuPy array's memory, without a synchronisation."""
    return cuda.from_cuda_array_interface(array.__cuda_array_interface__, owner=array,
                                          sync=False)


def _cupy_view(cp, field, shape):
    """A CuPy array over a device field's memory (numba device array or any CUDA-array-interface
    exporter), without a synchronisation."""
    desc = field.__cuda_array_interface__
    dtype = np.dtype(desc["typestr"])
    count = int(np.prod(desc["shape"]))
    if count != int(np.prod(shape)):
        raise ValueError(f"a field of {count} values for a spectrum of shape {shape}")
    mem = cp.cuda.UnownedMemory(int(desc["data"][0]), count * dtype.itemsize, field)
    return cp.ndarray(tuple(shape), dtype=dtype, memptr=cp.cuda.MemoryPointer(mem, 0))


class PendingSpectrum:
    """A spectrum enqueued by :meth:`DeviceSpectrum.enqueue`."""

    def __init__(self, owner, event, host_partial, host_bins, blocks, area=None):
        self._owner, self._event = owner, event
        self._partial, self._bins, self._blocks = host_partial, host_bins, blocks
        self._area = area

    def interface_area(self):
        """The interface area of the field (:func:`simengine.field.lengths.interface_area`),
        None when the spectrum has no level (waits for the copies)."""
        if self._area is None:
            return None
        from .lengths_cuda import area_of_partial

        self._event.synchronize()
        return area_of_partial(self._area[0], self._area[1], self._owner.shape,
                               self._owner.spacing)

    def result(self, bounds=None):
        """``(length, radial)``: the length scale (``inf`` for a flat field, given its global
        ``bounds`` = (min, max)) and ``(k, S)`` of every shell, NaN where empty (None unless
        radial)."""
        from .observables import is_flat

        self._event.synchronize()
        o = self._owner
        sums = np.sum(self._partial[:self._blocks], axis=0)
        radial = radial_from_bins(self._bins, o.shape, o.kind, full=True) if o.radial else None
        if bounds is not None and is_flat(float(bounds[0]), float(bounds[1])):
            return float("inf"), radial
        st = float(sums[0])
        if not math.isfinite(st):
            return float("nan"), radial
        if st <= 1e-300 * max(1, o.cells):
            return float("inf"), radial
        return length_of_sums(float(sums[1]), st, o.cells), radial


__all__ = ["COSINE", "FOURIER", "DeviceSlabSpectrum", "DeviceSpectrum", "cupy_or_reason",
           "device_spectrum_for", "transpose_mode",
           "launch_sums",
           "radial_from_bins", "sums_kernel"]
