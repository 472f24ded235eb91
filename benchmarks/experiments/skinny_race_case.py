"""One Hopper skinny launch for compute-sanitizer's racecheck (benchmarks/RESULTS.md, sixty-fifth session, section 4:
one-split fp16 launches drew intermittent RAW reports between the partial tile's stores and the producer warp's
epilogue reads, until the sixty-sixth session left the producer warp out of the one-split epilogue). Runs
`cg.gemm(x, W^T, bias)` once per repeat, as scripts/sanitize_sweep.py's skinny cases do, and checks it against
float64. The split count and ring come from the environment (CUTORCH_GEMM_SKINNY=sm90,
CUTORCH_GEMM_SKINNY_SPLITS, CUTORCH_GEMM_SKINNY_RING); CUTORCH_GEMM_SM90_PDL=off turns off the dependent launch.

    compute-sanitizer --tool racecheck --racecheck-report all python3 benchmarks/experiments/skinny_race_case.py \
        17x65x72 fp16 [repeats]
"""
import sys

import torch

import cutorch_gemm as cg

m, n, k = map(int, sys.argv[1].split("x"))
dtype = {"fp16": torch.float16, "bf16": torch.bfloat16}[sys.argv[2]]
repeats = int(sys.argv[3]) if len(sys.argv) > 3 else 1
torch.manual_seed(0)
worst = 0.0
for _ in range(repeats):
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype).t()
    bias = torch.randn(n, device="cuda", dtype=dtype)
    out = cg.gemm(x, b, bias=bias)
    torch.cuda.synchronize()
    ref = x.double() @ b.double() + bias.double()
    worst = max(worst, ((out.double() - ref).norm() / ref.norm()).item())
print(f"{'ok' if worst < 2e-2 else 'FAIL'} {sys.argv[1]} {sys.argv[2]} x{repeats}: rel err {worst:.1e}")
sys.exit(0 if worst < 2e-2 else 1)
