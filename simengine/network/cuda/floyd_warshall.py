"""Dense all-pairs shortest paths on the GPU: blocked Floyd–Warshall as min-plus products.

The n × n matrix is padded to a multiple of the tile K and closed in n/K rounds of three phases
(diagonal tile, its row and column panels, every other tile), the last two as register-tiled
min-plus products: CUDA C++ kernels compiled by NVRTC (:mod:`.minplus_nvrtc`) on GPUs of compute
capability ≥ 9.0 with CuPy, for float32/int32 distances; the numba kernels (:mod:`.minplus`)
elsewhere (design and figures in docs/network-gpu.md).  Padded vertices are isolated.

Distance type (:func:`choose_dtype`), always exact unless the caller asks for float32:

* integer weights (or none) whose worst path, (n − 1)·max w, stays below 2²⁴ → int32 with the
  CUDA C++ kernels (one ``VIADDMNMX`` per update), float32 with the numba ones (exact integer
  sums on the FP32 pipes);
* integer weights below 2³⁰ − 1 → int32 (sentinel :data:`.minplus.INT_INF`), optionally with
  Hopper's ``__viaddmin_s32`` (one instruction for add and min; :data:`DPX`, ``dpx=True``);
* otherwise float64 (``inf``).  ``dtype="float32"`` forces float32 for real weights (rounded:
  relative error about n·2⁻²⁴).

``predecessors=True`` also returns the n × n int32 matrix ``P[i, j]`` = the vertex before j on a
shortest i → j path, −1 where there is none (i = j or unreachable), 0-based — what
``scipy.sparse.csgraph.floyd_warshall(..., return_predecessors=True)`` returns with −1 in place of
−9999.  :func:`transitive_closure` is the Boolean case (all weights 0: reachable ⇔ distance 0).

The matrices must fit on the device: :func:`check_memory` refuses larger ones with the estimate
(no out-of-core streaming).
"""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from . import device_graph, minplus_nvrtc, simulator
from .minplus import INT_INF, TileConfig, run_rounds

#: tile configurations per distance type (the simulator uses tiny tiles)
if simulator():
    CONFIGS = {np.dtype(t): TileConfig(K=8, TM=2, TN=2, KC=4, P1Y=4)
               for t in (np.int32, np.float32, np.float64)}
else:
    CONFIGS = {np.dtype(np.int32): TileConfig(), np.dtype(np.float32): TileConfig(),
               np.dtype(np.float64): TileConfig(K=64, TM=4, TN=4, KC=32, P1Y=16)}
#: use Hopper DPX for int32 distances by default on devices of compute capability >= 9.0: off —
#: it ties with plain int32 (docs/measurements/code-comments-2026-11-28.md): the product kernel
#: is not bound by its add-and-min issue rate (docs/network-gpu.md); ``dpx=True`` selects it
DPX = False
#: how the product kernel keeps predecessors: "inline" (argmin in the inner loop) or "recover"
#: (searched after the product, only for the outputs that improved)
PRED_MODE = "inline"
#: integer weights whose worst path fits both: which type runs ("float32" or "int32") with the
#: numba kernels, and with the CUDA C++ kernels (int32: one VIADDMNMX per update; measured faster)
EXACT_INT = "float32"
EXACT_INT_CXX = "int32"
INIT_THREADS = 16 if simulator() else 256


def _weights_info(graph, scale: int = 0):
    """(integral, bound on the longest shortest path) of the weights (× scale + 1 if scale).
    The scan of the weights (tens of ms at 10⁷ arcs) is done once per weight array and cached on
    the graph."""
    n = graph.n
    w = graph.weights
    hit = getattr(graph, "_simengine_fw_weights", None)
    if hit is None or hit[0] is not w:
        integral = w is None or (len(w) == 0 or bool(np.all(np.floor(w) == w)))
        maxw = 1.0 if w is None else (float(w.max()) if len(w) else 0.0)
        hit = (w, integral, maxw)
        try:
            graph._simengine_fw_weights = hit
        except AttributeError:
            pass
    _, integral, maxw = hit
    if scale:
        maxw = maxw * scale + 1
    return integral, max(0, n - 1) * maxw


def choose_dtype(graph, dtype=None, scale: int = 0) -> np.dtype:
    """The distance type that gives exact distances for ``graph`` (see the module docstring);
    ``dtype`` (``"float32"``, ``"float64"``, ``"int32"``) overrides it (int32 only for integer
    weights that fit).  ``scale``: the weights are run as w·scale + 1 (:func:`floyd_warshall`)."""
    integral, bound = _weights_info(graph, scale)
    if dtype is not None:
        dt = np.dtype(dtype)
        if dt == np.dtype(np.int32) and not (integral and bound < INT_INF):
            raise ValueError("int32 distances need integer weights with (n-1)*max(w) < 2**30-1")
        if dt not in CONFIGS:
            raise ValueError(f"no Floyd-Warshall kernel for {dt}")
        return dt
    if integral and bound < (1 << 24):
        return np.dtype(EXACT_INT_CXX if minplus_nvrtc.available() else EXACT_INT)
    if integral and bound < INT_INF:
        return np.dtype(np.int32)
    if scale and not (integral and bound < 2.0 ** 53):
        raise ValueError("tie-broken weights w*n+1 exceed 2**53")
    return np.dtype(np.float64)


def unreachable(dtype) -> float:
    """The "no path" value of a distance matrix of ``dtype``."""
    return float(INT_INF) if np.dtype(dtype) == np.dtype(np.int32) else math.inf


def matrix_bytes(n: int, dtype=np.float64, predecessors: bool = False, tile: int = 128) -> int:
    """Device bytes of the padded distance matrix (and predecessor matrix) for ``n`` vertices."""
    npad = max(1, -(-n // tile)) * tile
    return npad * npad * (np.dtype(dtype).itemsize + (4 if predecessors else 0))


def check_memory(n: int, dtype, predecessors: bool, tile: int) -> None:
    """Refuse (``UserError``) a matrix that does not fit in the device's free memory."""
    from ...errors import UserError
    from ...machine import fmt_bytes

    need = matrix_bytes(n, dtype, predecessors, tile)
    if simulator():
        return
    free, total = cuda.current_context().get_memory_info()
    if need > free:
        raise UserError(f"floyd_warshall: n = {n} needs {fmt_bytes(need)} of GPU memory for the "
                        f"{np.dtype(dtype).name} distance matrix"
                        f"{' and the predecessor matrix' if predecessors else ''}; the device has "
                        f"{fmt_bytes(free)} free of {fmt_bytes(total)} (no out-of-core tiling: use "
                        f"a per-source algorithm, e.g. frontier)")


def use_dpx(dtype) -> bool:
    """True when int32 distances take the DPX path on the current device."""
    if not DPX or simulator() or np.dtype(dtype) != np.dtype(np.int32):
        return False
    return tuple(cuda.get_current_device().compute_capability) >= (9, 0)


@cuda.jit
def _init(D, P, npad, inf, preds):
    i = cuda.grid(1)
    if i < npad * npad:
        r = i // npad
        c = i - r * npad
        D[r, c] = 0 if r == c else inf
        if preds:
            P[r, c] = -1


@cuda.jit
def _set_arcs(D, P, indptr, indices, weights, n, zero, scale, preds):
    u = cuda.grid(1)
    if u < n:
        for e in range(indptr[u], indptr[u + 1]):
            v = indices[e]
            w = 0.0 if zero else (weights[e] * scale + 1.0 if scale else weights[e])
            if w < D[u, v]:
                D[u, v] = w
                if preds:
                    P[u, v] = u


def use_cxx(dtype, predecessors=False, config=None, kernel: str = "auto") -> bool:
    """True when the CUDA C++ kernels (:mod:`.minplus_nvrtc`) run: ``kernel`` "cxx", or "auto"
    on a GPU that has them (compute capability ≥ 9.0, CuPy) for float32/int32 distances, with no
    numba tile ``config`` and no numba predecessor mode ("inline"/"recover") asked for."""
    if kernel not in ("auto", "cxx", "numba"):
        raise ValueError(f"Floyd-Warshall kernel {kernel!r} (auto, cxx or numba)")
    if kernel != "auto":
        return kernel == "cxx"
    return (config is None and predecessors in (False, True)
            and np.dtype(dtype) in (np.dtype(np.float32), np.dtype(np.int32))
            and minplus_nvrtc.available())


def kernel_note(graph) -> str:
    """One line for the start-up log: which Floyd–Warshall kernels :func:`fw_matrix` runs on
    ``graph`` (the distance type, and why not the CUDA C++ kernels where they do not run)."""
    dt = choose_dtype(graph)
    if use_cxx(dt):
        return f"CUDA C++ min-plus kernels (NVRTC), {dt.name}"
    why = (minplus_nvrtc.unavailable_reason()
           or f"they have no {dt.name} form")
    return f"numba min-plus kernels, {dt.name}; not the CUDA C++ ones: {why}"


#: what the last :func:`floyd_warshall_device` ran (one line, for logs and benchmarks)
last_kernel = ""


def floyd_warshall_device(graph, dtype=None, predecessors: bool = False, config=None,
                          dpx=None, zero_weights: bool = False, scale: int = 0,
                          kernel: str = "auto"):
    """Closed matrices on the device: ``(D, P, unreachable)``, D of shape (npad, npad) (the
    first n rows/columns are the graph's), P the int32 predecessors (None unless
    ``predecessors``: True = kept by the kernels in the type's default mode, or a numba mode
    "inline"/"recover").  ``config``:
    a :class:`~.minplus.TileConfig` (numba kernels); ``dpx``: None = automatic; ``zero_weights``:
    every arc weighs 0 (transitive closure); ``scale``: every arc weighs w·scale + 1 (integer
    weights only); ``kernel``: "auto", "cxx" (:mod:`.minplus_nvrtc`) or "numba"
    (:mod:`.minplus`)."""
    global last_kernel
    dt = choose_dtype(graph, dtype, scale) if not zero_weights else np.dtype(dtype or np.int32)
    cxx = use_cxx(dt, predecessors, config, kernel)
    cfg = TileConfig(K=minplus_nvrtc.R) if cxx else (config or CONFIGS[dt])
    if cxx:
        dpx = True if dpx is None else bool(dpx)
    else:
        dpx = use_dpx(dt) if dpx is None else bool(dpx)
    n = graph.n
    check_memory(n, dt, bool(predecessors), cfg.K)
    dg = device_graph(graph)
    nt = max(1, -(-n // cfg.K))
    npad = nt * cfg.K
    D = cuda.device_array((npad, npad), dt)
    predecessors = predecessors or False
    P = cuda.device_array((npad, npad), np.int32) if predecessors else None
    Pd = P if predecessors else D
    inf = unreachable(dt)
    nb = (npad * npad + INIT_THREADS - 1) // INIT_THREADS
    _init[nb, INIT_THREADS](D, Pd, npad, dt.type(inf), bool(predecessors))
    if n:
        _set_arcs[(n + INIT_THREADS - 1) // INIT_THREADS, INIT_THREADS](
            D, Pd, dg.indptr, dg.indices, dg.weights, n, zero_weights, scale,
            bool(predecessors))
    kept = bool(predecessors)
    if cxx:
        bound = 0.0 if zero_weights else _weights_info(graph, scale)[1]
        last_kernel = minplus_nvrtc.run_rounds(
            D, P, nt, minplus_nvrtc.mode_for(dt, kept, dpx, bound))
    else:
        mode = (PRED_MODE if predecessors is True else predecessors) if kept else False
        run_rounds(D, P, nt, cfg, mode, dpx)
        last_kernel = (f"numba min-plus, {dt.name}, K {cfg.K}"
                       f"{', predecessors ' + mode if mode else ''}{', DPX' if dpx else ''}")
    return D, P, inf


def to_host(D, n: int, inf: float) -> np.ndarray:
    """The first n × n of device matrix ``D`` as float64 with ``inf`` = unreachable."""
    H = D.copy_to_host()[:n, :n]
    out = H.astype(np.float64)
    if H.dtype == np.int32:
        out[H >= int(inf)] = np.inf
    return out


def floyd_warshall(graph, predecessors: bool = False, dtype=None, config=None, dpx=None):
    """All-pairs distances (n × n float64, inf = unreachable) computed on the GPU; with
    ``predecessors`` also the n × n int32 predecessor matrix (−1 = none).

    Zero-weight arcs: blocked min-plus products pick among equally short paths independently, and
    with zero-weight arcs such picks can close a predecessor cycle.  So with ``predecessors`` and a
    zero-weight arc the graph is run with integer weights w·n + 1 — lengths ordered by (distance,
    hops), every weight positive, distance = ⌊length / n⌋ — exact while (n − 1)·(max w·n + 1) <
    2⁵³; real weights with zero-weight arcs are refused (ValueError)."""
    from ..weights import check_weights

    check_weights(graph)
    n = graph.n
    scale = 0
    if predecessors and graph.weights is not None and bool(np.any(graph.weights == 0)):
        if not _weights_info(graph)[0]:
            raise ValueError("predecessors with zero-weight arcs need integer weights on the GPU")
        scale = max(2, n)
    D, P, inf = floyd_warshall_device(graph, dtype, predecessors, config, dpx, scale=scale)
    out = to_host(D, n, inf)
    if scale:
        fin = np.isfinite(out)
        out[fin] = np.floor_divide(out[fin], scale)   # exact: integers below 2**53
    if not predecessors:
        return out
    return out, P.copy_to_host()[:n, :n]


def transitive_closure(graph, config=None) -> np.ndarray:
    """Reachability (n × n bool, True on the diagonal): the Boolean case of the same kernels —
    every arc weighs 0, so i reaches j iff the min-plus closure is 0."""
    D, _, inf = floyd_warshall_device(graph, np.int32, config=config, zero_weights=True)
    return D.copy_to_host()[: graph.n, : graph.n] == 0


def fw_matrix(graph):
    """``(D, unreachable)``: the closed matrix of ``graph`` on the current device, computed on
    first use and cached with the graph's device data (:func:`~.graph_cache`)."""
    from . import graph_cache

    cache = graph_cache(graph)
    hit = cache.get("fw")
    if hit is None:
        D, _, inf = floyd_warshall_device(graph)
        hit = cache["fw"] = (D, inf)
    return hit
