"""One GPU per rank: bind this process to the GPU of its node-local rank."""
from __future__ import annotations


def bind_gpu(comm) -> int | None:
    """Select GPU ``local_rank % number_of_GPUs`` for this process when there is a real CUDA GPU
    and the run has more than one rank; returns the device id (``None`` when nothing was bound).

    Must run before the first CUDA context is created (before any kernel or device array)."""
    if comm.size == 1:
        return None
    try:
        from numba import config, cuda

        if getattr(config, "ENABLE_CUDASIM", 0) or not cuda.is_available():
            return None
        ngpu = len(cuda.gpus)
        if ngpu == 0:
            return None
        dev = comm.local_rank % ngpu
        cuda.select_device(dev)
        return dev
    except Exception:  # pragma: no cover - no numba-cuda / no driver
        return None
