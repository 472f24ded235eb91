#!/usr/bin/env bash
# Sixty-ninth session, one device call: build, the autograd / drop-in tests on the GPU, then the host times of
# benchmarks/experiments/autograd_host.py for this tree and for an older copy of the Python package (same built _C),
# alternating, so both are measured on one machine:
#   (here) mkdir -p scratch/old && git archive <commit> cutorch_gemm | tar -x -C scratch/old
#   run bash benchmarks/experiments/autograd_direct_gpu.sh      (carry: scratch/old)
set -uo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
bash scripts/gpu_build.sh || exit 1
log="${OUT:-/tmp}/autograd_tests.txt"
t0=$SECONDS
timeout -s KILL 300 python3 -m pytest -q -m gpu -p no:cacheprovider tests/test_autograd_paths.py tests/test_autograd.py \
  tests/test_func_transforms.py tests/test_opcheck.py tests/test_compile.py tests/test_dropin.py tests/test_export.py \
  tests/test_models.py tests/test_gated_mlp.py tests/test_grouped_experts.py tests/test_flop_counter.py > "$log" 2>&1
echo "tests rc=$? in $((SECONDS - t0)) s"
grep -E "^(FAILED|ERROR)|passed|failed" "$log" | tail -20
if [ -d scratch/old/cutorch_gemm ]; then
  ln -sf "$PWD"/cutorch_gemm/_C*.so scratch/old/cutorch_gemm/
  for round in 1 2; do
    echo "== round $round: older package"; CG_PKG_DIR="$PWD/scratch/old" timeout 100 python3 benchmarks/experiments/autograd_host.py
    echo "== round $round: this tree"; timeout 100 python3 benchmarks/experiments/autograd_host.py
  done
else
  timeout 100 python3 benchmarks/experiments/autograd_host.py
fi
