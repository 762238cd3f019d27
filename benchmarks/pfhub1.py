"""PFHub benchmark 1 (spinodal decomposition) in c with the model object: F(t) of our FD (RK2,
the stencil) and spectral (SBDF2 with the stencil's symbol, adaptive) runs against the published
uploads (/work/shared/reference/phase-field-science.md: MOOSE "mpf" mfrichtl/PFHub_benchmarks,
MEMPHIS memphis-snl/memphis benchmark/BM_001, PRISMS-PF _data/simulations/prismspf_1{a,b}).

    python benchmarks/pfhub1.py [--variant 1a|1b] [--end 1000] [--rk2]

1a: periodic, c₀ at the nodes; 1b: no-flux (mirror), c₀ at the cell centres.
"""
from __future__ import annotations

import argparse

import numpy as np

import simengine.physics as P
from simengine.field import observables as obs
from simengine.field.adaptive import Controller, advance_to
from simengine.field.backends import make_solver
from simengine.field.model import Boundary, CahnHilliard, Grid
from simengine.field.spectral.solver import SpectralFieldSolver

TIMES = (0, 10, 20, 50, 100, 200, 500, 1000, 2000, 3000, 10000)
PUBLISHED = {
    "1b": {"MOOSE": (318.99, 301.6, 211.0, 168.7, 130.8, 111.4, 91.34, 74.41, 62.16, 53.99, 40.01),
           "MEMPHIS": (319.0, 304.1, 206.0, 164.1, 128.1, 109.3, 90.58, 72.77, 59.84, 51.78,
                       38.63),
           "PRISMS-PF": (319.11, 297.6, 206.0, None, 117.0, 102.7, 82.54, 69.71, 52.27, 47.20,
                         27.73)},
    "1a": {"MOOSE": (318.99, 295.7, 215.6, 171.7, 140.6, 123.6, 102.3, 83.02, 62.97, 52.12,
                     34.13),
           "MEMPHIS": (319.1, 297.8, 209.2, 164.8, 135.2, 116.6, 97.88, 81.98, 60.52, 50.39,
                       34.70)},
}


def initial(shape, centres):
    off = 0.5 if centres else 0.0
    y, x = np.meshgrid(np.arange(shape[0]) + off, np.arange(shape[1]) + off, indexing="ij")
    return 0.5 + 0.01 * (np.cos(0.105 * x) * np.cos(0.11 * y)
                         + (np.cos(0.13 * x) * np.cos(0.087 * y)) ** 2
                         + np.cos(0.025 * x - 0.15 * y) * np.cos(0.07 * x - 0.02 * y))


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--variant", default="1b", choices=("1a", "1b"))
    p.add_argument("--end", type=float, default=1000.0)
    p.add_argument("--rk2", action="store_true", help="also the FD RK2 run (dt = 0.002)")
    p.add_argument("--tolerance", type=float, default=1e-4)
    a = p.parse_args()
    law = P.Model(P.free_energy("double_well", rho=5.0, c_alpha=0.3, c_beta=0.7),
                  P.mobility("constant", m=5.0), 2.0)
    model = CahnHilliard.of(law)
    g = Grid((200, 200))
    b = Boundary("periodic" if a.variant == "1a" else "mirror")
    c0 = initial(g.shape, centres=a.variant == "1b")
    times = [t for t in TIMES if t <= a.end]
    sp = SpectralFieldSolver(model, g, b, dt=0.01)
    sp.load(c0)
    ctrl = Controller(0.01, a.tolerance)
    ours = {"spectral": [obs.free_energy(c0, model, g, b)]}
    t = 0.0
    for t1 in times[1:]:
        advance_to(sp, ctrl, t, float(t1))
        t = float(t1)
        ours["spectral"].append(sp.reductions()["free_energy"])
    if a.rk2:
        fd = make_solver(model, g, b, backend="cpu", dt=0.002)
        fd.load(c0)
        ours["FD RK2"] = [obs.free_energy(c0, model, g, b)]
        for t0, t1 in zip(times, times[1:]):
            fd.advance(int(round((t1 - t0) / 0.002)))
            ours["FD RK2"].append(fd.reductions()["free_energy"])
    print("| t | " + " | ".join(list(ours) + list(PUBLISHED[a.variant])) + " |")
    for i, t in enumerate(times):
        row = [f"{ours[k][i]:.2f}" for k in ours]
        row += ["–" if v[i] is None else f"{v[i]:g}" for v in PUBLISHED[a.variant].values()]
        print(f"| {t:g} | " + " | ".join(row) + " |")


if __name__ == "__main__":
    main()
