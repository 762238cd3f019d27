#!/usr/bin/env bash
# Issue 49, device run 2 (one H200), from the repo root; ≤ 6 min; writes $OUT/i49b-*.txt.
# 1. tests/gpu/spectral_checks.py (the CPU twin's numba kernels now without parallel
#    reductions: run 1 failed compiling them on this image's numba)
# 2. tests/test_spectral_gpu_ranks.py: 2 MPI ranks sharing the GPU = one GPU (periodic, mirror,
#    fixed; 2-D and 3-D; adaptive), a killed 2-rank run resumed in one process
# 3. spectral_parts.py at 4096² and 512³ (bare CuPy step vs the solver's step and parts; the
#    row kernels sb_update / sb_sums new since run 1)
# 4. the steady step through `simengine run` at 512³ fp32 (cut by run 1's timeout); on 2 ranks
#    sharing the GPU at 4096² fp64 (issue 53's run, ready)
# 5. 512³ fp64 spectral adaptive to t = 10⁴ through `simengine run` (bench_spectral.py --big3d)
# 6. mirror and fixed walls at 4096² fp64: the solver's step and its parts (DCT-II / DST-I)
python3 -c "import numba, numpy, cupy; print('numba', numba.__version__, 'numpy', numpy.__version__, 'cupy', cupy.__version__)"
timeout 50 python3 tests/gpu/spectral_checks.py > "$OUT/i49b-checks.txt" 2>&1; echo "checks rc=$?"
grep -c PASS "$OUT/i49b-checks.txt"; grep -v "^PASS" "$OUT/i49b-checks.txt" | tail -n 25
timeout 100 python3 -m pytest -q -p no:cacheprovider -o addopts="" tests/test_spectral_gpu_ranks.py \
  > "$OUT/i49b-ranks.txt" 2>&1; echo "gpu ranks tests rc=$?"; tail -n 40 "$OUT/i49b-ranks.txt"
{ timeout 25 python3 benchmarks/spectral_parts.py 4096 --dims 2 --repeat 10; echo "parts-4096^2 rc=$?"
  timeout 40 python3 benchmarks/spectral_parts.py 512 --dims 3 --repeat 10; echo "parts-512^3 rc=$?"
} > "$OUT/i49b-parts.txt" 2>&1; grep -v "^#" "$OUT/i49b-parts.txt"
{ timeout 45 python3 benchmarks/bench_spectral.py --steady --grids 512x512x512 --precisions float32
  echo "steady-512^3 rc=$?"
  timeout 35 python3 benchmarks/bench_spectral.py --steady --ranks 2 --grids 4096x4096 \
    --precisions float64; echo "steady-2ranks rc=$?"; } > "$OUT/i49b-steady.txt" 2>&1
cut -c1-420 "$OUT/i49b-steady.txt"
timeout 40 python3 benchmarks/bench_spectral.py --big3d > "$OUT/i49b-big3d.txt" 2>&1
echo "big3d rc=$?"; cut -c1-400 "$OUT/i49b-big3d.txt" | tail -n 5
{ for b in mirror fixed; do
    timeout 12 python3 benchmarks/spectral_parts.py 4096 --dims 2 --precision float64 --no-bare \
      --repeat 5 --boundary $b; echo "parts-$b rc=$?"; done; } > "$OUT/i49b-walls.txt" 2>&1
grep -v "^#" "$OUT/i49b-walls.txt"
