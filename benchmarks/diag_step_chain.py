"""Diagnostic: what one step of the small-grid fused kernel costs when nothing synchronises
blocks (a persistent kernel, one block per 8x8 tile of 200^2, 16x16 threads), piece by piece."""
import time, sys
import numpy as np
from numba import cuda, float64, int64
sys.path.insert(0, ".")
from simengine.field.cuda.access import LDCG, ST

N = 200; TX = TY = 8; PX = PY = 16; NT = 625
STEPS = 20000

def timeit(fn, *args, grid=NT, block=(16, 16)):
    fn[grid, block](*args, 10); cuda.synchronize()
    t = time.perf_counter(); fn[grid, block](*args, STEPS); cuda.synchronize()
    return (time.perf_counter() - t) / STEPS * 1e6

@cuda.jit
def barriers6(a, b, nsteps):
    for s in range(nsteps):
        for k in range(6):
            cuda.syncthreads()

@cuda.jit
def ldst(a, b, nsteps):
    tx = cuda.threadIdx.x; ty = cuda.threadIdx.y
    t = cuda.blockIdx.x
    i0 = (t % 25) * 8 - 4 + tx; j0 = (t // 25) * 8 - 4 + ty
    src, out = a, b
    for s in range(nsteps):
        gi = i0 if i0 >= 0 and i0 < N else i0 % N
        gj = j0 if j0 >= 0 and j0 < N else j0 % N
        v = LDCG(src, gj * N + gi)
        cuda.syncthreads()
        if tx >= 4 and tx < 12 and ty >= 4 and ty < 12:
            ST(out, gj * N + gi, v + 1.0)
        cuda.syncthreads()
        src, out = out, src

@cuda.jit
def phases(a, b, nsteps):
    sphi = cuda.shared.array(256, float64); smu = cuda.shared.array(256, float64)
    sst = cuda.shared.array(256, float64)
    tx = cuda.threadIdx.x; ty = cuda.threadIdx.y
    q = ty * 16 + tx
    sphi[q] = 0.01 * q; smu[q] = 0.0; sst[q] = 0.0
    cuda.syncthreads()
    acc = 0.0
    for s in range(nsteps):
        for ph in range(4):
            a_ = ph + 1
            if tx >= a_ and tx < 16 - a_ and ty >= a_ and ty < 16 - a_:
                src = sphi if ph % 2 == 0 else smu
                p = src[q]
                sm = (src[q - 1] + src[q + 1]) + (src[q - 16] + src[q + 16])
                m = 0.1 + p * (0.2 + p * (0.3 + p * 0.4)) - 0.5 * (sm - 4.0 * p)
                if ph % 2 == 0:
                    smu[q] = m
                else:
                    sst[q] = m * 1e-3
            cuda.syncthreads()
        if tx == 5 and ty == 5:
            acc += sst[q]
    if acc == 12345.0:
        a[0] = acc

a = cuda.to_device(np.random.default_rng(0).uniform(-0.1, 0.1, N * N))
b = cuda.device_array_like(a)
print("6 barriers per step: %.2f us/step" % timeit(barriers6, a, b))
print("ld.cg + barrier + store + barrier: %.2f us/step" % timeit(ldst, a, b))
print("4 shared phases + 4 barriers: %.2f us/step" % timeit(phases, a, b))
print("same, one block: %.2f us/step" % timeit(phases, a, b, grid=1))
print("ld/st, one block: %.2f us/step" % timeit(ldst, a, b, grid=1))
