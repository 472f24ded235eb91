#!/usr/bin/env bash
# The next GPU session's first call (~7-8 min: the build, then 60 sanitizer runs of ~5 s each): where the
# intermittent racecheck reports in one-split Hopper skinny launches come from (benchmarks/RESULTS.md, sixty-fifth
# session, section 4). The flagged case alone, ten sanitizer runs of 5 launches each per variant: as flagged (fp16),
# with the dependent launch off, in bf16, at 2 splits, and the deep ring's one-split case (never flagged so far). A
# variant that never reports where the first does points at the cause. PATCH=1 (a second call): the same after
# skinny_red_shared.patch, which writes and reads the one-split partial tile with shared-space instructions
# (st.shared / ld.shared) in place of generic ones; the split launches, never flagged, already read it with
# ld.shared::cluster.
#
#   bash benchmarks/experiments/skinny_race_next_gpu.sh && PATCH=1 bash benchmarks/experiments/skinny_race_next_gpu.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [ "${PATCH:-0}" = 1 ]; then
  P=benchmarks/experiments/skinny_red_shared.patch
  git apply "$P" 2>/dev/null || patch -p1 < "$P" || exit 1
fi
bash scripts/gpu_build.sh || exit 1
CASE=benchmarks/experiments/skinny_race_case.py
run() {  # name, env..., then the case's arguments after "--"
  local name=$1; shift
  local envs=(); while [ "$1" != "--" ]; do envs+=("$1"); shift; done; shift
  local flagged=0
  for i in $(seq 10); do
    env CUTORCH_GEMM_SKINNY=sm90 "${envs[@]}" timeout 40 compute-sanitizer --tool racecheck --racecheck-report all \
      python3 $CASE "$@" 5 > /tmp/race.txt 2>&1
    grep -q "RAW hazard\|WAW hazard\|WAR hazard" /tmp/race.txt && flagged=$((flagged + 1))
    grep -q "^ok" /tmp/race.txt || { echo "$name: run $i did not finish:"; tail -3 /tmp/race.txt; }
  done
  echo "$name: $flagged of 10 runs with reports"
}
run "T32 1 split fp16 17x65x72" CUTORCH_GEMM_SKINNY_SPLITS=1 -- 17x65x72 fp16
run "T32 1 split fp16, PDL off" CUTORCH_GEMM_SKINNY_SPLITS=1 CUTORCH_GEMM_SM90_PDL=off -- 17x65x72 fp16
run "T32 1 split bf16" CUTORCH_GEMM_SKINNY_SPLITS=1 -- 17x65x72 bf16
run "T32 2 splits fp16" CUTORCH_GEMM_SKINNY_SPLITS=2 -- 17x65x72 fp16
run "T64 short 1 split fp16 33x65x904" CUTORCH_GEMM_SKINNY_SPLITS=1 CUTORCH_GEMM_SKINNY_RING=short -- 33x65x904 fp16
run "T64 deep 1 split fp16 33x65x904" CUTORCH_GEMM_SKINNY_SPLITS=1 CUTORCH_GEMM_SKINNY_RING=deep -- 33x65x904 fp16
