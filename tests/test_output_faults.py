"""A kill at every commit point of both kinds of run (fault injection, simengine/io/faults.py),
then --resume: the file an uninterrupted run writes, every part digest checked, nothing stray.
In process: the armed point raises FaultInjected (a BaseException: no clean-up runs, as after
SIGKILL); one subprocess case checks SIMENGINE_FAULT_AT=... (os._exit) through the CLI."""
import pytest

from conftest import run_cli
from integrity_helpers import assert_same, contents, run, scenario
from simengine.io import faults
from simengine.io.layout import list_parts
from simengine.io.verify import verify_file

FIELD_POINTS = [p for p in faults.POINTS if not p.startswith(("distances", "sources"))]
NETWORK_POINTS = [p for p in faults.POINTS if not p.startswith("phi")]


@pytest.fixture(scope="module")
def references(tmp_path_factory):
    d = tmp_path_factory.mktemp("ref")
    refs = {}
    for kind in ("field", "network"):
        sc = scenario(d, kind)
        assert run(sc, d / f"{kind}.h5") == 0
        refs[kind] = (sc, contents(d / f"{kind}.h5"))
    return refs


def _index(out, kind):
    if kind == "field":
        from simengine.io.field_store import FieldIndex

        return FieldIndex.load(out)
    from simengine.io.network_store import NetworkIndex

    return NetworkIndex.load(out)[0]


#: every point at its second occurrence (a later commit); the points of a commit also at the first
#: one (the layout must be valid from the first commit: an empty /distances, no snapshot yet...)
FIRST = ("checkpoint.written", "index.torn", "index.written", "index.renamed", "commit.done",
         "commit.retired")
CASES = [(kind, p, k) for kind, points in (("field", FIELD_POINTS), ("network", NETWORK_POINTS))
         for p in points for k in (1, 2)
         if (k == 1 and (p in FIRST or p.startswith("sources"))) or
         (k == 2 and not p.startswith("sources"))]


@pytest.mark.parametrize("kind,point,k", CASES)
def test_kill_at_every_commit_point_then_resume(tmp_path, references, kind, point, k):
    sc, ref = references[kind]
    out = tmp_path / "run.h5"
    faults.arm(point, k)
    try:
        with pytest.raises(faults.FaultInjected):
            run(sc, out)
    finally:
        faults.disarm()
    assert run(sc, out, resume=True) == 0
    assert_same(contents(out), ref)
    problems, _, nparts = verify_file(out)
    assert problems == [] and nparts > 0
    index = _index(out, kind)
    assert list_parts(out) == index.referenced()  # no stray or temporary part
    assert not list(tmp_path.glob("*.tmp"))


def test_fault_point_from_the_environment_ends_the_process(tmp_path, references):
    """SIMENGINE_FAULT_AT through the CLI: the first distances part written, not renamed (a
    network run with stored distances killed after its first commit, before any distance part:
    formerly 'Not a virtual storage layout' forever); --resume then completes it."""
    sc, ref = references["network"]
    out = tmp_path / "run.h5"
    r = run_cli("run", sc.path, "-o", out, "-q", env={"SIMENGINE_FAULT_AT": "distances.written:1"})
    assert r.returncode == 137, r.stderr
    assert verify_file(out)[0] == []
    r = run_cli("run", sc.path, "-o", out, "-q", "--resume")
    assert r.returncode == 0, r.stderr
    assert_same(contents(out), ref)
