"""The CUDA source of the fused GPU spectral step (:mod:`.gpu_step`), compiled once per precision
through ``cupy.RawModule``. Grid-stride loops; every sum in float64; the two-stage reduction adds
in a fixed order (no atomics), so a run repeats bit for bit.

* ``sb_g``      — g = f'(φ*) − f'(v) − S(φ* − v), φ* = (1+w)φ − wφ_prev (``have`` = 0: φ* = φ);
* ``sb_update`` — the implicit Fourier update of every mode, the symbol λ formed from the axes'
  1-D tables on the fly; writes ψ̂ⁿ⁺¹ (kept) and ψ̂ⁿ⁺¹/N into the transform buffer (cuFFT's C2R
  destroys its input and is unnormalised);
* ``sb_sums``   — per block: Σ(x − y)² (y = φ*, or a second field), Σx, Σx², Σf(x), Σ(forward
  difference)² with the boundary's wall terms, min x, max x (:data:`NSUMS` values);
* ``sb_final``  — one block adds the blocks' partial sums in order.
"""
from __future__ import annotations

#: values per reduction: Σd², Σx, Σx², Σf, Σ|∇x|², min, max
NSUMS = 7
#: blocks of the first reduction stage (fixed: the order of the sums does not depend on the GPU)
BLOCKS = 1024
THREADS = 256
FINAL_THREADS = 512
#: boundary codes of ``sb_sums``
KIND_CODE = {"periodic": 0, "mirror": 1, "fixed": 2}

SOURCE = r"""
typedef REAL T;
#define INF __longlong_as_double(0x7ff0000000000000LL)
#define LOOP(i, n) for (long long i = (long long)blockIdx.x * blockDim.x + threadIdx.x; \
                        i < (n); i += (long long)blockDim.x * gridDim.x)

extern "C" __global__ void sb_g(const T* phi, const T* prev, T* g, long long n, T w, int have,
                                T a0, T a1, T a2, T a3, T fv, T sc, T v)
{
    LOOP(i, n) {
        T p = phi[i];
        T s = have ? (T)((1 + w) * p - w * prev[i]) : p;
        g[i] = a0 + s * (a1 + s * (a2 + s * a3)) - fv - sc * (s - v);
    }
}

// hat, prev, ghat, out: complex spectra as interleaved (re, im) pairs, or real spectra
// (ncomp = 1); ns modes; tab: the axes' symbols one after the other (offsets 0, o1, o2), the
// spectrum's shape padded in front to (m0, m1, m2)
extern "C" __global__ void sb_update(const T* hat, const T* prev, T* ghat, T* out, long long ns,
                                     int ncomp, const double* tab, unsigned int m1,
                                     unsigned int m2, unsigned int o1, unsigned int o2,
                                     double mob, double kap,
                                     double stab, T c1, T c2, T a, T dt, T scale, int have)
{
    LOOP(k, ns) {
        unsigned int kk = (unsigned int)k;  // cells < 2^32 (FusedSBDF2 checks)
        unsigned int i2 = kk % m2;
        unsigned int r = kk / m2;
        unsigned int i1 = r % m1;
        unsigned int i0 = r / m1;
        double lam = tab[i0] + tab[o1 + i1] + tab[o2 + i2];
        T mlam = (T)(mob * lam);
        T dop = (T)(mob * kap * lam * lam - mob * stab * lam);
        T den = a + dt * dop;
        for (int c = 0; c < ncomp; ++c) {
            long long j = k * ncomp + c;
            T num = c1 * hat[j] + dt * mlam * ghat[j];
            if (have) num = num - c2 * prev[j];
            T o = num / den;
            out[j] = o;
            ghat[j] = o * scale;
        }
    }
}

// mode 0: no difference term; 1: d = x - y; 2: d = x - ((1+w) y - w z) (y = phi, z = prev)
extern "C" __global__ void sb_sums(const T* x, const T* y, const T* z, int mode, T w,
                                   unsigned int n0, unsigned int n1, unsigned int n2, int nd,
                                   int kind,
                                   double v, double a0, double b1, double b2, double a3,
                                   double* part)
{
    __shared__ double sh[7][THREADS];
    double sd = 0, sx = 0, sxx = 0, sf = 0, sg = 0;
    double mn = INF, mx = -INF;
    long long n = (long long)n0 * n1 * n2;
    unsigned int len[3] = {n0, n1, n2};
    long long str[3] = {(long long)n1 * n2, (long long)n2, 1};
    LOOP(i, n) {
        double p = (double)x[i];
        unsigned int ii = (unsigned int)i, q2 = ii / n2;
        unsigned int jx[3] = {q2 / n1, q2 % n1, ii % n2};
        sx += p;
        sxx += p * p;
        sf += p * (a0 + p * (b1 + p * (b2 + p * a3 / 4.0)));
        mn = fmin(mn, p);
        mx = fmax(mx, p);
        for (int ax = 3 - nd; ax < 3; ++ax) {
            long long j = jx[ax], m = len[ax], s = str[ax];  // j, m < 2^32
            if (j + 1 < m) {
                double d = (double)x[i + s] - p;
                sg += d * d;
            } else if (kind == 0) {
                double d = (double)x[i - j * s] - p;
                sg += d * d;
            } else if (kind == 2) {
                double d = v - p;
                sg += d * d;
            }
            if (kind == 2 && j == 0) {
                double d = p - v;
                sg += d * d;
            }
        }
        if (mode == 1) {
            double d = p - (double)y[i];
            sd += d * d;
        } else if (mode == 2) {
            T st = (T)((1 + w) * y[i] - w * z[i]);
            double d = p - (double)st;
            sd += d * d;
        }
    }
    int t = threadIdx.x;
    sh[0][t] = sd; sh[1][t] = sx; sh[2][t] = sxx; sh[3][t] = sf; sh[4][t] = sg;
    sh[5][t] = mn; sh[6][t] = mx;
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (t < h) {
            for (int q = 0; q < 5; ++q) sh[q][t] += sh[q][t + h];
            sh[5][t] = fmin(sh[5][t], sh[5][t + h]);
            sh[6][t] = fmax(sh[6][t], sh[6][t + h]);
        }
        __syncthreads();
    }
    if (t < 7) part[(long long)blockIdx.x * 7 + t] = sh[t][0];
}

extern "C" __global__ void sb_final(const double* part, int nblocks, double* out)
{
    __shared__ double sh[7][FINAL_THREADS];
    int t = threadIdx.x;
    double acc[7] = {0, 0, 0, 0, 0, INF, -INF};
    for (int b = t; b < nblocks; b += blockDim.x) {
        for (int q = 0; q < 5; ++q) acc[q] += part[(long long)b * 7 + q];
        acc[5] = fmin(acc[5], part[(long long)b * 7 + 5]);
        acc[6] = fmax(acc[6], part[(long long)b * 7 + 6]);
    }
    for (int q = 0; q < 7; ++q) sh[q][t] = acc[q];
    __syncthreads();
    for (int h = blockDim.x / 2; h > 0; h >>= 1) {
        if (t < h) {
            for (int q = 0; q < 5; ++q) sh[q][t] += sh[q][t + h];
            sh[5][t] = fmin(sh[5][t], sh[5][t + h]);
            sh[6][t] = fmax(sh[6][t], sh[6][t + h]);
        }
        __syncthreads();
    }
    if (t < 7) out[t] = sh[t][0];
}

// phi = a x + b y (the start step's Richardson extrapolation), over n values
extern "C" __global__ void sb_combine(const T* x, const T* y, T* z, long long n, T a, T b)
{
    LOOP(i, n) z[i] = a * x[i] + b * y[i];
}

// x += v (the fixed wall's value back onto psi), over n values
extern "C" __global__ void sb_shift(T* x, long long n, T v)
{
    LOOP(i, n) x[i] = x[i] + v;
}
"""


def module(cp, dtype):
    """The compiled module for ``dtype`` (float32 or float64)."""
    import numpy as np

    real = "float" if np.dtype(dtype) == np.float32 else "double"
    src = (SOURCE.replace("REAL", real).replace("FINAL_THREADS", str(FINAL_THREADS))
           .replace("THREADS", str(THREADS)))
    return cp.RawModule(code=src, options=("--std=c++14",), name_expressions=None)
