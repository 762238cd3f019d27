"""The README's own command lines, parsed from README.md and run in the README's order (issue 48,
item 5: its MPI line failed right after the quickstart, "output file exists").

Every ``bash`` block's commands run in a fresh directory holding the repository's ``scenarios/``,
split at ``&&`` and with comments dropped; installing (venv, pip), the test suite itself and Slurm
(``srun``: no Slurm here) are left out. Runs are shortened with ``--set`` (fewer steps, a smaller
graph) — the README's lines otherwise as written, ``simengine`` being this interpreter's
``python -m simengine``."""
import re
import shlex
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
MPIEXEC = shutil.which("mpiexec") or str(Path(sys.executable).with_name("mpiexec"))
SKIP = ("python3 -m venv", ". .venv", "pip install", "python -m pytest", "srun ")
#: --set shortening per scenario (the README's lines otherwise as written)
SHORTER = {
    "field": ["time.steps=60", "output.snapshot_every=30", "output.checkpoint_every=30",
              "output.observables_every=10"],
    "apsp-ba.yaml": ["graph.generator.n=1200", "graph.generator.m=4"],
}


def readme_commands():
    """The commands of README.md's bash blocks, in order."""
    text = (ROOT / "README.md").read_text()
    out = []
    for block in re.findall(r"```bash\n(.*?)```", text, re.S):
        for line in block.splitlines():
            line = line.split("  #")[0].strip()
            for part in line.split("&&"):
                part = part.strip()
                if part and not part.startswith(SKIP):
                    out.append(part)
    return out


def _argv(cmd):
    words = shlex.split(cmd)
    pre = []
    if words[0] == "mpiexec":
        pre, words = [MPIEXEC] + words[1:3], words[3:]
    assert words[0] == "simengine", cmd
    words = [sys.executable, "-m", "simengine"] + words[1:]
    if words[3] == "run":
        scen = Path(words[4]).name
        sets = SHORTER.get(scen) or (SHORTER["field"] if "apsp" not in scen else [])
        for s in sets:
            words += ["--set", s]
    return pre + words


def test_the_readme_lists_the_quickstart_then_the_mpi_lines():
    cmds = readme_commands()
    assert cmds[0].startswith("simengine run scenarios/spinodal-2d.yaml")
    assert any(c.startswith("mpiexec -n 2 simengine run scenarios/spinodal-2d.yaml") for c in cmds)


@pytest.mark.skipif(not Path(MPIEXEC).exists(), reason="needs mpiexec (the test extra's mpich)")
def test_readme_commands_run_in_order(tmp_path):
    (tmp_path / "scenarios").symlink_to(ROOT / "scenarios")
    for cmd in readme_commands():
        r = subprocess.run(_argv(cmd), cwd=tmp_path, capture_output=True, text=True, timeout=600)
        assert r.returncode == 0, f"README line failed: {cmd}\n{r.stderr[-2000:]}"
