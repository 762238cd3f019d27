"""Memory and work estimates of a scenario, checked before anything large is allocated.

:func:`estimate` turns a validated scenario into a :class:`Plan`: one :class:`Item` per large
allocation (bytes on the host and on the GPU, the scenario key responsible for it) and, for network
runs, the traversal work (sources × arcs) with a rough time.  :func:`check` compares the totals with
the memory this process can have (:func:`host_available`, :func:`gpu_available`) and raises a
one-line :class:`~simengine.errors.UserError` naming the key, the estimate and the limit; ``force``
(``simengine run --force``) or ``resources: {check: false}`` in the scenario skips the refusal.

What is counted (the engines as they are):

* field, CPU: the solver's three arrays (φⁿ, φ*, φⁿ⁺¹) in the run's precision; the runner's host
  copies (state + snapshot); the observables' float64/complex128 temporaries (the FFT length scale:
  a float64 copy, the complex spectrum, the power, d wavenumber grids, |k|, a mask and two masked
  copies — (57 + 8d) bytes per cell).  The stencil kernels' per-worker tiles are negligible;
* field, CUDA: the same three arrays and the reduction partials on the device; the host copies and
  observables as above;
* network: the CSR arrays (indptr int64, indices int32, weights float64; the transpose too for
  directed graphs), the generator's or reader's working memory while building it, the statistics
  accumulator (≈ 65 bytes per vertex), the engine's buffers for the algorithm ``auto`` will pick
  (per CPU worker, or on the device), and stored distances (rows held until a checkpoint write,
  twice while they are concatenated; the file grows by sources × n × itemsize before
  compression).

``ranks``: the estimate of one rank when the run is split over that many processes (field cells
and sources divided, the graph replicated); the host check counts the ranks on this machine (the
launcher's local-size variable, else all of them).
"""
from __future__ import annotations

import math
import os
from dataclasses import dataclass, field

import numpy as np

from .errors import UserError
from .machine import HOST_LIMIT_ENV, env_limit, fmt_bytes, fmt_seconds, host_available  # noqa: F401

GiB = float(1 << 30)

#: Test hooks: bytes of host / GPU memory to assume instead of measuring them, so that the tests
#: can exercise every memory refusal (and ``--force``) with small inputs.  Not meant for normal
#: use; a value that is not a non-negative integer is ignored.
GPU_LIMIT_ENV = "SIMENGINE_TEST_GPU_MEMORY"
#: no allocation can reach this many bytes (sizes are signed 64-bit): an estimate beyond it is an
#: impossible request, refused whatever ``--force`` says (config/checks.py), not a memory refusal
UNREPRESENTABLE = 1 << 63
#: how every memory refusal says it can be overridden
OVERRIDE_HINT = "reduce it, or pass --force (or set resources.check: false) to run anyway"

#: rough traversal throughput, in arc visits × sources per second (msbfs, dobfs, bfs, SSSP) or
#: min-plus operations per second (fw).  CPU figures: 2 cores, from docs/network.md (MS-BFS on
#: Barabási–Albert n = 10⁴: 10⁹ arc-sources in 0.17 s; Dial 2.9 s for the weighted run) and the
#: per-source table in docs/network.md; CUDA figures: H100, docs/network-gpu.md (MS-BFS ≈ 30 GTEPS,
#: level-synchronous BFS ≈ 5 GTEPS, frontier SSSP ≈ 1 GTEPS, Floyd–Warshall ≈ 2·10¹² min-plus/s)
#: and the per-source targets (≤ 50 ms per BFS of 6·10⁷ arcs).  Times scale with cores and graph.
THROUGHPUT = {
    ("cpu", "msbfs"): 6e9, ("cpu", "bfs"): 3e8, ("cpu", "dobfs"): 2e8, ("cpu", "dial"): 3e8,
    ("cpu", "dijkstra"): 1e8, ("cpu", "fw"): 2e9,
    ("cuda", "msbfs"): 6e10, ("cuda", "bfs"): 1e10, ("cuda", "dobfs"): 1.2e9,
    ("cuda", "frontier"): 2e9, ("cuda", "nearfar"): 2e9, ("cuda", "fw"): 2e12,
    ("cuda", "bfs_blocks"): 1e10,
}


@dataclass
class Item:
    key: str            #: scenario key that decides the size (e.g. ``grid.shape``)
    what: str           #: what is allocated
    host: int = 0       #: bytes on the host
    device: int = 0     #: bytes on the GPU


@dataclass
class Plan:
    kind: str
    backend: str
    items: list = field(default_factory=list)
    ranks: int = 1
    work: str | None = None          #: network: traversal work and rough time (one line)
    disk_what: str = ""              #: what ``disk`` counts
    disk: int = 0                    #: bytes the output may grow to (snapshots, stored distances)
    declared: tuple | None = None    #: file header: (key, n, vertices the arcs can use, how)

    @property
    def host(self) -> int:
        return sum(i.host for i in self.items)

    @property
    def device(self) -> int:
        return sum(i.device for i in self.items)

    def largest(self, attr: str) -> Item:
        return max(self.items, key=lambda i: getattr(i, attr))


# ----------------------------------------------------------------------------- limits
def real_gpu() -> bool:
    """True with a real CUDA device (not numba's simulator): the field backend registry's check."""
    from .field.backends import cuda_usable

    return cuda_usable()


def gpu_available() -> int | None:
    """Free bytes on the current GPU, or None without a real GPU (the test hook
    :data:`GPU_LIMIT_ENV` gives a figure even without one)."""
    forced = env_limit(GPU_LIMIT_ENV)
    if forced is not None:
        return forced
    if not real_gpu():
        return None
    try:
        from numba import cuda

        free, _total = cuda.current_context().get_memory_info()
        return int(free)
    except Exception:  # pragma: no cover
        return None


def _threads() -> int:
    import numba

    return int(numba.get_num_threads())


# ----------------------------------------------------------------------------- field runs
def _field_plan(spec, ranks: int) -> Plan:
    shape = [int(x) for x in spec.grid.shape]
    cells = math.prod(shape)
    if ranks > 1:     # a slab of axis 0 plus two ghost layers on each side
        cells = math.ceil(cells / ranks) + 4 * (cells // shape[0])
    isz = np.dtype(spec.solver.precision).itemsize
    backend = spec.solver.backend
    if backend == "auto":
        backend = "cuda" if real_gpu() else "cpu"
    d = len(shape)
    plan = Plan("field", backend, ranks=ranks)
    arrays = 3 * isz * cells
    what = f"3 field arrays of {cells:,} cells ({spec.solver.precision})"
    if spec.solver.integrator == "spectral":  # the spectral integrator's row (field/spectral)
        from types import SimpleNamespace

        from .field.spectral import rules

        arrays = rules.memory_bytes(SimpleNamespace(shape=shape, precision=spec.solver.precision))
        what = f"the spectral solve's arrays of {cells:,} cells ({spec.solver.precision})"
    if backend == "cuda":
        plan.items.append(Item("grid.shape", what + " on the GPU", device=arrays + 40 * 1024))
    else:
        plan.items.append(Item("grid.shape", what, host=arrays))
    plan.items.append(Item("grid.shape", "host copies of the field (state, snapshot)",
                           host=2 * isz * cells))
    plan.items.append(Item("grid.shape",
                           "observables: FFT length-scale temporaries (float64/complex128)",
                           host=(57 + 8 * d) * cells))
    every = int(spec.output.snapshot_every or 0)
    steps = int(spec.time.steps or 0)
    snaps = (steps // every if every else 0) + 2
    if spec.output.snapshot_dt and spec.time.end:
        snaps += int(spec.time.end // spec.output.snapshot_dt)   # and at step 0 and the last step
    full = math.prod(shape) * isz
    plan.disk = snaps * full + 2 * full            # the snapshots, two checkpoints
    plan.disk_what = f"{snaps:,} snapshots and 2 checkpoints of {fmt_bytes(full)}"
    return plan


# ----------------------------------------------------------------------------- network runs
@dataclass
class GraphShape:
    n: int
    arcs: int
    weighted: bool
    integer_weights: bool
    directed: bool
    build_bytes: int          #: working memory while building the graph (beyond the CSR)
    how: str                  #: where the numbers come from


def _generator_shape(gen: dict, directed: bool, weights_setting) -> GraphShape:
    from .network.weights_setting import generator_makes_weights

    kind = gen.get("type")
    P = _threads()
    num = lambda k, d=None: gen.get(k, d)  # noqa: E731
    edges = None
    n = int(num("n", 0) or 0)
    fast = False
    gen_edges = None
    if kind in ("gnm",):
        edges, fast = int(num("m")), True
    elif kind in ("gnp", "erdos_renyi"):
        pairs = n * (n - 1) if directed else n * (n - 1) // 2
        edges, fast = int(round(float(num("p")) * pairs)), True
    elif kind == "random_weighted":
        edges = int(round(n * float(num("avg_degree", 6.0)) / (1 if directed else 2)))
        fast = True
    elif kind == "barabasi_albert":
        m = int(num("m"))
        edges = m + max(0, n - m - 1) * m
    elif kind in ("watts_alpha", "watts_alpha_ring", "watts_alpha_free",
                  "watts_alpha_nosubstrate"):
        edges = n * int(num("k", 10)) // 2
    elif kind in ("watts_strogatz", "ring_lattice"):
        edges = n * int(num("k")) // 2
    elif kind in ("grid", "torus"):
        shape = [int(x) for x in num("shape")]
        n = math.prod(shape)
        edges = len(shape) * n
    elif kind == "rmat":
        scale = int(num("scale"))
        n = 1 << scale
        gen_edges = int(num("edge_factor", 16)) * n
        edges = gen_edges                      # an upper bound (duplicates are merged)
    else:
        edges = 0
    arcs = edges if directed else 2 * edges
    if fast:        # int32 draws (9/8 of the edges, two arrays) + an int64 draw + chunk counters
        build = 16 * (edges + edges // 8) + 4 * P * n
    elif kind == "rmat":        # a byte per arc, kept counts per row, two key arrays per worker
        build = arcs + 8 * n + 32 * P * (arcs // 4096 + 1)
    else:           # edge arrays through CSRGraph.from_edges (int64 copies and a lexsort)
        build = 48 * arcs
    weighted = generator_makes_weights(gen)
    if weights_setting == "none":
        weighted = False
    elif weights_setting not in (None, "file"):
        weighted = True
    if weighted:
        build += 8 * edges                     # the integer weight draws
    return GraphShape(n, arcs, weighted, True, directed, build,
                      f"generator {kind!r} parameters")


def _file_header(path, fmt):
    """(n, entries, symmetric) from a DIMACS/Matrix Market/METIS header, or None."""
    import gzip
    import zlib

    opener = gzip.open if str(path).endswith(".gz") else open
    try:
        with opener(path, "rt", encoding="utf-8", errors="replace") as f:
            symmetric = False
            for k, line in enumerate(f):
                if k > 10000:
                    return None
                t = line.split()
                if fmt == "mtx":
                    if line.startswith("%%"):
                        symmetric = "symmetric" in line.lower()
                        continue
                    if not t or t[0].startswith("%"):
                        continue
                    return int(t[0]), int(t[2]), symmetric
                if fmt == "dimacs":
                    if t and t[0] == "p" and len(t) >= 4:
                        return int(t[2]), int(t[3]), False
                    continue
                if fmt == "metis":
                    if not t or t[0].startswith("%"):
                        continue
                    return int(t[0]), int(t[1]), True
    except (OSError, ValueError, IndexError, EOFError, zlib.error):
        return None   # a damaged or truncated gzip: the reader reports it with its line
    return None


def _sample_lines(path, limit=1 << 20):
    """(data lines per byte of the file, largest vertex id seen) from its first MiB."""
    import zlib

    if str(path).endswith(".gz"):
        with open(path, "rb") as f:
            raw = f.read(limit)
        d = zlib.decompressobj(16 + zlib.MAX_WBITS)
        try:
            text = d.decompress(raw, 8 * limit)
        except zlib.error:
            return 0.0, 0
        used = len(raw) - len(d.unconsumed_tail) - len(d.unused_data)
        ratio = len(text) / max(1, used)
    else:
        with open(path, "rb") as f:
            text = f.read(limit)
        ratio = 1.0
    lines = [ln for ln in text.split(b"\n")[:-1] if ln.strip() and ln.lstrip()[:1] not in
             (b"#", b"%")]
    if not text:
        return 0.0, 0
    ids = 0
    for ln in lines[:2000]:
        t = ln.split()
        try:
            ids = max(ids, int(t[0]), int(t[1]))
        except (ValueError, IndexError):
            pass
    return len(lines) / max(1, len(text)) * ratio, ids


def _file_shape(sc, g) -> GraphShape:
    from .network.readers import guess_format

    path = sc.resolve(g.file.path)
    fmt = g.file.format or guess_format(path)
    size = os.path.getsize(path)
    head = _file_header(path, fmt) if fmt in ("mtx", "dimacs", "metis") else None
    if head is not None:
        n, entries, sym = head
        lines = entries
        how = f"the header of {g.file.path}"
    else:
        per_byte, maxid = _sample_lines(path)
        lines = int(per_byte * size)
        # sparse ids are renumbered 0..n-1 by the reader: at most 2 vertices per line (i37)
        n = max(min(maxid + 1, 2 * max(lines, 1)), lines // 8, 1)
        sym = False
        how = f"the size of {g.file.path} and its first lines"
    if g.directed is None:         # what the file describes (docs/network.md, Readers)
        directed = fmt == "dimacs" or (fmt == "mtx" and head is not None and not sym)
    else:
        directed = bool(g.directed)
    arcs = lines if directed and not sym else 2 * lines
    weighted = g.weights != "none"       # absent: the file's weight column, when it has one
    # the readers keep Python lists of ints/floats (≈ 100 bytes per line), then CSRGraph.from_edges
    build = 100 * lines + 48 * arcs
    return GraphShape(n, arcs, weighted, False, directed, build, how)


def _num_sources(spec, n: int) -> int:
    s = spec.metrics.sources
    if isinstance(s, list):
        return len(s)
    if s == "all":
        return n
    return min(int(s.sample), n)


def _predict_algorithm(gs: GraphShape, requested: str, k: int, backend: str) -> str:
    """The algorithm the engines' ``auto`` rules would pick, from the graph's numbers."""
    from .network import per_source
    from .network.cpu.engine import FW_MAX_N, FW_MIN_DENSITY

    a = {"floyd_warshall": "fw", "frontier_sssp": "frontier", "near_far": "nearfar"}.get(
        requested, requested)
    n = max(gs.n, 1)
    if backend == "cuda":
        a = {"dijkstra": "frontier", "dial": "frontier"}.get(a, a)
    if a != "auto":
        return a
    limit = per_source.GPU_MAX_SOURCES if backend == "cuda" else per_source.CPU_MAX_SOURCES
    if k <= limit and k < n:
        if backend == "cuda":
            return "nearfar" if gs.weighted else "dobfs"
        return ("dial" if gs.integer_weights else "dijkstra") if gs.weighted else "dobfs"
    if not gs.weighted:
        return "msbfs"
    dens = gs.arcs / (n * (n - 1)) if n > 1 else 1.0
    if backend == "cuda":
        from .network.cuda.engine import FW_DENSE_MAX_N, FW_MAX_BYTES, FW_MAX_N as G_MAX_N

        if 4 * k >= n and 8 * n * n <= FW_MAX_BYTES and (
                n <= G_MAX_N or (n <= FW_DENSE_MAX_N and dens >= 0.02)):
            return "fw"
        return "frontier"
    if n <= FW_MAX_N and dens >= FW_MIN_DENSITY:
        return "fw"
    return "dial" if gs.integer_weights else "dijkstra"


def _engine_items(gs: GraphShape, alg: str, k: int, backend: str, batch) -> list:
    n, a = gs.n, gs.arcs
    P = _threads()
    key = "metrics.algorithm"
    if backend == "cuda":
        csr = 8 * (n + 1) + 4 * a + 4 * n + (8 * a if gs.weighted or alg in
                                           ("frontier", "nearfar", "fw") else 0)
        if gs.directed:
            csr += 8 * (n + 1) + 4 * a
        items = [Item("graph", "graph on the GPU (CSR, degrees, weights, transpose)",
                      device=csr)]
        if alg == "msbfs":
            W = max(1, int(batch) // 32) if batch else 32
            dev = 12 * W * n + 32 * n
            what = f"MS-BFS bitsets ({W} words per vertex)"
        elif alg in ("bfs", "frontier", "nearfar"):
            cap = (1 << 26) if alg == "bfs" else (1 << 25)
            B = int(batch) if batch else max(1, min(256, cap // max(1, n)))
            B = max(1, min(B, k))
            dev = B * n * (6 if alg == "bfs" else 10)
            what = f"{alg} buffers for {B} sources"
        elif alg == "dobfs":
            B = max(1, min(8, k))
            dev = 4 * B * n + 10 * n
            what = f"direction-optimising BFS buffers ({B} distance rows)"
        elif alg == "bfs_blocks":       # cuda/brandes_deep.py: 12 bytes per source and vertex
            B = max(1, min(k, (4 << 30) // (12 * max(1, n))))
            dev = 12 * B * n + 8 * n
            what = f"block-per-source BFS buffers for {B} sources"
        else:
            dev = 8 * n * n
            what = "Floyd–Warshall distance matrix"
        # + the reductions and the running column sums kept on the device (cuda/columns.py)
        items.append(Item(key, what + " + reductions", device=dev + 72 * n))
        return items
    if alg == "msbfs":
        W = max(1, int(batch) // 64) if batch else 8
        workers = max(1, min(P, math.ceil(k / (64 * W))))
        per = 24 * W * n + 24 * n + 8 * n
        what = f"MS-BFS bitsets and column sums ({workers} workers × {W} words per vertex)"
    elif alg == "bfs":
        workers = max(1, min(P, math.ceil(k / 64)))
        per = 12 * n + 32 * n
        what = f"BFS buffers and column sums ({workers} workers)"
    elif alg == "dobfs":
        workers = 1
        per = 4 * n + 8 * n + 2 * n + 8 * n + 24 * n
        what = "direction-optimising BFS buffers and column sums"
    elif alg in ("dial", "dijkstra"):
        workers = max(1, min(P, k))
        per = 8 * n + 12 * (a + 1) + 8 * n + 32 * n
        what = f"{alg} queues and column sums ({workers} workers)"
    else:
        workers = 1
        per = 8 * n * n
        what = "Floyd–Warshall distance matrix"
    return [Item(key, what, host=workers * per)]


def _parsed_shape(graph, how) -> GraphShape:
    """The shape of a graph already built (``simengine validate`` parsed the file)."""
    w = graph.weights
    ints = w is not None and bool(np.all(w == np.rint(w)))
    lines = graph.num_arcs if graph.directed else graph.num_arcs // 2
    return GraphShape(graph.n, graph.num_arcs, w is not None, ints, graph.directed,
                      100 * lines + 48 * graph.num_arcs, how)


def _network_plan(sc, ranks: int, graph=None) -> Plan:
    spec = sc.spec
    g = spec.graph
    backend = spec.solver.backend
    if backend == "auto":
        backend = "cuda" if real_gpu() else "cpu"
    if g.generator is not None:
        try:
            gs = _generator_shape(dict(g.generator), bool(g.directed), g.weights)
        except (ValueError, TypeError, KeyError, OverflowError):
            # parameters the generator itself will reject with a proper message
            gs = GraphShape(0, 0, False, True, bool(g.directed), 0, "invalid parameters")
        gkey = "graph.generator"
    else:
        gs = _file_shape(sc, g) if graph is None else _parsed_shape(graph, "the parsed file")
        gkey = "graph.file.path"
    n, a = gs.n, gs.arcs
    plan = Plan("network", backend, ranks=ranks)
    csr = 8 * (n + 1) + 4 * a + (8 * a if gs.weighted else 0)
    if gs.directed:
        csr *= 2
    kind = (", weighted" if gs.weighted else "") + (", with its transpose" if gs.directed else "")
    plan.items.append(Item(gkey, f"graph CSR (n = {n:,}, {a:,} arcs{kind}; from {gs.how})",
                           host=csr))
    plan.items.append(Item(gkey, "building the graph (generator or reader working memory)",
                           host=gs.build_bytes))
    total_k = _num_sources(spec, n)
    k = math.ceil(total_k / ranks)
    plan.items.append(Item("metrics.sources", "statistics accumulator", host=65 * n))
    if graph is None:
        alg = _predict_algorithm(gs, spec.metrics.algorithm, k, backend)
    else:                              # what the run will pick (UserError as the run would)
        from .network.backends import plan as plan_run

        alg = plan_run(graph, spec.metrics.algorithm, backend, num_sources=total_k).algorithm
    if (spec.metrics.store_predecessors and alg == "fw" and gs.weighted
            and not gs.integer_weights):            # network/predecessors.route_plan
        alg = ("msbfs" if not gs.weighted else "frontier" if backend == "cuda"
               else "dial" if gs.integer_weights else "dijkstra")
    plan.items.extend(_engine_items(gs, alg, k, backend, spec.solver.batch))
    if spec.metrics.store_distances:
        isz = 8 if gs.weighted else (1 if n <= 255 else 2 if n <= 65535 else 4)
        rows = min(int(spec.output.checkpoint_every), k)
        plan.items.append(Item("metrics.store_distances",
                               f"stored distances: {rows:,} rows of {n:,} held until a "
                               f"checkpoint write", host=2 * rows * n * isz))
        plan.disk = total_k * n * isz
        plan.disk_what = f"stored distances, {total_k:,} rows of {n:,}"
        if spec.metrics.store_predecessors:
            plan.items.append(Item("metrics.store_predecessors",
                                   f"stored predecessors: {rows:,} int32 rows of {n:,} held "
                                   f"until a checkpoint write", host=2 * rows * n * 4 + 8 * n,
                                   device=(min(k, 256) * n * (8 + isz)
                                           if backend == "cuda" else 0)))
            plan.disk += total_k * n * 4
            plan.disk_what += " and as many int32 predecessor rows"
    if alg == "fw":
        work = float(n) ** 3
        unit = "min-plus operations"
    else:   # a traversal initialises and visits every vertex and scans every arc per source
        work = float(k) * (n + max(a, 1))
        unit = f"vertex and arc visits ({k:,} sources × ({n:,} vertices + {a:,} arcs))"
    tp = THROUGHPUT.get((backend, alg), 1e8)
    plan.work = (f"traversal work {work:.3g} {unit} with {alg} on {backend}: about "
                 f"{fmt_seconds(work / tp)} at an assumed {tp:.2g}/s")
    if g.file is not None and (graph is not None or gs.how.startswith("the header")):
        from .network.declared import touched_vertices

        used = touched_vertices(graph) if graph is not None else min(n, 2 * max(a, 1))
        plan.declared = (gkey, n, used, gs.how if graph is None else f"{g.file.path}")
    return plan


# ----------------------------------------------------------------------------- entry points
def estimate(sc, ranks: int = 1, graph=None) -> Plan:
    """The :class:`Plan` of a validated scenario (one rank's share when ``ranks`` > 1); ``graph``:
    the network's graph when already built (its real sizes and the algorithm ``auto`` picks)."""
    ranks = max(1, int(ranks))
    if sc.kind == "field":
        return _field_plan(sc.spec, ranks)
    return _network_plan(sc, ranks, graph)


def ranks_on_this_host(ranks: int) -> int:
    """MPI ranks sharing this machine: from the launcher's local-size variable, else all."""
    for var in ("OMPI_COMM_WORLD_LOCAL_SIZE", "MPI_LOCALNRANKS", "MV2_COMM_WORLD_LOCAL_SIZE",
                "SLURM_NTASKS_PER_NODE"):
        v = os.environ.get(var, "")
        if v.isdigit() and int(v) > 0:
            return min(int(v), ranks)
    return ranks


def checking_enabled(sc) -> bool:
    res = getattr(sc.spec, "resources", None)
    return bool(getattr(res, "check", True))


def overridden(sc, force: bool = False) -> bool:
    """True when memory refusals are off for this run: ``--force`` or ``resources.check:
    false``."""
    return bool(force) or not checking_enabled(sc)


def memory_refusal(where: str, key: str, need: float, limit: float, limit_src: str,
                   detail: str = "", memory: str = "host memory") -> UserError:
    """The one-line refusal every memory check raises: the key, the estimate, the limit and the
    way to override it."""
    detail = f" ({detail})" if detail else ""
    return UserError(f"{where}: {key}: the run needs about {fmt_bytes(need)} of {memory}"
                     f"{detail}, more than the {fmt_bytes(limit)} {limit_src}; {OVERRIDE_HINT}")


def output_room(plan: Plan, output) -> tuple[int, str] | None:
    """(free bytes, directory) where ``output`` goes (its nearest existing directory), or None."""
    from pathlib import Path

    d = Path(output).resolve().parent if output else Path("outputs").resolve()
    while not d.exists() and d != d.parent:
        d = d.parent
    try:
        st = os.statvfs(d)
    except OSError:
        return None
    return st.f_bavail * st.f_frsize, str(d)


def _written(output) -> int:
    """Bytes the output's parts already hold (a --resume or --overwrite reuses or frees them)."""
    from .io.layout import parts_dir

    total = 0
    if output:
        for dirpath, _, files in os.walk(parts_dir(output)):
            for name in files:
                try:
                    total += os.lstat(os.path.join(dirpath, name)).st_size
                except OSError:
                    pass
    return total


def disk_refusal(sc, plan: Plan, output) -> UserError | None:
    """The one-line refusal when the output would not fit the free space, else None."""
    room = output_room(plan, output)
    if not plan.disk or room is None or plan.disk - _written(output) <= room[0]:
        return None
    key = "metrics.store_distances" if plan.kind == "network" else "output.snapshot_every"
    return UserError(f"{sc.path}: {key}: the output needs up to about {fmt_bytes(plan.disk)} of "
                     f"disk ({plan.disk_what}), more than the {fmt_bytes(room[0])} free in "
                     f"{room[1]}; {OVERRIDE_HINT}")


def check(sc, ranks: int = 1, force: bool = False, output=None, graph=None) -> Plan:
    """Estimate, and refuse (UserError, one line) when the host or GPU memory would not do,
    unless ``force`` or ``resources.check: false``.  This is the only memory refusal of a
    scenario run: the scenario checks (config/checks.py) refuse only sizes that no machine can
    represent, and the graph readers leave the decision to this check (``check_memory=False``)."""
    plan = estimate(sc, ranks, graph)
    if overridden(sc, force):
        return plan
    if plan.declared is not None:      # a header declaring far more vertices than arcs use
        from .network.declared import refusal

        bad = refusal(str(sc.path), *plan.declared, plan.work)
        if bad is not None:
            raise bad
    host, src = host_available()
    here = ranks_on_this_host(plan.ranks)
    need = plan.host * here
    if need > host:
        big = plan.largest("host")
        share = f"{here} ranks on this machine; " if here > 1 else ""
        raise memory_refusal(str(sc.path), big.key, need, host, f"available ({src})",
                             f"{share}{big.what}: {fmt_bytes(big.host)}")
    if plan.backend == "cuda" and plan.device:
        free = gpu_available()
        if free is not None and plan.device > free:
            big = plan.largest("device")
            raise memory_refusal(str(sc.path), big.key, plan.device, free, "free on the GPU",
                                 f"{big.what}: {fmt_bytes(big.device)}", memory="GPU memory")
    refusal = disk_refusal(sc, plan, output)
    if refusal is not None:
        raise refusal
    return plan


def describe(plan: Plan) -> list[str]:
    """Lines for ``simengine validate``: each item, the totals against the limits, the work."""
    out = []
    for it in plan.items:
        where = []
        if it.host:
            where.append(f"host {fmt_bytes(it.host)}")
        if it.device:
            where.append(f"GPU {fmt_bytes(it.device)}")
        if where:
            out.append(f"  {it.key}: {it.what}: {', '.join(where)}")
    host, src = host_available()
    rk = f" per rank × {plan.ranks} ranks" if plan.ranks > 1 else ""
    out.append(f"  memory: host about {fmt_bytes(plan.host)}{rk} of {fmt_bytes(host)} "
               f"available ({src})")
    if plan.backend == "cuda":
        free = gpu_available()
        lim = f"of {fmt_bytes(free)} free" if free is not None else "(no GPU here to compare)"
        out.append(f"  memory: GPU about {fmt_bytes(plan.device)} {lim}")
    if plan.disk:
        room = output_room(plan, None)
        free = f" of {fmt_bytes(room[0])} free in {room[1]}" if room else ""
        out.append(f"  output: up to {fmt_bytes(plan.disk)} on disk before compression "
                   f"({plan.disk_what}){free}")
    if plan.work:
        out.append(f"  {plan.work}")
    return out
