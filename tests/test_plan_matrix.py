"""validate = run, as a matrix generated from the registries (issue 47).

Network: every ``metrics.algorithm`` (network/algorithms.py) × every graph input kind (a
generator and every reader format of network/readers: edge list, SNAP, Matrix Market pattern and
real, DIMACS, METIS with and without its fmt field, KONECT, GraphML, GML, Pajek) × unweighted,
integer and real weights × directed and undirected × backend cpu (cuda under the simulator on a
subset, tests/test_plan_matrix_cuda.py). Each case is validated (``simengine validate`` in this
process) and started as ``simengine run`` starts it (:func:`simengine.control.runner.start_job`:
the resource check, the one plan, the job), then its work is done; the property: validate accepts
exactly when the run starts, both print the same ``plan:`` line or the same refusal, and the
run's numbers are networkx's. A subset goes through the whole ``simengine run`` (output included:
its ``/plan`` equals validate's line), and 2 MPI ranks on a representative subset.
"""
from __future__ import annotations

import itertools
import math

import networkx as nx
import numpy as np
import pytest

from simengine import cli
from simengine.network.algorithms import ALGORITHMS
from simengine.network.readers import FORMATS

#: every name metrics.algorithm takes, aliases aside (they are the same rows)
ALGS = ("auto",) + tuple(ALGORITHMS)

#: the test graph: 7 vertices, a path of two branches and a chord; weights 1..9 (integers) and
#: their real twins (x 1.25 + 0.1)
EDGES = [(1, 2, 3), (2, 3, 1), (3, 4, 9), (4, 5, 2), (2, 6, 5), (6, 7, 4), (7, 4, 1),
         (5, 1, 7)]
N = 7
WEIGHTS = ("none", "int", "real")


def _w(w, mode):
    return w if mode == "int" else round(1.25 * w + 0.1, 4)


# ----------------------------------------------------------------------- the input kinds
def _edgelist(mode, directed):
    return "".join(f"{u} {v}" + ("" if mode == "none" else f" {_w(w, mode)}") + "\n"
                   for u, v, w in EDGES)


def _snap(mode, directed):
    kind = "Directed" if directed else "Undirected"
    return (f"# {kind} graph: matrix.txt\n# Nodes: {N} Edges: {len(EDGES)}\n"
            f"# FromNodeId\tToNodeId\n" + _edgelist(mode, directed))


def _mtx(mode, directed):
    field = "pattern" if mode == "none" else "integer" if mode == "int" else "real"
    sym = "general" if directed else "symmetric"
    rows = []
    for u, v, w in EDGES:
        a, b = (u, v) if directed else (max(u, v), min(u, v))      # symmetric: lower triangle
        rows.append(f"{a} {b}" + ("" if mode == "none" else f" {_w(w, mode)}"))
    return (f"%%MatrixMarket matrix coordinate {field} {sym}\n{N} {N} {len(EDGES)}\n"
            + "\n".join(rows) + "\n")


def _dimacs(mode, directed):
    return f"p sp {N} {len(EDGES)}\n" + "".join(f"a {u} {v} {_w(w, mode)}\n"
                                                for u, v, w in EDGES)


def _metis(mode, directed, fmt=None):
    adj = {v: [] for v in range(1, N + 1)}
    for u, v, w in EDGES:
        adj[u].append((v, w))
        adj[v].append((u, w))
    head = f"{N} {len(EDGES)}" + ("" if fmt is None else f" {fmt}")
    lines = [" ".join(f"{v}" + (f" {_w(w, mode)}" if fmt == 1 else "") for v, w in adj[u])
             for u in range(1, N + 1)]
    return head + "\n" + "\n".join(lines) + "\n"


def _konect(mode, directed):
    kind = "unweighted" if mode == "none" else "posweighted"
    return (f"% {'asym' if directed else 'sym'} {kind}\n% {len(EDGES)} {N} {N}\n"
            + _edgelist(mode, directed))


def _pajek(mode, directed):
    """By hand: networkx's writer gives every edge a weight (1.0 when it has none)."""
    return (f"*Vertices {N}\n" + "".join(f'{v} "{v}"\n' for v in range(1, N + 1))
            + ("*Arcs\n" if directed else "*Edges\n") + _edgelist(mode, directed))


def _nx_graph(mode, directed):
    G = nx.DiGraph() if directed else nx.Graph()
    G.add_nodes_from(range(1, N + 1))
    for u, v, w in EDGES:
        if mode == "none":
            G.add_edge(u, v)
        else:
            G.add_edge(u, v, weight=_w(w, mode))
    return G


def _via_nx(writer):
    def text(mode, directed, path):
        writer(_nx_graph(mode, directed), path)
    return text


#: input kind → (file name, writer(mode, directed) -> text | writer(mode, directed, path),
#: weight modes the format holds, whether the scenario states the direction (graph.directed):
#: formats that say it themselves are written saying it)
KINDS = {
    "edgelist": ("g.txt", _edgelist, WEIGHTS, True),
    "snap": ("g.txt", _snap, WEIGHTS, False),
    "mtx-pattern": ("g.mtx", _mtx, ("none",), False),
    "mtx-real": ("g.mtx", _mtx, ("int", "real"), False),
    "dimacs": ("g.gr", _dimacs, ("int", "real"), True),
    "metis": ("g.graph", _metis, ("none",), True),
    "metis-fmt": ("g.graph", None, WEIGHTS, True),         # fmt 0 unweighted, fmt 1 weights
    "konect": ("out.g", _konect, WEIGHTS, False),
    "graphml": ("g.graphml", _via_nx(nx.write_graphml), WEIGHTS, False),
    "gml": ("g.gml", _via_nx(nx.write_gml), WEIGHTS, False),
    "pajek": ("g.net", _pajek, WEIGHTS, False),
    "generator": (None, None, ("none", "int"), True),
}
#: each reader format is an input kind here (a new format fails this until it is added)
assert {k.split("-")[0] for k in KINDS} - {"snap", "generator"} == set(FORMATS)

GEN = "{type: gnm, n: 9, m: 14, seed: 3%s}"


def case_ids():
    for kind, (_, _, modes, _) in KINDS.items():
        for mode, directed, alg in itertools.product(modes, (False, True), ALGS):
            yield kind, mode, directed, alg


CASES = sorted(case_ids())


def write_case(tmp_path, kind, mode, directed, alg, backend="cpu", extra=""):
    """The scenario (and its graph file) of one case; returns its path."""
    name, writer, _, states = KINDS[kind]
    if kind == "generator":
        w = ", weights: {type: uniform_int, low: 1, high: 9, seed: 2}" if mode == "int" else ""
        graph = f"{{generator: {GEN % w}, directed: {str(directed).lower()}}}"
    else:
        path = tmp_path / name
        if kind == "metis-fmt":
            text = _metis(mode, directed, fmt=0 if mode == "none" else 1)
        elif kind in ("graphml", "gml"):
            text = writer(mode, directed, path)
        else:
            text = writer(mode, directed)
        if text is not None:
            path.write_text(text)
        fmt = ", format: konect" if kind == "konect" else ""
        said = f", directed: {str(directed).lower()}" if states or kind == "metis" else ""
        weights = ", weights: none" if kind == "dimacs" and mode == "none" else ""
        graph = f"{{file: {{path: {name}{fmt}}}{said}{weights}}}"
    scen = tmp_path / "s.yaml"
    scen.write_text(f"kind: network\nname: m\ngraph: {graph}\n"
                    f"metrics: {{sources: all, algorithm: {alg}, statistics: [mean_distance, "
                    f"diameter]{extra}}}\nsolver: {{backend: {backend}}}\n"
                    f"output: {{checkpoint_every: 64}}\n")
    return scen


def _lines(text, prefix):
    return [ln.split("simengine: ", 1)[-1] for ln in text.splitlines()
            if ln.split("simengine: ", 1)[-1].startswith(prefix)]


def validate(capsys, scen):
    """(plan line or None, the error line or None) of ``simengine validate``."""
    rc = cli.main(["validate", str(scen)])
    out = capsys.readouterr()
    text = out.out + out.err
    if rc == 0:
        (line,) = _lines(text, "plan: ")
        return line, None
    assert rc == 2, text
    (err,) = [ln for ln in text.splitlines() if ln.startswith("simengine: error: ")]
    return None, err.removeprefix("simengine: error: ")


def start(scen):
    """(the job, None) as ``simengine run`` starts it, or (None, its refusal)."""
    from simengine.config import load_scenario
    from simengine.control.runner import start_job
    from simengine.errors import UserError
    from simengine.parallel import SerialComm

    try:
        sc = load_scenario(str(scen), [])
        return start_job(sc, SerialComm(), output=scen.with_suffix(".h5")), None
    except UserError as exc:
        return None, str(exc)


def reference(graph):
    """(mean distance over the reachable ordered pairs, diameter) by networkx, on the graph the
    run read (its CSR: a generator's graph; a file's was written from :data:`EDGES`)."""
    G = nx.DiGraph() if graph.directed else nx.Graph()
    G.add_nodes_from(range(graph.n))
    ip, ix = graph.indptr, graph.indices
    for u in range(graph.n):
        for k in range(ip[u], ip[u + 1]):
            G.add_edge(u, int(ix[k]), weight=1.0 if graph.weights is None
                       else float(graph.weights[k]))
    w = "weight" if graph.weights is not None else None
    d = [x for s, row in nx.shortest_path_length(G, weight=w) for t, x in row.items() if t != s]
    return sum(d) / len(d), max(d)


def file_reference(kind, mode, directed):
    """What the file holds, by networkx from :data:`EDGES` (not through the readers)."""
    if kind == "generator":
        return None
    # METIS lists each edge at both of its ends: directed, these are arcs both ways
    G = _nx_graph(mode, directed and not kind.startswith("metis"))
    w = None if mode == "none" else "weight"
    d = [x for s, row in nx.shortest_path_length(G, weight=w) for t, x in row.items() if t != s]
    return sum(d) / len(d), max(d)


def expected_to_run(alg, mode, backend="cpu"):
    """The vocabulary's rule (network/algorithms.py), independently of the plan: the BFS rows
    need an unweighted graph, Dial integer weights; everything else runs (or is replaced by a
    row computing the same distances)."""
    if alg != "auto" and ALGORITHMS[alg][0] and mode != "none":
        return False
    if alg == "dial" and mode == "real" and backend == "cpu":
        return False
    return True


def check_case(tmp_path, capsys, kind, mode, directed, alg, backend="cpu"):
    scen = write_case(tmp_path, kind, mode, directed, alg, backend)
    line, verr = validate(capsys, scen)
    job, rerr = start(scen)
    capsys.readouterr()
    assert (line is None) == (job is None), (line, verr, rerr)
    assert (job is not None) == expected_to_run(alg, mode, backend), (verr, rerr)
    if job is None:
        assert verr == rerr
        return None
    assert job.run_plan.line == line
    job.advance(0, job.total, lambda: False, lambda done: None)
    res = job.stats.results(graph=job.graph)
    md, diam = reference(job.graph)
    assert res["mean_distance"] == pytest.approx(md, rel=1e-12)
    assert res["diameter"] == pytest.approx(diam, rel=1e-12)
    ref = file_reference(kind, mode, directed)
    if ref is not None:      # the reader read what was written
        assert (res["mean_distance"], res["diameter"]) == pytest.approx(ref, rel=1e-12)
    return line


@pytest.mark.parametrize("kind,mode,directed,alg", CASES,
                         ids=[f"{k}-{m}-{'dir' if d else 'und'}-{a}" for k, m, d, a in CASES])
def test_validate_is_run_cpu(tmp_path, capsys, monkeypatch, kind, mode, directed, alg):
    monkeypatch.chdir(tmp_path)
    check_case(tmp_path, capsys, kind, mode, directed, alg)


#: the whole ``simengine run`` (output and its /plan) once per input kind
WHOLE = [(kind, KINDS[kind][2][-1], kind not in ("metis",), "auto") for kind in KINDS] + [
    ("mtx-pattern", "none", True, "msbfs"), ("edgelist", "int", False, "bfs")]


@pytest.mark.parametrize("kind,mode,directed,alg", WHOLE)
def test_run_output_holds_the_validated_plan(tmp_path, capsys, monkeypatch, kind, mode,
                                             directed, alg):
    import h5py

    monkeypatch.chdir(tmp_path)
    scen = write_case(tmp_path, kind, mode, directed, alg)
    line, verr = validate(capsys, scen)
    out = tmp_path / "o.h5"
    rc = cli.main(["run", str(scen), "--output", str(out)])
    text = capsys.readouterr().err
    assert (rc == 0) == (line is not None), text
    if rc:
        assert _lines(text, "simengine: error: ") == [] and verr in text
        assert not out.exists()
        return
    assert _lines(text, "plan: ") == [line]
    with h5py.File(out, "r") as f:
        assert f.attrs["plan"] == line and f["plan"].attrs["line"] == line
        md = float(f["statistics/mean_distance"][()])
    ref = file_reference(kind, mode, directed)
    if ref is not None:
        assert md == pytest.approx(ref[0], rel=1e-12)
    assert math.isfinite(md)


def test_predecessors_imply_distances_in_validate_and_run(tmp_path, capsys, monkeypatch):
    """``store_predecessors: true`` alone: the paths need the rows, so the distances are stored
    too, said in one line by validate and by run."""
    import h5py

    monkeypatch.chdir(tmp_path)
    scen = write_case(tmp_path, "edgelist", "int", False, "auto",
                      extra=", store_predecessors: true")
    rc = cli.main(["validate", str(scen)])
    text = capsys.readouterr()
    assert rc == 0, text
    said = [ln for ln in (text.out + text.err).splitlines() if "implies" in ln]
    assert len(said) == 1 and "metrics.store_distances" in said[0]
    out = tmp_path / "o.h5"
    rc = cli.main(["run", str(scen), "--output", str(out)])
    err = capsys.readouterr().err
    assert rc == 0, err
    assert [ln.removeprefix("simengine: ") for ln in err.splitlines() if "implies" in ln] == \
        [said[0].removeprefix("note: ")]
    with h5py.File(out, "r") as f:
        d, p = f["distances"][()], f["predecessors"][()]
    assert d.shape == p.shape == (N, N)
    assert np.isfinite(d).all()


#: the CUDA rows under the simulator (tiny graphs): every algorithm on a file of each weight
#: kind, both directions, and on a generator; on a real GPU the same cases run on the device
CUDA_CASES = [c for c in CASES if c[0] == "edgelist" or (c[0] == "generator" and not c[2])]


@pytest.mark.parametrize("kind,mode,directed,alg", CUDA_CASES,
                         ids=[f"{k}-{m}-{'dir' if d else 'und'}-{a}"
                              for k, m, d, a in CUDA_CASES])
def test_validate_is_run_cuda(tmp_path, capsys, monkeypatch, kind, mode, directed, alg):
    monkeypatch.chdir(tmp_path)
    check_case(tmp_path, capsys, kind, mode, directed, alg, backend="cuda")


#: 2 MPI ranks: a representative case of each row family (the plan line is rank 0's, once)
RANKS = [("metis-fmt", "none", False, "bfs"), ("dimacs", "int", True, "dial")]


@pytest.mark.parametrize("kind,mode,directed,alg", RANKS)
def test_two_ranks_run_the_validated_plan(tmp_path, capsys, monkeypatch, kind, mode, directed,
                                          alg):
    import os
    import shutil
    import subprocess
    import sys
    from pathlib import Path

    import h5py

    monkeypatch.chdir(tmp_path)
    scen = write_case(tmp_path, kind, mode, directed, alg)
    line, verr = validate(capsys, scen)
    assert line is not None, verr
    mpiexec = shutil.which("mpiexec") or str(Path(sys.executable).with_name("mpiexec"))
    env = dict(os.environ, NUMBA_NUM_THREADS="1", OMP_NUM_THREADS="1",
               MPIR_CVAR_CH4_PROGRESS_THROTTLE="true", HYDRA_LAUNCHER="fork")
    out = tmp_path / "o.h5"
    r = subprocess.run([mpiexec, "-n", "2", sys.executable, "-m", "simengine", "run", str(scen),
                        "--output", str(out)], capture_output=True, text=True, timeout=600,
                       env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stderr
    assert _lines(r.stderr, "plan: ") == [line]
    with h5py.File(out, "r") as f:
        assert f.attrs["plan"] == line and f["plan"].attrs["ranks"] == 2
        md = float(f["statistics/mean_distance"][()])
    assert md == pytest.approx(file_reference(kind, mode, directed)[0], rel=1e-12)


@pytest.mark.parametrize("backend", ["cpu", "cuda"])
def test_the_engine_batch_is_the_engines_not_the_jobs(backend):
    """``solver.batch`` is the job's: sources handed to the engine at once; the MS-BFS bitsets
    are as wide as the engine's own sweep (its DEFAULT_WORDS), whatever ``solver.batch``."""
    from simengine.plan import GraphShape, NetworkProblem, build

    if backend == "cuda":
        from simengine.network.cuda.msbfs import DEFAULT_WORDS
    else:
        from simengine.network.cpu.msbfs import DEFAULT_WORDS
    shape = GraphShape(n=5000, num_arcs=40000, weighted=False, dial=True, exact=True,
                       directed=False)
    items = {}
    for batch in (None, 4096):
        p = build(NetworkProblem(graph=shape, backend=backend, algorithm="msbfs",
                                 num_sources=5000, batch=batch, checkpoint_every=5000))
        assert p.batch == (batch or p.batch)
        (items[batch],) = [i for i in p.items if "MS-BFS" in i.what]
    assert f"{DEFAULT_WORDS} words per vertex" in items[4096].what
    assert items[None] == items[4096]


#: the text formats validate predicts from a header or the first lines when a file is too long
#: to parse (config/checks.py VALIDATE_MAX_LINES)
PREDICTED = [(k, m, a) for k in ("edgelist", "snap", "mtx-pattern", "mtx-real", "dimacs", "metis",
                                  "metis-fmt", "konect")
             for m in KINDS[k][2] for a in ("bfs", "msbfs", "dial", "auto")]


@pytest.mark.parametrize("kind,mode,alg", PREDICTED)
def test_validate_predicts_a_long_file_as_the_run_reads_it(tmp_path, capsys, monkeypatch, kind,
                                                          mode, alg):
    """A file beyond validate's parse limit (here: 2 lines) is planned from its header or
    first lines: validate accepts exactly what the run runs, with the same row."""
    from simengine.config import checks

    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(checks.parse_graph_file, "__defaults__", (None, 2))
    scen = write_case(tmp_path, kind, mode, False, alg)
    line, verr = validate(capsys, scen)
    job, rerr = start(scen)
    capsys.readouterr()
    assert (line is None) == (job is None), (line, verr, rerr)
    if job is not None:
        assert line.split(" (")[0] == job.run_plan.line.split(" (")[0]


#: graph.weights (network/weights_setting.py) over a file of each weight kind
SETTINGS = {"absent": "", "none": ", weights: none", "file": ", weights: file",
            "uniform_int": ", weights: {type: uniform_int, low: 1, high: 9, seed: 1}"}
SETTING_CASES = [(m, st, a) for m in WEIGHTS for st in SETTINGS
                 for a in ("bfs", "dial", "dijkstra", "auto")]


@pytest.mark.parametrize("mode,setting,alg", SETTING_CASES)
def test_weights_setting_validate_is_run(tmp_path, capsys, monkeypatch, mode, setting, alg):
    monkeypatch.chdir(tmp_path)
    scen = write_case(tmp_path, "edgelist", mode, False, alg)
    scen.write_text(scen.read_text().replace("directed: false}", f"directed: false"
                                             f"{SETTINGS[setting]}}}"))
    line, verr = validate(capsys, scen)
    job, rerr = start(scen)
    capsys.readouterr()
    assert (line is None) == (job is None), (line, verr, rerr)
    effective = {"absent": mode, "none": "none", "file": mode, "uniform_int": "int"}[setting]
    if setting == "file" and mode == "none":
        assert job is None and "weights required" in verr
        return
    assert (job is not None) == expected_to_run(alg, effective), (verr, rerr)
    if job is None:
        assert verr == rerr
        return
    assert job.run_plan.line == line
    job.advance(0, job.total, lambda: False, lambda done: None)
    res = job.stats.results(graph=job.graph)
    assert res["mean_distance"] == pytest.approx(reference(job.graph)[0], rel=1e-12)
