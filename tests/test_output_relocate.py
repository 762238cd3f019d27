"""Outputs a user can move: every way of renaming or copying an output (by hand, or with
``simengine mv`` / ``cp``) against every way of reading it (info, info --verify, simengine.open,
plot, --resume, plain h5py). The matrix is generated: each case says what must hold.

The base outputs are runs stopped by fault injection after a later commit, so that ``--resume``
has work left; its result must equal an uninterrupted run's. Plain h5py cannot follow a parts
directory renamed by hand (HDF5 resolves the name the index was written with; it has no
substitution for the index's own name), so there it must read NaN, never plausible numbers —
and after ``simengine mv`` / ``cp`` the right ones."""
import os
import shutil

import h5py
import numpy as np
import pytest

from integrity_helpers import assert_same, contents, run, scenario
from simengine.cli import main
from simengine.errors import UserError
from simengine.io import faults
from simengine.io.layout import parts_dir

#: (kind, commit after which the base run stops)
BASES = {"field": 4, "network": 3}
#: what a case leaves: "ok" (every simengine reader works), "moved-alone" (the index without its
#: parts: one line naming `simengine cp`), "missing" (no parts anywhere: one line, missing parts)
#: and what plain h5py reads: "right" or "nan"
CASES = {
    "mv-both": ("ok", "nan"),
    "mv-both-other-dir": ("ok", "nan"),
    "cp-both": ("ok", "right"),                # reads the original's parts while they exist
    "cp-both-original-gone": ("ok", "nan"),
    "mv-index-only": ("moved-alone", "right"),
    "cp-index-only": ("moved-alone", "right"),
    "mv-parts-only": ("missing", "nan"),
    "cp-index-elsewhere": ("missing", "nan"),
    "simengine-mv": ("ok", "right"),
    "simengine-mv-other-dir": ("ok", "right"),
    "simengine-cp": ("ok", "right"),
    "simengine-mv-after-hand-mv": ("ok", "right"),
}
CHECKS = ("h5py", "open", "info", "verify", "plot", "resume")   # resume last: it changes the file
VIRTUAL = {"field": "fields/phi", "network": "distances"}


@pytest.fixture(scope="module")
def bases(tmp_path_factory):
    d = tmp_path_factory.mktemp("bases")
    out = {}
    for kind, k in BASES.items():
        sc = scenario(d, kind)
        assert run(sc, d / f"{kind}-ref.h5") == 0
        base = d / f"{kind}.h5"
        faults.arm("commit.retired", k)
        try:
            with pytest.raises(faults.FaultInjected):
                run(sc, base)
        finally:
            faults.disarm()
        with h5py.File(base, "r") as f:
            stored = f[VIRTUAL[kind]][()]
        assert np.isfinite(stored.astype(np.float64)).all()
        out[kind] = (sc, base, contents(d / f"{kind}-ref.h5"), stored)
    return out


def _pair(base, d, name=None):
    """A copy of the pair ``base`` in ``d`` (under its own name unless ``name``)."""
    d.mkdir(parents=True, exist_ok=True)
    out = d / (name or base.name)
    shutil.copy(base, out)
    shutil.copytree(parts_dir(base), parts_dir(out))
    return out


def _make(case, base, tmp):
    """Apply ``case`` to a fresh copy of ``base`` under ``tmp``; returns the index to read."""
    run_h5 = _pair(base, tmp / "a")
    a = run_h5.parent
    new = a / "new.h5"
    if case == "mv-both":
        os.rename(run_h5, new)
        os.rename(parts_dir(run_h5), parts_dir(new))
        return new
    if case == "mv-both-other-dir":
        (tmp / "b").mkdir()
        new = tmp / "b" / "moved.h5"
        os.rename(run_h5, new)
        os.rename(parts_dir(run_h5), parts_dir(new))
        return new
    if case in ("cp-both", "cp-both-original-gone"):
        shutil.copy(run_h5, new)
        shutil.copytree(parts_dir(run_h5), parts_dir(new))
        if case == "cp-both-original-gone":
            os.unlink(run_h5)
            shutil.rmtree(parts_dir(run_h5))
        return new
    if case == "mv-index-only":
        os.rename(run_h5, new)
        return new
    if case == "cp-index-only":
        shutil.copy(run_h5, new)
        return new
    if case == "mv-parts-only":
        os.rename(parts_dir(run_h5), a / "elsewhere.parts")
        return run_h5
    if case == "cp-index-elsewhere":
        (tmp / "b").mkdir()
        shutil.copy(run_h5, tmp / "b" / run_h5.name)
        return tmp / "b" / run_h5.name
    if case == "simengine-mv":
        assert main(["mv", str(run_h5), str(new)]) == 0
        assert not run_h5.exists() and not parts_dir(run_h5).exists()
        return new
    if case == "simengine-mv-other-dir":
        (tmp / "b").mkdir()
        new = tmp / "b" / "moved.h5"
        assert main(["mv", str(run_h5), str(new)]) == 0
        return new
    if case == "simengine-cp":
        assert main(["cp", str(run_h5), str(new)]) == 0
        assert run_h5.exists()
        os.unlink(run_h5)          # the copy stands on its own
        shutil.rmtree(parts_dir(run_h5))
        return new
    if case == "simengine-mv-after-hand-mv":
        os.rename(run_h5, new)
        os.rename(parts_dir(run_h5), parts_dir(new))
        assert main(["mv", str(new), str(new)]) == 0   # relink in place
        return new
    raise AssertionError(case)


def _one_line(capsys):
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1, err
    return err[0]


@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("kind", sorted(BASES))
def test_move_copy_matrix(case, kind, bases, tmp_path, capsys):
    import simengine

    sc, base, ref, stored = bases[kind]
    want, plain = CASES[case]
    target = _make(case, base, tmp_path)
    capsys.readouterr()
    for check in CHECKS:
        if check == "h5py":
            with h5py.File(target, "r") as f:
                got = f[VIRTUAL[kind]][()]
            if plain == "right":
                np.testing.assert_array_equal(got, stored)
            elif kind == "field":
                assert np.isnan(got).all(), "plain h5py must read NaN, never plausible numbers"
            else:   # distances: the unreachable value of their type (the fill), never a path
                unreachable = np.inf if got.dtype.kind == "f" else np.iinfo(got.dtype).max
                assert (got == unreachable).all()
            continue
        if check == "open":
            if want == "ok":
                with simengine.open(target) as r:
                    np.testing.assert_array_equal(r.file[VIRTUAL[kind]][()], stored)
            else:
                with pytest.raises(UserError) as exc:
                    simengine.open(target)
                assert "\n" not in str(exc.value)
                _expect_line(str(exc.value), want, target)
            continue
        if check == "resume":
            if want == "ok":
                assert run(sc, target, resume=True) == 0
                assert_same(contents(target), ref)
                assert main(["info", "--verify", str(target)]) == 0
                capsys.readouterr()
            else:
                with pytest.raises(UserError) as exc:
                    run(sc, target, resume=True)
                _expect_line(str(exc.value), want, target)
            continue
        args = {"info": ["info", str(target)], "verify": ["info", "--verify", str(target)],
                "plot": ["plot", str(target), "--no-gif", "--out", str(tmp_path / "plots")]}
        rc = main(args[check])
        if want == "ok":
            assert rc == 0, capsys.readouterr().err
            capsys.readouterr()
        else:
            assert rc == 2
            if check == "verify":   # one line per problem: every missing part is listed
                lines = capsys.readouterr().err.strip().splitlines()
                assert lines and (want == "missing" or len(lines) == 1), lines
                for line in lines:
                    _expect_line(line, want, target)
            else:
                _expect_line(_one_line(capsys), want, target)


def _expect_line(line, want, target):
    assert "Traceback" not in line
    assert str(target) in line
    if want == "moved-alone":
        assert "simengine cp" in line and "is missing" in line, line
    else:
        assert "missing" in line, line


def test_mv_and_cp_refuse_an_existing_target_and_change_nothing(bases, tmp_path, capsys):
    _, base, _, _ = bases["field"]
    a = _pair(base, tmp_path / "a")
    b = _pair(base, tmp_path / "a", "b.h5")
    before = {p: p.read_bytes() for p in (a, b)}
    for cmd in ("mv", "cp"):
        assert main([cmd, str(a), str(b)]) == 2
        line = _one_line(capsys)
        assert "exists already" in line and str(b) in line
    assert {p: p.read_bytes() for p in (a, b)} == before
    assert main(["mv", str(tmp_path / "none.h5"), str(tmp_path / "x.h5")]) == 2
    assert "no such file" in _one_line(capsys)


def test_relinked_index_holds_what_the_original_held(bases, tmp_path):
    """The index ``simengine mv`` writes differs from the original only in its mappings' parts
    directory and the ``parts`` attribute (then sealed again): the same groups, datasets,
    attributes and data."""
    from simengine.io import checksum

    for kind in BASES:
        _, base, _, _ = bases[kind]
        a = _pair(base, tmp_path / kind)
        new = a.parent / "renamed.h5"
        assert main(["mv", str(a), str(new)]) == 0

        def record(path, ref):
            with h5py.File(path, "r") as f:
                text = repr(checksum.index_record(f))
            return text.replace(ref, "PARTS")

        with h5py.File(base, "r") as f:
            assert checksum.index_matches(f)
        assert record(base, f"{base.name}.parts") == record(new, "renamed.h5.parts")
        with h5py.File(new, "r") as f:
            assert checksum.index_matches(f)


def test_a_move_killed_after_the_parts_moved_is_finished_by_running_it_again(bases, tmp_path,
                                                                             capsys):
    _, base, ref, stored = bases["field"]
    a = _pair(base, tmp_path / "a")
    new = a.parent / "new.h5"
    os.rename(parts_dir(a), parts_dir(new))       # what a kill after step 1 leaves
    assert main(["info", str(a)]) == 2
    capsys.readouterr()
    assert main(["mv", str(a), str(new)]) == 0
    assert not a.exists()
    with h5py.File(new, "r") as f:
        np.testing.assert_array_equal(f["fields/phi"][()], stored)
    assert main(["info", "--verify", str(new)]) == 0
