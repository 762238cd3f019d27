"""A field spread over MPI ranks: one slab of axis 0 per rank, halos exchanged between stages.

The distributed twin of building a solver with :func:`simengine.field.backends.make_solver`:
:func:`make_rank_solver` builds this rank's slab solver (``field/decomposition.py``: the halo
depth of the form the grid runs, ``plans.slab_depth``: 4 rows once per step for a fused CUDA
step, 2 rows before each stage otherwise; no halo on a non-periodic global face, so each cell sees exactly the arithmetic of the
one-process run and the field is bit-identical for any number of ranks) with an
:class:`MPIHaloExchange` as its ``exchange`` hook, and :func:`rank_observables` reduces the
observables of all slabs (mass, free energy, min, max, the S(k) length scale) in float64.

Halos of CUDA slabs whose GPUs share a node are copied device to device from the neighbours'
buffers (:class:`PeerHaloExchange`, CUDA IPC). Otherwise they travel by :class:`MPIHaloExchange`:
device buffers straight to ``MPI_Sendrecv`` where the MPI library says it is CUDA-aware
(:mod:`simengine.parallel.cuda_aware`), else through pinned host buffers (the CUDA solver copies
its boundary rows to the host; the GPU host's MPI is not CUDA-aware, and a device buffer handed
to it crashes it). ``SIMENGINE_HALO=host`` forces host staging, ``peer`` requires the peer path.
Each exchanger's ``label`` names it in the start-up log (``peer``, ``mpi-device``, ``host``).
"""
from __future__ import annotations

import functools
import os
import time

import numpy as np

from .decomposition import HALO, make_slabs


class MPIHaloExchange:
    """The ``exchange(array)`` hook of one rank's slab solver: sends its top ``slab.depth`` owned
    rows to the upper neighbour while receiving the lower neighbour's into its low halo, then the
    mirror image (``MPI_Sendrecv``; a missing neighbour at a non-periodic face is skipped).
    Collective between neighbours. ``seconds`` accumulates the time spent, for the benchmarks.

    ``device=True`` (a CUDA solver, a CUDA-aware MPI): the rows go from and to the device
    buffer itself (flat device views, after the GPU's work is done), no host copy."""

    #: driven in the boundary-first order (integrator.advance_boundary_first): the exchange of
    #: a stage's output runs after its interior rows were launched (``send``); ``depth`` rows
    boundary_first = True
    depth = HALO

    def __init__(self, comm, slab, slabs=None, device=False):
        self.comm = comm
        self.slab = slab
        self.solver = None
        self.seconds = 0.0
        self.calls = 0
        self._recv = None
        self.device = bool(device)
        self.label = "mpi-device" if self.device else "host"
        self.boundary_first = overlap_enabled() and thick_enough(slabs or [slab])

    #: why the host path runs (set by make_rank_solver for the start-up log), or None
    because = None

    def describe(self) -> str:
        cuda = getattr(self.solver, "backend", None) == "cuda"
        how = " of device buffers (CUDA-aware)" if self.device else \
            " through pinned host buffers" if cuda else ""
        return ("MPI" + how
                + (f" ({self.because})" if self.because else ""))

    def mark(self, array):
        """Boundary-first protocol: nothing to record (:meth:`send` exchanges in full)."""

    def send(self, array):
        """Boundary-first protocol: the whole exchange of ``array``'s halo (blocking)."""
        self(array)

    def ready(self, array, wait=False):
        """Boundary-first protocol: the halo sent by :meth:`send` is already in place."""

    def bind(self, solver):
        self.solver = solver
        shp = solver.halo_shape()
        self._recv = (np.empty(shp, solver.dtype), np.empty(shp, solver.dtype))

    def __call__(self, array):
        if self.device:
            return self._device(array)
        t = time.perf_counter()
        s, sol = self.slab, self.solver
        low_rows, high_rows = sol.boundary_rows(array)
        recv_low, recv_high = self._recv
        # phase 1: my top rows go up; the lower neighbour's top rows fill my low halo
        self.comm.sendrecv(high_rows, s.upper, recv_low, s.lower, tag=11)
        # phase 2: my bottom rows go down; the upper neighbour's bottom rows fill my high halo
        self.comm.sendrecv(low_rows, s.lower, recv_high, s.upper, tag=12)
        sol.set_halo(array, recv_low if s.lower is not None else None,
                     recv_high if s.upper is not None else None)
        self.seconds += time.perf_counter() - t
        self.calls += 1

    def _device(self, array):
        """The same two ``Sendrecv``s on device views of ``array`` (CUDA-aware MPI)."""
        from numba import cuda

        t = time.perf_counter()
        s, sol = self.slab, self.solver
        send_low, send_high, halo_low, halo_high = sol.edge_views(array)
        cuda.synchronize()  # the rows sent are final
        raw, null = self.comm.comm, self.comm.MPI.PROC_NULL
        up = null if s.upper is None else s.upper
        down = null if s.lower is None else s.lower
        raw.Sendrecv(send_high, dest=up, sendtag=11, recvbuf=halo_low, source=down, recvtag=11)
        raw.Sendrecv(send_low, dest=down, sendtag=12, recvbuf=halo_high, source=up, recvtag=12)
        self.seconds += time.perf_counter() - t
        self.calls += 1


class PeerHaloExchange:
    """The ``exchange(array)`` hook of a CUDA slab solver whose neighbours' GPUs are on the same
    node: halo rows are copied device to device straight from the neighbours' buffers (CUDA IPC
    handles, exchanged once; NVLink/PCIe peer copies), no host staging and no CUDA-aware MPI
    needed. The buffer read on the neighbour is the one in the same slot of its three rotating
    buffers (every rank rotates them in step).

    Full exchange (``exchange(array)``; collective over all ranks): wait for this GPU, a barrier
    (every neighbour's rows are final too), pull the two owned rows next to each halo from the
    neighbours into this rank's halo rows, wait for the copies.

    Boundary-first protocol (:func:`simengine.field.integrator.advance_boundary_first`, on
    unless ``SIMENGINE_HALO_OVERLAP=0``): a stage's ``depth`` rows at either end are launched
    first and marked by an event (:meth:`mark`); after the interior rows are launched,
    :meth:`send` waits for that event only (the host, not the GPU: the interior runs on), meets
    the other ranks in a barrier and starts the pulls on a non-blocking side stream; the next
    stage's launches wait for the pulls on the GPU (:meth:`ready`: an event wait, no host
    synchronisation). Safe reuse of rows: a neighbour rewrites the rows this rank pulls at the
    earliest two stages later, after a barrier that this rank reaches only once its pulls are
    done (its next mark follows the wait for them); the pulls write this rank's halo of the
    stage's output, which the previous stage (done before the marked rows) last read.

    :meth:`connect` returns ``None`` (and the caller keeps the host-staged exchange) unless
    every rank could open its neighbours' handles.
    """

    boundary_first = False
    #: halo rows a stage reads on each side (the boundary-first protocol's rows at either end)
    depth = HALO
    #: why the last :meth:`connect` returned None (for the start-up log)
    refused = None

    def describe(self) -> str:
        """The exchange in words; whether it overlaps the interior is the solver's answer
        (``exchange_overlapped``: the fused pipeline or the stages' boundary-first order)."""
        if getattr(self.solver, "exchange_overlapped", self.boundary_first):
            return "peer copies (CUDA IPC) overlapping the interior"
        fused = getattr(self.solver, "_fused_slab", False)
        why = self.stream_note if self.stream_note and not fused else None
        return "peer copies (CUDA IPC)" + (f" (no overlap: {why})" if why else " (no overlap)")

    def __init__(self, comm, slab, slabs):
        self.comm = comm
        self.slab = slab
        self.slabs = slabs
        self.solver = None
        self.seconds = 0.0
        self.calls = 0
        #: seconds spent waiting for this GPU (its marked rows, or all its work), in the
        #: barrier, starting and waiting for the copies
        self.parts = np.zeros(3)
        self._peers = {}
        self.stream_note = None
        self.label = "peer"

    @classmethod
    def connect(cls, comm, slab, slabs, solver):
        """Exchange IPC handles of the solver's buffers with every rank (collective)."""
        ex = cls(comm, slab, slabs)
        why = None
        try:
            handles = [b.get_ipc_handle() for b in solver.buffers]
        except Exception as exc:
            handles, why = None, f"no IPC handle ({type(exc).__name__}: {exc})"
        everyone = comm.allgather(handles)
        if why is None:
            try:
                for side in (slab.lower, slab.upper):
                    if side is not None and side not in ex._peers and everyone[side] is not None:
                        ex._peers[side] = [h.open() for h in everyone[side]]
                    elif side is not None and everyone[side] is None:
                        why = f"rank {side} has no IPC handle"
            except Exception as exc:
                why = f"opening a neighbour's IPC handle failed ({type(exc).__name__}: {exc})"
        whys = comm.allgather(why)
        if any(w is not None for w in whys):
            ex.close()
            cls.refused = next(f"rank {r}: {w}" for r, w in enumerate(whys) if w is not None)
            return None
        from numba import cuda

        ex.solver = solver
        ex._slots = [id(b) for b in solver.buffers]  # the buffers' original slots
        stream, note = (None, "SIMENGINE_HALO_OVERLAP=0") if not overlap_enabled() else \
            (None, f"a slab owns at most {2 * HALO} rows") if not thick_enough(slabs) else \
            _nonblocking_stream(solver.device)
        # every rank takes the same order (the protocol is collective)
        ex.boundary_first = bool(comm.allreduce(stream is not None, "and"))
        ex.stream_note = None if ex.boundary_first else (note or "another rank has no stream")
        ex._stream = stream if stream is not None else cuda.stream()
        ex._marked = cuda.event(timing=False)
        ex._copied = cuda.event(timing=False)
        ex._method = os.environ.get("SIMENGINE_PEER_COPY", "kernel")
        return ex

    @property
    def overlap(self) -> bool:
        return self.boundary_first

    def _copy(self, dst, d0, src, s0, n):
        """``dst[d0:d0+n] = src[s0:s0+n]`` on this rank's exchange stream (``src`` on the
        neighbour's GPU): a copy kernel reading over the peer link, or ``cuMemcpyDtoDAsync``
        (``SIMENGINE_PEER_COPY=memcpy``)."""
        if self._method == "kernel":
            threads = 256
            blocks = min(4096, max(1, -(-n // threads)))
            _peer_copy()[blocks, threads, self._stream](dst, d0, src, s0, n)
        else:
            dst[d0:d0 + n].copy_to_device(src[s0:s0 + n], stream=self._stream)

    def close(self):
        for arrays in self._peers.values():
            for a in arrays:
                try:
                    a.close() if hasattr(a, "close") else None
                except Exception:  # pragma: no cover - handle already gone
                    pass
        self._peers = {}

    def _pull(self, array):
        s, sol = self.slab, self.solver
        slot = self._slots.index(id(array))
        rc, d = sol.row_cells, s.depth  # the slab's halo depth: 2 (stages) or 4 (fused)
        if s.lower is not None:
            nb = self.slabs[s.lower]
            self._copy(array, (s.lo - d) * rc, self._peers[s.lower][slot], (nb.hi - d) * rc,
                       d * rc)
        if s.upper is not None:
            nb = self.slabs[s.upper]
            self._copy(array, s.hi * rc, self._peers[s.upper][slot], nb.lo * rc, d * rc)

    def _meet_and_pull(self, array, wait_gpu):
        """Wait for this GPU (``wait_gpu()``), barrier, start the pulls; the times in parts."""
        t = time.perf_counter()
        wait_gpu()
        t1 = time.perf_counter()
        self.comm.barrier()
        t2 = time.perf_counter()
        self._pull(array)
        self._copied.record(self._stream)
        t3 = time.perf_counter()
        self.parts += np.array([t1 - t, t2 - t1, t3 - t2])
        self.seconds += t3 - t
        self.calls += 1

    def __call__(self, array):
        """The whole exchange: every GPU's work done, barrier, pulls, wait for them."""
        from numba import cuda

        self._meet_and_pull(array, cuda.synchronize)
        t = time.perf_counter()
        self._stream.synchronize()
        self._account_wait(t)

    def _account_wait(self, t):
        dt = time.perf_counter() - t
        self.parts[2] += dt
        self.seconds += dt

    # -- the fused slab step's protocol (``cuda/fused_slab.py``): the exchange starts behind an
    #    event (the previous step's edge strips), the host then waits for the copies
    pipelines = True

    def start(self, array, ready=None):
        """Begin the exchange of ``array``'s halo: wait for this GPU (or only for the event
        ``ready``, after which the rows the neighbours read are final), barrier, then start the
        copies on the exchange stream."""
        from numba import cuda

        self._meet_and_pull(array, cuda.synchronize if ready is None else ready.synchronize)

    def finish(self, array):
        """Wait (the host) for the copies started by :meth:`start`."""
        t = time.perf_counter()
        self._stream.synchronize()
        self._account_wait(t)

    # -- boundary-first protocol (integrator.advance_boundary_first)
    def mark(self, array):
        """The rows at either end of ``array`` are launched: record that on the stages' stream."""
        self._marked.record(0)

    def send(self, array):
        """Start the exchange of ``array``'s halo once the marked rows are done (the host waits
        for them; the interior launched after them keeps the GPU busy)."""
        self._meet_and_pull(array, self._marked.synchronize)

    def ready(self, array, wait=False):
        """The next launches on the stages' stream wait for the pulls (the GPU waits, not the
        host); ``wait``: the host waits for them too (the end of an advance)."""
        if wait:
            t = time.perf_counter()
            self._stream.synchronize()
            self._account_wait(t)
        else:
            self._copied.wait(0)


def thick_enough(slabs) -> bool:
    """Whether every slab has interior rows for the boundary-first order (more than 2 halo
    depths): the order is collective, so all ranks take it or none does."""
    return all(s.owned > 2 * HALO for s in slabs)


def overlap_enabled() -> bool:
    """``SIMENGINE_HALO_OVERLAP``: 1 (default) drives slab exchanges in the boundary-first order
    (the exchange of a stage's end rows overlaps its interior rows), 0 the plain order."""
    v = os.environ.get("SIMENGINE_HALO_OVERLAP", "1").strip().lower()
    if v not in ("0", "1", ""):
        raise ValueError(f"SIMENGINE_HALO_OVERLAP={v!r}: expected 0 or 1")
    return v != "0"


def _nonblocking_stream(device_id):
    """``(stream, note)``: a CUDA stream that does not synchronise with the legacy default stream
    (numba's stream 0, where the stages run), at high priority, so that the halo copies overlap
    a stage; ``(None, note)`` saying why where none could be made. Made through numba's own
    driver binding (finalised with numba's context; a ``cuda.core`` stream wrapped for numba
    was seen to crash the process at exit)."""
    from numba import cuda

    try:
        from numba.cuda.cudadrv import driver as drv

        ctx = cuda.current_context()
        flags = drv.binding.CUstream_flags.CU_STREAM_NON_BLOCKING.value
        try:
            lo_pri, hi_pri = drv.driver.cuCtxGetStreamPriorityRange()
            handle = drv.driver.cuStreamCreateWithPriority(flags, hi_pri)
        except Exception:
            handle = drv.driver.cuStreamCreate(flags)
        stream = drv.Stream(handle, finalizer=drv._stream_finalizer(ctx.deallocations, handle))
        return stream, None
    except Exception as exc:  # numba-cuda internals changed: the plain order
        return None, f"no non-blocking stream ({type(exc).__name__}: {exc})"


@functools.lru_cache(maxsize=None)
def _peer_copy():
    """The kernel ``dst[d0 + i] = src[s0 + i]``, i < n, grid-stride (compiled on first use)."""
    from numba import cuda

    @cuda.jit
    def copy(dst, d0, src, s0, n):
        i = cuda.grid(1)
        step = cuda.gridsize(1)
        while i < n:
            dst[d0 + i] = src[s0 + i]
            i += step

    return copy


def halo_mode() -> str:
    """``SIMENGINE_HALO``: ``auto`` (peer copies where possible, else host), ``host``, ``peer``."""
    mode = os.environ.get("SIMENGINE_HALO", "auto").strip().lower() or "auto"
    if mode not in ("auto", "host", "peer"):
        raise ValueError(f"SIMENGINE_HALO={mode!r}: expected auto, host or peer")
    return mode


def rank_slabs(comm, n0: int, boundary_kind: str, depth: int = HALO):
    """Balanced slabs of axis 0 (``n0`` rows), one per rank, with halos of ``depth`` rows."""
    return make_slabs(int(n0), comm.size, boundary_kind, depth)


def halo_depth(grid, boundary, backend, kwargs) -> int:
    """The slabs' halo depth for a solver of ``backend`` with options ``kwargs``: the depth of
    the form the whole grid runs (``plans.slab_depth``; 2 on the CPU)."""
    from .backends import resolve

    if resolve(backend) != "cuda":
        return HALO
    from .plans import slab_depth

    return slab_depth(grid.shape, boundary.code, **kwargs)


def make_rank_solver(comm, model, grid, boundary, *, backend="auto", depth=None, **kwargs):
    """This rank's slab solver, exchanging halos through ``comm``. Returns (solver, slab, slabs).

    The halo depth follows the form the grid runs: ``depth``, the run's plan's
    (``plans.halo_of``), else :func:`halo_depth` of these options; the exchanger is the
    peer copy between GPUs of one node, else ``MPI_Sendrecv`` of device buffers where the MPI is
    CUDA-aware, else host staging; ``solver.exchange.label`` names it (the CUDA solver's
    ``plan_summary`` quotes it, with what the CUDA-aware query answered) and
    ``solver.exchange.describe()`` says it in words, with the reason for the host path."""
    from .backends import make_solver, resolve

    slabs = rank_slabs(comm, grid.shape[0], boundary.kind,
                       halo_depth(grid, boundary, backend, kwargs) if depth is None else depth)
    slab = slabs[comm.rank]
    mode = halo_mode()
    device_mpi, how = False, None
    if comm.size > 1 and mode != "host" and resolve(backend) == "cuda" and not _simulator():
        from ..parallel.cuda_aware import cuda_aware

        device_mpi, how = cuda_aware(comm)
    ex = MPIHaloExchange(comm, slab, slabs, device=device_mpi)
    solver = make_solver(model, grid, boundary, backend=backend, slab=slab, exchange=ex,
                         **kwargs)
    ex.bind(solver)
    if how is not None:
        ex.label += f" (CUDA-aware MPI: {how})"
    if comm.size > 1 and mode != "host" and comm.allreduce(
            getattr(solver, "backend", "") == "cuda" and not _simulator(), "and"):
        peer = PeerHaloExchange.connect(comm, slab, slabs, solver)
        if peer is not None:
            solver.exchange = peer
        elif mode == "peer":
            raise RuntimeError("SIMENGINE_HALO=peer: the GPUs' buffers could not be shared "
                               f"between the ranks (CUDA IPC: {PeerHaloExchange.refused})")
        else:
            ex.because = f"no peer copies: {PeerHaloExchange.refused}"
    elif comm.size > 1 and mode == "host":
        ex.because = "SIMENGINE_HALO=host"
    return solver, slab, slabs


def _simulator() -> bool:
    import numba

    return bool(numba.config.ENABLE_CUDASIM)


def rank_observables(comm, solver, slabs, model, grid, length=True, spectrum=None,
                     radial=False, level=None) -> dict:
    """Mass, free energy, min, max (and the S(k) length scale) of the whole field from the slabs
    of all ranks, on every rank (collective). Returns also ``phi``: this rank's owned rows —
    None when ``spectrum`` (a :class:`~simengine.field.spectrum_cuda.DeviceSlabSpectrum`)
    computes S(k) on the GPUs, where no field comes to the host. With ``radial`` (and
    ``length``) also ``structure_factor_k`` and ``structure_factor``: the radial S(k) of the whole
    field per shell (NaN where a shell holds no mode). With ``level``: ``interface_area``, the
    whole field's interface area at that level (:func:`.lengths.interface_area`, each slab's
    crossings with the next slab's first row, summed; on the GPUs where the spectrum is)."""
    from .observables import (FieldPartials, length_from_partials, merge_partials,
                              structure_factor_partials)

    part = solver.partials().to_array()
    parts = comm.allgather(part)
    red = merge_partials([FieldPartials.from_array(p) for p in parts], model, grid)
    phi = None if (length and spectrum is not None) else solver.state()
    if length:
        if spectrum is not None:
            got = spectrum.partials(solver.owned_device(), red["mass"], comm.alltoall,
                                    radial=radial)
        else:
            rows = [(s.start, s.stop) for s in slabs]
            got = structure_factor_partials(phi, rows, comm.rank, grid.shape,
                                            float(grid.spacing), red["mass"], comm.alltoall,
                                            boundary=solver.boundary.kind, radial=radial)
        sk, shells = got if radial else (got, None)
        red["length"] = length_from_partials(comm.allgather(sk), int(np.prod(grid.shape)),
                                             bounds=(red["min"], red["max"]))
        if radial:
            from .spectrum import shell_profile

            total = np.sum(np.asarray(comm.allgather(shells), dtype=np.float64), axis=0)
            red["structure_factor_k"], red["structure_factor"] = shell_profile(*total)
    if level is not None:
        red["interface_area"] = _rank_area(comm, solver, slabs, grid, spectrum, phi, level)
    red["phi"] = phi
    return red


def _rank_area(comm, solver, slabs, grid, spectrum, phi, level) -> float:
    """The whole field's interface area from every rank's slab (collective)."""
    from .lengths import interface_area_sum

    periodic = solver.boundary.kind == "periodic"
    start, stop = slabs[comm.rank].start, slabs[comm.rank].stop
    shape = (stop - start,) + tuple(int(n) for n in grid.shape[1:])
    if phi is None:  # the slab stays on the GPU: lengths_cuda's kernel
        from .spectrum_cuda import _cupy_view

        cp = spectrum.cp
        block = _cupy_view(cp, solver.owned_device(), shape)
        first = cp.asnumpy(block[0]) if shape[0] else None
    else:
        block = np.asarray(phi).reshape(shape)
        first = np.array(block[0]) if shape[0] else None
    firsts = comm.allgather(first)
    after = None
    for r in range(comm.rank + 1, comm.size + (comm.rank + 1 if periodic else 0)):
        row = firsts[r % comm.size]
        if row is not None:
            after = row
            break
    if not shape[0]:
        return float(np.sum(comm.allgather(0.0)))
    if phi is None:
        from numba import cuda

        from .lengths_cuda import device_area

        mine = device_area(cuda.as_cuda_array(block.reshape(-1)), shape, float(grid.spacing),
                           level, periodic, None if after is None else
                           cuda.to_device(np.ascontiguousarray(after).reshape(-1)))
    else:
        mine = float(interface_area_sum(block, after, float(grid.spacing), level, periodic))
    return float(np.sum(comm.allgather(mine)))
