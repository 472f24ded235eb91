"""Which cuBLAS kernel torch.mm runs per shape, and its kernel time (torch.profiler, back to back).

    SHAPES=2560x4096x4096,3072x3072x3072 DTYPE=bf16 python benchmarks/experiments/cublas_kernels.py

nn.Linear operands (x row-major M x K, W^T a column-major K x N view). The nvjet name carries cuBLAS's tile, stages
and cluster in its own column-major terms: "nvjet_sm90_tst_320x128_64x3_1x2" is a 320 x 128 tile of D^T (our
128 rows of M by 320 columns of N), block K 64, 3 stages, a 1x2 cluster (two CTAs along our M sharing B).
The kernel time is the profiler's mean over CALLS back-to-back launches (no L2 flush): the kernel's own duration,
not the caller's view of it (use epilogue_power.py or `bench --timing alone` for that). Needs no extension.
"""
import os

import torch
from torch.profiler import ProfilerActivity, profile

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def main():
    shapes = [tuple(map(int, s.split("x"))) for s in
              os.environ.get("SHAPES", "2560x4096x4096,3072x3072x3072,4096x3584x4096,1024x1024x1024").split(",")]
    dtype = DTYPES[os.environ.get("DTYPE", "bf16")]
    calls = int(os.environ.get("CALLS", "20"))
    print(f"{'shape':>18}  {'us':>8}  {'TF/s':>6}  kernel(s)")
    for m, n, k in shapes:
        x = torch.randn(m, k, device="cuda", dtype=dtype)
        w = torch.randn(n, k, device="cuda", dtype=dtype)
        for _ in range(3):
            torch.mm(x, w.t())
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            for _ in range(calls):
                torch.mm(x, w.t())
            torch.cuda.synchronize()
        # (per-call device time of every kernel the calls ran; a memset some shapes add is listed too)
        kernels = [e for e in prof.key_averages() if e.device_type.name == "CUDA"]
        total_us = sum(e.device_time_total for e in kernels) / calls
        names = "; ".join(f"{e.key[:80]} ({e.device_time_total / calls:.1f} us)" for e in kernels)
        print(f"{f'{m}x{n}x{k}':>18}  {total_us:8.1f}  {2 * m * n * k / total_us / 1e6:6.0f}  {names}")


if __name__ == "__main__":
    main()
