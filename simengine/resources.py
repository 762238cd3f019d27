"""Memory and work estimates of a scenario, checked before anything large is allocated.

:func:`estimate` gives the run's plan (:mod:`simengine.plan`, computed once from the scenario):
one :class:`~simengine.plan.Item` per large allocation (bytes on the host and on the GPU, the
scenario key responsible for it) and, for network runs, the traversal work (sources × arcs) with
a rough time from the row that runs (Brandes' for betweenness).  :func:`check` compares the totals with
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

import os

from .errors import UserError
from .machine import HOST_LIMIT_ENV, env_limit, fmt_bytes, fmt_seconds, host_available  # noqa: F401
from .plan import Item, Plan  # noqa: F401  (the run's plan: what the checks read)

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


# ----------------------------------------------------------------------------- entry points
def estimate(sc, ranks: int = 1, graph=None) -> Plan:
    """The run's :class:`~simengine.plan.Plan` of a validated scenario (its memory items are one
    rank's share when ``ranks`` > 1); ``graph``: the network's graph when already built (its
    real sizes and the algorithm ``auto`` picks)."""
    from .plan import for_scenario

    return for_scenario(sc, max(1, int(ranks)), graph)


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
    key = "metrics.store_distances" if plan.kind == "network" else (
        "output.snapshot_dt" if getattr(sc.spec.output, "snapshot_dt", None) else
        "output.snapshot_every")
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
    _refuse(sc, plan, output)
    return plan


def check_before_graph(sc, ranks: int = 1, force: bool = False, output=None) -> Plan | None:
    """A network run before its graph exists: the memory refusal of the plan predicted from the
    generator's parameters or the file's header (so that a graph too large to build is refused
    before it is built; the same line as :func:`check` without a graph).  Where the predicted
    shape cannot be planned (a choice that hangs on what the graph holds, e.g. whether a file
    has weights), only the graph's own items are checked here, and None is returned: the run's
    one plan is :func:`check` with the built graph, which refuses what does not run."""
    try:
        plan = estimate(sc, ranks)
    except UserError:
        from .plan import network_problem
        from .plan.network import graph_plan

        try:
            checked = graph_plan(network_problem(sc, max(1, int(ranks))))
        except UserError:        # e.g. no GPU for backend cuda: the run's plan says so
            return None
        plan = None
    else:
        checked = plan
    if not overridden(sc, force):
        _refuse(sc, checked, output)
    return plan


def _refuse(sc, plan: Plan, output) -> None:
    """The declared-count, host, GPU and disk refusals of ``plan`` (UserError, one line)."""
    if plan.declared is not None:      # a header declaring far more vertices than arcs use
        from .network.declared import refusal
        from .plan.network import work_line

        bad = refusal(str(sc.path), *plan.declared, work_line(plan))
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
    if plan.kind == "network":
        from .plan.network import work_line

        out.append(f"  {work_line(plan)}")
    else:
        from .field.cost import time_line
        from .parallel.threads import _cores, decide_threads

        threads = decide_threads()[0] or _cores()[0]
        out.append(f"  {time_line(plan.problem, threads)}")
    return out
