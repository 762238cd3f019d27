#!/usr/bin/env bash
# One device call: set up, then every devtools/device/iNN.sh named on the command line (or all),
# each under its own time limit; the logs land under $OUT.
cd "$(dirname "$0")/../.."
. devtools/device/setup.sh
# the scripts write under $OUT/<name>/; everything comes back as one archive (8 files at most)
FINAL=$OUT; export OUT=/tmp/devout; mkdir -p $OUT; cp "$FINAL/gpu.txt" $OUT/ 2>/dev/null
limit=${DEVICE_STEP_LIMIT:-300}
scripts=("$@"); [ ${#scripts[@]} -gt 0 ] || scripts=(devtools/device/i*.sh)
for s in "${scripts[@]}"; do
  n=$(basename "$s" .sh); mkdir -p "$OUT/$n"
  echo "=== $n $(date +%T)"
  timeout -k 10 "$limit" bash "$s" > "$OUT/$n/log.txt" 2>&1; echo "=== $n rc=$? $(date +%T)"
  tail -n 25 "$OUT/$n/log.txt"
done
tar czf "$FINAL/results.tgz" -C "$OUT" . && ls -la "$FINAL"
