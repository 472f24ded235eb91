# One GPU call (cold build ~3 min, ~7 min in all): the big-tile rule (choose_sm90_big, device/sm90_fit_rules.h) on
# shapes it was not set on, timed alone (epilogue_power.py: the rule's choice, CUTORCH_GEMM_SM90_BIG=off, torch.mm),
# then the fit tiles' tests and compute-sanitizer on the 192x192 pairs (odd tile rows included). Run it on the device:
# `run bash benchmarks/experiments/sm90_big_rule_gpu.sh`. Every step has a time limit.
set -u
bash scripts/gpu_build.sh || exit 1
HELD="2304x6144x4096,2816x3584x4096,3072x1536x4096,3328x3072x4096,4096x2304x4096,4608x4096x4096,7168x2048x4096"
HELD="$HELD,3328x1536x4096,3584x4096x2048,3072x3072x2048,6144x1536x2048,4096x3584x8192,6144x2304x8192"
python3 - "$HELD" <<'PY'
import sys, torch, cutorch_gemm as cg
for s in sys.argv[1].split(","):
    m, n, k = map(int, s.split("x"))
    a = torch.empty(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.empty(n, k, device="cuda", dtype=torch.bfloat16).t()
    print(f"{s:>16}  {cg.explain('mm', a, b).config}")
PY
SHAPES="$HELD" RUN_S=0.5 IDLE_S=0.3 VARIANTS="plain,plain|CUTORCH_GEMM_SM90_BIG=off,torch_mm" \
  timeout 260 python3 benchmarks/experiments/epilogue_power.py 2>&1 | grep -v "^\s*$"
timeout -s INT 150 python3 -m pytest -q -m gpu tests/test_sm90_fit.py 2>&1 | tail -3
for tool in memcheck racecheck; do
  timeout 60 compute-sanitizer --tool $tool python3 scripts/sanitize_sweep.py --only "coop192x192" 2>&1 | tail -2
done
exit 0
