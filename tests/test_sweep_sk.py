"""sweep --collect averages S(k, t) over a field sweep's seeds."""
import csv

import numpy as np

import simengine
from simengine.analysis import radial_structure_factor
from simengine.cli import main

SWEEP = """\
kind: field
name: sk
grid: {shape: [16, 16], spacing: 0.5}
model: {mobility: 1.0, kappa: 0.25}
initial: {type: noise, amplitude: 0.1, seed: 1}
time: {dt: 0.002, steps: 20}
solver: {backend: cpu}
output: {snapshot_every: 10, checkpoint_every: 10, observables_every: 10}
sweep:
  model.mobility: [1.0, 2.0]
  initial.seed: [1, 2, 3]
"""


def test_collect_writes_seed_averaged_structure_factor(tmp_path, capsys):
    p = tmp_path / "sk.yaml"
    p.write_text(SWEEP)
    d = tmp_path / "out"
    assert main(["sweep", str(p), "-d", str(d), "-q"]) == 0
    assert main(["sweep", str(p), "-d", str(d), "--collect"]) == 0
    said = capsys.readouterr()
    assert "sk-structure-factor.csv: S(k, t) averaged over initial.seed" in said.out + said.err
    with open(d / "sk-structure-factor.csv", newline="") as fh:
        rows = list(csv.DictReader(fh))
    assert {r["model.mobility"] for r in rows} == {"1.0", "2.0"}
    assert {r["step"] for r in rows} == {"0", "10", "20"} and {r["count"] for r in rows} == {"3"}
    outs = sorted(d.glob("*.h5"))
    assert len(outs) == 6
    mine = [r for r in rows if r["model.mobility"] == "2.0" and r["step"] == "20"]
    spectra = []
    for out in outs:
        with simengine.open(out) as r:
            if r.scenario["model"]["mobility"] == 2.0:
                k, s = radial_structure_factor(r.phi[-1], 0.5)
                spectra.append(s)
    spectra = np.array(spectra)
    assert len(spectra) == 3
    np.testing.assert_allclose([float(r["k"]) for r in mine], k, rtol=1e-12)
    np.testing.assert_allclose([float(r["S_mean"]) for r in mine], spectra.mean(0), rtol=1e-12)
    np.testing.assert_allclose([float(r["S_se"]) for r in mine],
                               spectra.std(0, ddof=1) / np.sqrt(3), rtol=1e-12)
