"""The ``simengine`` package has no import cycles — between modules, and between packages (the
first level below ``simengine``: ``field``, ``network``, ``io``, ``run``, ... and each top-level
module) — and no module over 600 lines.

The graph is built from the source with ``ast`` (module-level and function-level imports, so a
cycle hidden in a function body counts too); an edge ``a → b`` means ``a`` imports ``b`` or a
name from it. ``from . import x`` where ``x`` is a submodule is an edge to the submodule; a
package's ``__init__`` is the package's module."""
from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent / "simengine"
MAX_LINES = 600
#: import edges left out of the graph (importer, imported) that would close a cycle: none are
#: allowed; an entry here needs a reason beside it.
ALLOWED_EDGES: set = set()  # none: the package has no import cycle


def _modules() -> dict:
    mods = {}
    for path in ROOT.rglob("*.py"):
        parts = list(path.relative_to(ROOT.parent).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts = parts[:-1]
        mods[".".join(parts)] = path
    return mods


def _resolve(name: str, level: int, here: str, is_pkg: bool) -> str:
    if not level:
        return name
    base = here.split(".") if is_pkg else here.split(".")[:-1]
    base = base[:len(base) - (level - 1)]
    return ".".join(base + ([name] if name else []))


def import_graph() -> dict:
    mods = _modules()
    graph = {m: set() for m in mods}
    for mod, path in mods.items():
        is_pkg = path.name == "__init__.py"
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            targets = []
            if isinstance(node, ast.Import):
                targets = [a.name for a in node.names]
            elif isinstance(node, ast.ImportFrom):
                base = _resolve(node.module or "", node.level, mod, is_pkg)
                # a submodule by name, else a name of the module ``base``
                targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in mods else base
                           for a in node.names]
            for t in targets:
                while t and t not in mods:  # a name inside a module: the module
                    t = t.rpartition(".")[0]
                if t and t != mod and t.startswith("simengine"):
                    graph[mod].add(t)
    return graph


def cycles(graph: dict) -> list:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on, out = {}, {}, [], set(), []

    def visit(v):
        index[v] = low[v] = len(index)
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = set()
            while True:
                w = stack.pop()
                on.discard(w)
                comp.add(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(comp)

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_no_import_cycles():
    graph = import_graph()
    for a, b in ALLOWED_EDGES:
        assert b in graph[a], f"{a} no longer imports {b}: drop it from ALLOWED_EDGES"
        graph[a].discard(b)
    found = [sorted(c) for c in cycles(graph)]
    assert not found, f"import cycles: {found}"


def test_the_graph_sees_function_level_imports_and_cycles():
    graph = import_graph()
    assert "simengine.field.backends" in graph["simengine.control.field_job"] or any(
        t.startswith("simengine.field") for t in graph["simengine.control.field_job"])
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [{"a", "b", "c"}]
    assert cycles({"a": {"b"}, "b": set()}) == []


def package_graph(graph: dict) -> dict:
    """The import graph with every module replaced by its package: ``simengine.X`` for a module
    of the subpackage X or the top-level module X (edges inside one package dropped)."""
    def pkg(m):
        return ".".join(m.split(".")[:2])

    out = {}
    for a, targets in graph.items():
        out.setdefault(pkg(a), set())
        for b in targets:
            if pkg(a) != pkg(b):
                out[pkg(a)].add(pkg(b))
                out.setdefault(pkg(b), set())
    return out


def test_no_package_import_loops():
    """No package imports another that imports it back, function-level imports counted (the
    optional dependencies — CuPy, mpi4py, matplotlib — are outside ``simengine``)."""
    graph = package_graph(import_graph())
    found = [sorted(c) for c in cycles(graph)]
    assert not found, f"package import loops: {found}"


def test_no_module_over_600_lines():
    long = {m: n for m, p in _modules().items()
            if (n := len(p.read_text().splitlines())) > MAX_LINES}
    assert not long, f"modules over {MAX_LINES} lines: {long}"
