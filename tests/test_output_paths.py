"""Hostile paths for the commands that open an output: FIFOs and devices, non-UTF-8 names, an
empty -o, symlinked outputs, damaged parts under plot, numpy warnings. In process (main())."""
import os
import shutil
import warnings

import pytest

from integrity_helpers import run, scenario
from simengine.cli import main
from simengine.errors import UserError
from simengine.io.layout import parts_dir
from simengine.io.lock import OutputLock


def one_line(capsys, *words):
    err = capsys.readouterr().err
    lines = [x for x in err.splitlines() if x.strip()]
    assert len(lines) == 1 and "Traceback" not in err, err
    for w in words:
        assert w in lines[0], lines[0]


@pytest.fixture(scope="module")
def field(tmp_path_factory):
    d = tmp_path_factory.mktemp("paths")
    sc = scenario(d, "field")
    run(sc, d / "run.h5")
    return sc, d / "run.h5"


@pytest.mark.parametrize("special", ["fifo", "/dev/null"])
@pytest.mark.parametrize("cmd", [["info"], ["info", "--verify"], ["plot"], ["run", "--resume"]])
def test_special_files_are_refused_by_every_command_that_opens_an_output(tmp_path, capsys, field,
                                                                        cmd, special):
    sc, _ = field
    path = tmp_path / "x.h5"
    if special == "fifo":
        os.mkfifo(path)
        words = "FIFO"
    else:
        path = special
        words = "character device"
    args = [cmd[0], str(sc.path), "-q", "-o", str(path), *cmd[1:]] if cmd[0] == "run" else \
        [*cmd, str(path)]
    assert main(args) == 2
    one_line(capsys, words)


def test_empty_and_non_utf8_output_paths(tmp_path, capsys, field):
    sc, _ = field
    assert main(["run", str(sc.path), "-q", "-o", ""]) == 2
    one_line(capsys, "empty path")
    bad = os.fsdecode(bytes(tmp_path) + b"/bad\xff.h5")
    assert main(["run", str(sc.path), "-q", "-o", bad]) == 2
    one_line(capsys, "not valid UTF-8")
    assert os.listdir(tmp_path) == []
    assert main(["info", bad]) == 2
    one_line(capsys, "not valid UTF-8")


def test_symlinked_output_is_locked_by_its_target(tmp_path, field):
    sc, ref = field
    target = tmp_path / "real.h5"
    link = tmp_path / "link.h5"
    link.symlink_to(target)
    with OutputLock(target):   # a run writing the real file
        with pytest.raises(UserError, match="in use by another run"):
            run(sc, link, overwrite=True)
    assert link.is_symlink() and not target.exists()
    assert run(sc, link) == 0  # written through the link: the file and its parts at the target
    assert link.is_symlink() and target.is_file() and parts_dir(target).is_dir()
    assert not parts_dir(link).exists()


def test_plot_of_a_truncated_snapshot_part_is_one_line(tmp_path, capsys, field):
    _, ref = field
    out = tmp_path / "run.h5"
    shutil.copy(ref, out)
    shutil.copytree(parts_dir(ref), parts_dir(out))
    part = sorted((parts_dir(out) / "phi").iterdir())[-1]
    os.truncate(part, part.stat().st_size // 2)
    assert main(["plot", str(out), "--no-gif", "--out", str(tmp_path / "p")]) == 2
    one_line(capsys, str(out))


def test_numpy_warnings_are_never_printed(capsys, monkeypatch):
    """Whatever a command computes, numpy's floating-point warnings (overflow in float32, invalid
    values in a blow-up check) never reach the user: the one-line message is the report."""
    import numpy as np

    from simengine import cli

    def overflowing(args):
        x = np.float32(3e38) * np.float32(10)         # overflow
        y = np.array([0.0]) / np.array([0.0])          # invalid value
        return 0 if not np.isfinite(x) and np.isnan(y).all() else 1

    monkeypatch.setitem(cli.COMMANDS, "validate", overflowing)
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        assert main(["validate", "x.yaml"]) == 0
    assert not caught and capsys.readouterr().err == ""
