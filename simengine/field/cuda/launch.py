"""The fast launch path of the stage plans — the only module that uses numba-cuda private API.

numba-cuda's ``kernel[grid, block](*args)`` re-types and re-marshals every argument on every
launch. A run only ever launches a plan with three argument lists (the buffers rotate), so a plan
prepares each list once (:func:`prepare`) and launches it directly (:func:`launch`). If the
private API changes, :func:`prepare` raises and the plan falls back to the ordinary launch.
"""
from __future__ import annotations


def compiled(fn):
    """The dispatcher's single compiled kernel, or ``None`` (not compiled yet, or several)."""
    overloads = getattr(fn, "overloads", {})
    if len(overloads) != 1:
        return None
    return next(iter(overloads.values()))


def prepare(kern, stream, griddim, blockdim, args, cooperative=False):
    """Marshal ``args`` once for ``kern`` (a compiled ``_Kernel``): a launch tuple for
    :func:`launch`; ``cooperative``: a cooperative launch (the driver refuses it unless every
    block of the grid can be resident at once)."""
    from cuda.core import LaunchConfig
    from numba.cuda._compat import CUDA_CORE_GE_1_0

    kernelargs, retr = [], []
    for t, v in zip(kern.argument_types, args):
        kern._prepare_args(t, v, stream, retr, kernelargs)
    coop = {"is_cooperative" if CUDA_CORE_GE_1_0 else "cooperative_launch": bool(cooperative)}
    config = LaunchConfig(grid=griddim, block=blockdim, shmem_size=0, **coop)
    return stream, config, kern._codelibrary.get_cufunc().kernel, kernelargs


def launch_cached(plan, key, args, keep, stream) -> bool:
    """Prepare ``args`` for ``plan._fast`` (the compiled kernel), remember the launch tuple in
    ``plan._kargs[key]`` (and ``keep``, the buffers it points to, in ``plan._keep[key]``) and
    launch it; False (nothing launched) if the private API failed: the plan falls back to the
    ordinary launch."""
    try:
        kargs = prepare(plan._fast, stream, plan.griddim, plan.blockdim, args)
    except Exception:  # pragma: no cover - numba-cuda internals changed
        return False
    if len(plan._kargs) > 16:
        plan._kargs.clear()
    plan._kargs[key] = kargs
    plan._keep[key] = keep  # the buffers live as long as their prepared arguments
    launch(*kargs)
    return True


def launch(stream, config, kernel, kernelargs):
    from cuda.core import launch as _launch

    _launch(stream, config, kernel, *kernelargs)


def default_stream():
    """The legacy default stream (numba-cuda's stream 0) as a ``cuda.core`` stream."""
    from cuda.core import LEGACY_DEFAULT_STREAM

    return LEGACY_DEFAULT_STREAM


def record(target, config, kernel, kernelargs):
    """Launch into ``target``: a stream, or a ``cuda.core`` graph builder (recording)."""
    from cuda.core import launch as _launch

    _launch(target, config, kernel, *kernelargs)
