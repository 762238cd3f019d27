# Sourced at the start of every device call (run from the repo root on the GPU machine).
# Carries: .whl (numpy 2.4 for numba-cuda, pydantic for the project; ../shared/gpu/wheels.sh).
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
  --target /tmp/site "${WHEELS:-.whl}"/*.whl || { echo "wheel install failed"; exit 1; }
export PYTHONPATH=/tmp/site:$PWD PYTHONUNBUFFERED=1
# OpenMPI on the image refuses to start as root unless told
export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
mkdir -p /tmp/bin
printf '#!/bin/sh\nexec python3 -m simengine "$@"\n' > /tmp/bin/simengine && chmod +x /tmp/bin/simengine
export PATH=/tmp/bin:$PATH
nvidia-smi --query-gpu=name,memory.total,clocks.max.sm --format=csv > "$OUT/gpu.txt" 2>&1
