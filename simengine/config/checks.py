"""Checks that need more than the schema: files that must exist, shapes, the stability limit."""
from __future__ import annotations

import numpy as np

from ..errors import UserError


def field_problem(spec):
    """(model, grid, boundary) objects of a validated field scenario."""
    from ..field.model import Boundary, CahnHilliard, Grid

    model = CahnHilliard(float(spec.model.mobility), float(spec.model.kappa),
                         spec.model.potential.as_coefficients())
    grid = Grid(tuple(int(n) for n in spec.grid.shape), float(spec.grid.spacing))
    boundary = Boundary(spec.boundary.type, float(spec.boundary.value or 0.0))
    return model, grid, boundary


def _read_initial_file(sc, located):
    import h5py

    init = sc.spec.initial
    path = sc.resolve(init.path)
    where = located.where(("initial", "path"))
    if not path.exists():
        raise UserError(f"{where}: initial.path: file {init.path!r} does not exist")
    try:
        with h5py.File(path, "r") as f:
            if init.dataset not in f or not isinstance(f[init.dataset], h5py.Dataset):
                raise UserError(f"{where}: initial.dataset: {path} has no dataset {init.dataset!r}")
            data = f[init.dataset][()]
    except OSError as exc:
        raise UserError(f"{where}: initial.path: {path} is not a readable HDF5 file ({exc})") from None
    if data.ndim == len(sc.spec.grid.shape) + 1:   # a snapshot series: take the last one
        data = data[-1]
    if tuple(data.shape) != tuple(sc.spec.grid.shape):
        raise UserError(f"{where}: initial.dataset: {init.dataset!r} has shape {list(data.shape)}, "
                        f"expected grid.shape {list(sc.spec.grid.shape)}")
    if not np.all(np.isfinite(data)):
        raise UserError(f"{where}: initial.dataset: {init.dataset!r} holds NaN or inf values")
    return data


def initial_range(sc, located):
    init = sc.spec.initial
    if init.type == "file":
        data = _read_initial_file(sc, located)
        return float(data.min()), float(data.max())
    return init.mean - init.amplitude, init.mean + init.amplitude


def check_field(sc, located):
    from ..field.stability import max_stable_dt

    spec = sc.spec
    if spec.solver.tile is not None and len(spec.solver.tile) != len(spec.grid.shape):
        raise UserError(f"{located.where(('solver', 'tile'))}: solver.tile: expected "
                        f"{len(spec.grid.shape)} extents (one per grid axis), got {spec.solver.tile}")
    if isinstance(spec.solver.block, list) and len(spec.solver.block) not in (1, 2, 3):
        raise UserError(f"{located.where(('solver', 'block'))}: solver.block: expected 1 to 3 extents")
    lo, hi = initial_range(sc, located)
    model, grid, boundary = field_problem(spec)
    dt_max = max_stable_dt(model, grid, boundary, phi_range=(lo, hi))
    if spec.time.dt > dt_max and not spec.time.allow_unstable:
        raise UserError(
            f"{located.where(('time', 'dt'))}: time.dt: {spec.time.dt:g} is above the explicit "
            f"stability limit {dt_max:.6g} for this grid and model; use dt <= {dt_max:.6g} "
            f"(or set time.allow_unstable: true to override)")


def check_network(sc, located):
    spec = sc.spec
    g = spec.graph
    if g.file is not None:
        path = sc.resolve(g.file.path)
        if not path.exists():
            raise UserError(f"{located.where(('graph', 'file', 'path'))}: graph.file.path: "
                            f"file {g.file.path!r} does not exist")
    from ..network.weights_setting import check_setting

    check_setting(g.weights, g.generator, f"{located.where(('graph', 'weights'))}: graph.weights")
    if g.generator is not None:
        from ..network import generators

        check = getattr(generators, "check_spec", None)
        if check is not None:
            try:
                check(dict(g.generator))
            except (ValueError, TypeError) as exc:
                raise UserError(f"{located.where(('graph', 'generator'))}: graph.generator: {exc}") from None
    src = spec.metrics.sources
    if isinstance(src, list) and g.generator is not None and "n" in g.generator:
        bad = [s for s in src if s >= int(g.generator["n"])]
        if bad:
            raise UserError(f"{located.where(('metrics', 'sources'))}: metrics.sources: vertex "
                            f"{bad[0]} is out of range for n = {g.generator['n']}")


def check_scenario(sc, located):
    if sc.kind == "field":
        check_field(sc, located)
    else:
        check_network(sc, located)
