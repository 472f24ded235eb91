# One GPU call (cold build ~3 min, ~8 min in all): programmatic dependent launch for the Hopper tile and skinny kernels
# (benchmarks/experiments/sm90_pdl.patch, applied to the copy it runs in; `run bash benchmarks/experiments/sm90_pdl_gpu.sh`,
# not in a tree you commit). The patch: launch_sm90 and the skinny launch set
# cudaLaunchAttributeProgrammaticStreamSerialization (device/sm90_pdl_launch.cuh); the kernels signal
# griddepcontrol.launch_dependents at once and wait (griddepcontrol.wait) before they touch global memory (thread 0
# after the barriers' initialisation and the descriptor prefetch, the rest before the CTA barrier / the skinny
# kernel's first offset read).
# Prediction: launches with one tile per CTA (1024^3 ~6.4 us, 2048^3 ~27 us, each side alone as CUDA-graph replays)
# gain the next launch's CTA placement and barrier set-up, 0.3-1 us each (5-15% at 1024^3, 1-3% at 2048^3); large
# shapes +-0; small M (memory-bound, 7-60 us) 1-5%. First the tests that chain dependent launches (they gate the
# rest), the bare / stream-K / skinny / decode tests, then plain mm alone with and without PDL (epilogue_power.py:
# mirrored passes) at dense and small-M shapes, then the dense and small-M suites alone.
set -u
patch -p1 -s < benchmarks/experiments/sm90_pdl.patch || exit 1
bash scripts/gpu_build.sh || exit 1
timeout -s INT 170 python3 -m pytest -q -m gpu tests/test_sm90_pdl.py tests/test_sm90_bare.py tests/test_sm90_streamk.py \
  tests/test_sm90_skinny.py tests/test_sm90_decode.py \
  2>&1 | grep -E "FAILED|passed|failed|rror" | tail -8
[ "${PIPESTATUS[0]}" = 0 ] || exit 1
SHAPES="1024x1024x1024,2048x2048x2048,1024x1024x4096,512x1024x4096,2048x2048x512,3000x5000x1000,4096x4096x4096"
SHAPES="$SHAPES,8192x14336x4096,32x4096x4096,64x14336x4096,48x4096x14336" RUN_S=0.4 IDLE_S=0.2 VARIANTS="plain,plain|CUTORCH_GEMM_SM90_PDL=off,torch_mm" \
  timeout 150 python3 benchmarks/experiments/epilogue_power.py 2>&1 | grep -v "^\s*$"
timeout -s INT 150 python3 -m cutorch_gemm bench --suite dense,small_m --timing alone 2>&1 | tail -18
exit 0
