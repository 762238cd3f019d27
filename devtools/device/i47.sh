#!/usr/bin/env bash
# Issue 47's GPU check, "nothing slower", for one or more trees in one call:
#
#   bash devtools/device/i47.sh [TREE ...]      # default: this tree; e.g. /old/tree /new/tree
#
# Each step runs for every TREE in turn (imported through PYTHONPATH=TREE, so an old tree
# without this script works), so a step cut short still compares the trees:
#  1. every shipped scenario (scenarios/*.yaml of this tree) with --set solver.backend=cuda,
#     shortened with --set where it is long (the sweep: a copy with 3 families x n = 1000 x 2
#     seeds), then `simengine info --verify` on its outputs;
#  2. the field bench rows of what the solver runs by default on 4096² and 512³, fp32 and fp64
#     (benchmarks/bench_field_gpu.py --variants solver --sizes 2d,3d512);
#  3. the network seed families at n = 30 000 (benchmarks/bench_network_gpu.py --sizes 30000:
#     Watts α ring / free, Barabási–Albert k = 100; msbfs and bfs; the betweenness rows).
# Writes $OUT/<tag>-scenarios.md, $OUT/<tag>-field.txt, $OUT/<tag>-network.txt per tree
# (tag: the tree's folder name) and $OUT/summary.md; every step has its own timeout (LIMIT
# seconds per scenario run, default 90). About 3–4 minutes per tree on an H200.
set -u
HERE=$(cd "$(dirname "$0")/../.." && pwd)
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
LIMIT=${LIMIT:-90}
[ $# -eq 0 ] && set -- "$HERE"
TREES=()
for t in "$@"; do TREES+=("$(cd "$t" && pwd)"); done
tag() { basename "$1"; }
# long scenarios, shortened (KEY=VALUE for --set)
declare -A SHORT=(
  [coarsening-2d]="time.end=500 output.snapshot_dt=250 output.checkpoint_dt=250"
  [coarsening-3d]="time.end=100 output.observables_dt=50 output.snapshot_dt=50 output.checkpoint_dt=50"
  [droplets-2d]="time.steps=3000"
  [spinodal-2d]="time.steps=3000 output.snapshot_every=1000 output.checkpoint_every=1000"
  [spinodal-3d]="time.steps=1000"
)
work=$(mktemp -d)
for T in "${TREES[@]}"; do
  printf '| scenario | run rc | wall s | plan | done | verify rc |\n|---|---|---|---|---|---|\n' \
    > "$OUT/$(tag "$T")-scenarios.md"
done
for scen in "$HERE"/scenarios/*.yaml; do
  name=$(basename "$scen" .yaml)
  sets=(--set solver.backend=cuda)
  for kv in ${SHORT[$name]:-}; do sets+=(--set "$kv"); done
  if grep -q "^sweep:" "$scen"; then          # a shorter copy of the sweep block
    python3 - "$scen" "$work/$name.yaml" <<'PY'
import sys, yaml
d = yaml.safe_load(open(sys.argv[1]))
d["sweep"]["graph.generator.n"] = [1000]
d["sweep"]["graph.generator.seed"] = [1, 2]
yaml.safe_dump(d, open(sys.argv[2], "w"), sort_keys=False)
PY
    scen="$work/$name.yaml"
  fi
  for T in "${TREES[@]}"; do
    tg=$(tag "$T")
    d="$work/$tg"; mkdir -p "$d"
    log="$d/$name.log"
    t0=$(date +%s.%N)
    if grep -q "^sweep:" "$scen"; then
      (cd "$d" && PYTHONPATH="$T${PYTHONPATH:+:$PYTHONPATH}" timeout -k 5 "$LIMIT" python3 -m simengine sweep "$scen" \
        "${sets[@]}" -d "$d/$name" -q) > "$log" 2>&1
      rc=$?
      outs=("$d/$name"/*.h5)
    else
      (cd "$d" && PYTHONPATH="$T${PYTHONPATH:+:$PYTHONPATH}" timeout -k 5 "$LIMIT" python3 -m simengine run "$scen" \
        "${sets[@]}" -o "$d/$name.h5" --overwrite -q) > "$log" 2>&1
      rc=$?
      outs=("$d/$name.h5")
    fi
    wall=$(python3 -c "print(round($(date +%s.%N) - $t0, 1))")
    plan=$( (cd "$d" && PYTHONPATH="$T${PYTHONPATH:+:$PYTHONPATH}" timeout 60 python3 -m simengine validate "$scen" \
      "${sets[@]}" 2>/dev/null) | grep "^plan: " | head -1 | cut -c1-110)
    vrc=0
    for o in "${outs[@]}"; do
      PYTHONPATH="$T${PYTHONPATH:+:$PYTHONPATH}" timeout 120 python3 -m simengine info --verify "$o" > /dev/null 2>>"$log" \
        || vrc=$?
    done
    last=$(grep -v -i warn "$log" | tail -1 | cut -c1-100)
    echo "| $name | $rc | $wall | ${plan:-?} | ${last:-} | $vrc |" >> "$OUT/$tg-scenarios.md"
  done
done
[ -n "${SKIP_BENCH:-}" ] && exit 0   # the scenarios alone
for T in "${TREES[@]}"; do
  f="$OUT/$(tag "$T")-field.txt"
  (cd "$T" && PYTHONPATH="$T${PYTHONPATH:+:$PYTHONPATH}" timeout -k 5 200 python3 benchmarks/bench_field_gpu.py \
     --variants solver --sizes 2d,3d512 --precisions float32,float64 --seconds 1) > "$f" 2>&1
  echo "rc=$?" >> "$f"
done
for T in "${TREES[@]}"; do
  f="$OUT/$(tag "$T")-network.txt"
  (cd "$T" && PYTHONPATH="$T${PYTHONPATH:+:$PYTHONPATH}" timeout -k 5 240 python3 benchmarks/bench_network_gpu.py \
     --sizes 30000 --families ring,free,ba --algorithms msbfs,bfs --weighted-sizes "" \
     --fw-sizes "" --per-source-sizes "" --betweenness-sizes 30000 --markdown "$work/net.md") \
     > "$f" 2>&1
  rc=$?
  [ -f "$work/net.md" ] && { echo; cat "$work/net.md"; } >> "$f" && rm -f "$work/net.md"
  echo "rc=$rc" >> "$f"
done
rm -rf "$work"
{
  for T in "${TREES[@]}"; do
    tg=$(tag "$T")
    echo "## $tg"; cat "$OUT/$tg-scenarios.md"; echo
    echo '```'; grep -E "^solver " "$OUT/$tg-field.txt"; tail -1 "$OUT/$tg-field.txt"; echo '```'
    grep -E "^\|" "$OUT/$tg-network.txt" | head -24
    tail -1 "$OUT/$tg-network.txt"
    echo
  done
} > "$OUT/summary.md"
cat "$OUT/summary.md"
