# Programmatic dependent launch's rule (device/sm90_pdl_launch.cuh: short launches only; CUTORCH_GEMM_SM90_PDL=on|off
# forces it), in two GPU calls, the second within 30 s of the first (the built extension stays):
#   run bash benchmarks/experiments/sm90_pdl_gpu.sh        build, the PDL tests, default / on / off alone-timings at
#                                                          shapes either side of the rule, then GPU tests part a
#   run bash benchmarks/experiments/sm90_pdl_gpu.sh b      GPU tests part b, memcheck over the quick sanitizer sweep
# The rule's prediction (fifty-sixth session): default = the better of on / off within noise at every shape; PDL on
# wins where a CTA runs through K <= 2048 in all (1024^3, 2048x2048x512), loses where it runs K = 4096 at one tile.
set -u
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
if [ "${1:-}" = b ]; then
  bash scripts/gpu_tests.sh b
  timeout 170 compute-sanitizer --tool memcheck python3 scripts/sanitize_sweep.py --quick 2>&1 | tail -2
  exit 0
fi
bash scripts/gpu_build.sh || exit 1
timeout -s INT 120 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_sm90_pdl.py 2>&1 | grep -E "^(FAILED|E )|passed|failed" | tail -8
SHAPES="1024x1024x1024,2048x2048x512,2048x2048x1024,2048x2048x2048,1024x1024x2048,1024x1024x4096,4096x4096x1024"
SHAPES="$SHAPES,64x14336x1024,64x14336x4096,256x4096x2048,16x4096x1024,32x4096x4096,4096x4096x4096"
SHAPES=$SHAPES RUN_S=0.4 IDLE_S=0.2 VARIANTS="plain,plain|CUTORCH_GEMM_SM90_PDL=on,plain|CUTORCH_GEMM_SM90_PDL=off,torch_mm" \
  timeout 150 python3 benchmarks/experiments/epilogue_power.py 2>&1 | grep -v "^\s*$" | sed -e 's/ *first .* steady/ steady/' -e 's/passes:.*//'
SKIP_BUILD=1 bash scripts/gpu_tests.sh a
