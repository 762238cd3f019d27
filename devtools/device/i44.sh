#!/usr/bin/env bash
# Issue 44 on one H200 (run from the repo root by devtools/device/all.sh, setup.sh sourced):
# 1. the big-output benchmark at 1024³ fp64 (40 steps, snapshots at 0 and 40, one checkpoint,
#    observables every 20): raw write + fsync of the same bytes, the run's wall time and its
#    SIMENGINE_PROFILE breakdown, stepping, info --verify GiB/s, time to the first step, peak RSS;
# 2. the tests that need a device (no simulator here): a part streamed from device memory
#    through pinned windows equals the host part, the write-behind of device snapshots equals
#    the host path bit for bit, the initial noise loaded by windows equals the CPU field, an
#    observation without a field copy pins no host buffer of the field's size.
# Output under $OUT/i44/ (bench.txt, run.txt, verify.txt, tests.txt, gpu.txt). Total < 4 min.
set -u
mkdir -p "$OUT/i44"
cd "$(dirname "$0")/../.."
export PYTHONPATH=${PYTHONPATH:-$PWD}
{ nvidia-smi --query-gpu=name,memory.total --format=csv; free -g; df -h /tmp; nproc; } \
  > "$OUT/i44/gpu.txt" 2>&1

echo "--- bench_big_output 1024^3 float64"
timeout 170 python3 benchmarks/bench_big_output.py --n 1024 --steps 40 --obs 20 \
  --precision float64 --backend cuda --dir /tmp/i44bench --logs "$OUT/i44" \
  > "$OUT/i44/bench.txt" 2>&1; echo "bench rc=$?"; tail -n 40 "$OUT/i44/bench.txt"
rm -rf /tmp/i44bench

echo "--- device tests"
timeout 60 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/test_big_output.py \
  -k "device or written_behind or windows or pins_no_field" > "$OUT/i44/tests.txt" 2>&1
echo "tests rc=$?"; tail -n 8 "$OUT/i44/tests.txt"
