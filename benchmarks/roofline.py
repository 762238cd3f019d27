"""The honest memory roofline of a GPU: the best device-to-device copy bandwidth measured now.

A stencil benchmark's "% of roofline" is only meaningful against the fastest copy the card can
do in the same run, not against one slow copy that flatters the table. :func:`copy_roofline`
times several copies of a 1 GiB buffer and keeps the best:

* ``numba memcpy`` — ``DeviceNDArray.copy_to_device`` (``cuMemcpyDtoD``),
* ``numba kernel`` — a plain grid-stride copy kernel, 16-byte elements (two float64 per load),
* ``cupy`` — ``cupy.copyto`` (if CuPy is installed),
* ``torch`` — ``Tensor.copy_`` (if PyTorch is installed).

Bandwidth counts bytes read + written (2 × size), the median of ``reps`` timed copies (CUDA
events), after warm-up.

    python benchmarks/roofline.py
"""
from __future__ import annotations

import time

import numpy as np
from numba import cuda


def _events_median(fn, reps):
    fn()
    fn()
    cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = cuda.event(), cuda.event()
        s.record()
        fn()
        e.record()
        e.synchronize()
        ts.append(cuda.event_elapsed_time(s, e) / 1e3)
    return float(np.median(ts))


@cuda.jit
def _copy_kernel(src, dst):
    # src/dst: (n, 2) float64 = 16-byte rows; grid-stride loop
    i = cuda.grid(1)
    stride = cuda.gridsize(1)
    n = src.shape[0]
    while i < n:
        dst[i, 0] = src[i, 0]
        dst[i, 1] = src[i, 1]
        i += stride


def numba_memcpy(nbytes, reps):
    n = nbytes // 8
    a = cuda.device_array(n, np.float64)
    b = cuda.device_array(n, np.float64)
    t = _events_median(lambda: b.copy_to_device(a), reps)
    return 2 * n * 8 / t


def numba_kernel(nbytes, reps):
    n = nbytes // 16
    a = cuda.device_array((n, 2), np.float64)
    b = cuda.device_array((n, 2), np.float64)
    sms = cuda.get_current_device().MULTIPROCESSOR_COUNT
    best = 0.0
    for threads, per_sm in ((256, 8), (512, 4), (1024, 2), (256, 32)):
        blocks = sms * per_sm
        k = _copy_kernel[blocks, threads]
        t = _events_median(lambda: k(a, b), reps)
        best = max(best, 2 * n * 16 / t)
    return best


def cupy_copy(nbytes, reps):
    import cupy as cp

    n = nbytes // 8
    a = cp.zeros(n, cp.float64)
    b = cp.empty_like(a)

    def run():
        cp.copyto(b, a)

    run()
    cp.cuda.Device().synchronize()
    ts = []
    for _ in range(reps):
        s, e = cp.cuda.Event(), cp.cuda.Event()
        s.record()
        run()
        e.record()
        e.synchronize()
        ts.append(cp.cuda.get_elapsed_time(s, e) / 1e3)
    return 2 * n * 8 / float(np.median(ts))


def torch_copy(nbytes, reps):
    import torch

    n = nbytes // 8
    a = torch.zeros(n, dtype=torch.float64, device="cuda")
    b = torch.empty_like(a)
    b.copy_(a)
    torch.cuda.synchronize()
    ts = []
    for _ in range(reps):
        s, e = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
        s.record()
        b.copy_(a)
        e.record()
        e.synchronize()
        ts.append(s.elapsed_time(e) / 1e3)
    return 2 * n * 8 / float(np.median(ts))


METHODS = {"numba memcpy": numba_memcpy, "numba kernel": numba_kernel, "cupy": cupy_copy,
           "torch": torch_copy}


def copy_roofline(nbytes=1 << 30, reps=20, verbose=True):
    """``(best bytes/s, name of the best method, {method: bytes/s or error text})``."""
    results = {}
    for name, fn in METHODS.items():
        try:
            results[name] = fn(nbytes, reps)
        except Exception as exc:  # library missing, or out of memory
            results[name] = f"n/a ({type(exc).__name__})"
    numbers = {k: v for k, v in results.items() if isinstance(v, float)}
    best = max(numbers, key=numbers.get)
    if verbose:
        parts = ", ".join(f"{k} {v / 1e9:.0f}" if isinstance(v, float) else f"{k} {v}"
                          for k, v in results.items())
        print(f"roofline (device copy, read+write GB/s): {parts}; best {best} "
              f"{numbers[best] / 1e9:.0f} GB/s", flush=True)
    return numbers[best], best, results


if __name__ == "__main__":
    from simengine.field.cuda_tuning import gpu_name

    print(f"# {gpu_name()} {time.strftime('%Y-%m-%d')}")
    copy_roofline()
