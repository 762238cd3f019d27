#!/usr/bin/env bash
# Issue 41 on one H200 (run from the repo root, setup.sh sourced): the edge-betweenness GPU
# kernel (network/cuda/brandes.py: edge_dependencies) on a real device — its tests against
# networkx and the CPU engine (tests/test_edge_betweenness.py, no simulator on a GPU machine),
# then benchmarks/bench_edge_betweenness.py (GPU vs CPU on BA n = 20 000, the same run; networkx
# on n = 300). Output under $OUT/i41/. Total under 2 minutes.
set -u
mkdir -p "$OUT/i41"
cd "$(dirname "$0")/../.."
export PYTHONPATH=${PYTHONPATH:-$PWD}
nvidia-smi --query-gpu=name,memory.total --format=csv > "$OUT/i41/gpu.txt" 2>&1

echo "--- tests (real GPU)"
timeout 75 python3 -m pytest -q -o addopts="" -p no:cacheprovider tests/test_edge_betweenness.py \
  > "$OUT/i41/tests.txt" 2>&1; echo "tests rc=$?"; tail -n 8 "$OUT/i41/tests.txt"

echo "--- bench_edge_betweenness"
timeout 40 python3 benchmarks/bench_edge_betweenness.py --n 20000 --m 4 --sources 2000 \
  > "$OUT/i41/bench.txt" 2>&1; echo "bench rc=$?"; tail -n 5 "$OUT/i41/bench.txt"
