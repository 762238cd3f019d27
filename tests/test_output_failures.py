"""Write failures: a full disk, RLIMIT_FSIZE, I/O and quota errors, read-only and unusable output
paths. Never a traceback or a crash: one line naming the path and the cause; exit 1 during the
run (the committed checkpoint intact, no temporary file left, --resume completes the run), exit 2
when the output path cannot work before the run starts."""
import os
import resource
import shutil
import subprocess
import sys
import textwrap
import time

import h5py
import numpy as np
import pytest

from conftest import run_cli

FIELD = """\
kind: field
name: full
grid: {shape: [96, 96], spacing: 1.0}
initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 3}
time: {dt: 0.02, steps: STEPS}
solver: {backend: cpu}
output: {snapshot_every: SNAP, checkpoint_every: 50, observables_every: OBS}
"""


def field_scenario(tmp_path, steps=1000, snap=10, obs=10):
    p = tmp_path / "full.yaml"
    p.write_text(FIELD.replace("STEPS", str(steps)).replace("SNAP", str(snap))
                 .replace("OBS", str(obs)))
    return p


@pytest.fixture
def tmpfs(tmp_path):
    """mount(size, ro=False) -> a fresh tmpfs directory (skipped only where mounting fails)."""
    mounted = []

    def mount(size="3m", ro=False):
        mnt = tmp_path / f"mnt{len(mounted)}"
        mnt.mkdir()
        opts = f"size={size}" + (",ro" if ro else "")
        r = subprocess.run(["mount", "-t", "tmpfs", "-o", opts, "tmpfs", str(mnt)],
                           capture_output=True, text=True)
        if r.returncode != 0:
            pytest.skip(f"cannot mount a tmpfs here: {r.stderr.strip()}")
        mounted.append(mnt)
        return mnt

    yield mount
    for mnt in mounted:
        subprocess.run(["umount", "-l", str(mnt)], capture_output=True)


def one_line(stderr):
    lines = [x for x in stderr.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in stderr, stderr
    return lines[0]


def leftovers(root):
    return [p for p in root.rglob("*") if p.name.endswith(".tmp")]


def series(path):
    with h5py.File(path, "r") as f:
        return {k: f[k][()] for k in ("fields/step", "fields/phi", "observables/step",
                                      "observables/mass", "observables/free_energy")}


def assert_prefix(part, full):
    n = len(part["fields/step"])
    assert 0 < n < len(full["fields/step"])
    for k in part:
        m = len(part[k])
        np.testing.assert_array_equal(part[k], full[k][:m], err_msg=k)


@pytest.fixture(scope="module")
def field_reference(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    scen = field_scenario(d)
    out = d / "ref.h5"
    r = run_cli("run", scen, "-o", out, "-q")
    assert r.returncode == 0, r.stderr
    return series(out)


def test_disk_full_during_field_run(tmp_path, tmpfs, field_reference):
    mnt = tmpfs("3m")
    scen = field_scenario(tmp_path)
    out = mnt / "run.h5"
    r = run_cli("run", scen, "-o", out, "-q")
    assert r.returncode == 2 and "of disk" in one_line(r.stderr)  # refused up front by the estimate
    # a disk that fills during the run (another writer, an estimate exceeded): --force
    r = run_cli("run", scen, "-o", out, "-q", "--force")
    assert r.returncode == 1
    line = one_line(r.stderr)
    assert "No space left on device (ENOSPC)" in line and str(mnt) in line and "intact" in line
    assert not leftovers(mnt)
    v = run_cli("info", "--verify", out)
    assert v.returncode == 0, v.stderr  # what was committed is whole and checksummed
    assert_prefix(series(out), field_reference)
    subprocess.run(["mount", "-o", "remount,size=64m", str(mnt)], check=True)
    r = run_cli("run", scen, "-o", out, "-q", "--resume")
    assert r.returncode == 0, r.stderr
    got = series(out)
    for k in got:
        np.testing.assert_array_equal(got[k], field_reference[k], err_msg=k)


def test_disk_full_during_network_run(tmp_path, tmpfs):
    mnt = tmpfs("3m")
    scen = tmp_path / "net.yaml"
    scen.write_text("kind: network\nname: full-net\n"
                    "graph: {generator: {type: barabasi_albert, n: 2000, m: 3, seed: 1}}\n"
                    "metrics: {store_distances: true}\nsolver: {backend: cpu}\n"
                    "output: {checkpoint_every: 256}\n")
    out = mnt / "net.h5"
    r = run_cli("run", scen, "-o", out, "-q", "--force")   # past the up-front disk estimate
    assert r.returncode == 1
    line = one_line(r.stderr)
    assert "No space left on device" in line and "sources" in line and "intact" in line
    assert not leftovers(mnt)
    assert run_cli("info", "--verify", out).returncode == 0
    with h5py.File(out, "r") as f:
        done = int(f["checkpoint"].attrs["done"])
        assert 0 < done < 2000 and f["distances"].shape == (done, 2000)


def test_file_size_limit(tmp_path):
    """RLIMIT_FSIZE (ulimit -f): the index outgrows the limit as observables rows accumulate."""
    scen = field_scenario(tmp_path, steps=4000, snap=1000, obs=1)
    out = tmp_path / "run.h5"

    def limit():
        resource.setrlimit(resource.RLIMIT_FSIZE, (160 << 10, 160 << 10))

    r = subprocess.run([sys.executable, "-m", "simengine", "run", str(scen), "-o", str(out), "-q"],
                       capture_output=True, text=True, preexec_fn=limit, timeout=600)
    assert r.returncode == 1, r.stderr  # not killed by SIGXFSZ, no crash
    line = one_line(r.stderr)
    assert "File too large (EFBIG)" in line and str(out) in line and "intact" in line
    assert not leftovers(tmp_path)
    assert run_cli("info", "--verify", out).returncode == 0
    r = run_cli("run", scen, "-o", out, "-q", "--resume")
    assert r.returncode == 0, r.stderr
    with h5py.File(out, "r") as f:
        assert f.attrs["complete"] and list(f["observables/step"][()]) == list(range(4001))


#: runs the CLI with the K-th os.write/os.pwrite/os.pwritev failing with the given errno
INJECT = textwrap.dedent("""
    import errno, os, sys
    from simengine import cli
    count = {"n": 0}
    def failing(real):
        def call(*args):
            count["n"] += 1
            if count["n"] == int(sys.argv[1]):
                code = getattr(errno, sys.argv[2])
                raise OSError(code, os.strerror(code))
            return real(*args)
        return call
    os.write, os.pwrite, os.pwritev = failing(os.write), failing(os.pwrite), failing(os.pwritev)
    sys.exit(cli.main(sys.argv[3:]))
""")


@pytest.mark.parametrize("code", ["EIO", "EDQUOT", "EACCES", "EROFS"])
def test_injected_write_errors(tmp_path, code):
    scen = field_scenario(tmp_path, steps=200, snap=50, obs=50)
    out = tmp_path / "run.h5"
    # the 6th write: the checkpoint part at step 50 (per write stop: the snapshot part, the
    # checkpoint part and the index, each one pwritev per 16 MiB leaf, then the XDMF file)
    r = subprocess.run([sys.executable, "-c", INJECT, "6", code, "run", str(scen), "-o", str(out),
                        "-q"], capture_output=True, text=True, timeout=600)
    assert r.returncode == 1, r.stderr
    line = one_line(r.stderr)
    assert f"({code})" in line and os.strerror(getattr(__import__("errno"), code)) in line
    assert "intact" in line and not leftovers(tmp_path)
    assert run_cli("info", "--verify", out).returncode == 0
    r = run_cli("run", scen, "-o", out, "-q", "--resume")
    assert r.returncode == 0, r.stderr


def test_read_only_file_system(tmp_path, tmpfs):
    mnt = tmpfs("1m", ro=True)
    r = run_cli("run", field_scenario(tmp_path, steps=10), "-o", mnt / "run.h5", "-q")
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "Read-only file system (EROFS)" in line and str(mnt / "run.h5") in line
    assert not list(mnt.iterdir())


def test_file_system_turns_read_only_during_the_run(tmp_path, tmpfs):
    mnt = tmpfs("64m")
    scen = field_scenario(tmp_path, steps=100000, snap=100, obs=100)
    out = mnt / "run.h5"
    proc = subprocess.Popen([sys.executable, "-m", "simengine", "run", str(scen), "-o", str(out),
                             "-q", "--force"],  # its snapshots would not fit: the disk estimate
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    t0 = time.time()
    while not out.exists() and time.time() - t0 < 120:
        assert proc.poll() is None, proc.communicate()
        time.sleep(0.02)
    subprocess.run(["mount", "-o", "remount,ro", str(mnt)], check=True)
    _, err = proc.communicate(timeout=300)
    assert proc.returncode == 1
    line = one_line(err)
    assert "Read-only file system (EROFS)" in line and "intact" in line
    assert run_cli("info", "--verify", out).returncode == 0


def test_directory_without_write_permission(tmp_path):
    d = tmp_path / "locked"
    d.mkdir()
    d.chmod(0o555)
    cmd = [sys.executable, "-m", "simengine", "run", str(field_scenario(tmp_path, steps=10)), "-o",
           str(d / "run.h5"), "-q"]
    if os.geteuid() == 0:  # root ignores permissions: drop the capabilities that allow that
        if shutil.which("setpriv") is None:
            pytest.skip("running as root without setpriv to drop CAP_DAC_OVERRIDE")
        caps = "-dac_override,-dac_read_search"
        cmd = ["setpriv", f"--inh-caps={caps}", f"--bounding-set={caps}", "--", *cmd]
    r = subprocess.run(cmd, capture_output=True, text=True, timeout=300)
    assert r.returncode == 2
    line = one_line(r.stderr)
    assert "Permission denied (EACCES)" in line and str(d / "run.h5") in line
    assert not list(d.iterdir())


def test_parent_is_a_file_or_output_is_a_directory(tmp_path):
    scen = field_scenario(tmp_path, steps=10)
    (tmp_path / "notes.txt").write_text("x")
    r = run_cli("run", scen, "-o", tmp_path / "notes.txt" / "sub" / "run.h5", "-q")
    assert r.returncode == 2
    assert "notes.txt is a file, not a directory" in one_line(r.stderr)
    (tmp_path / "out.h5").mkdir()
    r = run_cli("run", scen, "-o", tmp_path / "out.h5", "-q")
    assert r.returncode == 2
    assert "the output is a directory" in one_line(r.stderr)


AFTER_COMMIT = textwrap.dedent("""
    import errno, os, sys
    from simengine import cli
    from simengine.errors import OutputError
    from simengine.io import field_store
    real, calls = field_store.write_xdmf, [0]
    def failing(path, *args):  # the XDMF is written after the index commit
        calls[0] += 1
        if calls[0] == 3:
            raise OutputError(f"{path}: cannot write: {os.strerror(errno.EIO)} (EIO)")
        return real(path, *args)
    field_store.write_xdmf = failing
    sys.exit(cli.main(sys.argv[1:]))
""")


def test_failure_after_the_commit_keeps_its_parts(tmp_path, field_reference):
    """A write that fails once the new index is in place (XDMF, directory sync) reports the
    error but keeps the parts that index names."""
    scen = field_scenario(tmp_path)
    out = tmp_path / "run.h5"
    r = subprocess.run([sys.executable, "-c", AFTER_COMMIT, "run", str(scen), "-o", str(out), "-q"],
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 1
    line = one_line(r.stderr)
    assert "run.xdmf: cannot write: Input/output error (EIO)" in line and "intact" in line
    assert run_cli("info", "--verify", out).returncode == 0  # no part of the commit was removed
    with h5py.File(out, "r") as f:
        assert list(f["fields/step"][()]) == [0, 10, 20]
    r = run_cli("run", scen, "-o", out, "-q", "--resume")
    assert r.returncode == 0, r.stderr
    got = series(out)
    for k in got:
        np.testing.assert_array_equal(got[k], field_reference[k], err_msg=k)
