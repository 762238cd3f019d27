#!/usr/bin/env bash
# Issue 44 on one H200 (run from the repo root by devtools/device/all.sh, setup.sh sourced):
# the tests of the streamed/hashed parts with a real device (DeviceSource, windowed initial
# noise), then the big-output benchmark at 1024³ fp64 (40 steps, snapshots at 0 and 40, one
# checkpoint, observables every 20): raw write + fsync of the same bytes, the run's wall time and
# profile, stepping, info --verify GiB/s, time to the first step. Output under $OUT/i44/.
set -u
mkdir -p "$OUT/i44"
cd "$(dirname "$0")/../.."
export PYTHONPATH=${PYTHONPATH:-$PWD}
nvidia-smi --query-gpu=name,memory.total --format=csv > "$OUT/i44/gpu.txt" 2>&1
free -g >> "$OUT/i44/gpu.txt"; df -h /tmp >> "$OUT/i44/gpu.txt"; nproc >> "$OUT/i44/gpu.txt"

echo "--- tests (real GPU: no simulator)"
timeout 90 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/test_big_output.py \
  > "$OUT/i44/tests.txt" 2>&1; echo "tests rc=$?"; tail -n 5 "$OUT/i44/tests.txt"

echo "--- bench_big_output 1024^3 float64"
timeout 200 python3 benchmarks/bench_big_output.py --n 1024 --steps 40 --obs 20 \
  --precision float64 --backend cuda --dir /tmp/i44bench --logs "$OUT/i44" \
  > "$OUT/i44/bench.txt" 2>&1; echo "bench rc=$?"; tail -n 40 "$OUT/i44/bench.txt"
rm -rf /tmp/i44bench
