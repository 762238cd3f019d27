// Hopper DPX min-plus step for the Floyd–Warshall product kernel (simengine/network/cuda/minplus.py).
// Numba's foreign-function ABI: the first argument points to the return value, the int result
// signals "no exception".  Linked with LTO (nvJitLink) the call is inlined into the kernel.
#include <cuda_runtime.h>

extern "C" __device__ int se_viaddmin(int *ret, int a, int b, int c)
{
    *ret = __viaddmin_s32(a, b, c);   // min(a + b, c): one VIADDMNMX on sm_90
    return 0;
}
