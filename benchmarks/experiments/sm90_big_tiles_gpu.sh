# One GPU call (cold build ~190 s, ~6 min in all): the two untested wide-tile experiments, applied to the copy it runs
# in (run it on the device, e.g. `run bash benchmarks/experiments/sm90_big_tiles_gpu.sh`; not in a tree you commit):
# sm90_coop320.patch (128x320 tiles, D by TMA) and sm90_coop192x192.patch on top (three consumer warpgroups). Their
# tests, memcheck and racecheck, then alone (epilogue_power.py) against the rules' choice, the direct store, 2x1
# pairs (cuBLAS runs its tiles there in clusters) and torch.mm.
set -u
patch -p1 -s < benchmarks/experiments/sm90_coop320.patch || exit 1
patch -p1 -s < benchmarks/experiments/sm90_coop192x192.patch || exit 1
bash scripts/gpu_build.sh || exit 1
timeout -s INT 120 python3 -m pytest -q -m gpu tests/test_sm90_fit.py -k "coop320 or coop192x192" 2>&1 | tail -4
S='import os, torch, cutorch_gemm as cg
for m, n, k in [(1000, 1000, 1000), (300, 700, 128), (2304, 3000, 200)]:
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16); b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    ref = (a.double() @ b.double() * 0.5 + bias.double())
    err = ((cg.gemm(a, b, bias=bias, alpha=0.5).double() - ref).abs().max() / ref.abs().max()).item()
    print(os.environ["CUTORCH_GEMM_SM90_CONFIG"], m, n, k, cg.explain("mm", a, b).config, "rel err %.1e" % err)'
for cfg in coop320 coop192x192; do for tool in memcheck racecheck; do
  CUTORCH_GEMM_SM90_CONFIG=$cfg timeout 80 compute-sanitizer --tool $tool python3 -c "$S" 2>&1 | tail -3
done; done
P="timeout 150 python3 benchmarks/experiments/epilogue_power.py"
C="CUTORCH_GEMM_SM90_CONFIG"
SHAPES=2560x4096x4096,2048x5120x4096,4096x3584x4096,8192x14336x4096 RUN_S=0.5 IDLE_S=0.3 \
  VARIANTS="plain,plain|$C=coop320,plain|$C=coop320+CUTORCH_GEMM_SM90_EPILOGUE=direct,plain|$C=coop320+CUTORCH_GEMM_SM90_CLUSTER=2,torch_mm" \
  $P 2>&1 | grep -v "^\s*$"
SHAPES=3072x3072x3072,3072x3072x4096,6144x3072x4096 RUN_S=0.5 IDLE_S=0.3 \
  VARIANTS="plain,plain|$C=coop192x192,plain|$C=coop192x192+CUTORCH_GEMM_SM90_EPILOGUE=direct,plain|$C=coop192x192+CUTORCH_GEMM_SM90_CLUSTER=2,torch_mm" \
  $P 2>&1 | grep -v "^\s*$"
