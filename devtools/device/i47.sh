#!/usr/bin/env bash
# Issue 47's GPU check, "nothing slower", for one or more trees in one call:
#
#   bash devtools/device/i47.sh [TREE ...]      # default: this tree; e.g. /old/tree /new/tree
#
# For each TREE (imported through PYTHONPATH=TREE, so an old tree without this script works):
#  1. every shipped scenario (scenarios/*.yaml of this tree) with --set solver.backend=cuda,
#     shortened with --set where it is long, then `simengine info --verify` on its output;
#  2. the field bench rows of what the solver runs by default on 4096² and 512³, fp32 and fp64
#     (benchmarks/bench_field_gpu.py --variants solver --sizes 2d,3d512);
#  3. the network seed families at n = 30 000 (benchmarks/bench_network_gpu.py --sizes 30000:
#     Watts α ring / free, Barabási–Albert k = 100; msbfs and bfs; the betweenness rows).
# Writes $OUT/<tag>-scenarios.md, $OUT/<tag>-field.txt, $OUT/<tag>-network.txt per tree and
# $OUT/summary.md (the tables side by side); every step has its own timeout (LIMIT seconds
# per scenario, default 120).
set -u
HERE=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
LIMIT=${LIMIT:-120}
[ $# -eq 0 ] && set -- "$HERE"
# long scenarios, shortened (the key and the value for --set)
declare -A SHORT=(
  [coarsening-2d]="time.end=500 output.snapshot_dt=250 output.checkpoint_dt=250"
  [coarsening-3d]="time.end=100 output.observables_dt=50 output.snapshot_dt=50 output.checkpoint_dt=50"
  [droplets-2d]="time.steps=3000"
  [spinodal-2d]="time.steps=3000 output.snapshot_every=1000 output.checkpoint_every=1000"
  [spinodal-3d]="time.steps=1000"
)
for TREE in "$@"; do
  TREE=$(cd "$TREE" && pwd)
  tag=$(basename "$TREE")
  tab="$OUT/$tag-scenarios.md"
  work=$(mktemp -d)
  echo "| scenario | run rc | wall s | plan | done | verify rc |" > "$tab"
  echo "|---|---|---|---|---|---|" >> "$tab"
  for scen in "$HERE"/scenarios/*.yaml; do
    name=$(basename "$scen" .yaml)
    sets=(--set solver.backend=cuda)
    for kv in ${SHORT[$name]:-}; do sets+=(--set "$kv"); done
    log="$work/$name.log"
    t0=$(date +%s.%N)
    if grep -q "^sweep:" "$scen"; then
      (cd "$work" && PYTHONPATH="$TREE" timeout -k 5 "$LIMIT" python3 -m simengine sweep "$scen" \
        "${sets[@]}" -d "$work/$name" -q) > "$log" 2>&1
      rc=$?
      outs=("$work/$name"/*.h5)
    else
      (cd "$work" && PYTHONPATH="$TREE" timeout -k 5 "$LIMIT" python3 -m simengine run "$scen" \
        "${sets[@]}" -o "$work/$name.h5" --overwrite -q) > "$log" 2>&1
      rc=$?
      outs=("$work/$name.h5")
    fi
    wall=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
    plan=$(PYTHONPATH="$TREE" timeout 60 python3 -m simengine validate "$scen" "${sets[@]}" 2>/dev/null \
      | grep "^plan: " | head -1 | cut -c1-110)
    done_line=$(grep -E "^done:|done: " "$log" | tail -1 | cut -c1-80)
    vrc=0
    for o in "${outs[@]}"; do
      PYTHONPATH="$TREE" timeout 120 python3 -m simengine info --verify "$o" > /dev/null 2>>"$log" || vrc=$?
    done
    [ $rc -ne 0 ] && done_line="$(grep -v -i warn "$log" | tail -1 | cut -c1-100)"
    echo "| $name | $rc | $wall | ${plan:-?} | ${done_line:-} | $vrc |" >> "$tab"
  done
  rm -rf "$work"
  (cd "$TREE" && PYTHONPATH="$TREE" timeout -k 5 240 python3 benchmarks/bench_field_gpu.py \
     --variants solver --sizes 2d,3d512 --precisions float32,float64 --seconds 1) \
     > "$OUT/$tag-field.txt" 2>&1
  echo "rc=$?" >> "$OUT/$tag-field.txt"
  (cd "$TREE" && PYTHONPATH="$TREE" timeout -k 5 300 python3 benchmarks/bench_network_gpu.py \
     --sizes 30000 --families ring,free,ba --algorithms msbfs,bfs --weighted-sizes "" \
     --fw-sizes "" --per-source-sizes "" --betweenness-sizes 30000 --markdown "$work.md") \
     > "$OUT/$tag-network.txt" 2>&1
  echo "rc=$?" >> "$OUT/$tag-network.txt"
  [ -f "$work.md" ] && { echo; cat "$work.md"; } >> "$OUT/$tag-network.txt" && rm -f "$work.md"
done
{
  for TREE in "$@"; do
    tag=$(basename "$(cd "$TREE" && pwd)")
    echo "## $tag"; cat "$OUT/$tag-scenarios.md"; echo
    echo '```'; grep -E "^solver " "$OUT/$tag-field.txt"; echo '```'
    grep -E "^\| (ring|free|ba|watts|betweenness|graph|family)" "$OUT/$tag-network.txt" | head -20
    echo
  done
} > "$OUT/summary.md"
cat "$OUT/summary.md"
