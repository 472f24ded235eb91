#!/usr/bin/env bash
# Mid-size dense shapes the seventy-third session found below cuBLAS and left open (benchmarks/RESULTS.md, its
# section; nn.Linear shapes of 150-1300 tokens against 4096 outputs), one call on a GPU machine (~5 min):
# 1. which cuBLAS kernel runs them (tile, cluster: cublas_kernels.py);
# 2. 544-1184 x 4096 x 7168 (0.74-0.90x; the rule's 128x256 tiles with the "full" stream-K over every SM): the
#    fit widths forced (128 x 160 fills one round at 544 rows: 130 tiles; 128 x 192 at 656: 132; 128 x 112 at 784),
#    whose score the rule refuses (their rows past M: 85% of the area at 544 rows), the 64x128 ping-pong tiles
#    (64-row granularity), and stream-K off;
# 3. 352-1296 x 4096 x 14336 on the 64x256 ping-pong tiles (0.79-0.83x): the cooperative tiles with each stream-K
#    form (forced "wide" read 0.832 against 0.788 at 1296 rows) and the 64x128 tiles.
#
#   bash benchmarks/experiments/midsize_next_gpu.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bash scripts/gpu_build.sh >/dev/null || exit 1
echo "== 1. cuBLAS's kernels"
SHAPES=544x4096x7168,656x4096x7168,784x4096x7168,1184x4096x7168,352x4096x14336,1296x4096x14336 \
  timeout 60 python3 benchmarks/experiments/cublas_kernels.py 2>&1
echo "== 2. N 4096, K 7168 (ratio to torch.mm, 5 rounds)"
SHAPES=544x4096x7168,592x4096x7168,656x4096x7168,784x4096x7168,1184x4096x7168 ROUNDS=5 TABLE=1 \
  VARS="def;fit:CUTORCH_GEMM_SM90_CONFIG=fit;c160:CUTORCH_GEMM_SM90_CONFIG=coop160;c192:CUTORCH_GEMM_SM90_CONFIG=coop192;c112:CUTORCH_GEMM_SM90_CONFIG=coop112;pp128:CUTORCH_GEMM_SM90_CONFIG=pingpong128;skoff:CUTORCH_GEMM_SM90_STREAMK=off" \
  timeout 150 python3 benchmarks/experiments/dense_ab.py 2>&1 | tail -8
echo "== 3. N 4096, K 14336"
SHAPES=352x4096x14336,432x4096x14336,1296x4096x14336,1040x4096x14336 ROUNDS=5 TABLE=1 \
  VARS="def;cwide:CUTORCH_GEMM_SM90_CONFIG=coop+CUTORCH_GEMM_SM90_STREAMK=wide;cfull:CUTORCH_GEMM_SM90_CONFIG=coop+CUTORCH_GEMM_SM90_STREAMK=full;c1wide:CUTORCH_GEMM_SM90_CLUSTER=1+CUTORCH_GEMM_SM90_STREAMK=wide;pp128:CUTORCH_GEMM_SM90_CONFIG=pingpong128;fit:CUTORCH_GEMM_SM90_CONFIG=fit" \
  timeout 150 python3 benchmarks/experiments/dense_ab.py 2>&1 | tail -7
