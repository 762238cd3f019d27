"""The pointwise work of a spectral step as CuPy elementwise kernels (one launch each, no
temporaries beyond the outputs); the transforms are cuFFT through ``cupyx.scipy.fft``. Same
arithmetic as :class:`simengine.field.spectral.scheme.Kernels` (the NumPy form the tests
compare with)."""
from __future__ import annotations

import numpy as np

from .scheme import Kernels

_G = """
    T s = have_prev ? (T)((1 + w) * phi - w * prev) : phi;
    star = s;
    g = a0 + s * (a1 + s * (a2 + s * a3)) - fv - sc * (s - v);
"""

# complex spectrum (periodic: rfftn) and real spectrum (cosine / sine transforms)
_UPDATE = """
    R den = a + dt * dop;
    out = (c1 * hat - c2 * prev + dt * mlam * ghat) / den;
"""


class GpuKernels(Kernels):
    def __init__(self, cp, dtype):
        super().__init__(cp, dtype)
        self.cp = cp
        t = "float" if np.dtype(dtype) == np.float32 else "double"
        self._g = cp.ElementwiseKernel(
            "T phi, T prev, T w, bool have_prev, T a0, T a1, T a2, T a3, T fv, T sc, T v",
            "T star, T g", _G, "simengine_spectral_g")
        self._upd = cp.ElementwiseKernel(
            "C hat, C prev, C ghat, R mlam, R dop, R c1, R c2, R a, R dt", "C out", _UPDATE,
            "simengine_spectral_update")
        # a and b are passed in the arrays' own type (a placeholder bound by scalars alone is
        # undecidable for CuPy: KeyError on the first device run)
        self._comb = cp.ElementwiseKernel("T x, T y, T a, T b", "T z", "z = a * x + b * y",
                                          "simengine_spectral_combine")
        self._sq = cp.ReductionKernel("T x, T y", "float64 s", "((double)x - (double)y) * "
                                      "((double)x - (double)y)", "a + b", "s = a", "0",
                                      "simengine_spectral_sqdiff")
        self._t = t

    def extrapolate_g(self, phi, prev, w, c):
        a0, a1, a2, a3, fv, s, v = c
        have = prev is not None
        star = self.cp.empty_like(phi)
        g = self.cp.empty_like(phi)
        self._g(phi, prev if have else phi, self.dtype.type(w), have, a0, a1, a2, a3, fv, s, v,
                star, g)
        return star, g

    def update(self, hat, prev_hat, ghat, mlam, dop, c1, c2, a, dt):
        out = self.cp.empty_like(hat)
        if prev_hat is None:
            prev_hat, c2 = hat, self.dtype.type(0)
        self._upd(hat, prev_hat, ghat, mlam, dop, c1, c2, a, dt, out)
        return out

    def combine(self, x, y, a, b):
        t = x.dtype.type
        return self._comb(x, y, t(a), t(b))

    def rms_diff(self, x, y) -> float:
        from .scheme import relative

        cp = self.cp
        sums = cp.stack([self._sq(x, y) / x.size, cp.var(x, dtype=cp.float64)])  # one read back
        d2, var = (float(v) for v in sums.get())
        return relative(d2, var)
