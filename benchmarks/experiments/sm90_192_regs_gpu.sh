# One GPU call (~4 min with the build): does the 192x192 tile with a 32 / 160 register split (the sixty-first
# session's try, sm90_192_regs32.patch: no spills under ptxas, where 40 / 152 keeps 4 bytes) stall, and where?
# That session's GPU tests stopped making progress in the default launch of 2176x8192x4096 mm (pairs, up to 4 tiles
# per CTA); the forced 192x192 tests up to 3072^3 (at most 2 per CTA) passed in the same call. Each launch runs in its own process with a time limit, paired and
# unpaired, then compute-sanitizer synccheck on the first one that stalls. Run on the device:
#   run bash benchmarks/experiments/sm90_192_regs_gpu.sh
# (It applies the patch to the device's copy of the tree only.)
set -u
git apply benchmarks/experiments/sm90_192_regs32.patch || exit 1
bash scripts/gpu_build.sh || exit 1
case_py='
import sys, torch, cutorch_gemm as cg
m, n, k = map(int, sys.argv[1].split("x"))
a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
print(cg.explain("mm", a, b).config, end=" ")
for _ in range(int(sys.argv[2])):
    d = cg.mm(a, b)
torch.cuda.synchronize()
err = (d.float() - (a.double() @ b.double()).float()).abs().max().item()
print(f"max abs err {err:.3g}")
'
stalled=""
for shape in 1000x1000x1000 3072x3072x3072 2176x8192x4096 2176x8192x1024 2304x8192x4096 4096x8192x4096; do
  for cl in 2 1; do
    printf "%-16s cluster %s: " "$shape" "$cl"
    CUTORCH_GEMM_SM90_CONFIG=coop192x192 CUTORCH_GEMM_SM90_CLUSTER=$cl timeout -s KILL 30 \
      python3 -c "$case_py" "$shape" 20 2>&1 | tail -1
    if [ "${PIPESTATUS[0]}" = 137 ]; then echo "STALLED (killed after 30 s)"; stalled="${stalled:-$shape $cl}"; fi
  done
done
if [ -n "$stalled" ]; then
  set -- $stalled
  echo "synccheck on $1, cluster $2:"
  CUTORCH_GEMM_SM90_CONFIG=coop192x192 CUTORCH_GEMM_SM90_CLUSTER=$2 timeout -s KILL 150 \
    compute-sanitizer --tool synccheck python3 -c "$case_py" "$1" 1 2>&1 | tail -15
fi
exit 0
