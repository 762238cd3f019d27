"""Block-shape auto-tuning (cached on disk) and occupancy reports for the CUDA field kernels.

``block: auto`` times candidate block shapes once per (GPU model, kernel, layout, ndim, grid
shape, precision, boundary) and stores the winner in ``$SIMENGINE_CACHE_DIR/cuda_blocks.json``
(default ``~/.cache/simengine/``). The occupancy report (``occupancy_report``) lives in
:mod:`simengine.field.cuda.occupancy`.
"""
from __future__ import annotations

import json
import math
import os
import tempfile
import time
from pathlib import Path

import numpy as np
from numba import cuda

from . import cuda as ck
from .cuda.occupancy import occupancy_report  # noqa: F401  (re-exported)

CACHE_FILE = "cuda_blocks.json"

#: candidate block shapes (x = last axis first) per (layout family, ndim)
CANDIDATES = {
    ("direct", 1): [(128,), (256,), (512,)],
    ("direct", 2): [(32, 4), (32, 8), (32, 16), (64, 4), (64, 8), (128, 2), (128, 4)],
    ("direct", 3): [(32, 4, 2), (32, 4, 4), (32, 8, 2), (64, 2, 2), (64, 4, 2), (32, 8, 4)],
    ("modern", 1): [(128,), (256,), (512,)],
    ("modern", 2): [(32, 4), (32, 8), (32, 16), (64, 4), (64, 8), (128, 4)],
    ("modern", 3): [(32, 4, 2), (32, 4, 4), (32, 8, 4), (64, 4, 2), (32, 8, 2)],
    ("seed", 1): [(128,), (256,), (512,)],
    ("seed", 2): [(16, 16), (32, 8), (32, 16), (36, 12), (64, 8)],
    ("seed", 3): [(16, 8, 8), (32, 8, 8), (36, 8, 6), (16, 16, 4)],
    # marching direct kernels: the last entry spans march chunks
    ("march", 2): [(64, 1), (128, 1), (256, 1), (32, 4), (64, 2)],
    ("march", 3): [(32, 4, 1), (32, 8, 1), (64, 4, 1), (32, 16, 1), (64, 8, 1)],
}


def cache_dir() -> Path:
    d = os.environ.get("SIMENGINE_CACHE_DIR")
    return Path(d) if d else Path.home() / ".cache" / "simengine"


def gpu_name() -> str:
    if ck.SIMULATOR:
        return "simulator"
    name = cuda.get_current_device().name
    return name.decode() if isinstance(name, bytes) else str(name)


def _load_cache(path: Path) -> dict:
    try:
        return json.loads(path.read_text())
    except (OSError, ValueError):
        return {}


def _store(path: Path, key: str, value) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    data = _load_cache(path)
    data[key] = value
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".cuda_blocks.", suffix=".json")
    with os.fdopen(fd, "w") as f:
        json.dump(data, f, indent=1, sort_keys=True)
    os.replace(tmp, path)  # atomic


def tune_key(kernel, layout, shape, dtype, boundary, cpt=None, march=None, vec=None) -> str:
    fam = layout if kernel in ("shared", "combined") else "direct"
    shp = "x".join(str(int(n)) for n in shape)
    key = f"{gpu_name()}|{kernel}|{fam}|{len(shape)}d|{shp}|{np.dtype(dtype).name}|{boundary.kind}"
    m = _march(kernel, len(shape), cpt, march)
    sm = (ck.DEFAULT_SMARCH.get((np.dtype(dtype).name, len(shape)), 0)
          if m and march is None and fam == "direct" else 0)
    if sm:
        key += f"|smarch{sm}"  # the shared-memory marching kernel (the default plan)
    elif m:
        key += f"|march{m}"
    elif cpt and fam == "direct":
        key += f"|c{int(cpt)}"
    if vec is not None and not m and fam == "direct" and len(shape) == 2:
        key += f"|v{int(vec)}"
    return key


def time_steps(step, steps=10, reps=3) -> float:
    """Median seconds per call of ``step()`` (one time step, enqueued), ``steps`` calls between
    two CUDA events, ``reps`` times, after 2 calls of warm-up."""
    for _ in range(2):
        step()
    cuda.synchronize()
    times = []
    for _ in range(reps):
        start, stop = cuda.event(), cuda.event()
        start.record()
        for _ in range(steps):
            step()
        stop.record()
        stop.synchronize()
        times.append(cuda.event_elapsed_time(start, stop) / 1e3 / steps)
    return float(np.median(times))


def time_plan(plan, bufs, scal, steps=10, reps=3) -> float:
    """Median seconds per RK2 step of ``plan`` on buffers (φ, φ*, φⁿ⁺¹), after a warm-up."""
    b = list(bufs)

    def step():
        plan(b[0], b[0], b[1], 0.0, scal)  # coef 0: the field does not drift while timing
        plan(b[1], b[0], b[2], 0.0, scal)
        b[0], b[2] = b[2], b[0]

    return time_steps(step, steps, reps)


def _march(kernel, nd, cpt, march):
    """The march length a direct-kernel plan resolves to (see ``StageLaunch``)."""
    if kernel in ("shared", "combined") or nd == 1:
        return 0
    if march is None:
        return 0 if cpt else ck.DEFAULT_MARCH[nd]
    return int(march)


def autotune_block(kernel, layout, shape, dtype, model, grid, boundary, *, candidates=None,
                   refresh=False, steps=10, cpt=None, march=None, vec=None):
    """Best block shape for this case; timed once, then read from the JSON cache."""
    nd = len(shape)
    fam = layout if kernel in ("shared", "combined") else "direct"
    if ck.SIMULATOR:  # timing the simulator means nothing: take the default
        return ck.DEFAULT_BLOCK[(fam, nd)]
    m = _march(kernel, nd, cpt, march)
    cands = candidates or CANDIDATES[("march", nd) if m else (fam, nd)]
    path = cache_dir() / CACHE_FILE
    key = tune_key(kernel, layout, shape, dtype, boundary, cpt=cpt, march=march, vec=vec)
    if not refresh:
        hit = _load_cache(path).get(key)
        if hit:
            return tuple(hit["block"])
    s3 = ck.view3(shape)
    rng = np.random.default_rng(0)
    host = rng.uniform(-1, 1, int(np.prod(s3))).astype(dtype)
    bufs = [cuda.to_device(host) for _ in range(3)]
    scal = ck.stage_scalars(model, grid, boundary, dtype)
    results = {}
    for blk in cands:
        try:
            plan = ck.StageLaunch(kernel, nd, s3, boundary.code, dtype, layout=layout, block=blk,
                                cpt=cpt, march=m, vec=vec)
            results[blk] = time_plan(plan, bufs, scal, steps=steps)
        except Exception as exc:  # a shape the device rejects (too many threads, smem)
            results[blk] = math.inf
            print(f"autotune: block {blk} failed: {exc}")
    best = min(results, key=results.get)
    _store(path, key, {"block": list(best), "ms_per_step": results[best] * 1e3,
                       "timings_ms": {"x".join(map(str, b)): (t * 1e3 if math.isfinite(t) else None)
                                      for b, t in results.items()},
                       "date": time.strftime("%Y-%m-%d")})
    return best
