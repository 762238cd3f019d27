"""Occupancy report of a compiled CUDA field kernel: registers, shared and local memory from the
numba-cuda dispatcher, the device's per-SM limits, the theoretical occupancy and its limiter."""
from __future__ import annotations

import math

import numpy as np
from numba import cuda

from .config import SIMULATOR


def device_attr(dev, name, default=None):
    try:
        return getattr(dev, name)
    except Exception:
        return default


def occupancy_report(plan) -> dict:
    """Registers, shared/local memory and theoretical occupancy of a compiled :class:`StageLaunch`.

    The kernel must have been launched (compiled) once. Under the simulator the resource figures
    are None."""
    threads = int(np.prod(plan.blockdim))
    rep = {"kernel": plan.kernel_name, "layout": plan.layout, "block": list(plan.blockdim),
           "threads_per_block": threads, "grid": list(plan.griddim)}
    if SIMULATOR:
        rep.update(registers_per_thread=None, shared_mem_per_block=None,
                   local_mem_per_thread=None, occupancy=None)
        return rep
    fn = plan.fn

    def one(getter):
        v = getter()
        if isinstance(v, dict):
            v = next(iter(v.values())) if v else None
        return v

    regs = one(fn.get_regs_per_thread)
    smem = one(fn.get_shared_mem_per_block)
    lmem = one(fn.get_local_mem_per_thread)
    maxthr = one(fn.get_max_threads_per_block)
    dev = cuda.get_current_device()
    thr_sm = device_attr(dev, "MAX_THREADS_PER_MULTI_PROCESSOR", 2048)
    regs_sm = device_attr(dev, "MAX_REGISTERS_PER_MULTIPROCESSOR", 65536)
    smem_sm = device_attr(dev, "MAX_SHARED_MEMORY_PER_MULTIPROCESSOR", 228 * 1024)
    blocks_sm = device_attr(dev, "MAX_BLOCKS_PER_MULTIPROCESSOR", 32)
    warps = math.ceil(threads / 32)
    by_threads = thr_sm // (warps * 32)
    # registers are allocated per warp in units of 256
    regs_warp = math.ceil((regs or 1) * 32 / 256) * 256
    by_regs = regs_sm // (regs_warp * warps) if regs else blocks_sm
    by_smem = (smem_sm // (smem + 1024)) if smem else blocks_sm  # 1 KB reserved per block
    active = max(0, min(blocks_sm, by_threads, by_regs, by_smem))
    limiter = min((("threads", by_threads), ("registers", by_regs), ("shared", by_smem),
                   ("blocks", blocks_sm)), key=lambda kv: kv[1])[0]
    try:  # how many read-only (texture path) loads the PTX has
        ptx = one(fn.inspect_asm)
        nc_loads = ptx.count("ld.global.nc")
    except Exception:  # pragma: no cover
        nc_loads = None
    rep.update(ptx_ld_global_nc=nc_loads)
    rep.update(registers_per_thread=regs, shared_mem_per_block=smem, local_mem_per_thread=lmem,
               max_threads_per_block=maxthr, blocks_per_sm=active,
               occupancy=active * warps * 32 / thr_sm, limited_by=limiter,
               sm_count=device_attr(dev, "MULTIPROCESSOR_COUNT"))
    return rep
