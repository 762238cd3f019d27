#!/usr/bin/env bash
# Issue 39 (spectral integrator) on one GPU, from the repo root; logs under $OUT/i39/. ≤ 4 min.
# 1. tests/gpu/spectral_checks.py: GPU = CPU for every boundary × precision × symbol, order on
#    the GPU, device reductions, adaptive F never rising, a CLI run GPU = CPU
# 2. the target run itself: 4096² fp64 spectral adaptive to t = 10⁶, observables every Δt = 1000,
#    through `simengine run` (its progress lines are logged every 10 s, so a run cut by the
#    timeout still shows how far it got and at what rate)
#    (device run of 2026-11-28 13:13: t = 10³ / 10⁴ / 10⁵ after 21 / 40 / 73 s in the run, cut at
#    t = 1.5·10⁵ by its 85 s limit)
# 3. bench_spectral.py --gpu --skip-big: 512² to t = 10⁴ spectral adaptive against RK2 at
#    dt = 0.02, both on the GPU (F within 1 %, L within 2 %, wall ratio)
mkdir -p "$OUT/i39"
python3 -c "import cupy, cupyx.scipy.fft; print('cupy', cupy.__version__, cupy.cuda.runtime.getDeviceCount(), 'GPU(s)')"
timeout 60 python3 tests/gpu/spectral_checks.py > "$OUT/i39/checks.txt" 2>&1; echo "checks rc=$?"
tail -n 45 "$OUT/i39/checks.txt"
timeout 25 python3 benchmarks/bench_spectral.py --profile 2>&1 | tail -n 3
cat > /tmp/i39-big.yaml <<'YAML'
kind: field
name: coarsening-4096
grid: {shape: [4096, 4096]}
boundary: {type: periodic}
initial: {type: noise, mean: 0.0, amplitude: 0.05, seed: 1}
time: {end: 1000000, dt: 0.01, adaptive: true, tolerance: 0.001}
solver: {integrator: spectral, backend: cuda, precision: float64}
output: {observables_dt: 1000, checkpoint_dt: 100000}
YAML
start=$(date +%s.%N)
timeout 115 python3 -m simengine run /tmp/i39-big.yaml -o /tmp/i39-big.h5 --overwrite > "$OUT/i39/big.txt" 2>&1; rc=$?
echo "4096² fp64 to t = 1e6: rc=$rc, wall $(python3 -c "print(round($(date +%s.%N) - $start, 1))") s"
grep -v "^$" "$OUT/i39/big.txt" | tail -n 12
python3 - <<'PY'
import h5py, numpy as np
try:
    with h5py.File("/tmp/i39-big.h5", "r") as f:
        o = f["observables"]
        t, w, L, F = (o[k][()] for k in ("time", "wall_time", "length", "free_energy"))
    for tt in (1e3, 1e4, 1e5, 2e5, 5e5, 1e6):
        i = np.searchsorted(t, tt)
        if i < len(t):
            print(f"t = {t[i]:g}: wall {w[i]:.1f} s, L {L[i]:.4g}, F {F[i]:.6g}")
    m = t >= 1e4
    if m.sum() > 3:
        print("L(t) exponent over t >= 1e4:", np.polyfit(np.log(t[m]), np.log(L[m]), 1)[0])
except Exception as exc:
    print("no file to read:", exc)
PY
timeout 35 python3 benchmarks/bench_spectral.py --gpu --skip-big > "$OUT/i39/bench_512.txt" 2>&1; echo "bench 512 rc=$?"
cat "$OUT/i39/bench_512.txt"
