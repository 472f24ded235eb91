#!/usr/bin/env bash
# Per-CTA timelines of one Hopper launch under several environments, in one GPU call: applies
# sm90_timeline.patch (reverted on exit), builds sm90_timeline.cu and prints, per variant, its graph timing against
# cuBLAS and the main stamps (the whole table goes to $OUT/timeline_<name>.txt).
#
#   bash benchmarks/experiments/sm90_timeline.sh "1024 1024 1024 0" default: early_off:CUTORCH_GEMM_SM90_EARLY=off \
#        early4:CUTORCH_GEMM_SM90_EARLY=4 flush:FLUSH=1
#
# (first argument: M N K config, as sm90_timeline.cu takes them; then name:VAR=value[+VAR2=value] per variant)
set -euo pipefail
cd "$(git rev-parse --show-toplevel)"
out="${OUT:-/tmp}"
shape="$1"
shift
git apply benchmarks/experiments/sm90_timeline.patch
trap 'git apply -R benchmarks/experiments/sm90_timeline.patch' EXIT
NV=$(python3 -c "import nvidia,os;print(os.path.join(list(nvidia.__path__)[0],'cu13'))")
nvcc -O3 -std=c++17 -gencode arch=compute_90a,code=sm_90a --expt-relaxed-constexpr -DCUTORCH_GEMM_WITH_CUDA \
  -DCG_TIMELINE -Icsrc/include -I"$NV/include" benchmarks/experiments/sm90_timeline.cu -L"$NV/lib" \
  -l:libcublas.so.13 -l:libcublasLt.so.13 -Xlinker -rpath="$NV/lib" -o /tmp/sm90_timeline
for v in "$@"; do
  name="${v%%:*}"
  envs="${v#*:}"
  # shellcheck disable=SC2086
  env ${envs//+/ } timeout 60 /tmp/sm90_timeline $shape > "$out/timeline_$name.txt" 2>&1 || true
  grep -E "round 2|SM clock|thread 0|consumer 0|producer warp|k-block (0|2) (issued|full)|k-block 15 full|mainloop|epilogue|exit" \
    "$out/timeline_$name.txt" | sed "s/(ns at.*//; s/^/$name: /" || tail -n 3 "$out/timeline_$name.txt"
done
