"""Issue 37, classes 1, 6, 10 (plot --out) and 12: one way to write an output file.

Nothing but a regular file (or a missing path) is ever replaced; a command's own input is never
its output; errors name the user's path (never ``NAME.tmp``) and leave nothing behind.
(Never run as root against the real ``/dev/null`` before the FIFO case has shown the refusal.)
"""
import os
import stat
import sys
from pathlib import Path

import pytest

from simengine.cli import main

sys.path.insert(0, str(Path(__file__).parent))
import integrity_helpers as ih  # noqa: E402


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    t = tmp_path_factory.mktemp("targets")
    ih.run(ih.scenario(t, "field"), t / "f.h5")
    ih.run(ih.scenario(t, "network"), t / "n.h5")
    return t


def one_line(capsys, rc, code=2):
    err = capsys.readouterr().err
    assert rc == code, err
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    assert ".tmp" not in err, err
    return lines[0]


def snapshot(path):
    st = os.lstat(path)
    return st.st_mode, st.st_ino, st.st_rdev, st.st_size


def no_leftovers(directory):
    return sorted(p.name for p in Path(directory).iterdir() if p.name.endswith(".tmp"))


def test_report_never_replaces_a_fifo_a_device_or_a_directory(outputs, tmp_path, capsys):
    fifo = tmp_path / "page.html"
    os.mkfifo(fifo)
    before = snapshot(fifo)
    line = one_line(capsys, main(["report", str(outputs / "f.h5"), "--out", str(fifo)]))
    assert "FIFO" in line and str(fifo) in line
    assert snapshot(fifo) == before and no_leftovers(tmp_path) == []
    d = tmp_path / "adir"
    d.mkdir()
    line = one_line(capsys, main(["report", str(outputs / "f.h5"), "--out", str(d)]))
    assert "directory" in line and d.is_dir()
    if os.geteuid() == 0:  # a private copy of the null device, never the machine's /dev/null
        node = tmp_path / "null"
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        before = snapshot(node)
        line = one_line(capsys, main(["report", str(outputs / "f.h5"), "--out", str(node)]))
        assert "character device" in line and snapshot(node) == before
    # the refusal held for the FIFO and the node: the real /dev/null is safe to ask about
    before = snapshot("/dev/null")
    line = one_line(capsys, main(["report", str(outputs / "f.h5"), "--out", "/dev/null"]))
    assert "/dev/null: is a character device" in line
    assert snapshot("/dev/null") == before


def test_report_refuses_its_own_input_as_output(outputs, tmp_path, capsys):
    out = tmp_path / "copy.h5"
    os.link(outputs / "f.h5", out) if os.stat(outputs).st_dev == os.stat(tmp_path).st_dev \
        else None
    for target in [outputs / "f.h5"] + ([out] if out.exists() else []):
        before = (outputs / "f.h5").read_bytes()
        line = one_line(capsys, main(["report", str(outputs / "f.h5"), "--out", str(target)]))
        assert "input" in line and str(target) in line
        assert (outputs / "f.h5").read_bytes() == before
    assert main(["info", "--verify", str(outputs / "f.h5")]) == 0
    capsys.readouterr()


def test_report_into_a_missing_directory_names_the_users_path(outputs, tmp_path, capsys):
    target = tmp_path / "missing" / "page.html"
    line = one_line(capsys, main(["report", str(outputs / "n.h5"), "--out", str(target)]))
    assert line.startswith(f"simengine: error: {target}: ") and "does not exist" in line
    assert not (tmp_path / "missing").exists()


def test_run_never_replaces_a_special_file_or_its_scenario(tmp_path, capsys):
    sc = tmp_path / "field.yaml"
    sc.write_text(ih.FIELD)
    fifo = tmp_path / "out.h5"
    os.mkfifo(fifo)
    line = one_line(capsys, main(["run", str(sc), "-o", str(fifo), "--overwrite", "-q"]))
    assert "FIFO" in line and stat.S_ISFIFO(os.lstat(fifo).st_mode)
    assert not (tmp_path / "out.h5.parts").exists()
    text = sc.read_bytes()
    line = one_line(capsys, main(["run", str(sc), "-o", str(sc), "--overwrite", "-q"]))
    assert "input" in line and sc.read_bytes() == text
    if os.geteuid() == 0:
        node = tmp_path / "node.h5"
        os.mknod(node, stat.S_IFCHR | 0o666, os.makedev(1, 3))
        before = snapshot(node)
        line = one_line(capsys, main(["run", str(sc), "-o", str(node), "--overwrite", "-q"]))
        assert "character device" in line and snapshot(node) == before
    # the lock file beside the output: a FIFO there never blocks the run
    os.mkfifo(tmp_path / "y.h5.lock")
    line = one_line(capsys, main(["run", str(sc), "-o", str(tmp_path / "y.h5"), "-q"]))
    assert "y.h5.lock: is a FIFO" in line and not (tmp_path / "y.h5").exists()
    # the XDMF beside the output is an output too
    os.mkfifo(tmp_path / "x.xdmf")
    line = one_line(capsys, main(["run", str(sc), "-o", str(tmp_path / "x.h5"), "-q"]))
    assert "x.xdmf" in line and not (tmp_path / "x.h5").exists()


def test_durable_writer_refuses_a_special_file_appearing_at_the_path(tmp_path):
    from simengine.errors import UserError
    from simengine.io.durable import write_atomic

    fifo = tmp_path / "part.h5"
    os.mkfifo(fifo)
    with pytest.raises(UserError, match="FIFO"):
        write_atomic(fifo, b"data")
    assert stat.S_ISFIFO(os.lstat(fifo).st_mode) and no_leftovers(tmp_path) == []
    # a FIFO at the temporary name never blocks the writer
    os.mkfifo(tmp_path / "x.h5.tmp")
    with pytest.raises(UserError, match="x.h5: cannot write it"):
        write_atomic(tmp_path / "x.h5", b"data")


def test_plot_out_an_existing_file_blames_the_folder_not_the_input(outputs, tmp_path, capsys):
    existing = tmp_path / "figs"
    existing.write_text("keep")
    line = one_line(capsys, main(["plot", str(outputs / "f.h5"), "--out", str(existing),
                                  "--no-gif"]))
    assert str(existing) in line and "damaged" not in line and "f.h5" not in line
    assert existing.read_text() == "keep"


def test_report_of_a_fifo_summary_does_not_hang_and_non_utf8_csv_is_one_line(tmp_path, capsys):
    fifo = tmp_path / "x-summary.csv"
    os.mkfifo(fifo)
    line = one_line(capsys, main(["report", str(fifo)]))  # a hang would time the test out
    assert "FIFO" in line
    bad = tmp_path / "bad-summary.csv"
    bad.write_bytes(b"task,name,status\n0,\xff\xfe,done\n")
    line = one_line(capsys, main(["report", str(bad)]))
    assert "UTF-8" in line and str(bad) in line
    assert one_line(capsys, main(["plot", str(bad)])) == line


SWEEP = ("kind: network\nname: sw\ngraph: {generator: {type: erdos_renyi, n: 10, p: 0.3, "
         "seed: 1}}\nsolver: {backend: cpu}\nsweep:\n  graph.generator.seed: [1, 2]\n")


@pytest.mark.parametrize("what", ["file", "fifo", "non-utf8"])
def test_sweep_output_dir_that_cannot_be_a_folder_is_one_line(tmp_path, capsys, what):
    sc = tmp_path / "sw.yaml"
    sc.write_text(SWEEP)
    target = tmp_path / "d"
    if what == "file":
        target.write_text("x")
    elif what == "fifo":
        os.mkfifo(target)
    else:
        target = Path(os.fsdecode(bytes(tmp_path) + b"/d\xff"))
    for extra in (["--list"], ["--collect"], ["--task", "0", "-q"]):
        line = one_line(capsys, main(["sweep", str(sc), "--output-dir", str(target), *extra]))
        assert ("UTF-8" in line) if what == "non-utf8" else ("not a directory" in line)
