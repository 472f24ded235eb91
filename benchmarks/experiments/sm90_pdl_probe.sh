# One GPU call (~9 min; `run bash benchmarks/experiments/sm90_pdl_probe.sh`): build, ~90 s of timings, GPU tests part b.
# 1. GPU tests part b (scripts/gpu_tests.sh b, last): the fifty-sixth session's run of it aborted in
#    test_pdl_write_after_read's first form (a torch.cuda.MemPool destroyed after earlier files' CUDA graphs); its
#    retrying form and the files after it (test_sm90_producers, test_sm90_skinny, test_swiglu) have not run with PDL.
# 2. Why does PDL cost time on one-tile launches with K = 4096 (64x14336x4096 +4-6%, 1024x1024x4096 +1%; fifty-sixth
#    session)? Hypothesis: the next launch's CTAs wait on the SMs this grid leaves idle (112 of 132 used), and that
#    costs the running grid. If so: at 64x16896x4096 (132 tiles of 64x128, no idle SM) PDL=on is neutral or wins, and
#    at 64x8192x4096 (64 tiles) it loses as much or more than at 64x14336x4096. If 64x16896x4096 loses too, the idle
#    SMs are not the cause (then K: 64x14336x8192 should lose more than 64x14336x4096).
#    Also benchmarks/experiments/sm90_pdl_late.patch (applied here, not in a tree you commit; ptxas spills with it
#    identical to main's in six sm90 TUs):
#    CUTORCH_GEMM_SM90_PDL_TRIGGER=late (the tile kernels signal their dependents when their consumers finish
#    their last mainloop, not at the start): if the idle-SM hypothesis holds, "on+late" keeps the short launches' win
#    (1024^3, 2048x2048x512) without the long ones' loss, and the rule could go.
# 3. benchmarks/experiments/sm80_skinny_pdl.patch (applied here too): the mma.sync skinny kernel (M <= 16 against
#    W of at most ~4224 rows on an H200) gets PDL where its sm_90 build runs (cudaFuncGetAttributes: binaryVersion and
#    ptxVersion >= 90), by the same K rule; test_pdl_mma_sync_skinny_chain (4 shapes, in part b). Prediction: on vs off
#    at 16x4096x1024 (5.2 us) 5-10% less time, at 1x4096x4096 0-3%.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
patch -p1 -s --no-backup-if-mismatch < benchmarks/experiments/sm90_pdl_late.patch || exit 1
patch -p1 -s --no-backup-if-mismatch < benchmarks/experiments/sm80_skinny_pdl.patch || exit 1
bash scripts/gpu_build.sh || exit 1
SHAPES="64x16896x4096,64x14336x4096,64x8192x4096,64x14336x8192,64x16896x2048,1024x1024x4096,1024x1056x4096"
SHAPES="$SHAPES,1024x1024x1024,2048x2048x512,16x4096x1024,16x2048x2048,8x4096x2048,1x4096x4096"
ON=CUTORCH_GEMM_SM90_PDL=on
SHAPES=$SHAPES RUN_S=0.4 IDLE_S=0.2 VARIANTS="plain|$ON,plain|$ON+CUTORCH_GEMM_SM90_PDL_TRIGGER=late,plain|CUTORCH_GEMM_SM90_PDL=off" \
  timeout 150 python3 benchmarks/experiments/epilogue_power.py 2>&1 | grep -v "^\s*$" | sed -e 's/ *first .* steady/ steady/'
TEST_TIMEOUT=280 SKIP_BUILD=1 bash scripts/gpu_tests.sh b
