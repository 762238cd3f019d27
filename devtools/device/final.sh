#!/usr/bin/env bash
# The merged tree's device check (one call), each step under its own limit; logs under
# $OUT/<name>/ (devtools/device/all.sh archives them).
set -u
cd "$(dirname "$0")/../.."
run() { local t=$1 name=$2; shift 2; mkdir -p "$OUT/$name"; echo "=== $name $(date +%T)"
  OUT=$OUT/$name timeout -k 5 "$t" "$@" > "$OUT/$name/log.txt" 2>&1; echo "=== $name rc=$? $(date +%T)"
  grep -v -i "warn" "$OUT/$name/log.txt" | tail -n 30; }
LIMIT=240 run 250 spectral bash devtools/device/spectral_4096.sh
run 150 bigout bash devtools/device/i44.sh
