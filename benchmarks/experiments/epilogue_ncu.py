"""One launch each of our plain mm, bias, bias + GELU-tanh (and the same two with the bias loaded at packing
time: CUTORCH_GEMM_SM90_BIAS_EARLY=off), torch._addmm_activation and torch.mm inside the profiler range, for
ncu's per-launch cycles and instructions. On a GPU machine:

    ncu --clock-control none --profile-from-start off --csv --metrics sm__cycles_active.avg,\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,smsp__inst_executed.sum \
        python benchmarks/experiments/epilogue_ncu.py 8192x14336x4096 4096x4096x4096

(--clock-control none: leave the card's clocks alone; compare cycles, not microseconds.)
"""
import os
import sys

import torch

import cutorch_gemm as cg


def bias_at_packing(f):
    def g():
        os.environ["CUTORCH_GEMM_SM90_BIAS_EARLY"] = "off"
        try:
            return f()
        finally:
            os.environ.pop("CUTORCH_GEMM_SM90_BIAS_EARLY")
    return g


for spec in sys.argv[1:]:
    m, n, k = map(int, spec.split("x"))
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    fns = [lambda: cg.mm(x, w.t()),
           lambda: cg.gemm(x, w.t(), bias=bias),
           bias_at_packing(lambda: cg.gemm(x, w.t(), bias=bias)),
           lambda: cg.gemm(x, w.t(), bias=bias, activation="gelu_tanh"),
           bias_at_packing(lambda: cg.gemm(x, w.t(), bias=bias, activation="gelu_tanh")),
           lambda: torch._addmm_activation(bias, x, w.t(), use_gelu=True),
           lambda: torch.mm(x, w.t())]
    for f in fns:
        for _ in range(3):
            f()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStart()
    for f in fns:
        f()
    torch.cuda.synchronize()
    torch.cuda.cudart().cudaProfilerStop()
