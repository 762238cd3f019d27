"""Field strong scaling over MPI ranks: 1 process vs N ranks (one slab of axis 0 each).

Driver (prints the table): it launches itself once per rank count (every case and precision in
that one launch), in the same run:
    CPU (target: 2 ranks × 1 thread ≥ 1.7× one process × 1 thread on 2D 1024² fp64):
        python benchmarks/bench_field_mpi.py --backend cpu --ranks 1,2 --cases 2d1024
    GPU host with 2 GPUs (one GPU per rank; Open MPI):
        python benchmarks/bench_field_mpi.py --backend cuda --ranks 1,2 \\
            --launcher "mpirun --allow-run-as-root" --cases 2d16384,3d512,3d1024 \\
            --precisions float64,float32 --overlap 1,0 --cli-ranks 2
The one-process run is the plain solver (no halo); N ranks run slab solvers of the same plan
exchanging its halo (2 rows per stage for the unfused stages, 4 rows once per step for a fused
step; ``--fused false`` runs the unfused stages where ``auto`` runs a fused form): device to device from the neighbour's buffer where the GPUs share a node ("peer",
CUDA IPC), else through host buffers ("host"; ``SIMENGINE_HALO=host`` forces it). ``--overlap``
1 (the default of the engine) runs the boundary-first order (a stage's end rows first, their
exchange while the interior rows run, integrator.advance_boundary_first), 0 the plain order
(exchange, then the whole stage; ``SIMENGINE_HALO_OVERLAP=0``); "halo %" is the share of the
step the host spent in the exchange (waiting for the GPU, the barrier, the copies) — with the
overlap the GPU computes meanwhile (a fused step on peer slabs overlaps its exchange with its
interior, ``SIMENGINE_FUSED_OVERLAP``). ``--cli-ranks``: also ``simengine run`` under the launcher
with those rank counts (default settings, benchmarks/field_cli_inrun.py), its in-run ms/step in
the row of the same case, precision and ranks. GPU runs measure the honest roofline (best device
copy, benchmarks/roofline.py) first. Bandwidth per GPU counts the words a step must move per
cell: 2 for a fused RK2 step (φⁿ read, φⁿ⁺¹ written), 5 for the unfused stages.

A rank that fails says so: its rank, case and exception line (stdout and stderr), the launch's
exit status or signal, and the cases that gave no result.
"""
from __future__ import annotations

import argparse
import json
import os
import shlex
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from field_cli_inrun import cli_inrun, failure_text  # noqa: E402

CASES = {
    "2d1024": ((1024, 1024), 400, "texture"),
    "2d4096": ((4096, 4096), 200, "texture"),
    "2d16384": ((16384, 16384), 100, "texture"),
    "3d256": ((256, 256, 256), 200, "texture"),
    "3d512": ((512, 512, 512), 100, "texture"),
    "3d1024": ((1024, 1024, 1024), 20, "texture"),
}
#: CLI runs: (steps, observables every) per case (the in-run slope from the row at ``every``)
CLI_STEPS = {"3d512": (1500, 500), "3d1024": (300, 100), "3d256": (4000, 1000),
             "2d16384": (1500, 500), "2d4096": (6000, 2000), "2d1024": (6000, 2000)}


def initial_rows(shape, start, stop, dtype):
    """Rows ``start:stop`` of a cheap deterministic initial field: 16 rows of seeded noise
    repeated along axis 0 (the same whole field for any split; the timing does not depend on
    the values, and drawing 2^30 random numbers per case would dominate the run)."""
    block = np.random.default_rng(1).uniform(-0.05, 0.05, (16,) + tuple(shape[1:]))
    return np.ascontiguousarray(np.take(block, np.arange(start, stop) % 16, axis=0),
                                dtype=dtype)


def run_case(comm, a, case, precision):
    """Time one case on this launch's ranks; rank 0 prints its RESULT line."""
    from simengine.field.backends import make_solver
    from simengine.field.distributed import make_rank_solver
    from simengine.field.model import Boundary, CahnHilliard, Grid

    shape, steps, kernel = CASES[case]
    steps = a.steps or steps
    model = CahnHilliard(mobility=1.0, kappa=1.0)
    grid = Grid(shape, 1.0)
    boundary = Boundary("periodic", 0.0)
    kw = dict(kernel=kernel, precision=precision, integrator="rk2", dt=0.01,
              fused={"auto": None, "true": True, "false": False}[a.fused])
    if comm.size > 1:
        solver, slab, _ = make_rank_solver(comm, model, grid, boundary, backend=a.backend, **kw)
        start, stop = slab.start, slab.stop
        ex = solver.exchange
    else:
        solver = make_solver(model, grid, boundary, backend=a.backend, **kw)
        start, stop, ex = 0, shape[0], None
    solver.load(initial_rows(shape, start, stop, np.dtype(precision)))

    def sync():
        if a.backend == "cuda":
            from numba import cuda
            cuda.synchronize()
        comm.barrier()

    solver.advance(3)  # compile, tune, first touch
    sync()
    if ex is not None:
        ex.seconds = 0.0
        if hasattr(ex, "parts"):
            ex.parts[:] = 0
    t = time.perf_counter()
    solver.advance(steps)
    sync()
    el = time.perf_counter() - t
    halo = ex.seconds if ex is not None else 0.0
    parts = (ex.parts / max(1, steps)).tolist() if hasattr(ex, "parts") else None
    rows = None
    if int(np.prod(shape)) <= a.digest_cells:  # per-row digests of the field after the steps
        import hashlib

        rows = [hashlib.sha1(r.tobytes()).hexdigest()[:16] for r in solver.state()]
    res = comm.gather({"el": el, "halo": halo, "rows": stop - start, "parts": parts,
                       "digests": rows}, root=0)
    if comm.rank == 0:
        cells_local = max(r["rows"] for r in res) * int(np.prod(shape[1:]))
        el = max(r["el"] for r in res)
        words = 2 if getattr(solver, "fused_plan", None) is not None else 5
        bw = words * cells_local * np.dtype(precision).itemsize * steps / el
        kind = {"PeerHaloExchange": "peer", "MPIHaloExchange": "host"}.get(type(ex).__name__,
                                                                         "–")
        if getattr(solver, "fused_plan", None) is not None:  # fused: the pipelined step
            kind += " + overlap" if "overlapped" in getattr(solver, "plan_summary", "") else ""
        elif getattr(ex, "boundary_first", False):
            kind += " + overlap"
        elif getattr(ex, "stream_note", None):
            kind += f" (no overlap: {ex.stream_note})"
        print("RESULT " + json.dumps({"case": case, "precision": precision,
                                      "ms": 1e3 * el / steps, "bw": bw,
                                      "halo": max(r["halo"] for r in res) / el,
                                      "exchange": kind, "parts": [r["parts"] for r in res],
                                      "digest": _digest([r["digests"] for r in res]),
                                      "name": solver.name,
                                      "plan": getattr(solver, "plan_summary", "")}), flush=True)
    # free this case before the next (the neighbours' IPC mappings first, on every rank)
    comm.barrier()
    if hasattr(ex, "close"):
        ex.close()
    del solver, ex
    import gc

    gc.collect()
    comm.barrier()


def _digest(per_rank):
    """One digest of the whole field from the ranks' per-row digests (the same for any split of
    the rows: equal digests = bit-identical fields), None where not computed."""
    if any(d is None for d in per_rank):
        return None
    import hashlib

    return hashlib.sha1("".join(x for d in per_rank for x in d).encode()).hexdigest()[:16]


def worker(a):
    import faulthandler
    import traceback

    faulthandler.enable()  # a fatal signal prints the Python stack of every thread on stderr
    comm, where = None, "start-up"
    try:
        from simengine.parallel import bind_gpu, world

        comm = world()
        if a.backend == "cuda":
            bind_gpu(comm)
        for case in a.cases.split(","):
            for precision in a.precisions.split(","):
                where = f"{case} {precision}"
                if comm.rank == 0:
                    print(f"STATUS {where}", flush=True)
                run_case(comm, a, case, precision)
    except BaseException as exc:  # say which rank failed where, then end every rank
        rank = comm.rank if comm is not None else next(
            (os.environ[v] for v in ("OMPI_COMM_WORLD_RANK", "PMI_RANK") if v in os.environ), 0)
        size = comm.size if comm is not None else "?"
        line = f"FAILED rank {rank} of {size} in {where}: {type(exc).__name__}: {exc}"
        if getattr(a, "failure_dir", ""):
            try:  # a file outlives an abort that ends the launcher's output forwarding
                with open(os.path.join(a.failure_dir, f"rank-{rank}.txt"), "w") as f:
                    f.write(line + "\n")
                    f.flush()
                    os.fsync(f.fileno())
            except OSError:
                pass
        print(line, flush=True)
        print(line, file=sys.stderr, flush=True)
        traceback.print_exc()
        sys.stderr.flush()
        if comm is not None and comm.size > 1:
            comm.abort(1)
        sys.exit(1)


def launch(a, n, env, overlap):
    """One launch of the worker on ``n`` ranks: (results by (case, precision), failure text)."""
    with tempfile.TemporaryDirectory(prefix="bench-field-mpi-") as failure_dir:
        return _launch(a, n, env, overlap, failure_dir)


def _launch(a, n, env, overlap, failure_dir):
    cmd = [sys.executable, os.path.abspath(__file__), "--worker", "--failure-dir", failure_dir,
           "--cases", a.cases,
           "--precisions", a.precisions, "--backend", a.backend, "--steps", str(a.steps),
           "--digest-cells", str(getattr(a, "digest_cells", 0)),
           "--fused", getattr(a, "fused", "auto")]
    if n > 1:
        cmd = shlex.split(a.launcher) + ["-n", str(n)] + cmd
    env = dict(env, SIMENGINE_HALO_OVERLAP=str(overlap))
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=a.timeout)
        rc, out, err = r.returncode, r.stdout, r.stderr
    except subprocess.TimeoutExpired as exc:
        rc, out, err = None, exc.stdout or "", exc.stderr or ""
        out, err = (x.decode() if isinstance(x, bytes) else x for x in (out, err))
    results = {}
    for ln in out.splitlines():
        if ln.startswith("RESULT "):
            res = json.loads(ln[7:])
            results[(res["case"], res["precision"])] = res
    failure = None
    if rc != 0 or len(results) < len(a.cases.split(",")) * len(a.precisions.split(",")):
        said = [Path(failure_dir, f).read_text().strip()
                for f in sorted(os.listdir(failure_dir))]
        said += [ln for ln in (out + "\n" + err).splitlines() if ln.startswith("FAILED rank")]
        status = [ln[7:] for ln in out.splitlines() if ln.startswith("STATUS ")]
        failure = (f"{n} rank(s): " + (said[0] if said else failure_text(rc, out, err))
                   + (f" (last case started: {status[-1]})" if status else "")
                   + (f"; exit {rc} after all results" if rc and not said and results
                      and len(results) == len(a.cases.split(",")) * len(
                          a.precisions.split(",")) else ""))
    return results, failure


def digest_text(res, base):
    d = res.get("digest")
    if not d:
        return "–"
    same = base is not None and base.get("digest") == d
    return d + (" (= 1st row)" if same and base is not res else
                "" if base is res or not base or not base.get("digest") else " (DIFFERS)")


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--cases", default="2d1024")
    ap.add_argument("--ranks", default="1,2")
    ap.add_argument("--backend", default="cpu", choices=["cpu", "cuda"])
    ap.add_argument("--precision", "--precisions", dest="precisions", default="float64")
    ap.add_argument("--launcher", default="mpiexec")
    ap.add_argument("--steps", type=int, default=0)
    ap.add_argument("--fused", default="auto", choices=["auto", "true", "false"])
    ap.add_argument("--threads", type=int, default=None)
    ap.add_argument("--overlap", default="1",
                    help="runs of N > 1 ranks in the boundary-first order (1) and/or the plain "
                         "order (0), e.g. 1,0")
    ap.add_argument("--cli-ranks", default="",
                    help="also `simengine run` with these rank counts (e.g. 2 or 1,2)")
    ap.add_argument("--cli-cases", default=None, help="the cases of --cli-ranks (default all)")
    ap.add_argument("--timeout", type=float, default=900.0, help="seconds per launch")
    ap.add_argument("--digest-cells", type=int, default=1 << 27,
                    help="grids of at most this many cells: a digest of the field after the "
                         "timed steps (equal across rank counts = bit-identical)")
    ap.add_argument("--worker", action="store_true")
    ap.add_argument("--failure-dir", default="", help=argparse.SUPPRESS)
    a = ap.parse_args(argv)
    if a.worker:
        return worker(a)
    threads = a.threads if a.threads is not None else (1 if a.backend == "cpu" else 0)
    env = dict(os.environ, SIMENGINE_HALO_OVERLAP="1")
    if threads:
        env["NUMBA_NUM_THREADS"] = str(threads)
    dev = "cpu"
    roof = None
    if a.backend == "cuda":
        from numba import cuda
        dev = (lambda n: n.decode() if isinstance(n, bytes) else n)(cuda.get_current_device().name)
        from roofline import copy_roofline

        roof = copy_roofline()[0]
        cuda.close()
    print(f"# bench_field_mpi {time.strftime('%Y-%m-%d')} backend={a.backend} device={dev} "
          f"launcher='{a.launcher}' threads/rank={threads or 'all'}"
          + (f" honest roofline {roof / 1e9:.0f} GB/s" if roof else ""), flush=True)
    ranks = [int(x) for x in a.ranks.split(",")]
    overlaps = [int(x) for x in a.overlap.split(",")]
    runs = {}  # (ranks, overlap) -> results
    for n in ranks:
        for ov in (overlaps if n > 1 else [overlaps[0]]):
            results, failure = launch(a, n, env, ov)
            runs[(n, ov)] = results
            if failure:
                print(f"# FAILED: {failure}", flush=True)
    cli = {}
    for n in [int(x) for x in a.cli_ranks.split(",") if x]:
        for case in (a.cli_cases or a.cases).split(","):
            for prec in a.precisions.split(","):
                steps, every = CLI_STEPS[case]
                got = cli_inrun(CASES[case][0], prec, steps, every, launcher=a.launcher,
                                ranks=n, env=env, timeout=a.timeout, backend=a.backend,
                                first=2 * every if steps >= 3 * every else None)
                cli[(case, prec, n)] = got
                if "error" in got:
                    print(f"# CLI {case} {prec} on {n} rank(s) FAILED: {got['error']}",
                          flush=True)
                else:
                    print(f"# CLI {case} {prec} on {n} rank(s): in-run {got['ms']:.3f} ms/step, "
                          f"stepping alone {got.get('stepping_ms')} ms/step; {got['plan']}; "
                          f"first progress lines: {' / '.join(got['progress'])}", flush=True)
    print("| case | precision | ranks | solver | ms/step | speed-up | efficiency | GB/s per rank "
          "| % of roofline | exchange | halo % | CLI in-run ms/step (× loop) | field digest |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for case in a.cases.split(","):
        for prec in a.precisions.split(","):
            base = runs.get((ranks[0], overlaps[0]), {}).get((case, prec))
            for (n, ov), results in runs.items():
                res = results.get((case, prec))
                if res is None:
                    print(f"| {case} | {prec} | {n} | failed (see above) |||||||||")
                    continue
                sp = base["ms"] / res["ms"] if base else float("nan")
                frac = f"{100 * res['bw'] / roof:.0f}%" if roof else "–"
                c = cli.get((case, prec, n)) if ov == overlaps[0] else None
                ctext = (f"{c['ms']:.3f} ({c['ms'] / res['ms']:.2f}×)" if c and "ms" in c
                         else "failed" if c else "–")
                if res.get("plan"):
                    print(f"# {case} {prec} on {n}: plan {res['plan']}", flush=True)
                if res.get("parts") and res["parts"][0]:
                    print("# per step and rank, ms waiting for the GPU / in the barrier / "
                          "copying: " + "; ".join(" / ".join(f"{1e3 * x:.3f}" for x in p)
                                                  for p in res["parts"]), flush=True)
                print(f"| {case} {CASES[case][0]} | {prec} | {n} | {res['name']} | "
                      f"{res['ms']:.3f} | {sp:.2f}× | {100 * sp * ranks[0] / n:.0f}% | "
                      f"{res['bw'] / 1e9:.0f} | {frac} | {res.get('exchange', '–')} | "
                      f"{100 * res['halo']:.1f} | {ctext} | {digest_text(res, base)} |",
                      flush=True)


if __name__ == "__main__":
    main()
