"""Host time per call of single ops against PyTorch's (is a small launch host-bound?).

    python benchmarks/experiments/host_ops.py

For grouped_mm at a decode size (8 rows over 128 experts) and mm at 1, 64 and 4096 rows: the least
host microseconds per call over 8 x 50 calls queued behind a GPU sleep, through the Python wrapper,
through the op below autograd, and for torch's op; then torch.profiler's CPU table of our calls.
"""
import os, sys, torch
sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg
from benchmarks.experiments.list_overhead import host_min_us  # (the same host timing)
dt = torch.bfloat16
def hmin(fn): return host_min_us(fn, reps=8, calls=50)
E, K, N = 128, 2048, 1536
x = torch.randn(8, K, device="cuda", dtype=dt); w = torch.randn(E, N, K, device="cuda", dtype=dt).transpose(1, 2)
offs = torch.bincount(torch.randperm(E)[:8], minlength=E).cumsum(0).to(torch.int32).cuda()
a1 = torch.randn(1, 4096, device="cuda", dtype=dt); W = torch.randn(4096, 4096, device="cuda", dtype=dt).t()
a2 = torch.randn(4096, 4096, device="cuda", dtype=dt)
a3 = torch.randn(64, 4096, device="cuda", dtype=dt)
def below(op, *args, **kw):
    with torch._C._AutoDispatchBelowAutograd():
        return op(*args, **kw)
cases = {
  "grouped_mm decode": (lambda: cg.grouped_mm(x, w, offs), lambda: torch._grouped_mm(x, w, offs=offs), lambda: below(torch.ops.gemm.grouped_mm.default, x, w, offs)),
  "mm 1x4096x4096": (lambda: cg.mm(a1, W), lambda: torch.mm(a1, W), lambda: below(torch.ops.gemm.mm.default, a1, W)),
  "mm 64x4096x4096": (lambda: cg.mm(a3, W), lambda: torch.mm(a3, W), lambda: below(torch.ops.gemm.mm.default, a3, W)),
  "mm 4096^3": (lambda: cg.mm(a2, W), lambda: torch.mm(a2, W), lambda: below(torch.ops.gemm.mm.default, a2, W)),
}
for name, (ours, ref, op) in cases.items():
    print(f"{name:20} host us: ours {hmin(ours):6.1f}  op below autograd {hmin(op):6.1f}  torch {hmin(ref):6.1f}   [{cg.explain('grouped_mm', x, w, offs).config if 'grouped' in name else ''}]", flush=True)
for name, (ours, ref, op) in cases.items():
    ours(); torch.cuda.synchronize()
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        for _ in range(20): ours()
        torch.cuda.synchronize()
    print("==", name)
    print(prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=14, max_name_column_width=50))
