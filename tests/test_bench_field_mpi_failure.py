"""benchmarks/bench_field_mpi.py: a failing rank always says what failed (its rank, the case and
the exception line, or the exit status / signal of the launch) — never an empty message."""
from __future__ import annotations

import argparse
import importlib.util
import sys
from pathlib import Path

from test_mpi_network import MPIEXEC

ROOT = Path(__file__).resolve().parents[1]


def _bench():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    try:
        spec = importlib.util.spec_from_file_location("_bench_field_mpi",
                                                      ROOT / "benchmarks" / "bench_field_mpi.py")
        mod = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(mod)
        return mod
    finally:
        sys.path.remove(str(ROOT / "benchmarks"))


def test_failure_text_names_the_status_and_the_last_lines():
    b = _bench()
    assert b.failure_text(-11, "", "") == "killed by SIGSEGV: no output"
    assert b.failure_text(None, "", "x\n") == "timed out: x"
    assert b.failure_text(1, "RESULT {}\nlast out\n", "") == "exit code 1: RESULT {} | last out"
    assert b.failure_text(139, "", "a\nb\n") == "exit code 139 (signal SIGSEGV?): a | b"


def test_a_failing_rank_says_which_rank_and_what(tmp_path):
    b = _bench()
    a = argparse.Namespace(cases="nosuch", precisions="float64", backend="cpu", steps=1,
                           launcher=MPIEXEC, timeout=300.0)
    import os

    results, failure = b.launch(a, 2, dict(os.environ, NUMBA_NUM_THREADS="1"), 1)
    assert results == {}
    assert failure.startswith("2 rank(s): FAILED rank ")
    assert " of 2 in nosuch float64: KeyError: 'nosuch'" in failure
