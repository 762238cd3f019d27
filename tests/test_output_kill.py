"""SIGKILL at the dangerous instants of a write — inside a snapshot part, inside a checkpoint part,
between a part and the commit of the index, inside and right after the index commit — then
--resume: the output equals an uninterrupted run's, bit for bit, and no stray file is left."""
import subprocess
import sys
import textwrap

import h5py
import numpy as np
import pytest

from conftest import run_cli
from simengine.io.field_store import FieldIndex
from simengine.io.layout import list_parts

SCENARIO = """\
kind: field
name: kill
grid: {shape: [24, 20], spacing: 1.0}
time: {dt: 0.01, steps: 120}
solver: {backend: cpu}
output: {snapshot_every: 20, checkpoint_every: 30, observables_every: 10}
"""

#: runs the CLI with os.replace intercepted: the K-th rename onto a matching file SIGKILLs the
#: process 'torn' (half the bytes written), 'written' (all bytes, before the rename) or
#: 'renamed' (just after the rename)
KILLER = textwrap.dedent("""
    import os, signal, sys
    from simengine import cli
    kind, k, when = sys.argv[1], int(sys.argv[2]), sys.argv[3]
    real_replace, seen = os.replace, [0]
    def matches(dst):
        dst = os.fspath(dst)
        if kind == "index":
            return os.path.basename(dst) == "run.h5"
        return f"/{kind}/" in dst
    def replace(src, dst):
        if matches(dst):
            seen[0] += 1
            if seen[0] == k:
                if when == "torn":
                    os.truncate(src, os.path.getsize(src) // 2)
                if when == "renamed":
                    real_replace(src, dst)
                os.kill(os.getpid(), signal.SIGKILL)
        return real_replace(src, dst)
    os.replace = replace
    sys.exit(cli.main(sys.argv[4:]))
""")

KEYS = ("fields/phi", "fields/step", "fields/time", "observables/step", "observables/time",
        "observables/mass", "observables/free_energy", "observables/length", "observables/phi_min",
        "checkpoint/phi")


def read_all(path):
    with h5py.File(path, "r") as f:
        out = {k: f[k][()] for k in KEYS}
        out["ckstep"] = int(f["checkpoint/phi"].attrs["step"])
        out["complete"] = bool(f.attrs["complete"])
    return out


@pytest.fixture(scope="module")
def reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    scen = d / "kill.yaml"
    scen.write_text(SCENARIO)
    r = run_cli("run", scen, "-o", d / "run.h5", "-q")
    assert r.returncode == 0, r.stderr
    return scen, read_all(d / "run.h5")


@pytest.mark.parametrize("kind,k,when", [
    ("phi", 3, "torn"),            # inside a snapshot append
    ("phi", 3, "renamed"),         # the snapshot part is durable, the index does not name it yet
    ("checkpoint", 2, "torn"),     # inside a checkpoint
    ("checkpoint", 2, "written"),  # a complete checkpoint part not yet renamed
    ("index", 4, "written"),       # the new index written, not yet renamed
    ("index", 4, "renamed"),       # committed; the superseded checkpoint and XDMF not yet updated
])
def test_kill_inside_a_write_then_resume(tmp_path, reference, kind, k, when):
    scen, ref = reference
    out = tmp_path / "run.h5"
    r = subprocess.run([sys.executable, "-c", KILLER, kind, str(k), when, "run", str(scen), "-o",
                        str(out), "-q"], capture_output=True, text=True, timeout=600)
    assert r.returncode == -9, r.stderr
    with h5py.File(out, "r") as f:  # the last committed state is whole
        step = int(f["checkpoint/phi"].attrs["step"])
        assert 0 <= step < 120 and np.isfinite(f["checkpoint/phi"][()]).all()
    r = run_cli("run", scen, "-o", out, "-q", "--resume")
    assert r.returncode == 0, r.stderr
    got = read_all(out)
    for key in KEYS:
        np.testing.assert_array_equal(got[key], ref[key], err_msg=key)  # bit for bit
    assert got["ckstep"] == ref["ckstep"] == 120 and got["complete"]
    assert list_parts(out) == FieldIndex.load(out).referenced()  # no stray or temporary part
    assert not list(tmp_path.glob("*.tmp"))
    assert run_cli("info", "--verify", out).returncode == 0
