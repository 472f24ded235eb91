#!/usr/bin/env bash
# The Hopper skinny kernel's ring depth (sixty-third session; device/sm90_skinny.h's NOTE has the numbers).
# A 12-stage ring for the dense 64-token launch over at most 2 K splits (sm90_skinny_deep_ring.patch) ran 2-7% faster
# where W is wide, and passed the GPU tests, memcheck and synccheck; racecheck reported write-write hazards at the
# partial tile's stores in "sm90 skinny T64 wrap splits 1 fp16 33x65x904" (15 K blocks: the ring wraps). The short ring
# had not been racechecked wrapping, nor in a one-split launch ("T32 splits 1" below: no cluster, no wrap; if it is
# flagged too, the report is not about the ring). This checks both:
#
#   bash benchmarks/experiments/skinny_ring_gpu.sh            the tree as it is (short ring, wrapping cases)
#   PATCH=1 bash benchmarks/experiments/skinny_ring_gpu.sh    with the deep ring: racecheck, then the A/B
#                                                             (auto against CUTORCH_GEMM_SKINNY_RING=short)
# (the patch is applied to the GPU machine's copy of the tree only)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [ "${PATCH:-0}" = 1 ]; then git apply benchmarks/experiments/sm90_skinny_deep_ring.patch || exit 1; fi
bash scripts/gpu_build.sh || exit 1
for t in racecheck memcheck synccheck; do
  echo "== $t"
  timeout 60 compute-sanitizer --tool "$t" python3 scripts/sanitize_sweep.py --only "sm90 skinny" 2>&1 |
    grep -E "^(ok|FAIL)|SUMMARY|Race reported|hazards\]" | head -12
done
if [ "${PATCH:-0}" = 1 ]; then
  echo "== do_bench A/B (three interleaved rounds; us)"
  VARS=torch,auto,auto+short,off timeout 150 python3 benchmarks/experiments/skinny_ab.py 64x4096x14336 56x4096x14336 \
    40x4096x8192 48x4096x4096 64x1024x8192 33x4096x8192 2>&1
else
  # Two open questions from the same session's readings (do_bench, µs):
  # - clusters of 8 past half the SMs (64x1024x8192: 4 splits, 64 CTAs, 17.1 against cuBLAS 14.0): with two CTAs per
  #   SM they may pack as clusters of 4 did (choose_sm90_skinny_splits);
  # - 33 rows ran the skinny kernel 16% slower than 40 (33.5 against 28.9 at N 4096, K 8192; the tiles 30.6 both).
  echo "== clusters of 8"
  VARS=torch,auto,s4,s8,off timeout 120 python3 benchmarks/experiments/skinny_ab.py 64x1024x8192 32x1024x8192 \
    48x1536x8192 24x768x14336 2>&1
  echo "== rows 33..64 at N 4096, K 8192"
  VARS=torch,auto,off timeout 120 python3 benchmarks/experiments/skinny_ab.py 33x4096x8192 36x4096x8192 \
    40x4096x8192 48x4096x8192 56x4096x8192 64x4096x8192 2>&1
fi
