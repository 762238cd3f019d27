"""Issue 37 classes 4, 5 and the hostile-file fuzzer: ``info``, ``plot`` and ``report`` validate
an output before they allocate (io/file_checks.py): one line naming the dataset, exit 2, no
traceback, no allocation beyond a bound — named cases, then a seeded fuzzer over the attributes,
shapes, types and values of real small outputs (with and without the index digest)."""
import random
import resource
import shutil
import sys
import tracemalloc
from pathlib import Path

import h5py
import numpy as np
import pytest

from simengine.cli import main

sys.path.insert(0, str(Path(__file__).parent))
import integrity_helpers as ih  # noqa: E402

SK = ih.FIELD.replace("observables_every: 10}", "observables_every: 10, structure_factor: true}")
NET = ih.NETWORK.replace("store_distances: true,", "store_distances: true, store_predecessors: "
                         "true,").replace("closeness]", "closeness, distance_histogram]")
#: the most a command may allocate on these tiny files (a crafted size would ask for TiB)
BOUND = 400 << 20


@pytest.fixture(scope="module")
def outputs(tmp_path_factory):
    t = tmp_path_factory.mktemp("hostile")
    assert ih.run(ih.scenario(t, "field", SK), t / "field.h5") == 0
    assert ih.run(ih.scenario(t, "network", NET), t / "network.h5") == 0
    return t


def copy(src, dest_dir):
    dest_dir.mkdir(parents=True, exist_ok=True)
    out = dest_dir / src.name
    shutil.copy(src, out)
    shutil.copytree(src.with_name(src.name + ".parts"), out.with_name(out.name + ".parts"))
    return out


def command(capsys, argv):
    """(rc, stderr, bytes allocated at the peak) of one in-process command; an exception escaping
    main is a traceback and fails the test. ``info`` is traced allocation by allocation
    (tracemalloc); ``plot``/``report`` (matplotlib runs 4x slower traced) by the growth of the
    process's peak resident size."""
    traced = argv[0] == "info"
    rss0 = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10
    if traced:
        tracemalloc.start()
    try:
        rc = main(argv)
        peak = tracemalloc.get_traced_memory()[1] if traced else \
            (resource.getrusage(resource.RUSAGE_SELF).ru_maxrss << 10) - rss0
    finally:
        if traced:
            tracemalloc.stop()
    cap = capsys.readouterr()
    return rc, cap.err, peak


def refused(capsys, argv, *words):
    rc, err, peak = command(capsys, argv)
    lines = [ln for ln in err.splitlines() if ln.strip()]
    assert rc == 2 and len(lines) == 1 and "Traceback" not in err, (argv, err)
    for w in words:
        assert w in lines[0], (w, lines[0])
    assert peak < BOUND, (argv, peak)
    return lines[0]


def all_three(capsys, out, tmp, *words):
    refused(capsys, ["info", str(out)], *words)
    refused(capsys, ["plot", str(out), "--out", str(tmp / "figs"), "--no-gif"], *words)
    refused(capsys, ["report", str(out), "--out", str(tmp / "r.html")], *words)
    assert not (tmp / "r.html").exists()


def test_report_of_a_field_output_with_the_structure_factor(outputs, tmp_path, capsys):
    """Class 4: a TypeError in report.py (the last element of a 2-D dataset)."""
    rc, err, _ = command(capsys, ["report", str(outputs / "field.h5"), "--out",
                                  str(tmp_path / "r.html")])
    assert rc == 0, err
    page = (tmp_path / "r.html").read_text()
    assert "structure_factor" in page and "free_energy" in page


def _crafted_huge_phi(f):
    del f["fields/phi"]
    f["fields"].create_dataset("phi", shape=(3, 10**6, 10**6), dtype="f8", chunks=(1, 64, 64))
    f["fields"].attrs["grid_shape"] = [10**6, 10**6]
    del f["checkpoint/phi"]


def _set(obj_name, key, value):
    def edit(f):
        f[obj_name].attrs[key] = value
    return edit


def _replace(name, data):
    def edit(f):
        attrs = dict(f[name].attrs)
        del f[name]
        ds = f.create_dataset(name, data=data)
        for k, v in attrs.items():
            if k not in ("DIMENSION_LIST", "REFERENCE_LIST", "CLASS", "NAME"):
                ds.attrs[k] = v
    return edit


def _non_utf8(obj_name, key):
    def edit(f):
        tid = h5py.h5t.C_S1.copy()
        tid.set_size(2)
        tid.set_cset(h5py.h5t.CSET_UTF8)
        obj = f[obj_name]
        if key in obj.attrs:
            del obj.attrs[key]
        aid = h5py.h5a.create(obj.id, key.encode(), tid, h5py.h5s.create(h5py.h5s.SCALAR))
        aid.write(np.array(b"\xff\xfe", dtype="S2"), mtype=tid)
    return edit


CASES = {
    "graph_n 1e12": ("network", _set("/", "graph_n", 10**12), "graph_n"),
    "phi (3, 1e6, 1e6)": ("field", _crafted_huge_phi, "fields/phi"),
    "negative histogram": ("network", lambda f: _replace("distance_histogram", -np.abs(
        f["distance_histogram"][()]) - 1)(f), "distance_histogram"),
    "1e7-bin histogram": ("network", _replace("distance_histogram", np.ones(10**7, np.int64)),
                          "distance_histogram"),
    "zero spacing": ("field", _set("fields", "spacing", 0.0), "spacing"),
    "NaN spacing": ("field", _set("fields", "spacing", float("nan")), "spacing"),
    "NaN bin width": ("network", _set("distance_histogram", "bin_width", float("nan")),
                      "bin_width"),
    "non-UTF-8 name": ("field", _non_utf8("/", "name"), "name"),
    "non-UTF-8 scope": ("network", _non_utf8("statistics", "scope"), "scope"),
    "string spacing": ("field", _set("fields", "spacing", "wide"), "spacing"),
    "string statistic": ("network", _replace("statistics/diameter", np.bytes_(b"big")),
                         "statistics/diameter"),
    "complex field": ("field", lambda f: _replace("fields/step", f["fields/step"][()])(f)
                      or _complex_phi(f), "fields/phi"),
    "sources beyond n": ("network", lambda f: _replace("vertex/closeness", np.ones(3))(f),
                         "vertex"),
}


def _complex_phi(f):
    n = f["fields/step"].shape[0]
    grid = tuple(f["fields"].attrs["grid_shape"])
    del f["fields/phi"]
    f["fields"].create_dataset("phi", data=np.ones((n, *grid), np.complex128))
    del f["checkpoint/phi"]


@pytest.mark.parametrize("case", sorted(CASES))
def test_hostile_file_is_one_line_naming_the_dataset(outputs, tmp_path, capsys, case):
    kind, edit, word = CASES[case]
    out = copy(outputs / f"{kind}.h5", tmp_path)
    with h5py.File(out, "r+") as f:
        edit(f)
        f.attrs["format_version"] = 3   # no index digest: the structural checks must hold alone
    all_three(capsys, out, tmp_path, word)


# ------------------------------------------------------------------------------ the fuzzer
def _mutations(rng, f):
    """Pick one object of the index and change an attribute, a shape, a type or values."""
    objs = []
    f.visititems(lambda n, o: objs.append(n))
    name = rng.choice(objs + ["/"])
    obj = f[name]
    how = rng.choice(["attr", "attr", "values", "shape", "dtype", "delete"])
    if how == "attr" or not isinstance(obj, h5py.Dataset) or obj.is_virtual and how != "delete":
        keys = [k for k in obj.attrs.keys() if k not in ("DIMENSION_LIST", "REFERENCE_LIST")]
        key = rng.choice(keys) if keys and rng.random() < 0.8 else "spacing"
        value = rng.choice([0, -1, 10**12, -10**15, float("nan"), float("inf"), 0.0, "text",
                            b"\xff\xfe", np.arange(5), np.array([10**9, 10**9]), True,
                            np.complex128(1j)])
        if isinstance(value, bytes):
            _non_utf8(name, key)(f)
        else:
            obj.attrs[key] = value
        return f"attr {name}@{key}={str(value)[:20]}"
    if how == "delete":
        del f[name]
        return f"delete {name}"
    a = obj[()]
    if how == "values":
        a = np.array(a, copy=True)
        if a.dtype.kind in "iuf" and a.size:
            a.flat[rng.randrange(a.size)] = rng.choice([-1, 10**9, 0]) if a.dtype.kind in "iu" \
                else rng.choice([float("nan"), -1e300, float("inf")])
        data = a
    elif how == "shape":
        data = np.resize(np.asarray(a), rng.choice([(0,), (3,), (2, 2, 2), (7, 1)]))
        if data.dtype.kind == "O":
            data = data.astype("S")
    else:
        data = np.ones(np.shape(a), rng.choice([np.complex64, "S3", np.bool_, np.float16,
                                                np.int8]))
    _replace(name, data)(f)
    return f"{how} {name}"


FUZZ_CASES = 20


@pytest.mark.parametrize("kind", ["field", "network"])
def test_seeded_hostile_file_fuzzer(outputs, tmp_path, capsys, kind):
    rng = random.Random(f"simengine-37-{kind}")
    counts = {"refused": 0, "read": 0}
    for i in range(FUZZ_CASES):
        out = copy(outputs / f"{kind}.h5", tmp_path / f"c{i}")
        with h5py.File(out, "r+") as f:
            how = _mutations(rng, f)
            if i % 2:  # half without the index digest: the structural checks alone
                f.attrs["format_version"] = 3
        argvs = [["info", str(out)]]
        if i % 8 == 0:
            argvs.append(["plot", str(out), "--out", str(out.parent / "figs"), "--no-gif"])
        if i % 8 == 4:
            argvs.append(["report", str(out), "--out", str(out.parent / "r.html")])
        for argv in argvs:
            try:
                rc, err, peak = command(capsys, argv)
            except BaseException as exc:
                raise AssertionError(f"case {i} ({how}): {argv[0]}: {exc!r}") from exc
            lines = [ln for ln in err.splitlines() if ln.strip() and "simengine: " in ln]
            assert "Traceback" not in err, (i, how, err)
            assert rc in (0, 2), (i, how, argv[0], rc, err)
            if rc == 2:
                assert len(lines) == 1, (i, how, err)
            assert peak < BOUND, (i, how, argv[0], peak)
            counts["refused" if rc else "read"] += 1
        shutil.rmtree(tmp_path / f"c{i}")
    print(f"\n[fuzz] hostile {kind} outputs: {FUZZ_CASES} cases, "
          + ", ".join(f"{v} {k}" for k, v in counts.items()))
    assert counts["refused"] >= FUZZ_CASES // 2
