#!/usr/bin/env bash
# Issue 49 (the spectral step at the transform bound), one H200, from the repo root; ≤ 6 min.
# Writes $OUT/i49-*.txt. $OLD (optional): a directory holding main's simengine (before/after).
# 1. tests/gpu/spectral_checks.py: the fused GPU step = the CPU for every boundary × precision ×
#    symbol (2-D and 3-D), adaptive, order, device reductions, a CLI run GPU = CPU
# 2. benchmarks/spectral_parts.py: the bare CuPy step (naive, and with plans + buffers) beside
#    the solver's fixed step, adaptive trial and each part of its step (GPU and host time)
# 3. the same parts with main's tree ($OLD), 4096² only
# 4. bench_spectral.py --steady: the steady step through `simengine run` (difference of two
#    runs of fixed steps, observables at the ends only) at the grids, fp64 and fp32;
#    then main's tree at 512², 4096², 256³
# 5. 4096² fp64 to t = 10⁶, adaptive, observables every Δt = 1000 (spectral_4096.sh)
python3 -c "import cupy; print('cupy', cupy.__version__, cupy.cuda.runtime.getDeviceCount(), 'GPU(s)')"
echo "OLD=${OLD:-unset}"
timeout 50 python3 tests/gpu/spectral_checks.py > "$OUT/i49-checks.txt" 2>&1; echo "checks rc=$?"
grep -c PASS "$OUT/i49-checks.txt"; grep -v "^PASS" "$OUT/i49-checks.txt" | tail -n 15
{ timeout 40 python3 benchmarks/spectral_parts.py 512 4096 --dims 2; echo "parts-2d rc=$?"
  timeout 25 python3 benchmarks/spectral_parts.py 256 --dims 3; echo "parts-3d rc=$?"
  if [ -n "${OLD:-}" ]; then
    PYTHONPATH="$OLD:$PYTHONPATH" timeout 25 python3 benchmarks/spectral_parts.py 4096 --dims 2 \
      --no-bare --repeat 5; echo "parts-old rc=$?"
  fi; } > "$OUT/i49-parts.txt" 2>&1
grep -v "^#" "$OUT/i49-parts.txt" | tail -n 60
{ timeout 120 python3 benchmarks/bench_spectral.py --steady; echo "steady rc=$?"
  if [ -n "${OLD:-}" ]; then
    timeout 50 python3 benchmarks/bench_spectral.py --steady --tree "$OLD" \
      --grids 512x512,4096x4096,256x256x256; echo "steady-old rc=$?"
  fi; } > "$OUT/i49-steady.txt" 2>&1
cat "$OUT/i49-steady.txt" | cut -c1-250
mkdir -p "$OUT/big"
OUT=$OUT/big LIMIT=45 bash devtools/device/spectral_4096.sh > "$OUT/i49-big.txt" 2>&1
mv "$OUT/big/big.txt" "$OUT/i49-big-run.txt" 2>/dev/null; rmdir "$OUT/big" 2>/dev/null
cat "$OUT/i49-big.txt"
