#!/usr/bin/env bash
# Issue 48 on one H200 (run from the repo root by devtools/device/all.sh, setup.sh sourced):
# 1. the GPU Floyd–Warshall stops between rounds when a run's stop check asks (CUDA C++
#    look-ahead rounds with CuPy; numba rounds too), and computes the same matrix when it does not;
# 2. a SIGTERM during a GPU Floyd–Warshall run (n = 32768 weighted: 256 rounds, about 2.5 s) exits 130 within
#    a few seconds with the one-line 'Floyd–Warshall stopped after round' message;
# 3. test_big_inputs' validate line pins backend cpu (passes on a GPU machine now);
# 4. validate's modelled field time on the GPU for coarsening-3d and spinodal-2d (the cuda line).
# Output under $OUT/i48/ (tests.txt, sigterm.txt, validate.txt). Total < 4 min.
set -u
mkdir -p "$OUT/i48"
cd "$(dirname "$0")/../.."
export PYTHONPATH=${PYTHONPATH:-$PWD}

echo "--- device tests"
timeout 150 python3 -m pytest -q -o addopts="" -p no:cacheprovider \
  tests/test_network_cuda_fw.py tests/test_big_inputs.py::test_refuses_huge_generated_graph_and_validate_prints_work \
  tests/test_fw_interrupt.py::test_between_rounds_raises_only_with_a_check_that_says_stop \
  > "$OUT/i48/tests.txt" 2>&1
echo "tests rc=$?"; tail -n 8 "$OUT/i48/tests.txt"

echo "--- SIGTERM during a GPU Floyd–Warshall run"
cat > /tmp/i48fw.yaml <<'YAML'
kind: network
name: fwgpu
graph:
  generator: {type: gnp, n: 32768, p: 0.0005, seed: 1}
  weights: {type: uniform_int, low: 1, high: 9, seed: 2}
metrics: {sources: all, algorithm: fw}
solver: {backend: cuda}
YAML
rm -rf /tmp/i48fw.h5 /tmp/i48fw.h5.parts
( timeout 120 python3 -m simengine run /tmp/i48fw.yaml -o /tmp/i48fw.h5 > "$OUT/i48/sigterm.txt" 2>&1; echo "run rc=$?" >> "$OUT/i48/sigterm.txt" ) &
for i in $(seq 1 600); do grep -q "start-up:" "$OUT/i48/sigterm.txt" 2>/dev/null && break; sleep 0.1; done
sleep 0.3; pid=$(pgrep -f "simengine run /tmp/i48fw.yaml" | head -1)
t0=$(date +%s.%N); kill -TERM "$pid"; wait; t1=$(date +%s.%N)
echo "signal to exit: $(echo "$t1 - $t0" | bc) s" >> "$OUT/i48/sigterm.txt"
tail -n 6 "$OUT/i48/sigterm.txt"

echo "--- validate's field time on the GPU"
for s in coarsening-3d spinodal-2d; do
  timeout 60 python3 -m simengine validate scenarios/$s.yaml 2>&1 | grep -E "plan:|time:"
done > "$OUT/i48/validate.txt" 2>&1
cat "$OUT/i48/validate.txt"
