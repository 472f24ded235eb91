"""Where the host time of a recorded linear's backward goes (sixty-ninth session: on an H200 host, forward +
backward of a bf16 64x1024 -> 1024 linear with bias cost 248-361 us through cutorch_gemm against 156-260 for
F.linear, most of the gap in the backward; on this repository's CPU machine the same gap is ~16 us).

    python benchmarks/experiments/backward_host.py

Least host us per call (calls queued behind a GPU sleep) of:
  - the backward's pieces one by one, ours against torch's: dX = dY @ W (64 x 1024 x 1024), dW = dY^T @ X
    (1024 x 1024, K = 64: the product _grad_b computes for W.t()'s gradient), the bias sum;
  - forward + backward through three autograd.Functions that differ only in what they call: torch ops in a
    Python Function (the cost of a Python backward node alone), our ops in the same Function, and cg.linear;
  - F.linear for reference;
and explain() for the backward's two products (which kernels, how many launches).
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.getcwd())
import cutorch_gemm as cg  # noqa: E402
from benchmarks.experiments.list_overhead import host_min_us  # noqa: E402

dt = torch.bfloat16
M, K, N = 64, 1024, 1024
x = torch.randn(M, K, device="cuda", dtype=dt, requires_grad=True)
w = torch.randn(N, K, device="cuda", dtype=dt, requires_grad=True)
b = torch.randn(N, device="cuda", dtype=dt, requires_grad=True)
dy = torch.randn(M, N, device="cuda", dtype=dt)
xd, wd = x.detach(), w.detach()


def hmin(fn):
    return host_min_us(fn, reps=8, calls=30)


class _PyLinear(torch.autograd.Function):
    """F.linear's math in a Python Function: `mm` picks torch's or our products."""

    @staticmethod
    def forward(ctx, x_, w_, b_, mm):
        ctx.save_for_backward(x_, w_)
        ctx.mm = mm
        return torch.addmm(b_, x_, w_.t()) if mm is torch.mm else cg.gemm(x_, w_.t(), bias=b_)

    @staticmethod
    def backward(ctx, g):
        x_, w_ = ctx.saved_tensors
        return ctx.mm(g, w_), ctx.mm(g.t(), x_), g.sum(0), None


def fwd_bwd(fn):
    def run():
        fn().backward(dy)
    return run


pieces = {
    "dX = dY @ W": (lambda: cg.mm(dy, wd), lambda: torch.mm(dy, wd)),
    "dW = dY^T @ X": (lambda: cg.mm(dy.t(), xd), lambda: torch.mm(dy.t(), xd)),
    "bias sum": (lambda: dy.sum(0), lambda: dy.sum(0)),
}
print(f"{'piece':28s} {'ours us':>9s} {'torch us':>9s}")
for name, (ours, ref) in pieces.items():
    print(f"{name:28s} {hmin(ours):9.1f} {hmin(ref):9.1f}", flush=True)

steps = {
    "F.linear": fwd_bwd(lambda: F.linear(x, w, b)),
    "Python Function, torch ops": fwd_bwd(lambda: _PyLinear.apply(x, w, b, torch.mm)),
    "Python Function, our ops": fwd_bwd(lambda: _PyLinear.apply(x, w, b, cg.mm)),
    "cg.linear": fwd_bwd(lambda: cg.linear(x, w, b)),
}
print(f"\n{'forward + backward':28s} {'host us':>9s}")
for name, fn in steps.items():
    print(f"{name:28s} {hmin(fn):9.1f}", flush=True)

print()
print(cg.explain("mm", dy, wd))
print(cg.explain("mm", dy.t(), xd))
