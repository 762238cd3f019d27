#!/usr/bin/env bash
# The merged tree's device check (one call on one H200, ≤ 9.5 min), from the repo root:
#   OLD=/path/to/old/tree bash devtools/device/final.sh
# Phase A (correctness, in parallel): every GPU test file (-n 12); tests/gpu/spectral_checks.py;
#   a SIGTERM during a GPU Floyd–Warshall run; every shipped scenario on cuda + `info --verify`.
# Phase B (timing, one at a time): the field solver rows (4096², 512³) and the network seed
#   families at n = 30 000 for $OLD and this tree ("nothing slower"); the spectral fixed-wall parts.
# Writes $OUT/{gputests,side,timing}.txt and devtools/device/i47.sh's tables.
set -u
cd "$(dirname "$0")/../.."
NEW=$PWD
WHEELS=${WHEELS:-$PWD/.whl} . devtools/device/setup.sh
O=$OUT
python3 -c "import numba, numpy, cupy; print('numba', numba.__version__, 'numpy', numpy.__version__, 'cupy', cupy.__version__)"
files=$(grep -l -E "mark\.gpu|cuda|CUDA|gpu" tests/test_*.py | grep -v test_devtools_ptx_record)
( timeout -k 10 ${TESTS_LIMIT:-300} python3 -m pytest -v -p no:cacheprovider -o addopts="" -n 12 \
    --dist loadfile --timeout 200 -rfE $files > "$O/gputests.txt" 2>&1
  echo "gpu tests rc=$?" >> "$O/gputests.txt" ) &
tests=$!
{
  echo "--- spectral checks"; timeout 70 python3 tests/gpu/spectral_checks.py > /tmp/checks.txt 2>&1
  echo "checks rc=$?"; grep -c PASS /tmp/checks.txt; grep -v "^PASS" /tmp/checks.txt | tail -n 8
  echo "--- SIGTERM during a GPU Floyd–Warshall run (n = 32768, 256 rounds)"
  printf 'kind: network\nname: fwgpu\ngraph:\n  generator: {type: gnp, n: 32768, p: 0.0005, seed: 1}\n  weights: {type: uniform_int, low: 1, high: 9, seed: 2}\nmetrics: {sources: all, algorithm: fw}\nsolver: {backend: cuda}\n' > /tmp/fw.yaml
  ( timeout 120 python3 -m simengine run /tmp/fw.yaml -o /tmp/fw.h5 > /tmp/fw.txt 2>&1; echo "run rc=$?" >> /tmp/fw.txt ) &
  for i in $(seq 1 900); do grep -q "start-up:" /tmp/fw.txt 2>/dev/null && break; sleep 0.1; done
  sleep 0.3; pid=$(pgrep -f "simengine run /tmp/fw.yaml" | head -1)
  t0=$(date +%s.%N); kill -TERM "$pid"; wait; t1=$(date +%s.%N)
  grep -v -i warn /tmp/fw.txt | tail -n 4; echo "signal to exit: $(python3 -c "print(round($t1 - $t0, 2))") s"
} > "$O/side.txt" 2>&1 &
side=$!
# every shipped scenario on cuda (shortened), then info --verify
OUT=$O/scen LIMIT=60 SKIP_BENCH=1 timeout -k 5 ${TESTS_LIMIT:-300} bash devtools/device/i47.sh "$NEW" \
  > /tmp/scen.txt 2>&1; echo "scenarios rc=$?" > /tmp/scenrc
wait $tests $side
{ cat /tmp/scenrc; cat $O/scen/*-scenarios.md 2>/dev/null | cut -c1-240; } >> "$O/side.txt"
tail -n 3 "$O/gputests.txt"; grep -E "^(FAILED|ERROR)" "$O/gputests.txt" | cut -c1-250 | head -30
cat "$O/side.txt"
{
  for T in ${OLD:-} "$NEW"; do
    echo "=== tree $T"
    (cd /tmp && PYTHONPATH=/tmp/site:$T timeout -k 5 50 python3 $T/benchmarks/bench_field_gpu.py \
      --variants solver --sizes 2d,3d512 --precisions float64 --seconds 1 2>&1 | grep -E "^solver|rc=|Error" )
    (cd /tmp && PYTHONPATH=/tmp/site:$T timeout -k 5 60 python3 $T/benchmarks/bench_network_gpu.py \
      --sizes 30000 --families ring,free,ba --algorithms msbfs --cpu-sources 64 --weighted-sizes "" \
      --fw-sizes "" --per-source-sizes "" --betweenness-sizes "" 2>&1 | grep -v -i warn | tail -n 8)
  done
  echo "=== spectral fixed walls 4096² fp64 (DST-I through one cuFFT)"
  timeout 20 python3 benchmarks/spectral_parts.py 4096 --dims 2 --precision float64 --no-bare \
    --repeat 5 --boundary fixed 2>&1 | grep -v "^#" | head -4
} > "$O/timing.txt" 2>&1
cat "$O/timing.txt"
