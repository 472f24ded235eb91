"""Kernel time (torch.profiler, warm L2) of torch.mm and of our mm under env-forced variants, per shape.

    SHAPES=1024x1024x1024,512x1024x4096 VARS="torch;def;p64:CUTORCH_GEMM_SM90_CONFIG=pingpong64" \
        python benchmarks/experiments/kernel_time.py

bf16, nn.Linear operands (x row-major, W.t()). A variant is "torch", "def" (no variable set) or
name:VAR=value[+VAR=value...]. Each launch is timed 15 times inside one profiler range; a launch's time is the sum
over its kernels of each kernel's median (split-K's partial and reduction kernels count together). Unlike
dense_ab.py's do_bench times (L2 flushed, host included) these are device times with the operands in L2: they
separate a kernel's own pace from launch and DRAM effects, which is what the mainloop experiments of the
twenty-seventh session needed (benchmarks/RESULTS.md; sm90_time_split.patch adds the "loads only" / "math only"
variants).
"""
import os
import sys

import torch
from torch.profiler import ProfilerActivity, profile

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402


def kernel_us(fn, reps: int = 15) -> float:
    """Sum over the launch's kernels of each kernel's median device time (µs)."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        for _ in range(reps):
            fn()
        torch.cuda.synchronize()
    times = {}
    for e in prof.events():
        if e.device_type == torch.autograd.DeviceType.CUDA:
            times.setdefault(e.name, []).append(e.device_time)
    return sum(sorted(v)[len(v) // 2] for v in times.values())


def main():
    shapes = [tuple(map(int, s.split("x"))) for s in os.environ.get("SHAPES", "1024x1024x1024").split(",")]
    variants = os.environ.get("VARS", "torch;def").split(";")
    names = [v.split(":")[0] for v in variants]
    print("shape".ljust(16) + "".join(f"{n:>12s}" for n in names) + "   (µs)")
    for m, n, k in shapes:
        x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
        row = []
        for v in variants:
            name, _, spec = v.partition(":")
            env = dict(part.split("=", 1) for part in spec.split("+") if "=" in part)
            old = {key: os.environ.get(key) for key in env}
            os.environ.update(env)
            try:
                fn = (lambda: torch.mm(x, w.t())) if name == "torch" else (lambda: cg.mm(x, w.t()))
                row.append(kernel_us(fn))
            finally:
                for key, val in old.items():
                    if val is None:
                        os.environ.pop(key, None)
                    else:
                        os.environ[key] = val
        print(f"{m}x{n}x{k}".ljust(16) + "".join(f"{t:12.2f}" for t in row), flush=True)


if __name__ == "__main__":
    main()
