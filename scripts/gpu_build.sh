#!/usr/bin/env bash
# Build the extension in place on the GPU machine, for experiment scripts that do not run all of gpu_check.sh.
#
#   bash scripts/gpu_build.sh && python3 benchmarks/experiments/kernel_time.py ...
#
# Builds with the system gcc (scripts/system_gcc.sh says why). Environment: TORCH_CUDA_ARCH_LIST (default 9.0a: the
# Hopper kernels only, half the build), MAX_JOBS (default all cores), BUILD_LOG (default $OUT/build.log, or
# /tmp/build.log without $OUT).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
source scripts/system_gcc.sh
log="${BUILD_LOG:-${OUT:-/tmp}/build.log}"
t0=$SECONDS
if ! MAX_JOBS="${MAX_JOBS:-$(nproc)}" TORCH_CUDA_ARCH_LIST="${TORCH_CUDA_ARCH_LIST:-9.0a}" \
    python3 -m pip install --no-build-isolation --no-deps -e . > "$log" 2>&1; then
  echo "gpu_build: FAILED after $((SECONDS - t0)) s; the first errors in $log:"
  grep -n -m 20 -E 'error' "$log" || tail -n 30 "$log"
  exit 1
fi
echo "gpu_build: built in $((SECONDS - t0)) s (CXX=${CXX:-default}; log $log)"
