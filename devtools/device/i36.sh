#!/usr/bin/env bash
# i36 (the run's plan) on the GPU machine, from the repository root: the plan line of validate
# equals the run's and the output's on a real GPU (auto = cuda: the form table's real-GPU rules,
# the field job's check that the solver built what the plan says), the network table's tests,
# and the Floyd–Warshall C++ kernels with their modes named. Logs under $OUT/i36/.
set -u
mkdir -p "$OUT/i36"
export PYTHONPATH="$PWD${PYTHONPATH:+:$PYTHONPATH}"
run() {  # name, seconds, command...
  local name=$1 secs=$2; shift 2
  timeout "$secs" "$@" > "$OUT/i36/$name.log" 2>&1
  echo "$name: exit $?" | tee -a "$OUT/i36/summary.log"
}
run plan_line 110 python3 -m pytest -q -p no:cacheprovider -o addopts= tests/test_plan_line.py -k "not mpi"
run fw_cxx 60 python3 -m pytest -q -p no:cacheprovider -o addopts= tests/test_network_cuda_fw_cxx.py
run backends 50 python3 -m pytest -q -p no:cacheprovider -o addopts= tests/test_network_backends.py tests/test_field_plans.py
