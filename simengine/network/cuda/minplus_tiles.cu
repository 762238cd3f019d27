// Min-plus kernels of the blocked Floyd–Warshall in CUDA C++ (compiled by NVRTC through CuPy:
// simengine/network/cuda/minplus_nvrtc.py; the numba twins are in minplus.py).  Round depth
// R = 128: round k closes the intermediates k0 = 128·k … k0 + 127 in three phases:
//   fw_diag     — the diagonal tile, 128 in-place steps, the tile in registers (1024 threads);
//   fw_product  — WHICH = 20: the row panel C(k, j) ← min(C, D*(k,k) ⊗ C(k, j)),
//                 WHICH = 21: the column panel C(i, k) ← min(C, C(i, k) ⊗ D*(k,k)),
//                 WHICH = 3:  every other tile C(i, j) ← min(C, C(i, k) ⊗ C(k, j)),
//                 WHICH = 4 / 5: the same split in two for the look-ahead — the tiles of row and
//                 column k + 1 first (the next round's diagonal and panels can then start on
//                 a second stream), then the others.
// The product is shaped like an SGEMM: a BM × BN output tile per block, TM × TN outputs per
// thread in registers (groups of 4 rows / 4 columns, so every shared read is 16 bytes), the
// 128-deep inner dimension streamed KC at a time through a STAGES-deep ring of shared tiles
// filled by cp.async (A row-major with 4 words of padding: no bank conflicts), C read once at
// the end.  A panel block owns all 128 rows (row panel) or columns (column panel) of the panel
// that is its operand, so no block reads what another writes.
//
// MODE (the add-and-min and the predecessors):
//   0  float,  acc = fminf(acc, a + b)
//   1  int,    acc = __viaddmin_s32(a, b, acc)  (one VIADDMNMX on sm_90; INF = 2^30 - 1)
//   2  int,    acc = min(acc, a + b)
//   3  int + predecessors, packed: a' = a·128 + kk, b' = b·128, acc = __viaddmin_s32(a', b', acc)
//      gives the smallest distance and, on ties, the smallest kk in one instruction; distances
//      must stay below 2^22 (the caller checks); P[i, j] ← P[k0 + kk, j] where it improves
//   4  T + predecessors, select: if (a + b < acc) { acc = a + b; kk* = kk }
//   5  float + predecessors, by chunk: the add-and-min of mode 0 into a chunk minimum, merged
//      after each chunk of KC (recording the chunk of the last strict improvement); where the
//      tile improves, the first kk of that chunk whose sum equals the minimum is searched in
//      the operands (device memory, KC candidates)
// no includes: NVRTC compiles it as is (the DPX intrinsic only with -DSE_DPX)

#define SE_R 128
#define SE_INT_INF 1073741823            // 2^30 - 1: INF + INF < 2^31
#define SE_PACK_BIG 1073741823           // packed "no path"
#define SE_PACK_LIM 4194304              // 2^22: finite distances of mode 3 stay below

template <typename T> struct V4;
template <> struct V4<float> { typedef float4 t; typedef float2 t2; };
template <> struct V4<int> { typedef int4 t; typedef int2 t2; };

__device__ __forceinline__ void se_cp16(void *smem, const void *gmem) {
    unsigned s = (unsigned)__cvta_generic_to_shared(smem);
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16;\n" ::"r"(s), "l"(gmem));
}
__device__ __forceinline__ void se_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N> __device__ __forceinline__ void se_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

template <typename T, int MODE> __device__ __forceinline__ T se_inf();
template <> __device__ __forceinline__ float se_inf<float, 0>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ float se_inf<float, 4>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ float se_inf<float, 5>() { return __int_as_float(0x7f800000); }
template <> __device__ __forceinline__ int se_inf<int, 1>() { return SE_INT_INF; }
template <> __device__ __forceinline__ int se_inf<int, 2>() { return SE_INT_INF; }
template <> __device__ __forceinline__ int se_inf<int, 3>() { return 0x7fffffff; }
template <> __device__ __forceinline__ int se_inf<int, 4>() { return SE_INT_INF; }

__device__ __forceinline__ float se_step(float a, float b, float acc, int mode) {
    return fminf(acc, a + b);
}
__device__ __forceinline__ int se_step(int a, int b, int acc, int mode) {
#ifdef SE_DPX
    if (mode != 2) return __viaddmin_s32(a, b, acc);
#endif
    return min(acc, a + b);
}

template <typename T, int MODE, int WHICH, int BM, int BN, int TM, int TN, int KC, int STAGES,
          int VA>
__device__ __forceinline__ void se_product(T *__restrict__ D, int *__restrict__ P, int npad,
                                           int k0, int bx, int by)
{
    typedef typename V4<T>::t T4;
    typedef typename V4<T>::t2 T2;
    constexpr int TX = BN / TN, TY = BM / TM, NT = TX * TY;
    constexpr int GM = TM / 4, GN = TN / 4;         // groups of 4 rows / columns per thread
    constexpr int SM_ = BM / GM, SN = BN / GN;      // stride between a thread's groups
    constexpr int PA = 4, LA = KC + PA;             // A: [BM][KC + 4]
    constexpr int LB = BN;                          // B: [KC][BN]
    constexpr int ASZ = BM * LA, BSZ = KC * LB, SSZ = ASZ + BSZ;
    constexpr int CA = BM * KC / 4, CB = KC * BN / 4;   // 16-byte copies per stage
    constexpr int NC = SE_R / KC;
    constexpr bool PRED = MODE >= 3;
    static_assert(CA % NT == 0 && CB % NT == 0, "copies per thread");
    static_assert(TM % 4 == 0 && TN % 4 == 0 && SE_R % KC == 0 && KC % 4 == 0, "tile shape");
    static_assert(VA == 2 || VA == 4, "A is read 2 or 4 kk at a time");
    static_assert(MODE != 5 || NC <= 16, "mode 5 keeps 4-bit chunk indices");
    static_assert(WHICH != 20 || BM == SE_R, "row panel blocks own the panel's rows");
    static_assert((WHICH != 4 && WHICH != 5) || (BM == SE_R && BN == SE_R), "round-sized tiles");
    static_assert(WHICH != 21 || BN == SE_R, "column panel blocks own the panel's columns");

    int r0, c0;
    if (WHICH == 3) {
        r0 = by * BM; c0 = bx * BN;
        if ((r0 < k0 + SE_R && r0 + BM > k0) || (c0 < k0 + SE_R && c0 + BN > k0)) return;
    } else if (WHICH == 4) {           // look-ahead: the tiles of row and column k + 1
        if (by == 0) {
            r0 = k0 + SE_R; c0 = bx * BN;
            if (c0 == k0) return;
        } else {
            r0 = bx * BM; c0 = k0 + SE_R;
            if (r0 == k0 || r0 == k0 + SE_R) return;
        }
    } else if (WHICH == 5) {           // look-ahead: every tile outside rows/columns k, k + 1
        r0 = by * BM; c0 = bx * BN;
        if (r0 == k0 || r0 == k0 + SE_R || c0 == k0 || c0 == k0 + SE_R) return;
    } else if (WHICH == 20) {
        r0 = k0; c0 = bx * BN;
        if (c0 < k0 + SE_R && c0 + BN > k0) return;
    } else {
        r0 = bx * BM; c0 = k0;
        if (r0 < k0 + SE_R && r0 + BM > k0) return;
    }
    extern __shared__ __align__(16) unsigned char se_smem[];
    T *sm = reinterpret_cast<T *>(se_smem);
    const int tid = threadIdx.x;
    const int tx = tid % TX, ty = tid / TX;

    // the copies of one stage: chunk c covers columns k0 + c·KC … of A and rows of B
    auto load = [&](int c) {
        T *As = sm + (c % STAGES) * SSZ;
        T *Bs = As + ASZ;
#pragma unroll
        for (int q = 0; q < CA / NT; ++q) {
            int e = tid + q * NT, i = e / (KC / 4), c4 = e % (KC / 4);
            se_cp16(As + i * LA + c4 * 4, D + (unsigned long long)(r0 + i) * npad + k0 + c * KC + c4 * 4);
        }
#pragma unroll
        for (int q = 0; q < CB / NT; ++q) {
            int e = tid + q * NT, kb = e / (BN / 4), j4 = e % (BN / 4);
            se_cp16(Bs + kb * LB + j4 * 4, D + (unsigned long long)(k0 + c * KC + kb) * npad + c0 + j4 * 4);
        }
    };
    // mode 3: the thread re-codes the words it copied itself (visible to it after the wait)
    auto pack = [&](int c) {
        int *As = reinterpret_cast<int *>(sm + (c % STAGES) * SSZ);
        int *Bs = As + ASZ;
#pragma unroll
        for (int q = 0; q < CA / NT; ++q) {
            int e = tid + q * NT, i = e / (KC / 4), c4 = e % (KC / 4);
            int4 *p = reinterpret_cast<int4 *>(As + i * LA + c4 * 4);
            int4 v = *p;
            int kk = c * KC + c4 * 4;
            v.x = v.x >= SE_PACK_LIM ? SE_PACK_BIG : (v.x << 7) + kk;
            v.y = v.y >= SE_PACK_LIM ? SE_PACK_BIG : (v.y << 7) + kk + 1;
            v.z = v.z >= SE_PACK_LIM ? SE_PACK_BIG : (v.z << 7) + kk + 2;
            v.w = v.w >= SE_PACK_LIM ? SE_PACK_BIG : (v.w << 7) + kk + 3;
            *p = v;
        }
#pragma unroll
        for (int q = 0; q < CB / NT; ++q) {
            int e = tid + q * NT, kb = e / (BN / 4), j4 = e % (BN / 4);
            int4 *p = reinterpret_cast<int4 *>(Bs + kb * LB + j4 * 4);
            int4 v = *p;
            v.x = v.x >= SE_PACK_LIM ? SE_PACK_BIG : (v.x << 7);
            v.y = v.y >= SE_PACK_LIM ? SE_PACK_BIG : (v.y << 7);
            v.z = v.z >= SE_PACK_LIM ? SE_PACK_BIG : (v.z << 7);
            v.w = v.w >= SE_PACK_LIM ? SE_PACK_BIG : (v.w << 7);
            *p = v;
        }
    };

    T acc[TM][TN];
    int kb[TM][TN];                           // mode 4: the first kk of the minimum
    T cm[TM][TN];                             // mode 5: the minimum of the current chunk
    unsigned kc[(TM * TN + 7) / 8];           // mode 5: its chunk index, 4 bits per output
#pragma unroll
    for (int q = 0; q < (TM * TN + 7) / 8; ++q) kc[q] = 0;
    const T INF = se_inf<T, MODE>();
#pragma unroll
    for (int r = 0; r < TM; ++r)
#pragma unroll
        for (int c = 0; c < TN; ++c) {
            acc[r][c] = INF;
            cm[r][c] = INF;
            if (MODE == 4) kb[r][c] = -1;
        }

#pragma unroll
    for (int s = 0; s < STAGES - 1; ++s) {
        if (s < NC) load(s);
        se_commit();
    }
#pragma unroll 1
    for (int c = 0; c < NC; ++c) {
        se_wait<STAGES - 2>();
        if (MODE == 3) pack(c);
        __syncthreads();
        if (c + STAGES - 1 < NC) load(c + STAGES - 1);
        se_commit();
        const T *As = sm + (c % STAGES) * SSZ;
        const T *Bs = As + ASZ;
#pragma unroll
        for (int kq = 0; kq < KC / VA; ++kq) {
            T a[TM][VA];                        // VA consecutive kk of the thread's TM rows
#pragma unroll
            for (int r = 0; r < TM; ++r) {
                const T *src = As + ((r / 4) * SM_ + ty * 4 + (r % 4)) * LA + kq * VA;
                if (VA == 4) {
                    T4 v = *reinterpret_cast<const T4 *>(src);
                    a[r][0] = v.x; a[r][1 % VA] = v.y; a[r][2 % VA] = v.z; a[r][3 % VA] = v.w;
                } else {
                    T2 v = *reinterpret_cast<const T2 *>(src);
                    a[r][0] = v.x; a[r][1 % VA] = v.y;
                }
            }
#pragma unroll
            for (int u = 0; u < VA; ++u) {
                T b[TN];
#pragma unroll
                for (int g = 0; g < GN; ++g) {
                    T4 v = *reinterpret_cast<const T4 *>(Bs + (kq * VA + u) * LB + g * SN + tx * 4);
                    b[g * 4 + 0] = v.x; b[g * 4 + 1] = v.y; b[g * 4 + 2] = v.z; b[g * 4 + 3] = v.w;
                }
#pragma unroll
                for (int r = 0; r < TM; ++r) {
#pragma unroll
                    for (int cc = 0; cc < TN; ++cc) {
                        if (MODE == 4) {
                            T cand = a[r][u] + b[cc];
                            if (cand < acc[r][cc]) {
                                acc[r][cc] = cand;
                                kb[r][cc] = c * KC + kq * VA + u;
                            }
                        } else if (MODE == 5) {
                            cm[r][cc] = fminf(cm[r][cc], a[r][u] + b[cc]);
                        } else {
                            acc[r][cc] = se_step(a[r][u], b[cc], acc[r][cc], MODE);
                        }
                    }
                }
            }
        }
        if (MODE == 5) {                  // the chunk of the last strict improvement
#pragma unroll
            for (int r = 0; r < TM; ++r)
#pragma unroll
                for (int cc = 0; cc < TN; ++cc) {
                    if (cm[r][cc] < acc[r][cc]) {
                        const int e = r * TN + cc, sh = (e & 7) * 4;
                        acc[r][cc] = cm[r][cc];
                        kc[e >> 3] = (kc[e >> 3] & ~(15u << sh)) | ((unsigned)c << sh);
                    }
                    cm[r][cc] = INF;
                }
        }
    }
    se_wait<0>();
    if (WHICH == 20) __syncthreads();     // the output tile was an operand: all reads done

    if (!PRED) {
#pragma unroll
        for (int r = 0; r < TM; ++r) {
            unsigned long long row = (unsigned long long)(r0 + (r / 4) * SM_ + ty * 4 + (r % 4)) * npad;
#pragma unroll
            for (int g = 0; g < GN; ++g) {
                T4 *p = reinterpret_cast<T4 *>(D + row + c0 + g * SN + tx * 4);
                T4 v = *p;
                v.x = min(v.x, acc[r][g * 4 + 0]);
                v.y = min(v.y, acc[r][g * 4 + 1]);
                v.z = min(v.z, acc[r][g * 4 + 2]);
                v.w = min(v.w, acc[r][g * 4 + 3]);
                *p = v;
            }
        }
        return;
    }
    // predecessors: the new distance and P[k0 + kk, j] where the tile improves (kk: the first of
    // the minimum); the row panel's P is its own output tile, so it is read before any write
    // (mode 5 also reads the operands again: both panels then write after a barrier)
    constexpr bool TWO = WHICH == 20 || (MODE == 5 && WHICH == 21);
    constexpr int PR = TWO ? TM : 1, PC = TWO ? TN : 1;
    int pn[PR][PC];
#pragma unroll
    for (int pass = 0; pass < (TWO ? 2 : 1); ++pass) {
        if (pass == 1) __syncthreads();
#pragma unroll
        for (int r = 0; r < TM; ++r) {
            unsigned long long row = (unsigned long long)(r0 + (r / 4) * SM_ + ty * 4 + (r % 4)) * npad;
#pragma unroll
            for (int cc = 0; cc < TN; ++cc) {
                int j = c0 + (cc / 4) * SN + tx * 4 + (cc % 4);
                if (TWO && pass == 1) {
                    if (pn[r % PR][cc % PC] != -2) {
                        D[row + j] = acc[r][cc];
                        P[row + j] = pn[r % PR][cc % PC];
                    }
                    continue;
                }
                T old = D[row + j];
                int kk = -1;
                if (MODE == 3) {
                    int v = (int)acc[r][cc];
                    if (v < SE_PACK_BIG && (v >> 7) < (int)old) {
                        kk = v & 127;
                        acc[r][cc] = (T)(v >> 7);
                    }
                } else if (MODE == 5 && acc[r][cc] < old) {
                    // the first kk of the recorded chunk whose sum is the minimum (the same
                    // addition, so bit-equal); its chunk predecessors all gave larger sums
                    const int e = r * TN + cc;
                    const int base = (int)((kc[e >> 3] >> ((e & 7) * 4)) & 15u) * KC;
                    const T *arow = D + row + k0 + base;
                    const T *bcol = D + (unsigned long long)(k0 + base) * npad + j;
                    kk = base;
#pragma unroll
                    for (int q = KC - 1; q >= 0; --q)   // all loads independent: no early exit
                        if (arow[q] + bcol[(unsigned long long)q * npad] == acc[r][cc])
                            kk = base + q;
                } else if (MODE != 5 && acc[r][cc] < old) {
                    kk = kb[r][cc];
                }
                if (TWO) {
                    pn[r % PR][cc % PC] = kk < 0 ? -2 : P[(unsigned long long)(k0 + kk) * npad + j];
                } else if (kk >= 0) {
                    P[row + j] = P[(unsigned long long)(k0 + kk) * npad + j];
                    D[row + j] = acc[r][cc];
                }
            }
        }
    }
}

template <typename T, int MODE, int WHICH, int BM, int BN, int TM, int TN, int KC, int STAGES,
          int MINB, int VA>
__global__ void __launch_bounds__((BM / TM) * (BN / TN), MINB)
fw_product(T *__restrict__ D, int *__restrict__ P, int npad, int k0)
{
    se_product<T, MODE, WHICH, BM, BN, TM, TN, KC, STAGES, VA>(D, P, npad, k0, blockIdx.x,
                                                               blockIdx.y);
}

// Both panels of a round in one launch (blockIdx.y = 0: row panel in 128 × 64 tiles, 1: column
// panel in 64 × 128 tiles; 256 threads, 8 × 4 / 4 × 8 outputs each): twice the blocks of either.
template <typename T, int MODE, int KC, int STAGES, int MINB, int VA>
__global__ void __launch_bounds__(256, MINB)
fw_panels(T *__restrict__ D, int *__restrict__ P, int npad, int k0)
{
    if (blockIdx.y == 0)
        se_product<T, MODE, 20, 128, 64, 8, 4, KC, STAGES, VA>(D, P, npad, k0, blockIdx.x, 0);
    else
        se_product<T, MODE, 21, 64, 128, 4, 8, KC, STAGES, VA>(D, P, npad, k0, blockIdx.x, 0);
}

// The diagonal tile (k0 … k0 + 127)²: 128 steps, 32 × 32 threads with 4 × 4 values each (rows
// ty + 32a, columns tx + 32b); row kk and column kk go through double-buffered shared vectors,
// one barrier per step (they do not change in step kk: the diagonal is 0, weights ≥ 0).  It runs
// on one SM: with the look-ahead (minplus_nvrtc.py) it overlaps the previous round's rest.
template <typename T, bool PRED>
__global__ void __launch_bounds__(1024, 1)
fw_diag(T *__restrict__ D, int *__restrict__ P, int npad, int k0)
{
    __shared__ T rowb[2][SE_R], colb[2][SE_R];
    __shared__ int prow[2][PRED ? SE_R : 1];
    const int tx = threadIdx.x, ty = threadIdx.y;
    T v[4][4];
    int p[4][4];
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            unsigned long long at = (unsigned long long)(k0 + ty + 32 * a) * npad + k0 + tx + 32 * b;
            v[a][b] = D[at];
            if (PRED) p[a][b] = P[at];
        }
    // step kk = 32·A + q: row kk is v[A][·] of the threads with ty == q, column kk is v[·][A] of
    // those with tx == q (A unrolled: registers indexed by constants only)
#pragma unroll
    for (int A = 0; A < 4; ++A) {
#pragma unroll 1
        for (int q = 0; q < 32; ++q) {
            const int s = q & 1;
            if (ty == q) {
#pragma unroll
                for (int b = 0; b < 4; ++b) {
                    rowb[s][tx + 32 * b] = v[A][b];
                    if (PRED) prow[s][tx + 32 * b] = p[A][b];
                }
            }
            if (tx == q) {
#pragma unroll
                for (int a = 0; a < 4; ++a) colb[s][ty + 32 * a] = v[a][A];
            }
            __syncthreads();
            T rb[4];
            int rp[4];
#pragma unroll
            for (int b = 0; b < 4; ++b) {
                rb[b] = rowb[s][tx + 32 * b];
                if (PRED) rp[b] = prow[s][tx + 32 * b];
            }
#pragma unroll
            for (int a = 0; a < 4; ++a) {
                T ca = colb[s][ty + 32 * a];
#pragma unroll
                for (int b = 0; b < 4; ++b) {
                    T cand = ca + rb[b];
                    if (PRED) {
                        if (cand < v[a][b]) {
                            v[a][b] = cand;
                            p[a][b] = rp[b];
                        }
                    } else {
                        v[a][b] = min(v[a][b], cand);
                    }
                }
            }
        }
    }
#pragma unroll
    for (int a = 0; a < 4; ++a)
#pragma unroll
        for (int b = 0; b < 4; ++b) {
            unsigned long long at = (unsigned long long)(k0 + ty + 32 * a) * npad + k0 + tx + 32 * b;
            D[at] = v[a][b];
            if (PRED) P[at] = p[a][b];
        }
}
