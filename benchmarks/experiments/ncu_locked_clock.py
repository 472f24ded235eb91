"""One launch of ours and one of PyTorch's for a case, inside the profiler range, so that ncu compares
the two kernels launch by launch: cycles, instructions, tensor-pipe activity and bytes, which depend far less
than microseconds on the clock the 700 W power cap leaves the timed benchmarks (benchmarks/RESULTS.md, eleventh
session). Run on a GPU machine:

    ncu --clock-control none --profile-from-start off --metrics gpu__time_duration.sum,sm__cycles_active.avg,\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_elapsed,lts__t_bytes.sum,\
dram__bytes_read.sum,smsp__inst_executed.sum python benchmarks/experiments/ncu_locked_clock.py \
        mm:8192x14336x4096 dw:8x16384x4096x14336 fp8:4096x4096x4096

NOTE: pass --clock-control none. The machines' rule is to leave the card's clocks alone, and without
the flag ncu locks them at base for the run (the "fixed clocks" of the sessions up to the eighteenth).
Compare cycles, not microseconds, between runs.

Cases: mm:MxNxK (bf16, b = W.t()), dw:ExTxKxN (grouped_mm x^T @ dy, uniform groups),
gm:ExTxKxN (grouped_mm x @ w, w (E, N, K) viewed as (E, K, N), groups T/E -+ 37 rows: every group
ends in a partial tile), bias:MxNxK / gelu:MxNxK (gemm with bias / bias + GELU-tanh against torch.addmm /
torch._addmm_activation), fp8:MxNxK (scaled_mm, per-tensor scales, bf16 out), fp8fast:MxNxK (the same, use_fast_accum=True).
"""
import sys

import torch

import cutorch_gemm as cg


def case(spec):
    kind, dims = spec.split(":")
    d = [int(v) for v in dims.split("x")]
    bf16 = torch.bfloat16
    if kind == "mm":
        m, n, k = d
        x, w = torch.randn(m, k, device="cuda", dtype=bf16), torch.randn(n, k, device="cuda", dtype=bf16)
        return (lambda: cg.mm(x, w.t())), (lambda: torch.mm(x, w.t()))
    if kind in ("bias", "gelu"):  # gemm with bias (and GELU-tanh) against torch.addmm / torch._addmm_activation
        m, n, k = d
        x, w = torch.randn(m, k, device="cuda", dtype=bf16), torch.randn(n, k, device="cuda", dtype=bf16)
        bias = torch.randn(n, device="cuda", dtype=bf16)
        if kind == "bias":
            return (lambda: cg.gemm(x, w.t(), bias=bias)), (lambda: torch.addmm(bias, x, w.t()))
        return (lambda: cg.gemm(x, w.t(), bias=bias, activation="gelu_tanh")), \
            (lambda: torch._addmm_activation(bias, x, w.t(), use_gelu=True))
    if kind == "dw":
        e, t, k, n = d
        offs = (torch.arange(1, e + 1, device="cuda") * (t // e)).to(torch.int32)
        a = torch.randn(t, k, device="cuda", dtype=bf16).t()
        b = torch.randn(t, n, device="cuda", dtype=bf16)
        return (lambda: cg.grouped_mm(a, b, offs)), (lambda: torch._grouped_mm(a, b, offs=offs))
    if kind == "gm":  # grouped-M forward x (T, K) @ w (E, K, N), group sizes T/E -+ 37 (partial tiles)
        e, t, k, n = d
        sizes = [t // e + (37 if g % 2 else -37) for g in range(e)]
        offs = torch.tensor(sizes, device="cuda").cumsum(0).to(torch.int32)
        a = torch.randn(int(offs[-1]), k, device="cuda", dtype=bf16)
        b = torch.randn(e, n, k, device="cuda", dtype=bf16).transpose(1, 2)
        return (lambda: cg.grouped_mm(a, b, offs)), (lambda: torch._grouped_mm(a, b, offs=offs))
    if kind in ("fp8", "fp8fast"):
        m, n, k = d
        x = torch.randn(m, k, device="cuda").to(torch.float8_e4m3fn)
        w = torch.randn(n, k, device="cuda").to(torch.float8_e4m3fn)
        sa, sb = torch.tensor(0.5, device="cuda"), torch.tensor(2.0, device="cuda")
        fast = kind == "fp8fast"
        return (lambda: cg.scaled_mm(x, w.t(), sa, sb, out_dtype=bf16, use_fast_accum=fast)), \
            (lambda: torch._scaled_mm(x, w.t(), sa, sb, out_dtype=bf16, use_fast_accum=fast))
    raise SystemExit(f"unknown case {spec!r}")


for spec in sys.argv[1:]:
    ours, theirs = case(spec)
    for _ in range(3):
        ours()
        theirs()
    torch.cuda.synchronize()
    torch.cuda.profiler.start()
    ours()
    theirs()
    torch.cuda.synchronize()
    torch.cuda.profiler.stop()
    print("CASE", spec, flush=True)
