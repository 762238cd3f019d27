#!/usr/bin/env bash
# Issue 51 (coarsening measures) on one GPU, from the repo root; every step under its own
# timeout, 6 min at most; logs under $OUT/i51/ (6 files):
#  1. the GPU tests of the measures: the crossings kernel and the device S(k) shells against
#     the host, DeviceSpectrum with a level (tests/test_coarsening_measures.py, the device
#     spectrum tests of tests/test_field_spectrum.py)
#  2. coarsening-3d (256³, spectral, GPU) to t = 10⁴: `simengine info`'s length lines
#     (target: the default, energy, exponent in [0.28, 0.37])
#  3. 4096² fp64 spectral to t = 10⁶, observables every Δt = 1000 (devtools/device/
#     spectral_4096.sh's scenario): info's length lines + L_E's exponent and its L³ rate
#     over [10⁴, 10⁵] and [10⁵, 10⁶] (targets: n = 0.337 ± 0.01, K within 5 %)
#  4. bench_observe --measures, 4096² fp64 RK2 observed every 1000 steps: CLI with every
#     measure against L = 2π/k₁ only (target ≤ 1.05×)
set -u
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}/i51
mkdir -p "$O"
export PYTHONPATH=${PYTHONPATH:-$PWD}
step() { local t=$1 name=$2; shift 2; echo "=== $name $(date +%T)"
  timeout -k 5 "$t" "$@" > "$O/$name.log" 2>&1; echo "=== $name rc=$? $(date +%T)"
  tail -n 14 "$O/$name.log"; }

step 40 tests python3 -m pytest -q -p no:xdist -o addopts="" tests/test_coarsening_measures.py \
  tests/test_field_spectrum.py -k "device or cuda or shell_sums"
step 70 coarsening3d bash -c 'python3 -m simengine run scenarios/coarsening-3d.yaml \
  -o /tmp/i51-c3d.h5 --overwrite 2>&1 | grep -v "^tick" | tail -n 4;
  python3 -m simengine info /tmp/i51-c3d.h5 | grep "^length"'
cat > /tmp/i51-4096.yaml <<'YAML'
kind: field
name: coarsening-4096
grid: {shape: [4096, 4096]}
boundary: {type: periodic}
initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}
time: {end: 1000000, dt: 0.01, adaptive: true, tolerance: 0.001}
solver: {integrator: spectral, backend: cuda, precision: float64}
output: {observables_dt: 1000, checkpoint_dt: 100000}
YAML
step 185 run4096 bash -c 'python3 -m simengine run /tmp/i51-4096.yaml -o /tmp/i51-4096.h5 \
  --overwrite 2>&1 | grep -v "^tick" | tail -n 4;
  python3 -m simengine info /tmp/i51-4096.h5 | grep "^length"'
step 15 fits4096 python3 - <<'PY'
import numpy as np
from simengine.io.reader import Result
from simengine.coarsening import fit_measure
with Result("/tmp/i51-4096.h5") as r:
    o = r.observables
t = o["time"]
for col in ("length_energy", "length_interface", "length_shell", "length_correlation", "length"):
    L = o[col]
    f = fit_measure(t, L, 1e4 - 1, 4096)          # the window [1e4, 1e6], no box cut there
    ks = []
    for lo, hi in ((1e4, 1e5), (1e5, 1e6)):
        m = (t >= lo) & (t <= hi)
        ks.append(np.polyfit(t[m], L[m] ** 3, 1)[0])
    print(f"{col}: n = {f.exponent:.4f} ± {f.stderr:.4f} over [{f.t_lo:g}, {f.t_hi:g}]; "
          f"K[1e4,1e5] = {ks[0]:.5g}, K[1e5,1e6] = {ks[1]:.5g}, ratio {ks[1] / ks[0]:.4f}")
for tt in (1e3, 1e4, 1e5, 1e6):
    i = min(np.searchsorted(t, tt), len(t) - 1)
    print(f"t = {t[i]:g}: wall {o['wall_time'][i]:.1f} s, L {o['length'][i]:.4g}, "
          f"L_E {o['length_energy'][i]:.4g}, 1/S_v {o['length_interface'][i]:.4g}, "
          f"shell {o['length_shell'][i]:.4g}, r0 {o['length_correlation'][i]:.4g}")
PY
step 50 bench_measures python3 benchmarks/bench_observe.py --measures \
  --cases 4096x4096:float64:1000 --seconds 2 --json "$O/bench_measures.json"
