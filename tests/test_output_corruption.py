"""Damaged, tampered and foreign parts and indexes: --resume and info --verify agree, a damaged
part never reaches a file marked complete, and nothing gives a traceback.

The base outputs are runs stopped by fault injection after a later commit (so --resume has work
left, and a field snapshot lies after the checkpoint: one --resume drops and rewrites). A seeded
fuzzer damages the index and every part kind of copies of them (bit flips, a word set to 0xFFFF,
truncation, zeroed ranges, values and attributes rewritten through h5py, parts swapped), then
checks the agreement rule on each case and prints its counts."""
import random
import shutil

import h5py
import numpy as np
import pytest

from integrity_helpers import NETWORK, assert_same, contents, run, scenario
from simengine.errors import UserError
from simengine.io import faults
from simengine.io.layout import list_parts, parts_dir
from simengine.io.output_files import check_resumable
from simengine.io.verify import verify_file

#: (kind, commit after which the base run stops)
BASES = {"field": 4, "network": 3}


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
        out[kind] = (sc, base, contents(d / f"{kind}-ref.h5"))
    return out


def copy_of(base, dest):
    dest.mkdir(parents=True, exist_ok=True)
    out = dest / base.name
    shutil.copy(base, out)
    shutil.copytree(parts_dir(base), parts_dir(out))
    return out


def outcome(sc, out, ref):
    """('ok' | 'refused', verify problems); asserts the agreement rule on the way."""
    try:
        problems = verify_file(out)[0]
    except UserError as exc:
        problems = [str(exc)]
    assert all("\n" not in p for p in problems)
    try:
        check_resumable(out, sc.kind)
    except UserError as exc:
        assert "\n" not in str(exc)
        assert problems, f"--resume refused what --verify accepted: {exc}"
        with pytest.raises(UserError):   # the run itself refuses the same way
            run(sc, out, resume=True)
        return "refused", problems
    assert run(sc, out, resume=True) == 0
    assert_same(contents(out), ref)     # whatever was damaged was rewritten, not carried
    assert verify_file(out)[0] == []
    return "ok", problems


def _part(out, prefix):
    return sorted(n for n in list_parts(out) if n.startswith(prefix))


def test_part_rewritten_through_h5py_is_refused_by_both(tmp_path, bases):
    """fletcher32 recomputed by HDF5: only the SHA-256 in the index sees it."""
    sc, base, ref = bases["field"]
    out = copy_of(base, tmp_path)
    name = _part(out, "phi/")[0]
    with h5py.File(parts_dir(out) / name, "r+") as f:
        f["phi"][0, 0] += 1.0
    assert outcome(sc, out, ref)[0] == "refused"
    problems = verify_file(out)[0]
    assert any(name in p and "SHA-256" in p for p in problems), problems


@pytest.mark.parametrize("attr", ["step", "lo", "hi"])
def test_tampered_part_attribute_is_refused_by_both(tmp_path, bases, attr):
    sc, base, ref = bases["field"]
    out = copy_of(base, tmp_path)
    name = _part(out, "checkpoint/")[-1]
    with h5py.File(parts_dir(out) / name, "r+") as f:
        f.attrs[attr] = int(f.attrs[attr]) + 1
    assert outcome(sc, out, ref)[0] == "refused"


def test_part_replaced_by_an_earlier_one(tmp_path, bases):
    sc, base, ref = bases["field"]
    out = copy_of(base, tmp_path)
    first, second = _part(out, "phi/")[:2]
    shutil.copy(parts_dir(out) / first, parts_dir(out) / second)
    assert outcome(sc, out, ref)[0] == "refused"


def test_part_of_another_run_names_the_other_run(tmp_path, bases):
    sc, base, ref = bases["network"]
    other = scenario(tmp_path, "network", NETWORK.replace("seed: 3", "seed: 4"))
    run(other, tmp_path / "other.h5")
    out = copy_of(base, tmp_path / "damaged")
    shutil.copy(parts_dir(tmp_path / "other.h5") / "sources.h5", parts_dir(out) / "sources.h5")
    with pytest.raises(UserError, match="belongs to another run"):
        check_resumable(out, "network")
    assert any("another run" in p for p in verify_file(out)[0])


def test_word_flipped_to_ffff_in_a_distance_row(tmp_path, bases):
    """fletcher32 cannot see a 16-bit word going from 0x0000 to 0xFFFF; SHA-256 can."""
    sc, base, ref = bases["network"]
    out = copy_of(base, tmp_path)
    path = parts_dir(out) / _part(out, "distances/")[0]
    data = bytearray(path.read_bytes())
    with h5py.File(path, "r") as f:
        offset = f["distances"].id.get_offset() or f["distances"].id.get_chunk_info(0).byte_offset
    for i in range(offset, len(data) - 1, 2):
        if data[i] == data[i + 1] == 0:
            data[i] = data[i + 1] = 0xFF
            break
    path.write_bytes(bytes(data))
    assert outcome(sc, out, ref)[0] == "refused"


def test_renamed_copy_of_an_index_does_not_read_the_original_parts(tmp_path, bases):
    from conftest import run_cli

    sc, base, ref = bases["network"]
    out = copy_of(base, tmp_path)
    copy = tmp_path / "copy.h5"
    shutil.copy(out, copy)
    for args in (["info", copy], ["info", "--verify", copy]):
        r = run_cli(*args)
        assert r.returncode == 2 and "copy.h5.parts is missing; network.h5.parts" in r.stderr, \
            r.stderr
        assert "simengine cp" in r.stderr and len(r.stderr.strip().splitlines()) == 1
    with pytest.raises(UserError, match="simengine cp"):
        check_resumable(copy, "network")


# ------------------------------------------------------------------------------ the fuzzer
def _mutate(rng, out, target):
    """Damage ``target`` (the index or a part) one way; returns the mutation's name."""
    path = out if target == "index" else parts_dir(out) / target
    data = bytearray(path.read_bytes())
    how = rng.choice(["flip", "ffff", "truncate", "zero", "h5value", "h5attr", "swap"])
    if how == "flip":
        i = rng.randrange(len(data))
        data[i] ^= 1 << rng.randrange(8)
    elif how == "ffff":
        i = rng.randrange(len(data) - 1)
        data[i:i + 2] = b"\xff\xff"
    elif how == "truncate":
        data = data[:rng.randrange(len(data))]
    elif how == "zero":
        i = rng.randrange(len(data))
        data[i:i + 512] = bytes(len(data[i:i + 512]))
    elif how in ("h5value", "h5attr"):
        with h5py.File(path, "r+") as f:
            names = []
            f.visititems(lambda n, o: names.append(n) if isinstance(o, h5py.Dataset)
                         and not o.is_virtual and o.size and o.dtype.kind in "iuf" else None)
            if how == "h5attr" or not names:
                obj = f[rng.choice(names)] if names and rng.random() < 0.5 else f
                keys = [k for k, v in obj.attrs.items() if np.ndim(v) == 0 and
                        isinstance(v, (int, float, np.integer, np.floating))]
                if keys:
                    k = rng.choice(keys)
                    obj.attrs[k] = obj.attrs[k] + rng.choice([1, -1, 10**9])
            else:
                ds = f[rng.choice(names)]
                a = ds[()]
                a.flat[rng.randrange(a.size)] += 1
                ds[...] = a
        return how
    else:  # swap: another file of the same output in its place
        others = sorted(list_parts(out) - {target})
        data = bytearray((parts_dir(out) / rng.choice(others)).read_bytes())
    path.write_bytes(bytes(data))
    return how


#: cases per kind (deterministic seed): a few seconds each kind on a loaded 2-core machine
FUZZ_CASES = 24


@pytest.mark.parametrize("kind", ["field", "network"])
def test_seeded_corruption_fuzzer(tmp_path, bases, kind):
    sc, base, ref = bases[kind]
    rng = random.Random(f"simengine-26-{kind}")
    # harmless: a change no reader sees (the previous checkpoint's parts, kept one more commit
    # for readers, are not mapped; bytes HDF5 does not use)
    counts = {"refused": 0, "rewritten": 0, "harmless": 0}
    targets = ["index"] + sorted(list_parts(base))
    for i in range(FUZZ_CASES):
        out = copy_of(base, tmp_path / f"c{i}")
        target = targets[i % len(targets)] if i < len(targets) else rng.choice(targets)
        path = out if target == "index" else parts_dir(out) / target
        before = path.read_bytes()
        how = _mutate(rng, out, target)
        if path.read_bytes() == before:  # nothing to change that way (no numeric attribute...)
            data = bytearray(before)
            data[rng.randrange(len(data))] ^= 0x10
            path.write_bytes(bytes(data))
            how = "flip"
        try:
            result, problems = outcome(sc, out, ref)
        except Exception as exc:  # noqa: BLE001 - report which case broke the rule
            raise AssertionError(f"case {i}: {how} in {target}: {exc!r}") from exc
        counts["refused" if result == "refused" else "rewritten" if problems else "harmless"] += 1
        shutil.rmtree(tmp_path / f"c{i}")
    print(f"\n[fuzz] {kind} output corruption: {FUZZ_CASES} cases over {len(targets)} files: "
          + ", ".join(f"{v} {k}" for k, v in counts.items()))
    assert counts["refused"] > FUZZ_CASES // 3


# ------------------------------------------------------------------------------ resume rules
@pytest.mark.parametrize("change,words", [
    ({"output": {"snapshot_every": 10}}, "output.snapshot_every is 20 in the file but 10"),
    ({"output": {"observables_every": 5}}, "output.observables_every is 10 in the file but 5"),
    ({"time": {"steps": 20}}, "time.steps = 20 is before the checkpoint at step 25"),
])
def test_resume_refuses_what_would_mix_meanings(tmp_path, bases, change, words):
    from simengine.config import load_scenario

    sc, base, ref = bases["field"]
    out = copy_of(base, tmp_path)
    with pytest.raises(UserError, match=words):
        run(load_scenario(sc.path, [f"{k}.{kk}={v}" for k, d in change.items()
                                    for kk, v in d.items()]), out, resume=True)


def test_resume_may_change_checkpoint_cadence_and_compression(tmp_path, bases):
    from simengine.config import load_scenario

    sc, base, ref = bases["field"]
    out = copy_of(base, tmp_path)
    other = load_scenario(sc.path, ["output.checkpoint_every=20", "output.compression=gzip"])
    assert run(other, out, resume=True) == 0
    assert_same(contents(out), ref)
    with pytest.raises(UserError, match="complete at step 60; time.steps = 50 would shorten"):
        run(load_scenario(sc.path, ["time.steps=50"]), out, resume=True)


# ------------------------------------------------------------------------------ issue 37: bound
def _edit_scenario_kappa(f):
    text = f.attrs["scenario"]
    text = text.decode() if isinstance(text, bytes) else text
    f.attrs["scenario"] = text.rstrip("\n") + "\nmodel: {kappa: 1.3}\n"


def _edit_unreachable(f):
    f["distances"].attrs["unreachable"] = 7


def _add_root_attr(f):
    f.attrs["plan"] = "field 2-D cpu forged"


@pytest.mark.parametrize("kind,edit", [
    ("field", _edit_scenario_kappa),
    ("field", lambda f: f.attrs.__setitem__("format_version", 3)),   # a downgrade
    ("field", lambda f: f.attrs.__setitem__("name", "other")),
    ("field", _add_root_attr),
    ("field", lambda f: f["fields"].attrs.__setitem__("spacing", 2.0)),
    ("field", lambda f: f["observables/mass"].attrs.__setitem__("units", "kg")),
    ("network", _edit_scenario_kappa),
    ("network", _edit_unreachable),
    ("network", lambda f: f.attrs.__setitem__("graph_n", 10**12)),
    ("network", lambda f: f.attrs.__setitem__("format_version", 3)),
    ("network", lambda f: f.__delitem__("distances")),
    ("network", lambda f: f.__delitem__("vertex/id") if "vertex/id" in f else
     f.create_dataset("extra", data=[1, 2])),
])
def test_every_attribute_and_dataset_of_the_index_is_bound(tmp_path, bases, kind, edit):
    """Issue 37 classes 2 and 3: the stored scenario, the format version, any root attribute
    (the plan) and every dataset of the index are bound by the index digest: an edit without
    recomputing it is refused by --resume and reported by info --verify (never a complete file
    that states what it did not run)."""
    sc, base, ref = bases[kind]
    out = copy_of(base, tmp_path)
    with h5py.File(out, "r+") as f:
        edit(f)
    result, problems = outcome(sc, out, ref)
    assert result == "refused" and problems
    with h5py.File(out, "r") as f:
        assert not bool(f.attrs["complete"])


def test_deleted_distances_are_named_as_required_by_the_scenario(tmp_path, bases):
    sc, base, ref = bases["network"]
    out = copy_of(base, tmp_path)
    with h5py.File(out, "r+") as f:
        del f["distances"]
    with pytest.raises(UserError, match=r"/distances: missing \(the stored scenario implies it\)"):
        check_resumable(out, "network")
    assert any("/distances: missing" in p for p in verify_file(out)[0])


def test_deleted_predecessors_of_an_interrupted_run_are_refused_by_both(tmp_path):
    """Issue 37 class 2: /predecessors deleted from an interrupted run's index was resumed into
    a file marked complete without them."""
    sc = scenario(tmp_path, "network", NETWORK.replace(
        "store_distances: true", "store_distances: true, store_predecessors: true"))
    out = tmp_path / "p.h5"
    faults.arm("commit.retired", 2)
    try:
        with pytest.raises(faults.FaultInjected):
            run(sc, out)
    finally:
        faults.disarm()
    with h5py.File(out, "r+") as f:
        del f["predecessors"]
    with pytest.raises(UserError, match=r"/predecessors: missing \(the stored scenario implies"):
        check_resumable(out, "network")
    assert any("/predecessors: missing" in p for p in verify_file(out)[0])
    with pytest.raises(UserError):
        run(sc, out, resume=True)
    with h5py.File(out, "r") as f:
        assert not bool(f.attrs["complete"]) and "predecessors" not in f
