"""Issue 37 classes 7 and 8: graph files are sized by the vertices they really hold.

* sparse large vertex ids (renumbered 0..n-1 by the reader) were sized by max id + 1 before a run
  ("needs 153 704 605 TiB") while ``validate`` said OK;
* a header declaring 10⁷ vertices with 3 arcs and ``sources: all`` ran for days: refused with the
  work estimate unless --force, by ``validate`` and ``run`` alike.
"""
import random

import h5py
import pytest

from simengine.cli import main

SC = "kind: network\nname: g\ngraph: {{file: {{path: {path}}}}}\nmetrics: {{sources: all}}\n" \
     "solver: {{backend: cpu}}\n"


def scenario(tmp_path, name, text):
    (tmp_path / name).write_text(text)
    sc = tmp_path / f"{name}.yaml"
    sc.write_text(SC.format(path=name))
    return sc


def one_line(capsys, rc, code=2):
    err = capsys.readouterr().err
    assert rc == code, err
    lines = [ln for ln in err.splitlines() if ln.startswith("simengine:")]
    assert len(lines) == 1 and "Traceback" not in err, err
    return lines[0]


@pytest.mark.parametrize("top", [10**18, 2**40 - 1])
def test_sparse_large_ids_are_sized_by_the_renumbered_vertices(tmp_path, capsys, top):
    rng = random.Random(top)
    ids = [rng.randrange(top // 10, top) for _ in range(400)]
    text = "\n".join(f"{rng.choice(ids)} {rng.choice(ids)}" for _ in range(1200)) + "\n"
    sc = scenario(tmp_path, "sparse.txt", text)
    assert main(["validate", str(sc)]) == 0, capsys.readouterr().err
    capsys.readouterr()
    out = tmp_path / "out.h5"
    assert main(["run", str(sc), "-o", str(out), "-q"]) == 0, capsys.readouterr().err
    with h5py.File(out) as f:
        n = int(f.attrs["graph_n"])
        assert n == len({int(x) for ln in text.split() for x in [ln]}) and n <= 400
        assert f.attrs["complete"]


@pytest.mark.parametrize("fmt,text", [
    ("gr", "p sp 10000000 3\na 1 2 1\na 2 3 1\na 3 1 1\n"),
    ("mtx", "%%MatrixMarket matrix coordinate pattern general\n10000000 10000000 3\n1 2\n2 3\n"
            "3 1\n"),
])
def test_a_header_declaring_far_more_vertices_than_its_arcs_use(tmp_path, capsys, fmt, text):
    sc = scenario(tmp_path, f"big.{fmt}", text)
    for argv in (["validate", str(sc)], ["run", str(sc), "-o", str(tmp_path / "o.h5"), "-q"]):
        line = one_line(capsys, main(argv))
        assert "declares n = 10,000,000 vertices" in line and "traversal work 1e+14" in line
        assert "--force" in line and " at an assumed " in line
    assert not (tmp_path / "o.h5").exists()
    assert main(["validate", str(sc), "--force"]) == 0   # asked for explicitly: estimated only
    capsys.readouterr()


def test_a_small_or_dense_declared_count_is_accepted(tmp_path, capsys):
    sc = scenario(tmp_path, "ok.gr", "p sp 1000 3\na 1 2 1\na 2 3 1\na 3 1 1\n")
    assert main(["validate", str(sc)]) == 0
    assert main(["run", str(sc), "-o", str(tmp_path / "o.h5"), "-q"]) == 0
    capsys.readouterr()
