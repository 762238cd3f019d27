"""Checks that need more than the schema: files that must exist, shapes, value scales that the
kernels can represent, sizes no allocation can hold, the stability limit.  Whether a run fits
this machine's memory is decided in one place, :func:`simengine.resources.check`."""
from __future__ import annotations

import math
import os
import stat
import time

import numpy as np

from ..errors import UserError
from ..machine import fmt_seconds
from .brief import brief, clip
from .time_checks import check_time

#: |φ| beyond this is a blow-up for the engine, so no initial or wall value may exceed it
PHI_LIMIT = 1e6
#: headroom kept below the largest float of the solver's precision for intermediate values
HEADROOM = 1e3
def file_problem(path):
    """Why ``path`` cannot be read as a data file (None when it is a regular file).

    Uses ``stat`` only, so a FIFO or a device is never opened (opening a FIFO blocks)."""
    try:
        st = os.stat(path)
    except FileNotFoundError:
        return "does not exist"
    except OSError as exc:
        return f"cannot be read ({exc.strerror or exc})"
    except ValueError:  # an embedded NUL byte
        return "is not a valid file name"
    if stat.S_ISDIR(st.st_mode):
        return "is a directory, not a file"
    if not stat.S_ISREG(st.st_mode):
        kind = "a FIFO" if stat.S_ISFIFO(st.st_mode) else "a device or special file"
        return f"is {kind}, not a regular file"
    return None


def field_problem(spec):
    """(model, grid, boundary) objects of a validated field scenario."""
    from ..field.model import Boundary, CahnHilliard, Grid

    from ..physics.build import is_legacy, model_of

    grid = Grid(tuple(int(n) for n in spec.grid.shape), float(spec.grid.spacing))
    boundary = Boundary(spec.boundary.type, float(spec.boundary.value or 0.0))
    if is_legacy(spec.model):
        model = CahnHilliard(float(spec.model.mobility), float(spec.model.kappa),
                             spec.model.potential.as_coefficients())
        return model, grid, boundary
    law = model_of(spec.model)
    ref = None
    if not law.mobility.constant:
        from ..field.stability import phi_bounds

        init = spec.initial
        rng = (init.mean - init.amplitude, init.mean + init.amplitude)
        lo, hi = phi_bounds(CahnHilliard(1.0, law.kappa, (0.0,) * 4, law), boundary, rng)
        ref = law.mobility_bound(lo, hi)
    return CahnHilliard.of(law, ref), grid, boundary


def _read_initial_file(sc, located):
    import h5py

    init = sc.spec.initial
    path = sc.resolve(init.path)
    where = located.where(("initial", "path"))
    problem = file_problem(path)
    if problem is not None:
        raise UserError(f"{where}: initial.path: file {brief(init.path, 200)} {problem}")
    grid_shape = tuple(sc.spec.grid.shape)
    try:
        with h5py.File(path, "r") as f:
            if init.dataset not in f or not isinstance(f[init.dataset], h5py.Dataset):
                raise UserError(f"{where}: initial.dataset: {brief(str(path))} has no dataset "
                                f"{brief(init.dataset)}")
            ds = f[init.dataset]
            series = ds.ndim == len(grid_shape) + 1 and ds.shape[0] > 0  # snapshots: the last
            shape = tuple(ds.shape[1:] if series else ds.shape)
            if shape != grid_shape:
                raise UserError(f"{where}: initial.dataset: {brief(init.dataset)} has shape "
                                f"{list(shape)}, expected grid.shape {list(grid_shape)}")
            if ds.dtype.kind not in "iuf":
                raise UserError(f"{where}: initial.dataset: {brief(init.dataset)} holds "
                                f"{ds.dtype} values, expected numbers")
            data = ds[-1] if series else ds[()]
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as exc:
        raise UserError(f"{where}: initial.path: {brief(str(path))} is not a readable HDF5 file "
                        f"({brief(str(exc), 120)})") from None
    if not np.all(np.isfinite(data)):
        raise UserError(f"{where}: initial.dataset: {brief(init.dataset)} holds NaN or inf values")
    if data.size and np.abs(data).max() > PHI_LIMIT:
        raise UserError(f"{where}: initial.dataset: {brief(init.dataset)} holds values beyond "
                        f"±{PHI_LIMIT:g}, which the engine treats as a blow-up")
    return data


def initial_time(sc, located) -> float:
    """The simulated time of the stored field a run starts from with ``initial.time_from_file``
    (else 0): the last entry of the ``time`` dataset beside a snapshot series (an output's
    ``fields/phi`` → ``fields/time``), or the dataset's own ``time`` attribute (an output's
    ``checkpoint/phi``, or any file that sets one)."""
    import h5py

    init = sc.spec.initial
    if init.type != "file" or not init.time_from_file:
        return 0.0
    path = sc.resolve(init.path)
    where = located.where(("initial", "time_from_file"))
    try:
        with h5py.File(path, "r") as f:
            ds = f[init.dataset]
            series = ds.ndim == len(sc.spec.grid.shape) + 1
            parent = ds.parent
            if series and "time" in parent and isinstance(parent["time"], h5py.Dataset) \
                    and parent["time"].shape == (ds.shape[0],):
                t = float(parent["time"][-1])
            elif "time" in ds.attrs and np.ndim(ds.attrs["time"]) == 0:
                t = float(ds.attrs["time"])
            else:
                raise UserError(f"{where}: initial.time_from_file: {brief(init.dataset)} in "
                                f"{brief(str(path))} has no stored time (a 'time' dataset beside "
                                f"a snapshot series, or a 'time' attribute)")
    except (OSError, ValueError, TypeError, KeyError, RuntimeError) as exc:
        raise UserError(f"{where}: initial.time_from_file: cannot read the stored time "
                        f"({brief(str(exc), 120)})") from None
    if not math.isfinite(t) or t < 0:
        raise UserError(f"{where}: initial.time_from_file: the stored time {t!r} is not a "
                        f"time >= 0")
    return t


def initial_formula(sc, located):
    """The checked syntax tree of an ``expression`` / ``pfhub_bm1`` initial field."""
    from ..field import expression

    init = sc.spec.initial
    ndim = len(sc.spec.grid.shape)
    if init.type == "pfhub_bm1":
        if ndim != 2:
            raise UserError(f"{located.where(('initial', 'type'))}: initial.type: pfhub_bm1 is "
                            f"PFHub benchmark 1's 2-D initial condition; the grid has {ndim} "
                            f"axes")
        return expression.parse(expression.PFHUB_BM1, 2)
    try:
        return expression.parse(init.formula, ndim)
    except ValueError as exc:
        raise UserError(f"{located.where(('initial', 'formula'))}: initial.formula: "
                        f"{clip(str(exc), 200)}") from None


#: cells of a formula's field evaluated at a time by the range check
_FORMULA_CELLS = 1 << 22


def _formula_range(sc, located):
    from ..field.expression import evaluate_rows

    tree = initial_formula(sc, located)
    shape = tuple(int(n) for n in sc.spec.grid.shape)
    row = _cells(shape[1:]) if len(shape) > 1 else 1
    step = max(1, _FORMULA_CELLS // max(1, row))
    lo, hi = math.inf, -math.inf
    for a in range(0, shape[0], step):
        v = evaluate_rows(tree, shape, sc.spec.grid.spacing, a, min(shape[0], a + step))
        if not np.all(np.isfinite(v)):
            raise UserError(f"{located.where(('initial', 'formula'))}: initial.formula: gives NaN "
                            f"or inf on the grid (e.g. log or sqrt of a negative number, or a "
                            f"division by zero)")
        lo, hi = min(lo, float(v.min())), max(hi, float(v.max()))
    if max(abs(lo), abs(hi)) > PHI_LIMIT:
        raise UserError(f"{located.where(('initial', 'formula'))}: initial.formula: reaches "
                        f"{max(abs(lo), abs(hi)):.4g}, beyond ±{PHI_LIMIT:g}, which the engine "
                        f"treats as a blow-up")
    return lo, hi


def initial_range(sc, located):
    init = sc.spec.initial
    if init.type == "file":
        data = _read_initial_file(sc, located)
        return float(data.min()), float(data.max())
    if init.type in ("expression", "pfhub_bm1"):
        return _formula_range(sc, located)
    return init.mean - init.amplitude, init.mean + init.amplitude


def _cells(shape) -> int:
    n = 1
    for extent in shape:
        n *= int(extent)
    return n


def check_field_size(spec, located):
    """A grid whose three solver fields alone exceed what any allocation can address (2^63
    bytes) is impossible, whatever ``--force`` says.  Whether a grid fits this machine is the
    resource check's decision (simengine/resources.py), which ``--force`` overrides."""
    from ..resources import UNREPRESENTABLE

    cells = _cells(spec.grid.shape)
    need = 3 * np.dtype(spec.solver.precision).itemsize * cells
    if need >= UNREPRESENTABLE:
        raise UserError(f"{located.where(('grid', 'shape'))}: grid.shape: {cells:.4g} cells need "
                        f"about {need:.3g} bytes, more than any allocation can address (2^63 "
                        f"bytes)")


def check_phi_range(spec, located):
    """Initial and wall values inside ±PHI_LIMIT (beyond it the engine reports a blow-up)."""
    init = spec.initial
    if init.type == "noise" and abs(init.mean) + init.amplitude > PHI_LIMIT:
        key = ("initial", "mean") if abs(init.mean) > init.amplitude else ("initial", "amplitude")
        raise UserError(f"{located.where(key)}: {'.'.join(key)}: |mean| + amplitude = "
                        f"{abs(init.mean) + init.amplitude:.4g} exceeds {PHI_LIMIT:g}; φ beyond "
                        f"that is treated as a blow-up")
    if spec.boundary.value is not None and abs(spec.boundary.value) > PHI_LIMIT:
        raise UserError(f"{located.where(('boundary', 'value'))}: boundary.value: "
                        f"{spec.boundary.value:.4g} exceeds ±{PHI_LIMIT:g}; φ beyond that is "
                        f"treated as a blow-up")


def _log10(x) -> float:
    return math.log10(abs(x)) if x else -math.inf


def check_field_scales(spec, located, lo, hi):
    """Every value the kernels form must be a finite number of the run's precision.

    With Λ = 4d/h² (the largest Laplacian eigenvalue) and P = max(1, |φ|) the kernels form
    1/h², κΛP, f'(P) and MΛ(|f'(P)| + κΛP); the free energy uses h^d (in float64). Each must stay
    below the precision's largest float (with HEADROOM). Computed in log10 so nothing overflows
    here; the first quantity out of range names its key."""
    fmax = float(np.finfo(spec.solver.precision).max) / HEADROOM
    ftiny = float(np.finfo(spec.solver.precision).tiny)
    lim, tiny = math.log10(fmax), math.log10(ftiny)
    prec = spec.solver.precision
    h = float(spec.grid.spacing)
    d = len(spec.grid.shape)
    log_ih2 = -2 * math.log10(h)
    log_vol = d * math.log10(h)
    if not tiny < log_ih2 < lim or abs(log_vol) > math.log10(np.finfo(np.float64).max / HEADROOM):
        raise UserError(f"{located.where(('grid', 'spacing'))}: grid.spacing: {h:g} is out of "
                        f"range for {prec}: 1/h² = 1e{log_ih2:.0f} and h^{d} = 1e{log_vol:.0f} "
                        f"must be representable")
    wall = abs(spec.boundary.value or 0.0)
    log_p = math.log10(max(1.0, abs(lo), abs(hi), wall))
    log_lam = math.log10(4 * d) + log_ih2
    m = spec.model
    log_kterm = _log10(m.kappa) + log_lam + log_p
    if log_kterm > lim:
        raise UserError(f"{located.where(('model', 'kappa'))}: model.kappa: κ·4d/h²·|φ| = "
                        f"1e{log_kterm:.0f} overflows {prec}")
    a = m.fprime_coefficients() or (0.0,)     # Flory–Huggins: c in (0, 1), checked per step
    log_fp = max(_log10(c) + k * log_p for k, c in enumerate(a))
    if log_fp > lim:
        key = "potential" if m.free_energy is None else "free_energy"
        raise UserError(f"{located.where(('model', key))}: model.{key}: f'(φ) "
                        f"reaches 1e{log_fp:.0f} at |φ| = 1e{log_p:.0f} and overflows {prec}")
    log_mu = max(log_fp, log_kterm) + math.log10(len(a) + 1)
    log_rate = _log10(m.mobility_scale) + log_lam + log_mu
    if log_rate > lim:
        raise UserError(f"{located.where(('model', 'mobility'))}: model.mobility: M·4d/h²·|μ| = "
                        f"1e{log_rate:.0f} overflows {prec}")


def check_field(sc, located):
    from ..field.stability import max_stable_dt

    spec = sc.spec
    if spec.solver.tile is not None and len(spec.solver.tile) != len(spec.grid.shape):
        raise UserError(f"{located.where(('solver', 'tile'))}: solver.tile: expected "
                        f"{len(spec.grid.shape)} extents (one per grid axis), got {spec.solver.tile}")
    if isinstance(spec.solver.block, list) and len(spec.solver.block) not in (1, 2, 3):
        raise UserError(f"{located.where(('solver', 'block'))}: solver.block: expected 1 to 3 extents")
    check_field_size(spec, located)
    check_phi_range(spec, located)
    lo, hi = initial_range(sc, located)
    check_field_scales(spec, located, lo, hi)
    model, grid, boundary = field_problem(spec)
    dt_max = max_stable_dt(model, grid, boundary, phi_range=(lo, hi))
    if not dt_max > 0:  # NaN or 0: parameters the limit cannot be computed for
        raise UserError(f"{located.where(('model',))}: model: no stable time step exists for "
                        f"these parameters on this grid (limit {dt_max:g})")
    check_time(spec, located, dt_max if math.isfinite(dt_max) else None)
    # the spectral integrator treats the stiff term implicitly: the explicit limit is not its
    if spec.solver.integrator != "spectral" and spec.time.dt > dt_max \
            and not spec.time.allow_unstable:
        raise UserError(
            f"{located.where(('time', 'dt'))}: time.dt: {spec.time.dt:g} is above the explicit "
            f"stability limit {dt_max:.6g} for this grid and model; use dt <= {dt_max:.6g} "
            f"(or set time.allow_unstable: true to override)")


def check_network(sc, located):
    spec = sc.spec
    g = spec.graph
    if g.file is not None:
        path = sc.resolve(g.file.path)
        problem = file_problem(path)
        if problem is not None:
            raise UserError(f"{located.where(('graph', 'file', 'path'))}: graph.file.path: "
                            f"file {brief(g.file.path, 200)} {problem}")
    from ..network.weights_setting import check_setting

    check_setting(g.weights, g.generator, f"{located.where(('graph', 'weights'))}: graph.weights")
    if g.generator is not None:
        from ..network import generators

        try:
            generators.check_spec(dict(g.generator))
        except (ValueError, TypeError) as exc:
            raise UserError(f"{located.where(('graph', 'generator'))}: graph.generator: "
                            f"{clip(str(exc), 200)}") from None
    gen = getattr(sc, "generator", None)
    if gen is not None:
        # impossible whatever --force says; fitting this machine is the resource check's call
        from ..resources import UNREPRESENTABLE

        need = 4 * gen.arcs()
        if need >= UNREPRESENTABLE:
            raise UserError(f"{located.where(('graph', 'generator'))}: graph.generator: about "
                            f"{gen.arcs():.3g} arcs need about {need:.3g} bytes, more than any "
                            f"allocation can address (2^63 bytes)")
    src = spec.metrics.sources
    n = generated_vertices(gen)
    if isinstance(src, list) and n is not None:
        bad = [s for s in src if not isinstance(s, int) or not 0 <= s < n]
        if bad:
            raise UserError(f"{located.where(('metrics', 'sources'))}: metrics.sources: vertex "
                            f"{brief(bad[0])} is not in the generated graph (its vertices are "
                            f"0..{n}-1)")


#: ``simengine validate`` parses at most this many lines of a graph file (and says so)
VALIDATE_MAX_LINES = 5_000_000


def parse_graph_file(sc, log=None, max_lines=VALIDATE_MAX_LINES):
    """Parse a network scenario's graph file and apply ``graph.weights`` as the run will
    (``simengine validate``): a bad line, a header that disagrees with the file, a negative
    weight or a listed source that is not in the graph (or listed twice) fails here.  Returns
    (a one-line summary, the graph — None when it stopped after ``max_lines`` lines of a huge
    file, and says so)."""
    from ..network import weights_setting
    from ..network.readers import FORMAT_NAMES, read_for_scenario
    from ..network.sources import listed_source_indices

    g = sc.spec.graph
    path = sc.resolve(g.file.path)
    t0 = time.perf_counter()
    res = read_for_scenario(path, g, log=log, max_lines=max_lines)
    took = f" (read in {fmt_seconds(time.perf_counter() - t0)})"
    name = FORMAT_NAMES[res.format]
    if not res.complete:
        return (f"{name} file {path}: the first {max_lines} lines are well-formed "
                f"({res.entries} entries); stopped there, the run reads the rest"), None
    graph = weights_setting.apply_setting(res.graph, g.weights, str(g.file.path), log)
    weights_setting.check_weight_values(graph, f"{sc.path}: graph.weights ({g.file.path})")
    src = sc.spec.metrics.sources
    if isinstance(src, list):
        listed_source_indices(graph, src, f"{sc.path}: metrics.sources")
    kind = "arcs" if graph.directed else "edges"
    weighted = ", weighted" if graph.weights is not None else ""
    return (f"{name} file {path}: n = {graph.n}, {graph.num_edges} {kind}"
            f"{', directed' if graph.directed else ''}{weighted}{took}"), graph


def check_graph_file(sc, log=None, max_lines=VALIDATE_MAX_LINES) -> str:
    """The summary line of :func:`parse_graph_file`."""
    return parse_graph_file(sc, log, max_lines)[0]


def generated_vertices(gen):
    """The vertex count of a parsed generator model (None when it has none)."""
    if gen is None:
        return None
    if hasattr(gen, "shape"):
        return _cells(gen.shape)
    if hasattr(gen, "scale"):
        return 1 << gen.scale
    return getattr(gen, "n", None)


def check_scenario(sc, located):
    if sc.kind == "field":
        check_field(sc, located)
    else:
        check_network(sc, located)
