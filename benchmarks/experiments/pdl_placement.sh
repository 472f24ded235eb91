# One GPU call (~1 min, no extension build; `run bash benchmarks/experiments/pdl_placement.sh`): the synthetic
# PDL placement experiment (pdl_placement.cu: what it measures and how to read it is at its top).
# Prediction (fifty-seventh session's open question): if the loss is the launch machinery, "fma" shows the graph
# time with PDL above without it at 72..112 and not at 64/66/128/132; if it is CTAs sharing a TPC, only "l2" does,
# with more 2/TPC (or a wider GPC max - min) under PDL than without at the losing sizes.
set -eu
cd "$(dirname "${BASH_SOURCE[0]}")"
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a pdl_placement.cu -o /tmp/pdl_placement
timeout 300 /tmp/pdl_placement "${1:-64,66,72,80,96,112,124,128,132}"
