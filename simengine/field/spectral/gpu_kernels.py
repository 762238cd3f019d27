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
#: the row kernels' blocks (sb_update, sb_sums): ROW_LANES threads along a row ×
#: ROWS_PER_BLOCK rows (ROW_LANES · ROWS_PER_BLOCK = THREADS)
ROW_LANES, ROWS_PER_BLOCK = 32, 8
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
// spectrum's shape padded in front to (m0, m1, m2). Blocks of ROW_LANES × ROWS_PER_BLOCK threads:
// threadIdx.y takes rows of the last axis (the row's part of the symbol once per row),
// threadIdx.x the modes along the row.
extern "C" __global__ void sb_update(const T* hat, const T* prev, T* ghat, T* out, long long ns,
                                     int ncomp, const double* tab, unsigned int m1,
                                     unsigned int m2, unsigned int o1, unsigned int o2,
                                     double mob, double kap,
                                     double stab, T c1, T c2, T a, T dt, T scale, int have)
{
    unsigned int rows = (unsigned int)(ns / m2);
    for (unsigned int r = blockIdx.x * blockDim.y + threadIdx.y; r < rows;
         r += gridDim.x * blockDim.y) {
        double lr = tab[r / m1] + tab[o1 + r % m1];
        long long base = (long long)r * m2 * ncomp;
        for (unsigned int i2 = threadIdx.x; i2 < m2; i2 += blockDim.x) {
            double lam = lr + tab[o2 + i2];
            T mlam = (T)(mob * lam);
            T dop = (T)(mob * kap * lam * lam - mob * stab * lam);
            T den = a + dt * dop;
            for (int c = 0; c < ncomp; ++c) {
                long long j = base + (long long)i2 * ncomp + c;
                T num = c1 * hat[j] + dt * mlam * ghat[j];
                if (have) num = num - c2 * prev[j];
                T o = num / den;
                out[j] = o;
                ghat[j] = o * scale;
            }
        }
    }
}

// mode 0: no difference term; 1: d = x - y; 2: d = x - ((1+w) y - w z) (y = phi, z = prev).
// Blocks of ROW_LANES × ROWS_PER_BLOCK threads: threadIdx.y takes rows of the last axis (the
// neighbouring rows and the walls decided once per row, as spectral/cpu_kernels.py's
// _row_sums), threadIdx.x the cells along the row.
extern "C" __global__ void sb_sums(const T* x, const T* y, const T* z, int mode, T w,
                                   unsigned int n0, unsigned int n1, unsigned int n2, int nd,
                                   int kind,
                                   double v, double a0, double b1, double b2, double a3,
                                   double* part)
{
    __shared__ double sh[7][THREADS];
    double sd = 0, sx = 0, sxx = 0, sf = 0, sg = 0;
    double mn = INF, mx = -INF;
    unsigned int rows = n0 * n1;
    for (unsigned int r = blockIdx.x * blockDim.y + threadIdx.y; r < rows;
         r += gridDim.x * blockDim.y) {
        unsigned int j0 = r / n1, j1 = r % n1;
        long long base = (long long)r * n2;
        long long up1 = -1, up0 = -1;
        if (j1 + 1 < n1) up1 = base + n2;
        else if (kind == 0) up1 = base - (long long)j1 * n2;
        if (j0 + 1 < n0) up0 = base + (long long)n1 * n2;
        else if (kind == 0) up0 = base - (long long)j0 * n1 * n2;
        int nwall = 0;
        if (nd >= 2 && kind == 2) nwall += (j1 == 0) + (j1 + 1 == n1);
        if (nd >= 3 && kind == 2) nwall += (j0 == 0) + (j0 + 1 == n0);
        for (unsigned int j2 = threadIdx.x; j2 < n2; j2 += blockDim.x) {
            long long i = base + j2;
            double p = (double)x[i];
            sx += p;
            sxx += p * p;
            sf += p * (a0 + p * (b1 + p * (b2 + p * a3 / 4.0)));
            mn = fmin(mn, p);
            mx = fmax(mx, p);
            double t = 0;
            if (j2 + 1 < n2) {
                double d = (double)x[i + 1] - p;
                t += d * d;
            } else if (kind == 0) {
                double d = (double)x[base] - p;
                t += d * d;
            } else if (kind == 2) {
                t += (v - p) * (v - p);
            }
            if (kind == 2 && j2 == 0) t += (p - v) * (p - v);
            if (nd >= 2 && up1 >= 0) {
                double d = (double)x[up1 + j2] - p;
                t += d * d;
            }
            if (nd >= 3 && up0 >= 0) {
                double d = (double)x[up0 + j2] - p;
                t += d * d;
            }
            t += nwall * (p - v) * (p - v);
            sg += t;
            if (mode == 1) {
                double d = p - (double)y[i];
                sd += d * d;
            } else if (mode == 2) {
                T st = (T)((1 + w) * y[i] - w * z[i]);
                double d = p - (double)st;
                sd += d * d;
            }
        }
    }
    int t = threadIdx.y * blockDim.x + threadIdx.x;
    int nt = blockDim.x * blockDim.y;
    sh[0][t] = sd; sh[1][t] = sx; sh[2][t] = sxx; sh[3][t] = sf; sh[4][t] = sg;
    sh[5][t] = mn; sh[6][t] = mx;
    __syncthreads();
    for (int h = nt / 2; h > 0; h >>= 1) {
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
