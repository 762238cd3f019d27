#!/usr/bin/env bash
# Issue 54 item 3 on one H200: a big output can be read and verified. bench_big_output.py at
# 1024³ fp64 (40 steps; snapshots at 0 and 40, the checkpoint at 40 mapping the snapshot: two
# 8 GiB snapshot parts), then `info --verify` (GiB/s, target ≥ 4), and `info`, `plot`, `report`
# of it, each in its own process with its peak resident memory, under a read cap of 1 GiB
# (SIMENGINE_READ_LIMIT: the readers take 3D mid-planes and strides; target peak ≤ cap + 1 GiB).
# Output under $OUT/i54/ (bench.txt, run.txt, verify.txt, info.txt, plot.txt, report.txt,
# gpu.txt: 7 files). Total < 6 min at 1024³ (measured 01:41-01:47 UTC with contention);
# `bash devtools/device/i54.sh 768` is the ≤ 3 min variant (768³, 20 steps).
set -u
mkdir -p "$OUT/i54"
cd "$(dirname "$0")/../.."
export PYTHONPATH=${PYTHONPATH:-$PWD}
{ nvidia-smi --query-gpu=name,memory.total --format=csv; free -g; df -h /tmp; nproc; } \
  > "$OUT/i54/gpu.txt" 2>&1
N=${1:-1024}; STEPS=40; [ "$N" != 1024 ] && STEPS=20
echo "--- bench_big_output ${N}^3 float64, read cap 1 GiB"
SIMENGINE_READ_LIMIT=1073741824 timeout 330 python3 benchmarks/bench_big_output.py --n "$N" \
  --steps "$STEPS" --obs $((STEPS / 2)) --precision float64 --backend cuda --dir /tmp/i54bench --logs "$OUT/i54" \
  > "$OUT/i54/bench.txt" 2>&1; echo "bench rc=$?"; tail -n 16 "$OUT/i54/bench.txt"
rm -rf /tmp/i54bench
