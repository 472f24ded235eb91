#!/usr/bin/env bash
# The dense Hopper skinny launch's clusters of 4 past the SMs (sixty-fifth session; device/sm90_skinny.h has the
# numbers), one call on a GPU machine (~7 min): build; the skinny tests (the rule's new 4-split shapes among them) and
# compute-sanitizer over the skinny sweep cases (the tree also carries 74dfcb2's launch reorder, first run here); the
# bound's edge (row tiles x 4 around 3/2 of the SMs) as the rule's choice against 2 and 4 splits; the small-M suite.
#
#   bash benchmarks/experiments/skinny_session65_gpu.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bash scripts/gpu_build.sh || exit 1
AB=benchmarks/experiments/skinny_ab.py
echo "== skinny tests"
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_sm90_skinny.py tests/test_skinny.py \
  tests/test_sm90_decode.py 2>&1 | tail -3
echo "== racecheck, memcheck, synccheck over the skinny sweep cases"
for t in racecheck memcheck synccheck; do
  timeout 60 compute-sanitizer --tool "$t" python3 scripts/sanitize_sweep.py --only "sm90 skinny" 2>&1 |
    grep -E "^FAIL|SUMMARY" | sort | uniq -c
done
echo "== clusters of 4 past the SMs: the rule against 2 / 4 splits (us)"
VARS=torch,auto,s2,s4 timeout 150 python3 $AB 24x2176x8192 40x2560x4096 64x2816x8192 64x3072x8192 17x3072x14336 \
  32x3200x8192 32x3328x8192 2>&1
echo "== small-M suite"
timeout 90 python3 -m cutorch_gemm bench --suite small_m --no-progress --out "${OUT:-/tmp}" 2>&1 | tail -7
