"""Library warnings: numba's and numpy's RuntimeWarnings dropped, others one line."""
import io
import warnings

import numpy as np
from numba.core.errors import NumbaPerformanceWarning

from simengine import library_warnings


def test_library_warnings_are_dropped_or_one_line(monkeypatch):
    err = io.StringIO()
    monkeypatch.setattr(library_warnings.sys, "stderr", err)
    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)   # restored afterwards
    library_warnings.install()
    with warnings.catch_warnings():
        warnings.simplefilter("always")
        warnings.showwarning = library_warnings._show      # catch_warnings saved the old one
        warnings.warn("Grid size 3 will likely result in GPU under-utilization",
                      NumbaPerformanceWarning)
        with np.errstate(all="warn"):
            np.array([1e308]) * 10.0                        # overflow encountered in multiply
            np.log(np.array([-1.0]))                        # invalid value encountered in log
        warnings.warn("something else\nwith a second line", UserWarning)
    assert err.getvalue() == "simengine: warning: something else\n"


def test_the_cli_installs_it(monkeypatch, tmp_path, capsys):
    from simengine.cli import main

    monkeypatch.setattr(warnings, "showwarning", warnings.showwarning)
    assert main(["info", str(tmp_path / "missing.h5")]) == 2
    assert warnings.showwarning is library_warnings._show
