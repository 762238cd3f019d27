"""`simengine info --verify` prints the summary `info` prints, then the verdict."""
from conftest import run_cli


def test_verify_prints_the_summary_and_the_verdict(tmp_path):
    scen = tmp_path / "s.yaml"
    scen.write_text("kind: network\nname: s\ngraph:\n  generator: {type: gnm, n: 30, m: 60, seed: 1}\n"
                    "solver: {backend: cpu}\n")
    out = tmp_path / "s.h5"
    assert run_cli("run", scen, "-o", out, "-q").returncode == 0
    info = run_cli("info", out)
    verify = run_cli("info", "--verify", out)
    assert info.returncode == 0 and verify.returncode == 0, verify.stderr
    lines = verify.stdout.rstrip("\n").split("\n")
    assert "\n".join(lines[:-1]) == info.stdout.rstrip("\n")
    assert lines[-1].startswith(f"{out}: verified (")
