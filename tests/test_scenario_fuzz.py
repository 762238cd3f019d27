"""Fuzzing the scenario loader: random YAML-ish text, mutations of the shipped scenarios (as data
and as text) and random ``--set`` overrides go through an in-process ``simengine validate``.

Every case must end with exit 0 (one "OK" line) or exit 2 (one ``simengine: error:`` line of
bounded length). Any other exception fails the test, and so does a case still running after
HANG_S seconds (a hang guard: the cases take milliseconds). The number of cases run and their
time are printed at the end of the module.
"""
import contextlib
import io
import math
import signal
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from simengine.cli import main


#: a case still running after this long is a hang
HANG_S = 60
ROOT = Path(__file__).resolve().parents[1]
#: the shipped scenarios; a sweep (one validation per task) is left to the sweep tests
SHIPPED = {p.name: p.read_text() for p in sorted((ROOT / "scenarios").glob("*.yaml"))
           if "sweep" not in yaml.safe_load(p.read_text())}
SHIPPED_DATA = {name: yaml.safe_load(text) for name, text in SHIPPED.items()}
COUNTS = Counter()
FUZZ = settings(deadline=None, database=None, derandomize=False,
                suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large,
                                       HealthCheck.large_base_example])

# ----------------------------------------------------------------------------------- the check


class Hang(BaseException):
    """Raised by the watchdog: no ``except Exception`` in the code under test can swallow it."""


@contextlib.contextmanager
def watchdog(seconds):
    def fire(signum, frame):
        raise Hang(f"a case ran longer than {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


@pytest.fixture(scope="module")
def workdir(tmp_path_factory):
    return tmp_path_factory.mktemp("fuzz")


@pytest.fixture(scope="module", autouse=True)
def report(request):
    t0 = time.perf_counter()
    yield
    line = (f"scenario loader fuzz: {sum(COUNTS.values())} cases "
            f"({', '.join(f'{k} {v}' for k, v in sorted(COUNTS.items()))}) in "
            f"{time.perf_counter() - t0:.1f} s")
    capture = request.config.pluginmanager.getplugin("capturemanager")
    with capture.global_and_fixture_disabled() if capture else contextlib.nullcontext():
        print(f"\n{line}")


def validate(workdir, text, overrides=(), family="text"):
    """Run ``simengine validate`` in-process on ``text``; check exit code and output shape."""
    COUNTS[family] += 1
    path = workdir / "fuzz.yaml"
    path.write_bytes(text.encode("utf-8", "surrogatepass") if isinstance(text, str) else text)
    out, err = io.StringIO(), io.StringIO()
    with watchdog(HANG_S), contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        rc = main(["validate", str(path), *(f"--set={o}" for o in overrides)])
    out, err = out.getvalue(), err.getvalue()
    assert rc in (0, 2), (rc, err[-2000:])
    if rc == 0:
        assert out.splitlines()[-1].startswith(f"{path}: OK — "), (out, err)
        assert all(line.startswith("note: ") for line in err.splitlines()), err[:2000]
    else:
        assert err.startswith("simengine: error: ") and err.count("\n") == 1, err[:2000]
        assert len(err) < 800, err[:2000]
        assert "Traceback" not in err
    return rc


# ----------------------------------------------------------------------------------- strategies
KEYS = ["kind", "name", "description", "grid", "shape", "spacing", "boundary", "type", "value",
        "model", "mobility", "kappa", "potential", "b", "u", "coefficients", "initial", "mean",
        "amplitude", "seed", "path", "dataset", "time", "dt", "steps", "allow_unstable", "solver",
        "integrator", "kernel", "backend", "precision", "tile", "block", "layout", "output",
        "snapshot_every", "checkpoint_every", "observables_every", "compression", "graph",
        "generator", "file", "format", "directed", "weights", "low", "high", "n", "m", "k", "p",
        "alpha", "ring", "connect", "scale", "edge_factor", "periodic", "metrics", "sources",
        "sample", "algorithm", "statistics", "store_distances", "histogram_bin_width", "batch"]
WORDS = ["field", "network", "periodic", "mirror", "fixed", "noise", "file", "rk2", "euler",
         "texture", "global", "cpu", "cuda", "auto", "float32", "float64", "gzip", "all",
         "barabasi_albert", "watts_alpha", "gnm", "gnp", "rmat", "grid", "torus", "ring_lattice",
         "watts_strogatz", "random_weighted", "uniform_int", "none", "dijkstra", "msbfs",
         "/dev/zero", "/proc/self/environ", ".", "..", "~nouser/x", "a" * 300, "x\x00y"]
TOKENS = (["kind: field\n", "kind: network\n", "name: x\n", "{", "}", "[", "]", ", ", ": ", ":",
           "- ", "\n", "  ", "    ", "\t", "&a ", "*a", "&b ", "*b", "<<: ", "!!float ",
           "!!int ", "!!str ", "!!binary ", "!!timestamp ", "!!bool ", "!!set ", "!!omap ",
           "!!python/object ", "!custom ", "? ", "|\n", ">\n", "'", '"', "#", "---\n", "...\n",
           "%YAML 1.1\n", "%TAG ! tag:x,2000:\n", ".nan", ".inf", "-.inf", "1e309", "1.0e+400",
           "true", "yes", "null", "~", "0x1F", "0o17", "0b101", "1_000", "1:30:00", "2001-12-14",
           "2001-13-45", "9" * 30, "9" * 1200, "-0", "é", "\ufeff", "\x00", "\x85", "\u2028",
           "\\", "\\x41", "@", "`"]
          + [k + ": " for k in KEYS] + WORDS)

yaml_like_text = st.lists(st.one_of(st.sampled_from(TOKENS), st.text(max_size=6)),
                          max_size=80).map("".join)

NUMBERS = st.one_of(
    st.integers(), st.integers(min_value=-2**70, max_value=2**70),
    st.sampled_from([10**40, 2**63, 2**63 - 1, 2**31, 2**31 - 1, 2**53 + 1, -1, 0, 1, 2, 3, 7]),
    st.floats(), st.sampled_from([math.nan, math.inf, -math.inf, 1e308, 1e-308, 5e-324, -0.0,
                                  1e-20, 1e20, 0.5, 1.5]))
SCALARS = st.one_of(NUMBERS, st.none(), st.booleans(), st.text(max_size=12), st.sampled_from(WORDS))
VALUES = st.recursive(SCALARS, lambda inner: st.one_of(
    st.lists(inner, max_size=4), st.dictionaries(st.one_of(st.sampled_from(KEYS),
                                                           st.text(max_size=6)), inner, max_size=4)),
    max_leaves=8)


def _paths(node, prefix=()):
    """Every key path into a nested scenario (mappings and lists), the root included."""
    out = [prefix]
    if isinstance(node, dict):
        for k, v in node.items():
            out += _paths(v, prefix + (k,))
    elif isinstance(node, list):
        for i, v in enumerate(node):
            out += _paths(v, prefix + (i,))
    return out


@st.composite
def mutated_scenario(draw):
    """A shipped scenario with 1-4 data mutations: replace, delete, add a key, wrap in a list."""
    import copy

    name = draw(st.sampled_from(sorted(SHIPPED_DATA)))
    data = copy.deepcopy(SHIPPED_DATA[name])
    for _ in range(draw(st.integers(1, 4))):
        paths = _paths(data)
        path = draw(st.sampled_from(paths))
        op = draw(st.sampled_from(["replace", "replace", "delete", "add", "wrap"]))
        if not path:
            if op == "add" and isinstance(data, dict):
                data[draw(st.sampled_from(KEYS))] = draw(VALUES)
            continue
        parent = data
        for k in path[:-1]:
            parent = parent[k]
        last = path[-1]
        if op == "replace":
            parent[last] = draw(VALUES)
        elif op == "delete":
            del parent[last]
        elif op == "wrap":
            parent[last] = [parent[last]]
        elif isinstance(parent[last], dict):
            parent[last][draw(st.sampled_from(KEYS))] = draw(VALUES)
    return yaml.safe_dump(data, sort_keys=False, allow_unicode=draw(st.booleans()))


@st.composite
def mutated_text(draw):
    """A shipped scenario's text with 1-3 edits: delete, insert tokens, replace, duplicate a line."""
    text = SHIPPED[draw(st.sampled_from(sorted(SHIPPED)))]
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(text)))
        j = draw(st.integers(i, min(len(text), i + 40)))
        op = draw(st.sampled_from(["delete", "insert", "replace", "duplicate"]))
        if op == "delete":
            text = text[:i] + text[j:]
        elif op == "insert":
            text = text[:i] + draw(yaml_like_text) + text[i:]
        elif op == "replace":
            text = text[:i] + draw(st.sampled_from(TOKENS)) + text[j:]
        else:
            lines = text.splitlines(keepends=True)
            k = draw(st.integers(0, max(0, len(lines) - 1)))
            text = "".join(lines[:k + 1] + lines[k:])
    return text


def _flow(value):
    try:
        return yaml.safe_dump(value, default_flow_style=True, width=10**6).strip()
    except yaml.YAMLError:
        return repr(value)


override = st.one_of(
    st.builds(lambda keys, v: ".".join(keys) + "=" + v,
              st.lists(st.sampled_from(KEYS), min_size=1, max_size=3), VALUES.map(_flow)),
    st.builds(lambda keys, v: ".".join(keys) + "=" + v,
              st.lists(st.sampled_from(KEYS), min_size=1, max_size=3), yaml_like_text),
    st.text(max_size=30))


# ----------------------------------------------------------------------------------- the tests
@settings(FUZZ, max_examples=600)
@given(text=yaml_like_text)
def test_random_yaml_like_text(workdir, text):
    validate(workdir, text, family="random text")


@settings(FUZZ, max_examples=150)
@given(raw=st.binary(max_size=200))
def test_random_bytes(workdir, raw):
    validate(workdir, raw, family="random bytes")


@settings(FUZZ, max_examples=750)
@given(text=mutated_scenario())
def test_mutated_shipped_scenarios(workdir, text):
    validate(workdir, text, family="data mutations")


@settings(FUZZ, max_examples=500)
@given(text=mutated_text())
def test_text_edits_of_shipped_scenarios(workdir, text):
    validate(workdir, text, family="text edits")


@settings(FUZZ, max_examples=250)
@given(name=st.sampled_from(sorted(SHIPPED)), overrides=st.lists(override, min_size=1, max_size=3))
def test_random_overrides(workdir, name, overrides):
    validate(workdir, SHIPPED[name], overrides, family="--set overrides")


def test_the_fuzz_check_can_fail(workdir, monkeypatch):
    """The property is not vacuous: an exception other than UserError escapes and fails it."""
    from simengine import config

    def broken(*a, **k):
        raise ValueError("boom")

    monkeypatch.setattr(config, "validate_located", broken)
    with pytest.raises(ValueError):
        validate(workdir, SHIPPED["spinodal-2d.yaml"], family="self-check")
    with pytest.raises(Hang):
        with watchdog(0.05):
            time.sleep(1)
