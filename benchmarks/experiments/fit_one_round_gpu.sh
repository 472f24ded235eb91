#!/usr/bin/env bash
# The one-round fit rule (device/sm90_fit_rules.h, kFitOneRound, seventy-fifth session) on held-out shapes: one
# round of 128 x W fit tiles whose score is 0.80-0.90 (K 2048-14336, widths 144-208), the rule ("def") against
# CUTORCH_GEMM_SM90_CONFIG=nofit (the configs before it: the heuristic's 128x256 + stream-K or ping-pong tiles), plain
# and with bias + GELU-tanh (those launches take the fit widths too); then the K = 14336 shapes whose 64x256 ping-pong
# tiles ran at 0.79-0.83x, against cooperative 128x256 tiles without clusters and the "wide" stream-K. One GPU call
# (~5 min with the build):
#
#   bash benchmarks/experiments/fit_one_round_gpu.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bash scripts/gpu_build.sh >/dev/null || exit 1
HELD=1024x2048x2048,1120x2048x2048,512x4096x4096,544x4096x4096,832x3072x4096,1040x2816x4096,688x4096x7168,336x8192x8192,688x4096x8192,448x5120x8192,544x4096x14336,432x6144x14336
echo "== 1. held out, plain (ratio to torch.mm, 5 rounds)"
SHAPES=$HELD ROUNDS=5 TABLE=1 VARS="def;nofit:CUTORCH_GEMM_SM90_CONFIG=nofit" \
  timeout 200 python3 benchmarks/experiments/dense_ab.py 2>&1 | tail -14
echo "== 2. bias + GELU-tanh (ratio to torch._addmm_activation)"
SHAPES=544x4096x4096,832x3072x4096,688x4096x8192,544x4096x14336 EPI=gelu ROUNDS=5 TABLE=1 \
  VARS="def;nofit:CUTORCH_GEMM_SM90_CONFIG=nofit" timeout 100 python3 benchmarks/experiments/dense_ab.py 2>&1 | tail -6
echo "== 3. K 14336: cooperative 128x256 without clusters, wide stream-K"
SHAPES=432x4096x14336,880x4096x14336,1296x4096x14336,1552x4096x14336,1296x6144x14336 ROUNDS=5 TABLE=1 \
  VARS="def;c1wide:CUTORCH_GEMM_SM90_CLUSTER=1+CUTORCH_GEMM_SM90_STREAMK=wide;cc1wide:CUTORCH_GEMM_SM90_CONFIG=coop+CUTORCH_GEMM_SM90_CLUSTER=1+CUTORCH_GEMM_SM90_STREAMK=wide" \
  timeout 150 python3 benchmarks/experiments/dense_ab.py 2>&1 | tail -7
