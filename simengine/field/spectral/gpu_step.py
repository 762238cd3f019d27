"""The SBDF2 scheme of :mod:`.scheme` on one GPU at the transform's cost: every buffer allocated
once, the pointwise work in three fused kernels (:mod:`.gpu_kernels`), the error estimate and
the free energy of the candidate in one reduction read back as one small array.

A step (after the start step) is

1. ``sb_g``: g(φ*) into the transform's real buffer;
2. the forward transform of g (periodic: cuFFT R2C through a plan made once, its work area
   with it; mirror/fixed: CuPy's DCT-II / the odd-extension DST-I, which allocate);
3. ``sb_update``: ψ̂ⁿ⁺¹ from ψ̂ⁿ, ψ̂ⁿ⁻¹, ĝ (symbol formed on the fly), kept, and a scaled copy
   into the transform buffer;
4. the inverse transform into the candidate's real buffer;
5. adaptive steps only: ``sb_sums`` + ``sb_final`` over the candidate (‖φⁿ⁺¹ − φ*‖², its
   mean and variance, Σf, Σ|∇φ|², min, max) and one device→host read of those seven numbers.
   Fixed steps read nothing back: they queue on the stream without a host round trip.

Levels rotate through three real and three spectral buffers (φⁿ⁻¹, φⁿ, candidate), so accepting
a step moves no data. The explicit nonlinear term is formed in one place: ``sb_g`` (and its host
twin :meth:`.scheme.Kernels.extrapolate_g`).
"""
from __future__ import annotations

import math

import numpy as np

from . import gpu_kernels as gk
from .scheme import relative
from .transforms import axis_symbol

#: the kernels decompose cell indices in 32-bit arithmetic
MAX_CELLS = 2 ** 32 - 1


class PlanTransform:
    """Periodic: real ↔ half-spectrum through two cuFFT plans made once (R2C, C2R)."""

    name = "cufft plans"

    def __init__(self, cp, shape, real, spec):
        from cupy.cuda import cufft

        try:
            from cupyx.scipy.fft import get_fft_plan
        except ImportError:  # older CuPy: only in fftpack
            from cupyx.scipy.fftpack import get_fft_plan
        axes = tuple(range(len(shape)))
        self._cufft = cufft
        self.fwd = get_fft_plan(real, axes=axes, value_type="R2C")
        self.inv = get_fft_plan(spec, shape=tuple(shape), axes=axes, value_type="C2R")
        self.scale = 1.0 / math.prod(shape)
        self.ncomp = 2

    def forward(self, real, spec):
        self.fwd.fft(real, spec, self._cufft.CUFFT_FORWARD)

    def inverse(self, spec, real):
        """``spec`` is destroyed (cuFFT C2R); unnormalised (the update scales by 1/N)."""
        self.inv.fft(spec, real, self._cufft.CUFFT_INVERSE)


class TransformCopy:
    """Mirror / fixed: the orthonormal real transforms of :class:`.transforms.Transform`
    (CuPy's or scipy's; they allocate, the result is copied into the step's buffers)."""

    def __init__(self, transform):
        self.tr = transform
        self.name = transform.name + (" (cupyx)" if transform.xp is not np else "")
        self.scale = 1.0
        self.ncomp = 1

    def forward(self, real, spec):
        spec[...] = self.tr.forward(real)

    def inverse(self, spec, real):
        real[...] = self.tr.inverse(spec)


def symbol_table(shape, h, kind, symbol):
    """``(table, (m0, m1, m2), (o1, o2))``: the axes' symbols (float64) one after the other,
    the spectrum's shape padded in front to three axes (padded axes have the symbol 0)."""
    nd = len(shape)
    parts, dims = [], []
    for ax, n in enumerate(shape):
        half = kind == "periodic" and ax == nd - 1
        s = axis_symbol(int(n), float(h), kind, symbol, half)
        parts.append(s)
        dims.append(len(s))
    while len(dims) < 3:
        parts.insert(0, np.zeros(1))
        dims.insert(0, 1)
    o1, o2 = dims[0], dims[0] + dims[1]
    return np.concatenate(parts).astype(np.float64), tuple(dims), (o1, o2)


def padded(shape):
    s = [int(n) for n in shape]
    return [1] * (3 - len(s)) + s


class FusedSBDF2:
    """:class:`.scheme.SBDF2`'s interface (``load``, ``restart``, ``started``, ``trial``,
    ``trial_phi``, ``accept``, ``step``, ``phi``) plus the fused reductions: ``sums(x)`` and the
    candidate's free energy from its trial (``trial_energy``), the current level's
    (``energy``)."""

    fused = True

    def __init__(self, cp, model, grid, boundary, transform, stabilization, dtype,
                 module=None, fft=None):
        """``module``/``fft``: the compiled kernels and the transform pair (default: compiled
        here, cuFFT plans or CuPy's real transforms); the host tests pass NumPy twins."""
        self.cp, self.xp = cp, cp
        self.dtype = np.dtype(dtype)
        self.tr = transform
        self.model, self.grid, self.boundary = model, grid, boundary
        self.shape = tuple(int(n) for n in grid.shape)
        self.n = math.prod(self.shape)
        if self.n >= MAX_CELLS:
            raise ValueError(f"the fused GPU step indexes cells in 32 bits ({self.n} cells)")
        self.kind = boundary.kind
        self.mod = module if module is not None else gk.module(cp, self.dtype)
        self._k = {name: self.mod.get_function(name) for name in
                   ("sb_g", "sb_update", "sb_sums", "sb_final", "sb_combine", "sb_shift")}
        t = self.dtype.type
        a0, a1, a2, a3 = (float(x) for x in model.coefficients)
        v = float(boundary.value) if self.kind == "fixed" else 0.0
        fv = float(model.fprime(v)) if self.kind == "fixed" else 0.0
        self.v, self.S = v, float(stabilization)
        self.c = tuple(t(x) for x in (a0, a1, a2, a3, fv, self.S, v))
        self._coef = (a0, a1 / 2.0, a2 / 3.0, a3)
        self.mob, self.kap = float(model.mobility), float(model.kappa)
        tab, dims, offs = symbol_table(self.shape, grid.spacing, self.kind, transform.symbol)
        self.tab = cp.asarray(tab)
        self.m, self.o = dims, offs
        self.ns = math.prod(dims)
        self.spec_shape = tuple(transform.spectrum_shape)
        cdt = np.complex64 if self.dtype == np.float32 else np.complex128
        self.sdtype = np.dtype(cdt) if self.kind == "periodic" else self.dtype
        real = lambda: cp.empty(self.shape, dtype=self.dtype)  # noqa: E731
        spec = lambda: cp.empty(self.spec_shape, dtype=self.sdtype)  # noqa: E731
        # three levels (φⁿ⁻¹, φⁿ, candidate) and their spectra, the transform's two buffers
        self._r = [real() for _ in range(3)]
        self._s = [spec() for _ in range(3)]
        self.g, self.ghat = real(), spec()
        self._extra = None  # the start step's second candidate (allocated at the first one)
        self.part = cp.empty(gk.BLOCKS * gk.NSUMS, dtype=np.float64)
        self.out = cp.empty(2 * gk.NSUMS, dtype=np.float64)
        if fft is None:
            fft = (PlanTransform(cp, self.shape, self.g, self.ghat)
                   if self.kind == "periodic" else TransformCopy(transform))
        self.fft = fft
        self.ip, self.ic, self.iq = None, 0, 1  # indices of φⁿ⁻¹, φⁿ, candidate
        self.dt_prev = None
        self._trial = None
        self._f_now = self._f_trial = None

    # ------------------------------------------------------------------ launches
    def _grid(self, n):
        return (max(1, min(gk.BLOCKS * 4, (int(n) + gk.THREADS - 1) // gk.THREADS)),)

    def _spec_flat(self, a):
        """A spectrum as the flat real array the kernels index (complex: (re, im) pairs)."""
        return a.view(self.dtype) if a.dtype.kind == "c" else a

    def _g(self, phi, prev, w):
        t = self.dtype.type
        a0, a1, a2, a3, fv, s, v = self.c
        have = prev is not None
        self._k["sb_g"](self._grid(self.n), (gk.THREADS,),
                        (phi, prev if have else phi, self.g, np.int64(self.n), t(w),
                         np.int32(have), a0, a1, a2, a3, fv, s, v))

    def _update(self, hat, prev_hat, out_hat, c1, c2, a, dt):
        t = self.dtype.type
        have = prev_hat is not None
        m0, m1, m2 = self.m
        rows = self.ns // m2
        self._k["sb_update"](
            (max(1, min(gk.BLOCKS * 4, -(-rows // gk.ROWS_PER_BLOCK))),),
            (gk.ROW_LANES, gk.ROWS_PER_BLOCK),
            (self._spec_flat(hat), self._spec_flat(prev_hat if have else hat),
             self._spec_flat(self.ghat), self._spec_flat(out_hat), np.int64(self.ns),
             np.int32(self.fft.ncomp), self.tab, np.uint32(m1), np.uint32(m2),
             np.uint32(self.o[0]), np.uint32(self.o[1]), np.float64(self.mob),
             np.float64(self.kap), np.float64(self.S), t(c1), t(c2), t(a), t(dt),
             t(self.fft.scale), np.int32(have)))

    def _to_real(self, out):
        """ĝ's buffer (the scaled ψ̂ⁿ⁺¹) → φ in ``out``."""
        self.fft.inverse(self.ghat, out)
        if self.v:
            self._k["sb_shift"](self._grid(self.n), (gk.THREADS,),
                                (out, np.int64(self.n), self.dtype.type(self.v)))

    def _sums(self, x, y=None, z=None, w=0.0, slot=0):
        """Enqueue the seven sums of ``x`` (mode: no difference / x − y / x − ((1+w)y − wz))
        into ``self.out[slot·7 : slot·7 + 7]``."""
        mode = 0 if y is None else (1 if z is None else 2)
        n0, n1, n2 = padded(self.shape)
        a0, b1, b2, a3 = self._coef
        self._k["sb_sums"]((gk.BLOCKS,), (gk.ROW_LANES, gk.ROWS_PER_BLOCK),
                           (x, x if y is None else y, x if z is None else z, np.int32(mode),
                            self.dtype.type(w), np.uint32(n0), np.uint32(n1), np.uint32(n2),
                            np.int32(len(self.shape)), np.int32(gk.KIND_CODE[self.kind]),
                            np.float64(self.v), np.float64(a0), np.float64(b1),
                            np.float64(b2), np.float64(a3), self.part))
        self._k["sb_final"]((1,), (gk.FINAL_THREADS,),
                            (self.part, np.int32(gk.BLOCKS), self.out[slot * gk.NSUMS:]))

    def _read(self, slots=1):
        v = self.out[:slots * gk.NSUMS]
        return v.get() if hasattr(v, "get") else np.array(v)

    def energy_of_sums(self, v) -> float:
        h = float(self.grid.spacing)
        return (float(v[3]) + 0.5 * self.kap * float(v[4]) / (h * h)) * h ** len(self.shape)

    def _err(self, v) -> float:
        mean = v[1] / self.n
        return relative(v[0] / self.n, v[2] / self.n - mean * mean)

    # ------------------------------------------------------------------ state
    @property
    def phi(self):
        return self._r[self.ic]

    @property
    def hat(self):
        return self._s[self.ic]

    def load(self, phi) -> None:
        self._r[self.ic][...] = self.cp.asarray(phi, dtype=self.dtype)
        self.restart()

    def restart(self) -> None:
        phi = self._r[self.ic]
        if self.v:
            self.g[...] = phi - self.dtype.type(self.v)
        else:
            self.g[...] = phi
        self.fft.forward(self.g, self._s[self.ic])
        self.ip = None
        self.dt_prev = None
        self._trial = None
        self._f_now = None

    @property
    def started(self) -> bool:
        return self.ip is not None

    # ------------------------------------------------------------------ steps
    def _bdf1(self, phi, hat, dt, out_r, out_s):
        self._g(phi, None, 0.0)
        self.fft.forward(self.g, self.ghat)
        self._update(hat, None, out_s, 1.0, 0.0, 1.0, dt)
        self._to_real(out_r)

    def _propose(self, dt):
        """Enqueue the candidate of ``dt`` into the candidate's buffers; returns how to measure
        its error: ``("sbdf2", w)`` or ``("start", full_r)``."""
        dt = float(dt)
        q = self.iq
        if not self.started:
            if self._extra is None:
                self._extra = (self.cp.empty_like(self.g), self.cp.empty_like(self.ghat),
                               self.cp.empty_like(self.g), self.cp.empty_like(self.ghat))
            full_r, full_s, mid_r, mid_s = self._extra
            phi, hat = self._r[self.ic], self._s[self.ic]
            self._bdf1(phi, hat, dt, full_r, full_s)
            self._bdf1(phi, hat, 0.5 * dt, mid_r, mid_s)
            self._bdf1(mid_r, mid_s, 0.5 * dt, self._r[q], self._s[q])  # "two" in place
            return "start", full_r, full_s
        w = dt / self.dt_prev
        p, c = self.ip, self.ic
        self._g(self._r[c], self._r[p], w)
        self.fft.forward(self.g, self.ghat)
        self._update(self._s[c], self._s[p], self._s[q], 1 + w, w * w / (1 + w),
                     (1 + 2 * w) / (1 + w), dt)
        self._to_real(self._r[q])
        return "sbdf2", w, None

    def _finish_start(self, full_r, full_s, measure):
        """Richardson: candidate = 2·two − full (real and spectrum); with ``measure``, the error
        ‖two − full‖ (slot 0) and the candidate's sums (slot 1), one read."""
        q, t = self.iq, self.dtype.type
        two_r, two_s = self._r[q], self._s[q]
        if measure:
            self._sums(two_r, full_r, slot=0)
        comb = self._k["sb_combine"]
        comb(self._grid(self.n), (gk.THREADS,), (two_r, full_r, two_r, np.int64(self.n),
                                                  t(2), t(-1)))
        a, b = self._spec_flat(two_s), self._spec_flat(full_s)
        comb(self._grid(a.size), (gk.THREADS,), (a, b, a, np.int64(a.size), t(2), t(-1)))
        if not measure:
            return None
        self._sums(two_r, slot=1)
        v = self._read(2)
        self._f_trial = self.energy_of_sums(v[gk.NSUMS:])
        return self._err(v[:gk.NSUMS])

    def trial(self, dt: float) -> float:
        """The candidate of ``dt`` and its error estimate (one device→host read)."""
        how = self._propose(dt)
        if how[0] == "start":
            err = self._finish_start(how[1], how[2], True)
        else:
            w = how[1]
            self._sums(self._r[self.iq], self._r[self.ic], self._r[self.ip], w)
            v = self._read()
            self._f_trial = self.energy_of_sums(v)
            err = self._err(v)
        self._trial = float(dt)
        return err

    @property
    def trial_phi(self):
        return None if self._trial is None else self._r[self.iq]

    def trial_energy(self) -> float:
        return self._f_trial

    def energy(self) -> float:
        if self._f_now is None:
            self._sums(self.phi)
            self._f_now = self.energy_of_sums(self._read())
        return self._f_now

    def accept(self) -> None:
        dt = self._trial
        free = self.ip if self.ip is not None else 3 - self.ic - self.iq  # the unused slot
        self.ip, self.ic, self.iq = self.ic, self.iq, free
        self.dt_prev = dt
        self._trial = None
        self._f_now, self._f_trial = self._f_trial, None

    def step(self, dt: float, n: int = 1) -> None:
        """``n`` fixed steps of ``dt``: enqueued, nothing read back."""
        for _ in range(int(n)):
            how = self._propose(dt)
            if how[0] == "start":
                self._finish_start(how[1], how[2], False)
            self._trial = float(dt)
            self._f_trial = None
            self.accept()

    def sums(self, x=None):
        """The seven sums of ``x`` (default φⁿ) as a host array (one read)."""
        self._sums(self.phi if x is None else x)
        return self._read()
