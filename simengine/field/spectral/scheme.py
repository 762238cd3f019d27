"""Stabilised semi-implicit BDF2 (SBDF2) for Cahn–Hilliard in a diagonalising transform.

With λ ≤ 0 the Laplacian symbol (:mod:`.transforms`), ψ = φ − v (v = the fixed wall value, else
0), N(φ) = f'(φ) − f'(v) and a stabilisation constant S ≥ 0, each mode obeys

    ψ̂_t = Mλ(N̂ − κλψ̂) = Mλ ĝ − D ψ̂,   g = N(φ) − Sψ,   D = Mκλ² − MSλ ≥ 0.

The stiff linear part −Dψ̂ is implicit, g explicit (at the extrapolated level φ*), so the extra
term S·M·lap(φⁿ⁺¹ − φ*) = O(dt²) stabilises without costing the order:

* **BDF1** (IMEX Euler): ψ̂ⁿ⁺¹ = (ψ̂ⁿ + dt·Mλ·ĝ(φⁿ)) / (1 + dt·D)
* **SBDF2**, variable steps, ω = dtₙ / dtₙ₋₁, φ* = (1+ω)φⁿ − ωφⁿ⁻¹:
  ψ̂ⁿ⁺¹ = ((1+ω)ψ̂ⁿ − ω²/(1+ω)·ψ̂ⁿ⁻¹ + dt·Mλ·ĝ(φ*)) / ((1+2ω)/(1+ω) + dt·D)
* **start** (no previous level: the first step, and after every checkpoint): one BDF1 step of
  dt and two of dt/2, Richardson-extrapolated (2·φ_half − φ_full, second order); its error
  estimate is ‖φ_half − φ_full‖.

The error estimate of an SBDF2 step is ‖φⁿ⁺¹ − φ*‖ (RMS, relative to the RMS fluctuation of
φⁿ⁺¹ about its mean, :meth:`Kernels.rms_diff`): the distance between the implicit
solution and the explicit linear extrapolation, O(dt²·φ_tt). It needs no extra transform; it
measures the first-order part of the step, so controlling it with exponent 1/2 is conservative
for the second-order scheme.

One step costs one forward and one inverse transform (start steps: three of each). The
pointwise work runs through :class:`Kernels` (NumPy expressions on the host; CuPy elementwise
kernels on the GPU, :mod:`.gpu`).
"""
from __future__ import annotations

import numpy as np


#: the fluctuation below which the error is measured absolutely
FLAT = 1e-12


def relative(mean_sq_diff: float, variance: float) -> float:
    return (max(mean_sq_diff, 0.0) / max(variance, FLAT * FLAT)) ** 0.5


class Kernels:
    """The pointwise parts of a step, written once for NumPy and CuPy arrays (the GPU subclass
    in :mod:`.gpu` replaces them by elementwise kernels)."""

    def __init__(self, xp, dtype):
        self.xp, self.dtype = xp, np.dtype(dtype)

    def extrapolate_g(self, phi, prev, w, c):
        """``(φ*, g(φ*))`` with φ* = (1+w)φ − wφ_prev (``prev`` None: φ* = φ);
        ``c = (a0, a1, a2, a3, f'(v), S, v)``."""
        star = phi if prev is None else (1 + w) * phi - w * prev
        star = star.astype(self.dtype, copy=False)
        a0, a1, a2, a3, fv, s, v = c
        g = a0 + star * (a1 + star * (a2 + star * a3)) - fv - s * (star - v)
        return star, g.astype(self.dtype, copy=False)

    def update(self, hat, prev_hat, ghat, mlam, dop, c1, c2, a, dt):
        """(c1·ψ̂ − c2·ψ̂_prev + dt·Mλ·ĝ) / (a + dt·D) (``prev_hat`` None: c2 = 0)."""
        num = c1 * hat + dt * mlam * ghat
        if prev_hat is not None:
            num = num - c2 * prev_hat
        return num / (a + dt * dop)

    def combine(self, x, y, a, b):
        """a·x + b·y (Richardson extrapolation of the start step)."""
        return a * x + b * y

    def rms_diff(self, x, y) -> float:
        """RMS(x − y) / RMS(x − mean x): the error relative to the field's fluctuation (tight
        while the pattern is a small perturbation of a uniform state, absolute once φ ≈ ±1)."""
        xp = self.xp
        d = (x - y).astype(np.float64)
        x64 = x.astype(np.float64)
        return relative(float(xp.mean(d * d)), float(xp.var(x64)))


class SBDF2:
    """The scheme's state on one whole grid: φⁿ (and φⁿ⁻¹, dtₙ₋₁ after the first step) in
    real space and their transforms. ``trial(dt)`` computes a candidate step and its error
    estimate; ``accept()`` makes it the new level; a trial not accepted is simply replaced."""

    def __init__(self, model, boundary, transform, kernels, stabilization):
        xp, dt = transform.xp, transform.dtype
        self.xp, self.dtype, self.tr, self.k = xp, dt, transform, kernels
        m, kap = float(model.mobility), float(model.kappa)
        lam = transform.lam
        self.mlam = (m * lam).astype(dt)
        self.dop = (m * kap * lam * lam - m * float(stabilization) * lam).astype(dt)
        a0, a1, a2, a3 = (float(x) for x in model.coefficients)
        v = float(boundary.value) if boundary.kind == "fixed" else 0.0
        fv = float(model.fprime(v)) if boundary.kind == "fixed" else 0.0
        self.v = v
        self.c = tuple(dt.type(x) for x in (a0, a1, a2, a3, fv, float(stabilization), v))
        self.S = float(stabilization)
        self.phi = self.hat = None
        self.prev = self.prev_hat = None
        self.dt_prev = None
        self._trial = None

    # ------------------------------------------------------------------ state
    def load(self, phi) -> None:
        self.phi = self.xp.asarray(phi, dtype=self.dtype)
        self.restart()

    def restart(self) -> None:
        """Forget the previous level: the next step is a start step (one-step, second order).
        The spectrum is recomputed from φ, as after :meth:`load`: a run resumed from a
        checkpoint (which stores φ) continues bit for bit as the uninterrupted run."""
        self.hat = self.tr.forward(self.phi - self.dtype.type(self.v))
        self.prev = self.prev_hat = None
        self.dt_prev = None
        self._trial = None

    @property
    def started(self) -> bool:
        return self.prev is not None

    # ------------------------------------------------------------------ steps
    def _to_real(self, hat):
        out = self.tr.inverse(hat)
        if self.v:
            out = out + self.dtype.type(self.v)
        # contiguous: the device S(k) and the host copies view the field's memory as it is
        return self.xp.ascontiguousarray(out.astype(self.dtype, copy=False))

    def _explicit(self, phi, prev, w):
        """``(φ*, ĝ)``: the explicit part at the extrapolated level (the hook a model with
        M(φ) replaces, :mod:`.model_scheme`)."""
        star, g = self.k.extrapolate_g(phi, prev, w, self.c)
        return star, self.tr.forward(g)

    def _bdf1(self, phi, hat, dt):
        _, gh = self._explicit(phi, None, 0.0)
        t = self.dtype.type
        new_hat = self.k.update(hat, None, gh, self.mlam, self.dop, t(1), t(0), t(1), t(dt))
        return self._to_real(new_hat), new_hat

    def trial(self, dt: float) -> float:
        """Compute the step of ``dt`` from the current level (not yet accepted); returns its
        error estimate (RMS, in units of φ)."""
        dt = float(dt)
        t = self.dtype.type
        if not self.started:
            full, full_hat = self._bdf1(self.phi, self.hat, dt)
            mid, mid_hat = self._bdf1(self.phi, self.hat, 0.5 * dt)
            two, two_hat = self._bdf1(mid, mid_hat, 0.5 * dt)
            err = self.k.rms_diff(two, full)
            new = self.xp.ascontiguousarray(self.k.combine(two, full, t(2), t(-1)))
            new_hat = self.k.combine(two_hat, full_hat, t(2), t(-1))
            self._trial = (new, new_hat, dt)
            return err
        w = dt / self.dt_prev
        star, gh = self._explicit(self.phi, self.prev, t(w))
        new_hat = self.k.update(self.hat, self.prev_hat, gh, self.mlam, self.dop, t(1 + w),
                                t(w * w / (1 + w)), t((1 + 2 * w) / (1 + w)), t(dt))
        new = self._to_real(new_hat)
        err = self.k.rms_diff(new, star)
        self._trial = (new, new_hat, dt)
        return err

    @property
    def trial_phi(self):
        return None if self._trial is None else self._trial[0]

    def accept(self) -> None:
        new, new_hat, dt = self._trial
        self.prev, self.prev_hat = self.phi, self.hat
        self.phi, self.hat = new, new_hat
        self.dt_prev = dt
        self._trial = None

    def step(self, dt: float, n: int = 1) -> None:
        """``n`` fixed steps of ``dt`` (every one accepted)."""
        for _ in range(int(n)):
            self.trial(dt)
            self.accept()
