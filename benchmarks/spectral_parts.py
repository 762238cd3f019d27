"""Where a GPU spectral step's time goes, in one process (imported by bench_spectral.py, or run
as ``python benchmarks/spectral_parts.py N [N …] --dims 2 --precision float64``).

It measures, with ``cupyx.profiler.benchmark`` (host and GPU time of each call, after warm-up):

* the **bare CuPy step** of the issue — one ``rfftn`` of f'(φ*), the Fourier update, one
  ``irfftn`` (CuPy's plan cache, temporaries allocated), and the same with cuFFT plans made once
  and preallocated outputs (``bare-plans``): the transform bound;
* the **solver's step** as the field job drives it: ``advance(k)`` (fixed steps) and a
  ``trial`` + ``accept`` + ``trial_energy`` (adaptive), per step;
* the **parts** of the solver's step, each on its own: the explicit term, the forward transform,
  the update, the inverse, the error/energy reduction (whatever tree is imported: this branch's
  fused step, or main's ``SBDF2`` when PYTHONPATH points at main's tree).

Prints one line per measurement: ``part <grid> <precision> <name> gpu <ms> host <ms>``.
"""
from __future__ import annotations

import argparse
import sys


def _bench(fn, repeat):
    from cupyx.profiler import benchmark

    r = benchmark(fn, n_repeat=repeat, n_warmup=3)
    return 1e3 * float(r.gpu_times.mean()), 1e3 * float(r.cpu_times.mean())


def _say(label, name, gpu, host, per=1):
    print(f"part {label} {name:<28s} gpu {gpu / per:9.3f} ms  host {host / per:9.3f} ms",
          flush=True)


def bare(cp, shape, dtype, repeat):
    """The issue's bare step and its planned, preallocated twin: ``(gpu ms, host ms)`` each."""
    import numpy as np
    import cupyx.scipy.fft as cfft
    from cupy.cuda import cufft

    rng = np.random.default_rng(1)
    phi = cp.asarray(0.05 * rng.standard_normal(shape), dtype=dtype)
    prev = phi.copy()
    axes = tuple(range(len(shape)))
    hat = cfft.rfftn(phi)
    prev_hat = hat.copy()
    lam = cp.asarray(np.zeros(hat.shape), dtype=dtype)
    for ax, n in enumerate(shape):
        k = 2 * np.pi * (np.fft.rfftfreq(n) if ax == len(shape) - 1 else np.fft.fftfreq(n))
        view = [1] * len(shape)
        view[ax] = -1
        lam = lam + cp.asarray((2 * np.cos(k) - 2).reshape(view), dtype=dtype)
    t = np.dtype(dtype).type
    mlam, den = lam, t(1.5) + t(0.5) * (lam * lam - 2 * lam)
    c1, c2, dt, w = t(2), t(0.5), t(0.5), t(1)

    def naive():
        s = (1 + w) * phi - w * prev
        g = s * s * s - s - 2 * s
        gh = cfft.rfftn(g)
        nh = (c1 * hat - c2 * prev_hat + dt * mlam * gh) / den
        return cfft.irfftn(nh, s=shape)

    g = cp.empty_like(phi)
    gh = cp.empty_like(hat)
    out = cp.empty_like(phi)
    nh = cp.empty_like(hat)
    fwd = cfft.get_fft_plan(g, axes=axes, value_type="R2C")
    inv = cfft.get_fft_plan(gh, shape=shape, axes=axes, value_type="C2R")
    gk = cp.ElementwiseKernel("T p, T q, T w", "T g",
                              "T s = (1 + w) * p - w * q; g = s * s * s - s - 2 * s;",
                              "bare_g")
    uk = cp.ElementwiseKernel("C h, C hp, R ml, R d, R c1, R c2, R dt, R sc", "C gh, C nh",
                              "nh = (c1 * h - c2 * hp + dt * ml * gh) / d; gh = nh * sc;",
                              "bare_u")

    def planned():
        gk(phi, prev, w, g)
        fwd.fft(g, gh, cufft.CUFFT_FORWARD)
        uk(hat, prev_hat, mlam, den, c1, c2, dt, t(1.0 / g.size), gh, nh)
        inv.fft(gh, out, cufft.CUFFT_INVERSE)

    return _bench(naive, repeat), _bench(planned, repeat)


def solver_parts(cp, shape, precision, repeat, label, boundary="periodic"):
    """The imported tree's solver: fixed step, adaptive trial, and each part of its step."""
    import numpy as np

    from simengine.field.initial import noise
    from simengine.field.model import Boundary, CahnHilliard, Grid
    from simengine.field.spectral.solver import SpectralFieldSolver

    g = Grid(tuple(shape))
    b = Boundary(boundary, 0.3 if boundary == "fixed" else 0.0)
    s = SpectralFieldSolver(CahnHilliard(), g, b, dt=0.5,
                            precision=precision, backend="cuda")
    s.load(noise(g.shape, 0.0, 0.05, 1, np.dtype(precision)))
    s.advance(3)
    s.synchronize()
    k = 10
    gpu, host = _bench(lambda: s.advance(k), max(2, repeat // 4))
    _say(label, "solver fixed step", gpu, host, k)

    def adaptive():
        s.trial(0.5)
        s.trial_energy()
        s.accept()

    gpu, host = _bench(adaptive, repeat)
    _say(label, "solver adaptive trial", gpu, host)
    gpu, host = _bench(s.reductions, repeat)
    _say(label, "solver reductions", gpu, host)
    sc = s.scheme
    if getattr(sc, "fused", False):
        p, c, q = sc.ip, sc.ic, sc.iq
        parts = {
            "explicit term (sb_g)": lambda: sc._g(sc._r[c], sc._r[p], 1.0),
            "forward transform": lambda: sc.fft.forward(sc.g, sc.ghat),
            "update (sb_update)": lambda: sc._update(sc._s[c], sc._s[p], sc._s[q], 2.0, 0.5,
                                                     1.5, 0.5),
            "inverse transform": lambda: sc.fft.inverse(sc.ghat, sc._r[q]),
            "sums + final": lambda: sc._sums(sc._r[q], sc._r[c], sc._r[p], 1.0),
            "sums + final + read": lambda: (sc._sums(sc._r[q], sc._r[c], sc._r[p], 1.0),
                                            sc._read()),
        }
    else:  # main's SBDF2 (scheme.py): the same parts through its Kernels and Transform
        t = sc.dtype.type
        star, gg = sc.k.extrapolate_g(sc.phi, sc.prev, t(1), sc.c)
        gh = sc.tr.forward(gg)
        nh = sc.k.update(sc.hat, sc.prev_hat, gh, sc.mlam, sc.dop, t(2), t(0.5), t(1.5),
                         t(0.5))
        new = sc._to_real(nh)
        from simengine.field.spectral import energy

        parts = {
            "explicit term": lambda: sc.k.extrapolate_g(sc.phi, sc.prev, t(1), sc.c),
            "forward transform": lambda: sc.tr.forward(gg),
            "update": lambda: sc.k.update(sc.hat, sc.prev_hat, gh, sc.mlam, sc.dop, t(2),
                                          t(0.5), t(1.5), t(0.5)),
            "inverse (+ to_real)": lambda: sc._to_real(nh),
            "error norm (rms_diff)": lambda: sc.k.rms_diff(new, star),
            "free energy": lambda: energy.free_energy(new, s.model, s.grid, s.boundary, cp),
        }
    for name, fn in parts.items():
        gpu, host = _bench(fn, repeat)
        _say(label, name, gpu, host)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("sizes", type=int, nargs="+")
    ap.add_argument("--dims", type=int, default=2)
    ap.add_argument("--precision", nargs="+", default=["float64", "float32"])
    ap.add_argument("--repeat", type=int, default=20)
    ap.add_argument("--no-bare", action="store_true")
    ap.add_argument("--boundary", default="periodic", help="the solver's boundary (the bare "
                    "step is periodic)")
    args = ap.parse_args(argv)
    import cupy as cp
    import numpy as np

    import simengine

    print(f"# simengine from {simengine.__file__}", flush=True)
    for n in args.sizes:
        shape = (n,) * args.dims
        for prec in args.precision:
            label = f"{'x'.join(map(str, shape))} {prec}" + (
                f" {args.boundary}" if args.boundary != "periodic" else "")
            if not args.no_bare:
                (g0, h0), (g1, h1) = bare(cp, shape, np.dtype(prec), args.repeat)
                _say(label, "bare cupy step", g0, h0)
                _say(label, "bare step, plans+buffers", g1, h1)
            solver_parts(cp, shape, prec, args.repeat, label, args.boundary)
            cp.get_default_memory_pool().free_all_blocks()
    return 0


if __name__ == "__main__":
    sys.exit(main())
