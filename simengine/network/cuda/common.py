"""Small kernels shared by the CUDA graph engines (numba specialises them per dtype)."""
from numba import cuda


@cuda.jit
def fill(a, value):
    """a[:] = value for a 1-D device array."""
    i = cuda.grid(1)
    if i < a.size:
        a[i] = value


@cuda.jit
def init_sources(dist, F, srcs):
    """Row b of a batch starts at source srcs[b]: distance 0, in the frontier."""
    b = cuda.grid(1)
    if b < srcs.size:
        dist[b, srcs[b]] = 0
        F[b, srcs[b]] = 1
