#!/usr/bin/env bash
# issue 50 (physics model object) on the GPU machine: the model tests that touch CUDA (the
# Philox device twin, the CUDA solver's one-line refusal of a general model) on a real H200,
# and the default polynomial RK2 step's speed through the solver (4096², 512³), to compare
# with the same command on main (the CUDA kernels are unchanged by this branch).
set -u
cd "$(dirname "$0")/../.."
OUT=${OUT:-/tmp/i50-out}
mkdir -p "$OUT"
timeout 240 python -m pytest -q -o addopts="" tests/test_physics_model.py \
    -k "cuda or philox or legacy" > "$OUT/gpu_tests.log" 2>&1
echo "tests rc=$?" >> "$OUT/gpu_tests.log"
timeout 200 python benchmarks/bench_field_gpu.py --variants solver --sizes 2d,3d512 \
    --precisions float32,float64 --no-reference > "$OUT/bench_solver.log" 2>&1
echo "bench rc=$?" >> "$OUT/bench_solver.log"
