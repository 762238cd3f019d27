"""Several ``simengine`` commands in one MPI launch, so a test pays the ranks' start-up (Python,
numba, MPI) once for many cases: ``mpiexec -n N python run_many.py OUTDIR CMDS.json``.

``CMDS.json`` is a list of argv lists (``["run", "f.yaml", "-o", "out.h5"]``). Each rank runs them
in order through ``simengine.cli.main``; command i's stderr on rank r goes to
``OUTDIR/cmd{i}.rank{r}.err`` and its exit code to ``OUTDIR/cmd{i}.rank{r}.rc``."""
import contextlib
import json
import sys
from pathlib import Path

from simengine.cli import main
from simengine.parallel import world


def run():
    out, cmds = Path(sys.argv[1]), json.loads(Path(sys.argv[2]).read_text())
    rank = world().rank
    for i, argv in enumerate(cmds):
        err = out / f"cmd{i}.rank{rank}.err"
        with open(err, "w") as fh, contextlib.redirect_stderr(fh):
            rc = main([str(a) for a in argv])
        (out / f"cmd{i}.rank{rank}.rc").write_text(str(rc))
        world().barrier()


if __name__ == "__main__":
    run()
