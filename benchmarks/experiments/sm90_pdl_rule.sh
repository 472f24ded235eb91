# One GPU call (~5 min; `run bash benchmarks/experiments/sm90_pdl_rule.sh`): build, the PDL rule against PDL forced
# off / on, tests/test_sm90_pdl.py, then the dense and small-M suites alone.
# Fifty-seventh session: grids between half the SMs and ~7/8 of them lose up to a third of their time with PDL
# (64x9216x2048, 72 CTAs: -24%), so sm90_pdl_wanted now asks for it only at most half the SMs (any K) or from 7/8
# (K <= 2048 per CTA). Predictions: default = off at 64x9216x2048 and 64x14336x1024 (112 CTAs, where on won 2.9%),
# default = on at 1024^3 (12% below off). The mma.sync skinny kernel (K <= 4096): 16x2816x2048 (88 CTAs) and
# 16x3072x4096 (96 CTAs) sit in that middle; if on loses there, its rule needs the same clause.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bash scripts/gpu_build.sh || exit 1
SHAPES="64x9216x2048,64x14336x1024,1024x1024x1024,16x2816x2048,16x3072x4096,32x9216x2048"
SHAPES=$SHAPES RUN_S=0.4 IDLE_S=0.2 \
  VARIANTS="plain,plain|CUTORCH_GEMM_SM90_PDL=off,plain|CUTORCH_GEMM_SM90_PDL=on" \
  timeout 120 python3 benchmarks/experiments/epilogue_power.py 2>&1 | grep -v "^\s*$" | sed -e 's/ *first .* steady/ steady/'
timeout -s INT 100 python3 -m pytest -q -x tests/test_sm90_pdl.py 2>&1 | tail -2
timeout -s INT 150 python3 -m cutorch_gemm bench --suite dense,small_m --timing alone --no-progress 2>&1 | tail -21
