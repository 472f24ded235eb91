# One GPU call (~5 min; `run bash benchmarks/experiments/sm90_pdl_rule.sh`): build, the PDL rule's new clauses
# against PDL forced off / on, then tests/test_sm90_pdl.py.
# Fifty-seventh session: sm90_pdl_probe.sh found PDL winning at K = 4096 where the grid takes at most half the SMs
# (64x16896x4096, 66 CTAs: +2.5%; 64x8192x4096, 64 CTAs: +2.5%) and losing above (64x14336x4096, 112 CTAs: -5%;
# 1024x1056x4096, 80 CTAs: -24%); the mma.sync skinny kernel winning 5-12% up to K = 4096. The rule now asks for it
# there (sm90_pdl_wanted's half-the-SMs clause, kSkinnyPdlMaxK). Predictions: default = on, 2-3% below off, at
# 64x8192x16384 (64 CTAs, long K), 128x4096x4096 and 256x4096x4096; default = off at 64x9216x4096 (72 CTAs), where
# on loses; 16x4096x4096 default = on (5% below off); 16x4096x8192 default = off (on: unknown, 0-5% either way).
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bash scripts/gpu_build.sh || exit 1
SHAPES="64x8192x16384,128x4096x4096,256x4096x4096,64x9216x4096,32x8192x4096,16x4096x4096,16x4096x8192"
SHAPES=$SHAPES RUN_S=0.4 IDLE_S=0.2 \
  VARIANTS="plain,plain|CUTORCH_GEMM_SM90_PDL=off,plain|CUTORCH_GEMM_SM90_PDL=on" \
  timeout 120 python3 benchmarks/experiments/epilogue_power.py 2>&1 | grep -v "^\s*$" | sed -e 's/ *first .* steady/ steady/'
timeout -s INT 200 python3 -m pytest -q -x tests/test_sm90_pdl.py 2>&1 | tail -3
