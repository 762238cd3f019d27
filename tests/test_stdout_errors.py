"""Issue 37 class 10: a closed or full standard output ends a command quietly with the right exit
code and never blames an input (formerly tracebacks, or "damaged or unreadable output" about an
intact file)."""
import errno
import subprocess
import sys
from pathlib import Path

import pytest

from simengine.cli import main

sys.path.insert(0, str(Path(__file__).parent))
import integrity_helpers as ih  # noqa: E402


class Failing:
    """A standard output whose writes fail with ``code`` (EPIPE: the reader closed the pipe)."""

    def __init__(self, code):
        self.code = code

    def write(self, text):
        raise (BrokenPipeError if self.code == errno.EPIPE else OSError)(
            self.code, "No space left on device" if self.code == errno.ENOSPC else "Broken pipe")

    def flush(self):
        pass

    def isatty(self):
        return False


@pytest.fixture(scope="module")
def output(tmp_path_factory):
    t = tmp_path_factory.mktemp("stdout")
    ih.run(ih.scenario(t, "network"), t / "n.h5")
    return t / "n.h5"


@pytest.mark.parametrize("code,rc", [(errno.EPIPE, 0), (errno.ENOSPC, 1)])
@pytest.mark.parametrize("argv", [["info"], ["info", "--verify"], ["schema"], ["plot"]])
def test_a_failing_stdout_is_never_blamed_on_the_input(output, tmp_path, capsys, monkeypatch,
                                                       code, rc, argv):
    args = argv + ([str(output)] if argv[0] != "schema" else [])
    if argv[0] == "plot":
        args += ["--out", str(tmp_path / "figs"), "--no-gif"]
    notes = ""
    if argv[0] == "plot":  # what plot says on stderr with a working stdout (the degree fit's note)
        assert main(args[:-3] + ["--out", str(tmp_path / "figs0"), "--no-gif"]) == 0
        notes = capsys.readouterr().err
        assert "Traceback" not in notes and "damaged" not in notes
    monkeypatch.setattr(sys, "stdout", Failing(code))
    got = main(args)
    err = capsys.readouterr().err
    assert got == rc, err
    assert err.startswith(notes), err
    err = err[len(notes):]   # the failing stdout adds only its own line
    assert "Traceback" not in err and "damaged" not in err and str(output) not in err
    if code == errno.EPIPE:
        assert err == ""
    else:
        assert err.strip() == ("simengine: error: standard output: cannot write: No space left "
                               "on device (ENOSPC)")


def test_real_closed_pipe_and_full_device(output):
    p = subprocess.Popen([sys.executable, "-m", "simengine", "schema"], stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE)
    p.stdout.close()          # `simengine schema | true`
    err = p.stderr.read().decode()
    assert p.wait(timeout=120) == 0 and err == "", err
    with open("/dev/full", "w") as full:
        r = subprocess.run([sys.executable, "-m", "simengine", "info", str(output)], stdout=full,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    assert r.returncode == 1 and r.stderr.count("\n") == 1, r.stderr
    assert "standard output" in r.stderr and "ENOSPC" in r.stderr and "n.h5" not in r.stderr
