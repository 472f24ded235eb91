#!/usr/bin/env bash
# Build ab_main.cu against the tree's headers and a commit's (default HEAD~1), then time each "M N K config" line of
# stdin. ~3 min of compiling on the GPU machine's cores (or build here and carry the binary: AB_BIN=path skips it).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")"
root=$(git rev-parse --show-toplevel)
bin="${AB_BIN:-/tmp/header_ab}"
if [ -z "${AB_BIN:-}" ]; then
  old=$(mktemp -d)
  git -C "$root" archive "${1:-HEAD~1}" csrc/include | tar -x -C "$old"
  F="-O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -DCUTORCH_GEMM_WITH_CUDA"
  nvcc $F -I"$old/csrc/include" -c ab_old.cu -o /tmp/ab_old.o &
  nvcc $F -I"$root/csrc/include" -c ab_new.cu -o /tmp/ab_new.o &
  nvcc $F -I"$root/csrc/include" -c ab_main.cu -o /tmp/ab_main.o &
  wait
  nvcc -gencode arch=compute_90a,code=sm_90a /tmp/ab_old.o /tmp/ab_new.o /tmp/ab_main.o -o "$bin"
fi
while read -r m n k c; do timeout 60 "$bin" "$m" "$n" "$k" "$c"; done
