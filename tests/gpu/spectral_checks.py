"""GPU checks of the spectral integrator (CuPy on a real GPU; run by devtools/device/i39.sh:
``python tests/gpu/spectral_checks.py``). Not collected by pytest (no GPU in CI): the same
arithmetic runs on the host in tests/test_spectral.py. Each check prints PASS/FAIL; exit 1 on
any failure.

1. GPU = CPU: 20 fixed steps (and an adaptive run) of every boundary × fp32/fp64 × symbol,
   max |Δφ| ≤ 1e-10 (fp64) / 1e-4 (fp32) relative to max |φ|.
2. Order on the GPU: dt and dt/2 against host RK2 at a tiny dt, ratio ≥ 3 (periodic, mirror).
3. Reductions on the device = host observables (1e-12).
4. Through `simengine run` on the GPU: 256² adaptive to t = 500 (device S(k)) agrees with the
   CPU run's F and L (1e-3, 2e-3 relative: an accept/reject decision may flip on rounding).
"""
from __future__ import annotations

import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np

def _env():
    """This tree first on the path, the rest kept (the device machine's wheels, e.g. pydantic,
    come from PYTHONPATH)."""
    rest = os.environ.get("PYTHONPATH")
    return {**os.environ, "PYTHONPATH": str(ROOT) + (os.pathsep + rest if rest else "")}


ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from simengine.field import reference as ref  # noqa: E402
from simengine.field.adaptive import Controller, advance_to, energy_tolerance  # noqa: E402
from simengine.field.model import Boundary, CahnHilliard, Grid  # noqa: E402
from simengine.field.observables import reductions  # noqa: E402
from simengine.field.spectral.solver import SpectralFieldSolver  # noqa: E402

FAILED = []


def check(name, ok, detail=""):
    print(f"{'PASS' if ok else 'FAIL'} {name} {detail}", flush=True)
    if not ok:
        FAILED.append(name)


def boundary(kind):
    return Boundary(kind, 0.3 if kind == "fixed" else 0.0)


def gpu_equals_cpu():
    m = CahnHilliard()
    for shape in ((64, 48), (20, 18, 16)):
        g = Grid(shape)
        phi0 = 0.3 * np.random.default_rng(1).standard_normal(shape)
        for kind in ("periodic", "mirror", "fixed"):
            for prec in ("float64", "float32"):
                for symbol in ("fd", "exact"):
                    out = {}
                    for backend in ("cpu", "cuda"):
                        s = SpectralFieldSolver(m, g, boundary(kind), dt=0.05, precision=prec,
                                                symbol=symbol, backend=backend)
                        s.load(phi0)
                        s.advance(20)
                        out[backend] = s.state().astype(np.float64)
                    d = np.max(np.abs(out["cpu"] - out["cuda"])) / np.max(np.abs(out["cpu"]))
                    lim = 1e-10 if prec == "float64" else 1e-4
                    check(f"gpu=cpu {shape} {kind} {prec} {symbol}", d <= lim, f"rel {d:.2e}")


def adaptive_gpu_equals_cpu():
    m, g = CahnHilliard(), Grid((96, 96))
    phi0 = 0.05 * (2 * np.random.default_rng(2).random(g.shape) - 1)
    res = {}
    for backend in ("cpu", "cuda"):
        s = SpectralFieldSolver(m, g, Boundary("mirror"), dt=0.01, backend=backend)
        s.load(phi0)
        c = Controller(0.01, 1e-3)
        F = [s.energy()]
        tol = lambda e: energy_tolerance(e, g.cells, 1.0, np.float64)  # noqa: E731
        t0 = time.perf_counter()
        advance_to(s, c, 0.0, 300.0, energy_tol=tol, on_step=lambda t: F.append(s.energy()))
        res[backend] = (s.state(), c.accepted, np.array(F), time.perf_counter() - t0)
    rises = np.diff(res["cuda"][2]) > np.array([energy_tolerance(e, g.cells, 1.0, np.float64)
                                               for e in res["cuda"][2][:-1]])
    check("adaptive gpu: F never rises", not rises.any())
    # rounding may flip an accept/reject decision somewhere: then the runs differ by about the
    # tolerance, not by rounding (strict equality is the fixed-step check above)
    d = np.max(np.abs(res["cpu"][0] - res["cuda"][0]))
    n_cpu, n_gpu = res["cpu"][1], res["cuda"][1]
    check("adaptive gpu ~ cpu", d < 0.05 and abs(n_cpu - n_gpu) <= 0.05 * n_cpu,
          f"max|dphi| {d:.2e}, steps cpu {n_cpu} gpu {n_gpu}, {res['cuda'][3]:.2f} s on the GPU")


def order_on_gpu():
    m, g = CahnHilliard(), Grid((32, 32))
    for kind in ("periodic", "mirror"):
        b = boundary(kind)
        phi0 = 0.3 * np.random.default_rng(3).standard_normal(g.shape)
        T = 2.0
        p = phi0.copy()
        for _ in range(2000):
            p = ref.step(p, T / 2000, m, g, b, "rk2")
        errs = []
        for dt in (0.1, 0.05):
            s = SpectralFieldSolver(m, g, b, dt=dt, backend="cuda")
            s.load(phi0)
            s.advance(int(round(T / dt)))
            errs.append(np.max(np.abs(s.state() - p)))
        check(f"order on the GPU {kind}", errs[0] / errs[1] >= 3.0,
              f"errors {errs[0]:.3e} {errs[1]:.3e} ratio {errs[0] / errs[1]:.2f}")


def device_reductions():
    m, g = CahnHilliard(), Grid((40, 30))
    for kind in ("periodic", "mirror", "fixed"):
        b = boundary(kind)
        phi = np.random.default_rng(4).standard_normal(g.shape)
        s = SpectralFieldSolver(m, g, b, dt=0.1, backend="cuda")
        s.load(phi)
        got, want = s.reductions(), reductions(phi, m, g, b)
        ok = all(abs(got[k] - want[k]) <= 1e-12 * max(1.0, abs(want[k])) for k in want)
        check(f"device reductions {kind}", ok, f"{got} vs {want}")


def cli_gpu_equals_cpu():
    text = ("kind: field\nname: g\ngrid: {shape: [256, 256]}\nboundary: {type: periodic}\n"
            "initial: {type: noise, amplitude: 0.05, seed: 1}\n"
            "time: {end: 500, dt: 0.01, adaptive: true, tolerance: 0.001}\n"
            "solver: {integrator: spectral, backend: BACKEND}\n"
            "output: {observables_dt: 50, snapshot_dt: 250, checkpoint_dt: 250}\n")
    import h5py

    res = {}
    with tempfile.TemporaryDirectory() as d:
        for backend in ("cpu", "cuda"):
            p = Path(d) / f"{backend}.yaml"
            p.write_text(text.replace("BACKEND", backend))
            t0 = time.perf_counter()
            r = subprocess.run([sys.executable, "-m", "simengine", "run", str(p), "-o",
                                str(Path(d) / f"{backend}.h5")], capture_output=True, text=True,
                               env=_env())
            wall = time.perf_counter() - t0
            print("\n".join(ln for ln in r.stderr.splitlines() if not ln.startswith("tick")))
            if r.returncode != 0:
                check(f"cli {backend}", False, r.stderr[-500:])
                return
            with h5py.File(Path(d) / f"{backend}.h5", "r") as f:
                res[backend] = (f["observables/free_energy"][-1], f["observables/length"][-1],
                                wall)
    dF = abs(res["cuda"][0] / res["cpu"][0] - 1)
    dL = abs(res["cuda"][1] / res["cpu"][1] - 1)
    check("cli gpu ~ cpu (F, L)", dF < 1e-3 and dL < 2e-3,
          f"dF {dF:.1e} dL {dL:.1e}; wall cpu {res['cpu'][2]:.1f} s gpu {res['cuda'][2]:.1f} s")


if __name__ == "__main__":
    for fn in (device_reductions, gpu_equals_cpu, order_on_gpu, adaptive_gpu_equals_cpu,
               cli_gpu_equals_cpu):
        try:
            fn()
        except Exception as exc:  # a crash is a failure of that check, the others still run
            import traceback

            traceback.print_exc()
            check(fn.__name__, False, f"raised {type(exc).__name__}: {exc}")
    print(f"{len(FAILED)} failed: {FAILED}" if FAILED else "all passed")
    sys.exit(1 if FAILED else 0)
