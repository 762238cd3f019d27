"""pytest plugin: record the argument types of every CUDA kernel the simulator launches.

``python -m pytest -p devtools.ptx_record tests/...`` (under ``NUMBA_ENABLE_CUDASIM=1``, which
``tests/conftest.py`` sets without a GPU) writes ``$PTX_RECORD_DIR/kernels-<pid>.pkl`` (default
``.ptx-record/``): {(module, qualname, factory call): [tuple of numba types, ...]}.
``devtools/ptx_check.py`` then compiles each of them for a real GPU architecture — what the
simulator never does.  Kernels built by factories (cached module-level functions that return
kernels, ``<locals>`` in the kernels' names) are recorded with the factory's module, name and
arguments, so the check can build them again.
"""
from __future__ import annotations

import functools
import importlib
import os
import pickle
import pkgutil

_SEEN: dict = {}
_MADE_BY: dict = {}   # id(simulated kernel) -> (factory module, name, args, sorted kwargs)
_PACKAGES = ("simengine.field", "simengine.network")


def objects_in(value, match, depth=0):
    """The objects for which ``match`` is true in a factory's result: the result itself, or
    inside its tuples, lists, dicts and attributes (two levels down)."""
    if match(value):
        yield value
    elif depth < 2:
        if isinstance(value, (tuple, list)):
            items = value
        elif isinstance(value, dict):
            items = value.values()
        elif hasattr(value, "__dict__") and not isinstance(value, type):
            items = vars(value).values()
        else:
            return
        for v in items:
            yield from objects_in(v, match, depth + 1)


def _wrap_factories() -> None:
    """Wrap the kernel factories of the CUDA modules, also where a module imported one by name."""
    import sys

    wrapped = {}
    for pkg_name in _PACKAGES:
        pkg = importlib.import_module(pkg_name)
        for info in pkgutil.walk_packages(pkg.__path__, pkg_name + "."):
            if "cuda" not in info.name:
                continue
            mod = importlib.import_module(info.name)
            for name, fn in list(vars(mod).items()):
                if (callable(fn) and getattr(fn, "__module__", None) == mod.__name__
                        and (hasattr(fn, "cache_info") or name.startswith("_make"))):
                    wrapped[id(fn)] = _recording_factory(mod.__name__, name, fn)
                    setattr(mod, name, wrapped[id(fn)])
    for mod in list(sys.modules.values()):
        if getattr(mod, "__name__", "").startswith("simengine"):
            for name, value in list(vars(mod).items()):
                if id(value) in wrapped and callable(value):
                    setattr(mod, name, wrapped[id(value)])


def _recording_factory(module, name, fn):
    @functools.wraps(fn)
    def factory(*args, **kwargs):
        from numba.cuda.simulator import kernel as sim

        made = fn(*args, **kwargs)
        for k in objects_in(made, lambda v: isinstance(v, sim.FakeCUDAKernel)):
            _MADE_BY[id(k)] = (module, name, args, tuple(sorted(kwargs.items())))
        return made

    return factory


def _install() -> None:
    from numba import typeof
    from numba.cuda.simulator import kernel as sim
    from numba.cuda.simulator.cudadrv.devicearray import FakeCUDAArray

    launch = sim.FakeCUDAKernel.__call__

    def recording_call(self, *args):
        if not (self._device or sim._kernel_context):   # a launch, not a device-function call
            try:
                types = tuple(typeof(a._ary if isinstance(a, FakeCUDAArray) else a) for a in args)
                key = (self.fn.__module__, self.fn.__qualname__, _MADE_BY.get(id(self)))
                _SEEN.setdefault(key, set()).add(types)
            except Exception as exc:  # an argument numba cannot type: say so in the record
                _SEEN.setdefault(("!untyped", f"{self.fn.__qualname__}: {exc}"[:120], None), set())
        return launch(self, *args)

    sim.FakeCUDAKernel.__call__ = recording_call
    _wrap_factories()


def pytest_configure(config):
    if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
        _install()


def pytest_unconfigure(config):
    if not _SEEN:
        return
    folder = os.environ.get("PTX_RECORD_DIR", ".ptx-record")
    os.makedirs(folder, exist_ok=True)
    with open(os.path.join(folder, f"kernels-{os.getpid()}.pkl"), "wb") as f:
        pickle.dump({k: sorted(v, key=str) for k, v in _SEEN.items()}, f)
