#!/usr/bin/env bash
# Open questions the sixty-fourth session left on the Hopper skinny kernel (benchmarks/RESULTS.md, its sections 3-5),
# one call on a GPU machine (~4 min; the sixty-fifth session's first call, its RESULTS.md sections 1-3):
# 1. 33-36 rows ran the 64-token kernel ~12% slower than 39-64 at N 4096, K 8192 (same split, same ring: 33.1 / 32.0
#    against 29.0-29.8 us). Not partial 8-row groups of x (39, 41, 44 are fast). Per-row timing, both rings, then
#    Nsight Compute's DRAM throughput and duration at 33 and 40 rows.
# 2. Clusters of 4 past the SMs (36-66 row tiles: 144-264 CTAs at two per SM); the rule stops at the SMs.
# 3. 1x8192x8192, the small-M suite's weakest shape timed alone (0.959x): one split (128 CTAs) against two.
#
#   bash benchmarks/experiments/skinny_next_gpu.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bash scripts/gpu_build.sh || exit 1
AB=benchmarks/experiments/skinny_ab.py
echo "== 1. rows 33..40 at 4096x8192, 2 splits, short / deep ring (us)"
VARS=torch,s2+short,s2+deep timeout 100 python3 $AB 33x4096x8192 34x4096x8192 35x4096x8192 36x4096x8192 \
  37x4096x8192 38x4096x8192 40x4096x8192 2>&1
for m in 33 40; do
  echo "-- ncu, M = $m"
  CUTORCH_GEMM_SKINNY=sm90 CUTORCH_GEMM_SKINNY_SPLITS=2 CUTORCH_GEMM_SKINNY_RING=short timeout 60 \
    ncu --kernel-name regex:sm90_skinny --launch-skip 3 --launch-count 1 \
    --metrics gpu__time_duration.sum,dram__bytes_read.sum,dram__throughput.avg.pct_of_peak_sustained_elapsed,sm__cycles_active.avg \
    python3 -c "
import torch, cutorch_gemm as cg
x = torch.randn($m, 8192, device='cuda', dtype=torch.bfloat16); w = torch.randn(4096, 8192, device='cuda', dtype=torch.bfloat16)
for _ in range(5): cg.mm(x, w.t())
torch.cuda.synchronize()" 2>&1 | grep -E "gpu__time|dram__|sm__cycles" | head -6
done
echo "== 2. clusters of 4 past the SMs (splits 2 / 4; us)"
VARS=torch,s2,s4 timeout 100 python3 $AB 32x2560x8192 64x2560x8192 32x3072x8192 24x2304x14336 48x3584x8192 2>&1
echo "== 3. 1x8192x8192 timed alone: the rule (1 split) and 2 splits (read the M = 1 row)"
timeout 80 python3 -m cutorch_gemm bench --suite small_m --timing alone --no-progress 2>&1 | awk '$1 == "small_m" && $3 == 1'
CUTORCH_GEMM_SKINNY=sm90 CUTORCH_GEMM_SKINNY_SPLITS=2 timeout 80 python3 -m cutorch_gemm bench --suite small_m \
  --timing alone --no-progress 2>&1 | awk '$1 == "small_m" && $3 == 1'
