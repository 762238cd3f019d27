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
OUT=$OUT/i39 LIMIT=115 bash devtools/device/spectral_4096.sh
timeout 35 python3 benchmarks/bench_spectral.py --gpu --skip-big > "$OUT/i39/bench_512.txt" 2>&1; echo "bench 512 rc=$?"
cat "$OUT/i39/bench_512.txt"
