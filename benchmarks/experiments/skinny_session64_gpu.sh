#!/usr/bin/env bash
# The Hopper skinny kernel's deep ring and clusters of 8 (sixty-fourth session; device/sm90_skinny.h has the numbers),
# one call on a GPU machine (~8 min): build; compute-sanitizer over the skinny sweep cases (racecheck twice in full
# report mode on the wrapping one-split case, where the deep ring that wrote its partial tile over the ring was flagged
# now and then); the skinny test files; the deep ring against the short one (CUTORCH_GEMM_SKINNY_RING, "+deep" /
# "+short" in skinny_ab.py); clusters of 8 against 4; the small-M suite. (The session ran it before the rule took the
# deep ring only past 32 K blocks per CTA; the columns were then auto and auto+short.)
#
#   bash benchmarks/experiments/skinny_session64_gpu.sh
# (The session's first reading applied the then-separate deep-ring patch to tree 2e76028 and ran the same A/B.)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bash scripts/gpu_build.sh || exit 1
AB=benchmarks/experiments/skinny_ab.py
echo "== racecheck (full report) x2, memcheck, synccheck"
for i in 1 2; do
  timeout 60 compute-sanitizer --tool racecheck --racecheck-report all python3 scripts/sanitize_sweep.py \
    --only "sm90 skinny" 2>&1 | grep -E "^FAIL|SUMMARY|Potential" | sort | uniq -c | head -6
done
for t in memcheck synccheck; do
  timeout 60 compute-sanitizer --tool "$t" python3 scripts/sanitize_sweep.py --only "sm90 skinny" 2>&1 |
    grep -E "^FAIL|SUMMARY"
done
echo "== skinny tests"
timeout 200 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_sm90_skinny.py tests/test_skinny.py \
  tests/test_fuzz.py tests/test_sm90_decode.py 2>&1 | tail -3
echo "== deep ring A/B (us)"
VARS=torch,auto+deep,auto+short timeout 90 python3 $AB 64x4096x14336 56x4096x14336 40x4096x8192 33x4096x8192 \
  48x4096x4096 2>&1
echo "== clusters of 8 (the rule) against 4"
VARS=torch,auto,s4 timeout 60 python3 $AB 32x768x8192 64x1024x8192 32x1280x8192 24x768x14336 2>&1
echo "== small-M suite"
timeout 90 python3 -m cutorch_gemm bench --suite small_m --no-progress --out "${OUT:-/tmp}" 2>&1 | tail -9
