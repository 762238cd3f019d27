"""Start-up hook of the Python subprocesses that the tests launch (``tests/conftest.py`` puts
this folder on ``PYTHONPATH``): under the CUDA simulator, give it the blocking barrier of
:mod:`simulator_barrier` as soon as numba's simulator kernel module is imported. Nothing is
imported at start-up, so subprocesses that never touch the simulator pay nothing."""
import os
import sys

if os.environ.get("NUMBA_ENABLE_CUDASIM") == "1":
    import importlib.abc
    import importlib.util

    class _PatchOnImport(importlib.abc.MetaPathFinder):
        NAME = "numba.cuda.simulator.kernel"

        def find_spec(self, name, path=None, target=None):
            if name != self.NAME:
                return None
            sys.meta_path.remove(self)
            spec = importlib.util.find_spec(name)
            if spec is None or spec.loader is None:
                return spec
            run = spec.loader.exec_module

            def exec_and_patch(module):
                run(module)
                import simulator_barrier

                simulator_barrier.patch(module)

            spec.loader.exec_module = exec_and_patch
            return spec

    sys.meta_path.insert(0, _PatchOnImport())
