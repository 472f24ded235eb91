#!/usr/bin/env bash
# Two rounds of the wider fit tiles at a lower score (device/sm90_fit_rules.h, kFitTwoRounds, seventy-fifth
# session): held-out shapes whose best fit width (160-224) fills two rounds at a score of 0.85-0.90 with K >= 4096,
# the rule ("def") against CUTORCH_GEMM_SM90_CONFIG=nofit (the configs before it) and "fit" forced; the last two
# shapes' best width is 144, which the rule leaves (fit forced shows what it would give). One GPU call (~4 min with
# the build):
#
#   bash benchmarks/experiments/fit_two_rounds_gpu.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bash scripts/gpu_build.sh >/dev/null || exit 1
SHAPES=1168x4096x8192,1296x4096x8192,1872x2560x4096,1568x3072x8192,1872x3072x4096,1328x3584x8192,1600x3584x14336,928x5120x8192,1104x5120x14336,928x6144x8192,576x8192x8192,688x8192x14336,800x8192x8192,2352x2048x4096,1200x3584x8192,832x5120x8192 \
  ROUNDS=5 TABLE=1 VARS="def;nofit:CUTORCH_GEMM_SM90_CONFIG=nofit;fit:CUTORCH_GEMM_SM90_CONFIG=fit" \
  timeout 300 python3 benchmarks/experiments/dense_ab.py 2>&1 | tail -18
