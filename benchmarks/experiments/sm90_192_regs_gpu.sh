# One GPU call (~3.5 min with the build): does the 192x192 tile stall, and where? Each forced launch (paired and
# unpaired, up to ~7 tiles per CTA; plain mm, then bias + GELU-tanh: ACTS="none gelu_tanh") runs in its own process
# under a 30 s KILL, then the default launch's test (tests/test_sm90.py::test_sm90_mid_k_cluster_rule), then
# compute-sanitizer synccheck on the first launch that stalled.
# History: the sixty-first session's GPU tests stalled once with a 32 / 160 register split, in the default launch of
# 2176x8192x4096; the sixty-second ran this (both ACTS) and the tests with that split and saw no stall, so the split was
# kept (benchmarks/RESULTS.md). Run on the device:
#   run bash benchmarks/experiments/sm90_192_regs_gpu.sh
set -u
bash scripts/gpu_build.sh || exit 1
case_py='
import sys, torch, cutorch_gemm as cg
m, n, k = map(int, sys.argv[1].split("x"))
a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
print(cg.explain("mm", a, b).config, end=" ")
act = sys.argv[3] if len(sys.argv) > 3 else "none"
bias = torch.randn(n, device="cuda", dtype=torch.bfloat16) if act != "none" else None
for _ in range(int(sys.argv[2])):
    d = cg.mm(a, b) if act == "none" else cg.gemm(a, b, bias=bias, activation=act)
torch.cuda.synchronize()
ref = a.double() @ b.double()
if act != "none":
    ref = torch.nn.functional.gelu(ref + bias.double(), approximate="tanh")
err = (d.float() - ref.float()).abs().max().item()
print(f"max abs err {err:.3g}")
'
stalled=""
ACTS=${ACTS:-none gelu_tanh}
for act in $ACTS; do
for shape in 1000x1000x1000 3072x3072x3072 2176x8192x4096 2176x8192x1024 2304x8192x4096 4096x8192x4096; do
  for cl in 2 1; do
    printf "%-16s %-9s cluster %s: " "$shape" "$act" "$cl"
    CUTORCH_GEMM_SM90_CONFIG=coop192x192 CUTORCH_GEMM_SM90_CLUSTER=$cl timeout -s KILL 30 \
      python3 -c "$case_py" "$shape" 20 "$act" 2>&1 | tail -1
    if [ "${PIPESTATUS[0]}" = 137 ]; then echo "STALLED (killed after 30 s)"; stalled="${stalled:-$shape $cl $act}"; fi
  done
done
done
echo "the default launch, as tests/test_sm90.py::test_sm90_mid_k_cluster_rule[2176x8192x4096] makes it:"
timeout -s KILL 200 python3 -m pytest -q -m gpu -p no:cacheprovider "tests/test_sm90.py::test_sm90_mid_k_cluster_rule" 2>&1 | tail -3
if [ -n "$stalled" ]; then
  set -- $stalled
  echo "synccheck on $1, cluster $2, $3:"
  CUTORCH_GEMM_SM90_CONFIG=coop192x192 CUTORCH_GEMM_SM90_CLUSTER=$2 timeout -s KILL 150 \
    compute-sanitizer --tool synccheck python3 -c "$case_py" "$1" 1 "$3" 2>&1 | tail -15
fi
exit 0
