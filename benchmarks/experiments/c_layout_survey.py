"""Survey of the launches the fit rule does not take (benchmarks/RESULTS.md, thirty-ninth session): gemm with a
full (M, N) C and beta = 1 against torch.addmm(C, x, W.t()); b MN-major (mm(x, W) with a row-major (K, N) W, the
dX = dY W form) and both operands MN-major (the dW = dY^T X form) against torch.mm. Ratio = torch / ours, 7
interleaved rounds, bf16; the configs from explain.

    python benchmarks/experiments/c_layout_survey.py      (from the repo root, on a GPU machine)
"""
import os
import sys

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks.bench_gemm import time_interleaved, time_ms, SETTLE_MS  # noqa: E402

SHAPES = [(1536, 1536, 4096), (1024, 2560, 4096), (2048, 1280, 4096), (512, 2560, 2560), (1536, 1536, 1536),
          (3072, 3072, 4096), (4096, 4096, 4096)]
dt = torch.bfloat16
print("shape".ljust(16) + "".join(f"{h:>10s}" for h in ("C", "b_mn", "dW(mn,mn)")) + "  configs")
for m, n, k in SHAPES:
    x = torch.randn(m, k, device="cuda", dtype=dt)
    w = torch.randn(n, k, device="cuda", dtype=dt)
    c = torch.randn(m, n, device="cuda", dtype=dt)
    wr = torch.randn(k, n, device="cuda", dtype=dt)        # row-major (K, N): b MN-major
    at = torch.randn(k, m, device="cuda", dtype=dt).t()     # (M, K) M-contiguous: a MN-major
    cases = {
        "C": (lambda: cg.gemm(x, w.t(), c=c, beta=1.0), lambda: torch.addmm(c, x, w.t()),
              cg.explain("gemm", x, w.t(), c=c, beta=1.0).config),
        "b_mn": (lambda: cg.mm(x, wr), lambda: torch.mm(x, wr), cg.explain("mm", x, wr).config),
        "dW(mn,mn)": (lambda: cg.mm(at, wr), lambda: torch.mm(at, wr), cg.explain("mm", at, wr).config),
    }
    ratios, cfgs = [], []
    for ours, theirs, cfg in cases.values():
        times = time_interleaved({"o": ours, "t": theirs}, 7, timer=lambda f: time_ms(f, warmup_ms=10, rep_ms=30),
                                 settle_ms=SETTLE_MS)
        ratios.append(times["t"] / times["o"])
        cfgs.append(cfg.replace("Sm90_", ""))
    print(f"{m}x{n}x{k}".ljust(16) + "".join(f"{r:10.3f}" for r in ratios) + "  " + " | ".join(cfgs), flush=True)
