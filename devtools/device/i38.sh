#!/usr/bin/env bash
# i38 (the fused 3-D RK2 step, form fused-3d; the 2-D warp form's fold) on one H200, from the repo
# root; logs in $OUT/i38/:
#   1. solver loop: fused-3d vs stages at 512³ fp64/fp32 and 256³ fp64 (ms/step, ratio, % of the
#      2-word roofline against the CuPy copy of the same run, registers, blocks/SM) and the
#      fused/stages field difference after 10 steps                        (bench.txt, loop.json)
#   2. simengine run, default settings with fused: true (fused-3d) vs fused: false (the default:
#      auto keeps the stages in 3-D since the first run), observables every 100 steps
#                                                                          (cli.txt, cli.json)
#   3. 2-D fused-warp at 4096² fp64/fp32 with its int64-% fold (the default) vs the division-free
#      fold4 (now with an in-range test), and the stages; the two folds bit for bit (warp.txt)
#   4. the fused test files on the GPU: tests/test_field_cuda_fused_3d.py whole (MPI 2/3 ranks
#      included), the other tests/test_field_cuda_fused*.py without their (2-D, unchanged) MPI
#      rank tests                                                            (tests.txt)
#   5. ncu --clock-control none: one step of fused-warp 4096² fp64/fp32 and fused-3d 256³ fp64
#      (SpeedOfLight, Occupancy, SchedulerStats, WarpStateStats)            (ncu.txt)
#   6. fused-3d frames 32x16, 32x24, 64x16 at 256³ fp64 (the default 32x32 in step 1) (bench.txt)
# Every step under its own timeout (385 s at most in all; the first run of steps 1, 2, 4, 5 and
# the frames took 225 s, so about 280 s expected now; steps 5-6 are
# the ones a 300 s limit would cut).
cd "$(dirname "$0")/../.."
D=${OUT:-/tmp/out}/i38
mkdir -p "$D"
export PYTHONPATH=${PYTHONPATH:-$PWD} PYTHONUNBUFFERED=1
step() { echo "=== $1 $(date +%T)"; }

step "1 solver loop"
timeout -k 5 70 python3 benchmarks/bench_field_3d.py --cases 512:float64,512:float32,256:float64 \
  --seconds 0.2 --check 10 --json "$D/loop.json" > "$D/bench.txt" 2>&1
echo "rc=$?"; cat "$D/bench.txt"

step "2 simengine run"
timeout -k 5 90 python3 benchmarks/bench_field_3d.py --cases 512:float64,256:float64,512:float32 \
  --no-loop --cli --every 100 --json "$D/cli.json" > "$D/cli.txt" 2>&1
echo "rc=$?"; cat "$D/cli.txt"

step "3 fused-warp fold"
timeout -k 5 35 python3 benchmarks/bench_warp_fold.py --sizes 4096 --seconds 0.2 \
  > "$D/warp.txt" 2>&1
echo "rc=$?"; cat "$D/warp.txt"

step "4 tests"
timeout -k 5 70 python3 -m pytest -q -o addopts="" -p no:cacheprovider \
  tests/test_field_cuda_fused_3d.py --durations=8 > "$D/tests.txt" 2>&1
echo "rc=$?"; tail -n 15 "$D/tests.txt"
timeout -k 5 60 python3 -m pytest -q -o addopts="" -p no:cacheprovider -k "not mpi_ranks" \
  tests/test_field_cuda_fused.py tests/test_field_cuda_fused_frame.py \
  tests/test_field_cuda_fused_warp.py tests/test_field_cuda_fused_slabs.py \
  --durations=5 >> "$D/tests.txt" 2>&1
echo "rc=$?"; tail -n 10 "$D/tests.txt"

step "5 ncu"
if command -v ncu > /dev/null; then
  timeout -k 5 35 ncu --clock-control none --profile-from-start off --section SpeedOfLight \
    --section Occupancy --section SchedulerStats --section WarpStateStats \
    --metrics dram__bytes_read.sum,dram__bytes_write.sum \
    python3 benchmarks/diag_ncu_fused.py > "$D/ncu.txt" 2>&1
  echo "rc=$?"; grep -E "^  [a-zA-Z_]|Duration|DRAM Through|Achieved Occ|Theoretical Occ|Issue Slots|One or More|Stall Barrier|Registers Per|dram__bytes|Warp Cycles Per Issued" "$D/ncu.txt" | head -n 80
else
  echo "no ncu on PATH"
fi

step "6 fused-3d frames"
timeout -k 5 25 python3 benchmarks/bench_field_3d.py --cases 256:float64 --no-pair \
  --frames 32x16,32x24,64x16 --seconds 0.2 >> "$D/bench.txt" 2>&1
echo "rc=$?"; grep "^frame" "$D/bench.txt"
step "done"
