#!/usr/bin/env bash
# Sixty-eighth session, one device call: build, the autograd / torch.func tests on the GPU, host times.
#   run bash benchmarks/experiments/func_transforms_gpu.sh
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bash scripts/gpu_build.sh || exit 1
log="${OUT:-/tmp}/func_tests.txt"
t0=$SECONDS
timeout -s KILL 330 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_func_transforms.py tests/test_autograd.py \
  tests/test_opcheck.py tests/test_compile.py tests/test_scaled_mm.py tests/test_gated_mlp.py tests/test_grouped_experts.py \
  tests/test_moe_combine.py tests/test_swiglu.py tests/test_grouped_gemm_ptr.py tests/test_dropin.py tests/test_models.py \
  tests/test_flop_counter.py tests/test_export.py \
  > "$log" 2>&1
echo "tests rc=$? in $((SECONDS - t0)) s"
grep -E "^(FAILED|ERROR)|passed|failed" "$log" | tail -20
timeout 90 python3 benchmarks/experiments/autograd_host.py
