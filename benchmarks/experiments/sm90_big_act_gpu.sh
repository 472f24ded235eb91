# One GPU call (cold build ~3 min, ~5 min in all; `run bash benchmarks/experiments/sm90_big_act_gpu.sh`): the big
# tiles with bias + an activation (fifty-fifth session). Launches with an activation whose D the TMA stores take
# choose_sm90_big's tiles (the kernel's big-tile branch applies the activation
# in its TMA-store slices, sm90_store_tile_tma_act). First the tests it changes (they gate the rest), then
# compute-sanitizer on the new sweep cases, then bias + GELU-tanh alone (epilogue_power.py) at the shapes the plain
# rule was measured on: the rule's tile, CUTORCH_GEMM_SM90_BIG=off (the fit widths / ping-pong), torch's fused
# addmm, and our plain mm (the fused epilogue's cost over plain). Every step has a time limit.
set -u
bash scripts/gpu_build.sh || exit 1
timeout -s INT 200 python3 -m pytest -q -m gpu tests/test_sm90_fit.py -k "big_tiles or activation_rule or rule_runs" \
  tests/test_sm90.py::test_sm90_mid_k_cluster_rule 2>&1 | tail -3
[ "${PIPESTATUS[0]}" = 0 ] || exit 1
for only in "coop320 bias + " "coop192x192 bias + "; do  # (the two sweep cases with an activation)
  for tool in memcheck racecheck; do
    timeout 60 compute-sanitizer --tool $tool python3 scripts/sanitize_sweep.py --only "$only" 2>&1 | tail -2
  done
done
SHAPES="2560x4096x4096,3072x3072x4096,2304x6144x4096,3072x1536x4096,3328x3072x4096,4096x3584x8192,6144x1536x2048"
SHAPES="$SHAPES" RUN_S=0.5 IDLE_S=0.3 VARIANTS="fused,fused|CUTORCH_GEMM_SM90_BIG=off,torch_fused,plain" \
  timeout 200 python3 benchmarks/experiments/epilogue_power.py 2>&1 | grep -v "^\s*$"
exit 0
