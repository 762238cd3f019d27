#!/usr/bin/env bash
# i38 (the fused 3-D RK2 step, form fused-3d: the steady planes of a march 12 at a time without
# range tests) on one H200, from the repo root; logs in $OUT/i38/:
#   1. solver loop: fused-3d (unroll 12, the default) vs stages at 512³ fp64/fp32 and 256³ fp64
#      (ms/step, ratio, % of the 2-word roofline against the CuPy copy of the same run,
#      registers, blocks/SM), fused-3d with unroll 1 beside it, and the fused/stages field
#      difference after 10 steps (must be 0)                                  (bench.txt)
#   2. simengine run at 512³ fp64, fused: true vs fused: false, observables every 100 steps
#                                                                            (cli.txt)
#   3. tests/test_field_cuda_fused_3d.py on the GPU (MPI 2/3 ranks included)  (tests.txt)
# Every step under its own timeout: 150 s at most in all.
cd "$(dirname "$0")/../.."
D=${OUT:-/tmp/out}/i38
mkdir -p "$D"
export PYTHONPATH=${PYTHONPATH:-$PWD} PYTHONUNBUFFERED=1
step() { echo "=== $1 $(date +%T)"; }

step "1 solver loop"
timeout -k 5 55 python3 benchmarks/bench_field_3d.py --cases 512:float64,512:float32,256:float64 \
  --seconds 0.2 --check 10 --unrolls 1 --json "$D/loop.json" > "$D/bench.txt" 2>&1
echo "rc=$?"; grep -E "^(copy|loop|unroll|check)" "$D/bench.txt" || tail -n 20 "$D/bench.txt"

step "2 simengine run 512³ fp64"
timeout -k 5 40 python3 benchmarks/bench_field_3d.py --cases 512:float64 --no-loop --cli \
  --every 100 --json "$D/cli.json" > "$D/cli.txt" 2>&1
echo "rc=$?"; grep -E "^cli" "$D/cli.txt" || tail -n 20 "$D/cli.txt"

step "3 tests"
timeout -k 5 55 python3 -m pytest -q -o addopts="" -p no:cacheprovider \
  tests/test_field_cuda_fused_3d.py --durations=5 > "$D/tests.txt" 2>&1
echo "rc=$?"; tail -n 12 "$D/tests.txt"
step "done"
