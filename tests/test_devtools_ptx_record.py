"""devtools/ptx_record.py records the simulated kernel launches (also kernels built by
factories, with the factory call), and devtools/ptx_check.py finds each recorded kernel's
Python function again outside the simulator — the part of the compile check that needs no NVVM."""
from __future__ import annotations

import os
import pickle
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_records_factory_kernels_and_finds_them_again(tmp_path):
    test = tmp_path / "test_one_launch.py"
    test.write_text(textwrap.dedent("""
        import numpy as np
        from simengine.network.cuda import common
        from simengine.field.cuda.reduce import RED_THREADS, reduction_kernel

        def test_launch():
            a = np.zeros(8, np.int32)
            common.fill[1, 8](a, 3)
            assert (a == 3).all()
            phi, partial = np.ones(16), np.zeros((1, 5))
            reduction_kernel(1, 0)[1, RED_THREADS](phi, partial, 16, 1, 1, 0, 16,
                                                   0.0, 0.0, 0.0, 0.0, 0.0)
            assert partial[0, 0] == 16.0
    """))
    record = tmp_path / "record"
    env = dict(os.environ, NUMBA_ENABLE_CUDASIM="1", PTX_RECORD_DIR=str(record),
               PYTHONPATH=os.pathsep.join([str(ROOT)] + [p for p in [os.environ.get(
                   "PYTHONPATH")] if p]))
    r = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                        "-p", "devtools.ptx_record", str(test)], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stdout + r.stderr
    (pkl,) = record.glob("kernels-*.pkl")
    seen = pickle.loads(pkl.read_bytes())
    key = ("simengine.network.cuda.common", "fill", None)
    assert key in seen and len(seen[key]) == 1
    assert [str(t) for t in seen[key][0]] == ["array(int32, 1d, C)", "int64"]
    (made,) = [k for k in seen if k[0] == "simengine.field.cuda.reduce"]
    assert made[1] == "reduction_kernel.<locals>.kernel"
    assert made[2] == ("simengine.field.cuda.reduce", "reduction_kernel", (1, 0), ())
    assert [str(t) for t in seen[made][0]][:3] == ["array(float64, 1d, C)",
                                                   "array(float64, 2d, C)", "int64"]
    probe = textwrap.dedent("""
        import sys
        sys.path.insert(0, %r)
        from devtools.ptx_check import _resolve
        fn = _resolve("simengine.field.cuda.reduce", "reduction_kernel.<locals>.kernel",
                      ("simengine.field.cuda.reduce", "reduction_kernel", (1, 0), ()))
        print(fn.__module__, fn.__qualname__)
        print(_resolve("simengine.network.cuda.common", "fill", None).__qualname__)
        print(_resolve("simengine.field.cuda.reduce", "reduction_kernel.<locals>.kernel", None))
    """ % str(ROOT))
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_ENABLE_CUDASIM"}
    r = subprocess.run([sys.executable, "-c", probe], env=env, capture_output=True, text=True,
                       timeout=300)
    assert r.returncode == 0, r.stderr
    assert r.stdout.split("\n")[:3] == ["simengine.field.cuda.reduce reduction_kernel.<locals>.kernel",
                                         "fill", "None"]
