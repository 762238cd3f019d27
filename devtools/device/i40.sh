#!/usr/bin/env bash
# Issue 40 on one GPU (run from the repo root; every step under its own timeout, 4.85 min at
# most; logs under $OUT/i40/):
#  1. the GPU Brandes tests (both engines, betweenness alone, wider levels, weighted vs networkx)
#  2. bench_betweenness --gpu: BA k=100, alpha-model and ring n=30000 exact, 1024 sampled
#     sources of G(n,m) n=1e6 -- betweenness alone / with path statistics / the engine before
#     i40 (benchmarks/brandes_before_i40.py), in the same run
#  3. weighted betweenness, BA n=30000 k=10, integer weights 1-10, all sources: GPU vs the CPU
#     engine on all cores (what backend: cuda ran before), CPU extrapolated from 2048 sources
#  4. APSP statistics, alpha-model ring n=30000: auto (bfs_blocks) vs msbfs (today's auto)
#  5. the other network GPU tests touched (FW float32 predecessor modes 4/5 among them)
#  6. FW n=8192 float32 real weights: no predecessors vs modes 5 (default), 4
#  7. the MPI fused-slabs tests (root + OpenMPI, without the launcher's root variables)
set -u
cd "$(dirname "$0")/../.."
O=${OUT:-/tmp/out}/i40
mkdir -p "$O"
export PYTHONPATH=${PYTHONPATH:-$PWD}
step() { local t=$1 name=$2; shift 2; echo "=== $name $(date +%T)"
  timeout -k 5 "$t" "$@" > "$O/$name.log" 2>&1; echo "=== $name rc=$? $(date +%T)"
  tail -n 12 "$O/$name.log"; }

step 45 tests_betweenness python3 -m pytest -q -p no:xdist -o addopts="" \
  tests/test_network_betweenness.py -k "cuda or scenario_betweenness_alone"
step 85 bench_betweenness python3 benchmarks/bench_betweenness.py --gpu --check 8 --alt-batch 1024
step 35 bench_weighted python3 benchmarks/bench_betweenness.py --gpu --weighted 30000 \
  --weighted-cpu-sources 2048 --families ""
step 40 bench_apsp_ring python3 benchmarks/bench_network_gpu.py --sizes 30000 --families ring \
  --algorithms auto,msbfs --cpu-sources 256 --weighted-sizes "" --fw-sizes "" \
  --per-source-sizes "" --betweenness-sizes ""
step 25 tests_network python3 -m pytest -q -p no:xdist -o addopts="" \
  tests/test_network_per_source.py tests/test_network_device_columns.py \
  tests/test_network_cuda_fw.py "tests/test_network_cuda_fw_cxx.py::test_cxx_float_and_select_predecessors"
step 35 fw_pred_modes python3 -c "import sys; sys.path.insert(0, 'benchmarks'); import fw_gpu_rows as f; f.pred_mode_rows(8192)"
# without the launcher's root variables: tests/conftest.py must set them itself
step 25 tests_mpi env -u OMPI_ALLOW_RUN_AS_ROOT -u OMPI_ALLOW_RUN_AS_ROOT_CONFIRM python3 -m pytest -q -p no:xdist -o addopts="" \
  "tests/test_field_cuda_fused_slabs.py::test_fused_slabs_on_mpi_ranks_equal_the_whole_grid"
echo "done $(date +%T)"
