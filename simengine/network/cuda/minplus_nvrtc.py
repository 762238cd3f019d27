"""The min-plus rounds of the blocked Floyd–Warshall as CUDA C++ kernels (``minplus_tiles.cu``),
compiled by NVRTC and launched through CuPy — the fast path on Hopper GPUs (compute capability ≥
9.0) for float32 and int32 distances; :mod:`.minplus` (numba) is the path everywhere else and
under the simulator.

Round depth 128; the kernels of one round: ``fw_diag`` (the diagonal tile), ``fw_panels`` (row
and column panel, ``WHICH`` = 20 / 21 of the product) and ``fw_product`` with ``WHICH`` = 3
(every other tile) or, with the look-ahead, 4 then 5 (the tiles of row/column k + 1, then the
others).  The product's modes have names (:data:`MODES`; the number is the source's template
parameter ``MODE``): ``float`` (float32); ``int-dpx`` (int32 with DPX ``__viaddmin_s32``);
``int`` (int32 without); ``int-packed`` (int32 with predecessors packed into the low 7 bits: one
DPX instruction per update, distances < 2²²); ``select`` (the argmin kept by a compare and
select, any type); ``chunk-search`` (float32 with the chunk of the minimum recorded and the argmin
searched in it afterwards).  Matrices are numba device arrays; CuPy wraps
them without a copy (``__cuda_array_interface__``) on numba's current device.  Without the
look-ahead the kernels go to the legacy default stream, the one numba uses; with it, to two
streams that start after and end before the legacy stream's work (events).
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import numpy as np

from .. import interrupt

#: round depth of the CUDA C++ kernels (the matrix is padded to a multiple of it)
R = 128
#: the product's modes by name: the template parameter MODE of minplus_tiles.cu
MODES = {"float": 0, "int-dpx": 1, "int": 2, "int-packed": 3, "select": 4, "chunk-search": 5}
_NAMES = {v: k for k, v in MODES.items()}


def mode_name(mode) -> str:
    """The name of a mode given by name or by the source's number."""
    return mode if isinstance(mode, str) else _NAMES[int(mode)]


def _number(mode) -> int:
    return MODES[mode_name(mode)]


def keeps_predecessors(mode) -> bool:
    return _number(mode) >= MODES["int-packed"]


#: ``int-packed`` needs every finite distance below this (7 low bits hold the intermediate's index)
PACK_LIMIT = 1 << 22
SOURCE = Path(__file__).with_name("minplus_tiles.cu")


@dataclass(frozen=True)
class ProductConfig:
    """One ``fw_product`` instance: output tile ``BM × BN``, ``TM × TN`` per thread, inner chunk
    ``KC`` through ``STAGES`` shared buffers, ``MINB`` blocks per SM (launch bounds), A read
    ``VA`` values at a time."""
    BM: int = 128
    BN: int = 128
    TM: int = 8
    TN: int = 8
    KC: int = 16
    STAGES: int = 3
    MINB: int = 2
    VA: int = 2

    @property
    def threads(self) -> int:
        return (self.BM // self.TM) * (self.BN // self.TN)

    def shared_bytes(self) -> int:
        return self.STAGES * (self.BM * (self.KC + 4) + self.KC * self.BN) * 4

    def text(self) -> str:
        return (f"{self.BM}x{self.BN} tile, {self.TM}x{self.TN}/thread, KC {self.KC}, "
                f"{self.STAGES} stages, {self.MINB} blocks/SM, A x{self.VA}")


#: the "rest" configuration per mode (a tile sweep: docs/measurements/minplus-2026-11-26.md);
#: ``select`` keeps a second register tile: fewer outputs per thread
REST = {"float": ProductConfig(VA=4), "int-dpx": ProductConfig(), "int": ProductConfig(),
        "int-packed": ProductConfig(), "select": ProductConfig(TM=8, TN=4, MINB=1),
        "chunk-search": ProductConfig(TM=8, TN=4, MINB=1)}
#: the panels (one launch, ``fw_panels``): KC, STAGES, MINB, VA of 128 × 64 / 64 × 128 tiles
PANELS = ProductConfig(BM=128, BN=64, TM=8, TN=4)

#: predecessors with float32 distances: ``select`` or ``chunk-search``
FLOAT_PRED_MODE = "chunk-search"
#: split each round's rest so the next round's diagonal and panels overlap it (two streams)
LOOKAHEAD = True

_modules: dict = {}


def unavailable_reason() -> str:
    """Why the CUDA C++ kernels cannot run here ("" when they can): they need a real GPU of
    compute capability ≥ 9.0 and CuPy (the project's ``cuda`` extra)."""
    from . import simulator

    if simulator():
        return "the CUDA simulator runs numba kernels only"
    try:
        import cupy  # noqa: F401
        from numba import cuda
    except ImportError:
        return "CuPy is not installed (pip install -e \".[cuda]\")"
    cc = tuple(cuda.get_current_device().compute_capability)
    if cc < (9, 0):
        return f"the GPU's compute capability is {cc[0]}.{cc[1]} (< 9.0)"
    return ""


def available() -> bool:
    """True when the CUDA C++ kernels can run: a real GPU of compute capability ≥ 9.0 and CuPy."""
    return not unavailable_reason()


def _ctype(dtype) -> str:
    dt = np.dtype(dtype)
    if dt == np.dtype(np.float32):
        return "float"
    if dt == np.dtype(np.int32):
        return "int"
    raise ValueError(f"no CUDA C++ min-plus kernel for {dt}")


def _function(name: str):
    """The compiled kernel ``name`` (a template instance) on CuPy's current device, compiled on
    first use (CuPy caches the binary on disk; a module is loaded per device)."""
    import cupy as cp

    key = (name, cp.cuda.Device().id)
    fn = _modules.get(key)
    if fn is None:
        mod = cp.RawModule(code=SOURCE.read_text(), options=("-std=c++17", "-DSE_DPX"),
                           name_expressions=[name])
        fn = _modules[key] = mod.get_function(name)
    return fn


def product_kernel(dtype, mode, which: int, cfg: ProductConfig):
    c = cfg
    name = (f"fw_product<{_ctype(dtype)},{_number(mode)},{which},{c.BM},{c.BN},{c.TM},{c.TN},{c.KC},"
            f"{c.STAGES},{c.MINB},{c.VA}>")
    fn = _function(name)
    smem = c.shared_bytes()
    if smem > 48 * 1024 and fn.max_dynamic_shared_size_bytes < smem:
        fn.max_dynamic_shared_size_bytes = smem
    return fn, smem


def panels_kernel(dtype, mode, cfg: ProductConfig = PANELS):
    c = cfg
    fn = _function(f"fw_panels<{_ctype(dtype)},{_number(mode)},{c.KC},{c.STAGES},{c.MINB},{c.VA}>")
    smem = max(c.shared_bytes(), c.STAGES * (64 * (c.KC + 4) + c.KC * 128) * 4)
    if smem > 48 * 1024 and fn.max_dynamic_shared_size_bytes < smem:
        fn.max_dynamic_shared_size_bytes = smem
    return fn, smem


def diag_kernel(dtype, preds: bool):
    return _function(f"fw_diag<{_ctype(dtype)},{'true' if preds else 'false'}>")


def mode_for(dtype, preds: bool, dpx: bool = True, bound: float = float("inf")) -> str:
    """The product mode (a name of :data:`MODES`) for distance ``dtype`` with or without
    predecessors; ``bound``: an upper bound on every finite distance (``int-packed`` needs <
    :data:`PACK_LIMIT`)."""
    is_int = np.dtype(dtype) == np.dtype(np.int32)
    if not preds:
        return ("int-dpx" if dpx else "int") if is_int else "float"
    if is_int:
        return "int-packed" if bound < PACK_LIMIT else "select"
    return mode_name(FLOAT_PRED_MODE)


def run_rounds(D, P, nt: int, mode, rest: ProductConfig | None = None,
               panels: ProductConfig = PANELS, lookahead: bool | None = None) -> str:
    """The ``nt`` rounds on the device matrices ``D`` (npad × npad, npad = 128·nt, float32 or
    int32) and ``P`` (int32, when ``mode`` keeps predecessors) on numba's current device (CuPy is pointed at it);
    returns a one-line description of the kernels.

    ``lookahead`` (default :data:`LOOKAHEAD`): round k's rest is split — the tiles of row and
    column k + 1 first, then round k + 1's diagonal and panels on a second stream while the
    other tiles of round k run (they touch disjoint tiles), so the one-block diagonal closure
    and the panels leave the critical path."""
    import cupy as cp
    from numba import cuda

    with cp.cuda.Device(cuda.get_current_device().id):     # CuPy's device = numba's
        return _run_rounds(cp, D, P, nt, mode, rest, panels, lookahead)


def _run_rounds(cp, D, P, nt, mode, rest, panels, lookahead):
    if D.shape[0] != nt * R:
        raise ValueError("the matrix must be padded to a multiple of 128")
    mode = mode_name(mode)
    preds = keeps_predecessors(mode)
    rest = rest or REST[mode]
    lookahead = LOOKAHEAD if lookahead is None else lookahead
    lookahead = lookahead and nt > 2 and rest.BM == R and rest.BN == R
    Dc = cp.asarray(D)
    Pc = cp.asarray(P) if preds else Dc
    npad = np.int32(nt * R)
    k1 = diag_kernel(D.dtype, preds)
    k2, s2 = panels_kernel(D.dtype, "select" if mode == "chunk-search" else mode,
                           panels)                           # (the same predecessors)
    k3, s3 = product_kernel(D.dtype, mode, 3, rest)
    g2 = (int(npad) // 64, 2)
    g3 = (int(npad) // rest.BN, int(npad) // rest.BM)
    text = f"CUDA C++ min-plus (NVRTC), mode {mode}, rest {rest.text()}"

    def args(k):
        return (Dc, Pc, npad, np.int32(k * R))

    check = interrupt.active()        # a run's stop check: wait for each round, then ask it
    if not lookahead:
        for k in range(nt):
            k1((1,), (32, 32), args(k))
            if nt > 1:
                k2(g2, (256,), args(k), shared_mem=s2)
                k3(g3, (rest.threads,), args(k), shared_mem=s3)
            if check:
                cp.cuda.Stream.null.synchronize()
                interrupt.between_rounds("Floyd–Warshall", k + 1, nt)
        return text
    k4, _ = product_kernel(D.dtype, mode, 4, rest)
    k5, _ = product_kernel(D.dtype, mode, 5, rest)
    # the side stream has the higher priority: its diagonal block and panels take SMs as the
    # rest's blocks retire instead of queueing behind all of them
    # (CUDA clamps a priority beyond the device's range to its greatest)
    main = cp.cuda.Stream(non_blocking=True)
    side = cp.cuda.Stream(non_blocking=True, priority=-1000)
    ready, closed = cp.cuda.Event(disable_timing=True), cp.cuda.Event(disable_timing=True)
    ready.record(cp.cuda.Stream.null)
    main.wait_event(ready)
    with main:
        k1((1,), (32, 32), args(0))
        k2(g2, (256,), args(0), shared_mem=s2)
    for k in range(nt):
        if k + 1 < nt:
            with main:
                k4((nt, 2), (rest.threads,), args(k), shared_mem=s3)
            ready.record(main)
            side.wait_event(ready)
            with side:
                k1((1,), (32, 32), args(k + 1))
                k2(g2, (256,), args(k + 1), shared_mem=s2)
            closed.record(side)
            with main:
                k5(g3, (rest.threads,), args(k), shared_mem=s3)
            main.wait_event(closed)
            if check:
                main.synchronize()
                interrupt.between_rounds("Floyd–Warshall", k + 1, nt)
        else:
            with main:
                k3(g3, (rest.threads,), args(k), shared_mem=s3)
    ready.record(main)
    cp.cuda.Stream.null.wait_event(ready)
    return text + ", look-ahead"
