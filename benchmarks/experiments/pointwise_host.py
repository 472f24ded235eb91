"""Host time of swiglu, moe_combine, scaled_mm and grouped_gemm's autograd paths (seventy-third session: C++
Autograd and vmap kernels in place of Python autograd.Functions), on tiny tensors where the host is all of a call.

    python benchmarks/experiments/pointwise_host.py          # DEVICE=cuda for a GPU's host

Best of 7 runs of 300 calls each, microseconds per call: forward + backward, torch.func.grad, torch.func.jvp and
torch.vmap over 8 entries. Run it against two builds (each its own checkout with its built _C on PYTHONPATH) to
compare them.
"""
import os
import sys
import time

import torch

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402

DEVICE = os.environ.get("DEVICE", "cpu")


def best_us(fn, runs=7, calls=300):
    fn()
    best = float("inf")
    for _ in range(runs):
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        if DEVICE == "cuda":
            torch.cuda.synchronize()
        best = min(best, (time.perf_counter() - t0) / calls * 1e6)
    return best


def main():
    dev = DEVICE
    z = torch.randn(8, 32, device=dev, requires_grad=True)
    y = torch.randn(16, 8, device=dev, requires_grad=True)
    inv = torch.randperm(16, device=dev)
    w = torch.rand(8, 2, device=dev, requires_grad=True)
    f8 = torch.randn(16, 32, device=dev).to(torch.float8_e4m3fn)
    sa = torch.ones(16, 1, device=dev, requires_grad=True)
    one = torch.ones((), device=dev)
    zs, ys = torch.randn(8, 8, 32, device=dev), torch.randn(8, 16, 8, device=dev)
    sas = torch.rand(8, 16, 1, device=dev)
    cases = {
        "swiglu fwd+bwd": lambda: cg.swiglu(z).sum().backward(),
        "swiglu grad": lambda: torch.func.grad(lambda t: cg.swiglu(t).sum())(z.detach()),
        "swiglu jvp": lambda: torch.func.jvp(cg.swiglu, (z.detach(),), (z.detach(),)),
        "swiglu vmap 8": lambda: torch.vmap(cg.swiglu)(zs),
        "moe_combine fwd+bwd": lambda: cg.moe_combine(y, inv, w, 2).sum().backward(),
        "moe_combine grad": lambda: torch.func.grad(lambda t: cg.moe_combine(t, inv, w.detach(), 2).sum())(y.detach()),
        "moe_combine vmap 8": lambda: torch.vmap(lambda t: cg.moe_combine(t, inv, w.detach(), 2))(ys),
        "scaled_mm fwd+bwd (scale)": lambda: cg.scaled_mm(f8, f8.t(), sa, one, out_dtype=torch.float32).sum().backward(),
        "scaled_mm grad (scale)": lambda: torch.func.grad(
            lambda s: cg.scaled_mm(f8, f8.t(), s, one, out_dtype=torch.float32).sum())(sa.detach()),
        "scaled_mm vmap 8 (scales)": lambda: torch.vmap(
            lambda s: cg.scaled_mm(f8, f8.t(), s, one, out_dtype=torch.float32))(sas),
    }
    ga = [torch.randn(4, 8, device=dev, requires_grad=True) for _ in range(8)]
    gb = [torch.randn(8, 6, device=dev, requires_grad=True) for _ in range(8)]
    gas = [torch.randn(8, 4, 8, device=dev) for _ in range(2)]
    cases.update({
        "grouped_gemm 8 fwd+bwd": lambda: sum(o.sum() for o in cg.grouped_gemm(ga, gb)).backward(),
        "grouped_gemm 8 grad": lambda: torch.func.grad(
            lambda x: sum(o.sum() for o in cg.grouped_gemm([x] * 8, [t.detach() for t in gb])))(ga[0].detach()),
        "grouped_gemm 2 vmap 8": lambda: torch.vmap(lambda x, y: tuple(cg.grouped_gemm([x, y], gb[:2])))(*gas),
    })
    for name, fn in cases.items():
        print(f"{name:28s} {best_us(fn):8.1f} us", flush=True)


if __name__ == "__main__":
    main()
