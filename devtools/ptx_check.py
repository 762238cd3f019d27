"""Compile every recorded CUDA kernel for a real GPU, without a GPU.

The CUDA simulator runs the kernels' Python, not numba's CUDA compiler: a kernel can pass every
simulator test and still fail to build on a device (a shared-array shape written as an
expression, an unsupported call, a type unification error), or spill registers.  This compiles
the (kernel, argument types) pairs that ``devtools/ptx_record.py`` recorded with NVVM to PTX and
assembles the PTX with ``ptxas`` for the chosen architecture, printing registers, shared memory
and spills per kernel; the module constants are the GPU's (the simulator's small tile shapes
are not used, since ``NUMBA_ENABLE_CUDASIM`` is unset here).

Needs NVVM, NVRTC and ptxas, which pip installs without a driver::

    pip install "nvidia-nvvm==13.*" "nvidia-cuda-nvrtc==13.*" "nvidia-cuda-nvcc==13.*"
    python -m pytest -q -n 0 -p devtools.ptx_record tests/test_network_cuda.py ...
    python devtools/ptx_check.py [--arch sm_90] [--record .ptx-record]

Kernels built inside factories are built again by calling the recorded factory with its
recorded arguments; a launch whose kernel has no known source is listed as not covered.  Exit
status 1 when a kernel fails to build.
"""
from __future__ import annotations

import argparse
import glob
import importlib
import os
import pickle
import shutil
import subprocess
import sys
import tempfile
import types

_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if _ROOT not in sys.path:   # run as a script: devtools.ptx_record (and simengine) importable
    sys.path.insert(0, _ROOT)


def _ptxas() -> str | None:
    """The ptxas of the pip wheel (its PTX version matches NVVM's), else the one on PATH."""
    try:
        import nvidia.cu13 as cu13

        path = os.path.join(list(cu13.__path__)[0], "bin", "ptxas")
        if os.path.exists(path):
            return path
    except ImportError:
        pass
    return shutil.which("ptxas")


def _records(folder: str) -> dict:
    out: dict = {}
    for name in glob.glob(os.path.join(folder, "kernels-*.pkl")):
        with open(name, "rb") as f:
            for key, sigs in pickle.load(f).items():
                out.setdefault(key, set()).update(sigs)
    return out


def _resolve(module: str, qualname: str, made_by):
    """The Python function of the kernel: a module attribute, or found in what its factory
    returns when called again with the recorded arguments (None when neither works)."""
    if made_by is None:
        if "<locals>" in qualname:
            return None
        obj = importlib.import_module(module)
        for part in qualname.split("."):
            obj = getattr(obj, part)
        return getattr(obj, "py_func", obj)
    fmod, fname, args, kwargs = made_by
    made = getattr(importlib.import_module(fmod), fname)(*args, **dict(kwargs))
    from devtools.ptx_record import objects_in

    kernels = objects_in(made, lambda v: hasattr(v, "py_func") and hasattr(v, "overloads"))
    return next((k.py_func for k in kernels if k.py_func.__qualname__ == qualname), None)


def _assemble(ptxas: str, ptx: str, arch: str) -> tuple[bool, str]:
    with tempfile.TemporaryDirectory() as tmp:
        src = os.path.join(tmp, "k.ptx")
        with open(src, "w") as f:
            f.write(ptx)
        # -c: grid-synchronising kernels call into cudadevrt, which is linked at load time
        r = subprocess.run([ptxas, f"-arch={arch}", "-c", "-v", src, "-o",
                            os.path.join(tmp, "k.o")], capture_output=True, text=True)
    lines = (r.stdout + r.stderr).splitlines()
    info = "; ".join(ln.split(":", 1)[-1].strip() for ln in lines
                     if "Used" in ln or ("spill" in ln and " 0 bytes spill stores" not in ln))
    if r.returncode:
        info = " ".join(lines[-3:])
    return r.returncode == 0, info


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--record", default=os.environ.get("PTX_RECORD_DIR", ".ptx-record"))
    ap.add_argument("--arch", default="sm_90", help="sm_XY (default sm_90, Hopper)")
    a = ap.parse_args(argv)
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        print("ptx_check: unset NUMBA_ENABLE_CUDASIM (the simulator has no compiler)")
        return 2
    cc = (int(a.arch[3:-1]), int(a.arch[-1]))
    import numba.cuda.dispatcher as dispatcher

    # device functions are compiled for the current device: stand one in for the missing GPU
    dispatcher.get_current_device = lambda: types.SimpleNamespace(compute_capability=cc)
    from numba import cuda

    ptxas = _ptxas()
    records = _records(a.record)
    if not records:
        print(f"ptx_check: no records in {a.record}/ (run pytest with -p devtools.ptx_record)")
        return 2
    built = failed = 0
    uncovered = []
    for (module, qualname, made_by), sigs in sorted(records.items(), key=str):
        fn = None if module == "!untyped" else _resolve(module, qualname, made_by)
        if fn is None:
            uncovered.append(f"{module}:{qualname}")
            continue
        where = f"{made_by[1]}{made_by[2]}" if made_by else ""
        for sig in sigs:
            name = f"{module.removeprefix('simengine.')}.{qualname.split('.<locals>.')[-1]}" + (
                f" from {where}" if where else "")
            try:
                ptx, _ = cuda.compile_ptx(fn, sig, cc=cc)
            except Exception as exc:
                failed += 1
                print(f"FAILED {name}{tuple(str(t) for t in sig)}: {type(exc).__name__}: "
                      f"{str(exc).splitlines()[0] if str(exc) else ''}")
                continue
            ok, info = _assemble(ptxas, ptx, a.arch) if ptxas else (True, "(no ptxas: PTX only)")
            built += ok
            failed += not ok
            print(f"{'ok' if ok else 'FAILED'} {name}: {info}")
    print(f"ptx_check {a.arch}: {built} built, {failed} failed; not covered: {len(uncovered)}" + (f" ({', '.join(uncovered)})" if uncovered else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
