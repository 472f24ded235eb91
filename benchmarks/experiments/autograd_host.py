"""Host time of the autograd paths (sixty-eighth session: the ops' own Autograd kernels and
autograd.Functions in place of torch.library.register_autograd), against PyTorch's.

    python benchmarks/experiments/autograd_host.py

Least host microseconds per call (list_overhead.host_min_us: calls queued behind a GPU sleep, so
the GPU never waits on the host) for a forward that records a graph, a forward + backward, and a
forward-mode jvp and torch.func.grad, on a small bf16 linear (64 x 1024 -> 1024: host-bound); then
the wall time per call of torch.vmap over 32 inputs against the same 32 rows as one call.
(Seventy-second session: the per-sample gradients, vmap of grad over 8 rows, added.)
"""
import os
import sys

import torch
import torch.nn.functional as F

sys.path.insert(0, os.getcwd())
if os.environ.get("CG_PKG_DIR"):  # an older copy of the Python package (same built _C) to compare with
    sys.path.insert(0, os.environ["CG_PKG_DIR"])
import cutorch_gemm as cg  # noqa: E402
from benchmarks.experiments.list_overhead import host_min_us, wall_us  # noqa: E402

dt = torch.bfloat16
x = torch.randn(64, 1024, device="cuda", dtype=dt, requires_grad=True)
w = torch.randn(1024, 1024, device="cuda", dtype=dt, requires_grad=True)
b = torch.randn(1024, device="cuda", dtype=dt, requires_grad=True)
dy = torch.randn(64, 1024, device="cuda", dtype=dt)
xd, wd, bd = x.detach(), w.detach(), b.detach()


def fwd_bwd(lin):
    def run():
        lin(x, w, b).backward(dy)
    return run


def no_grad(lin):
    def run():
        with torch.no_grad():
            return lin(x, w, b)
    return run


def per_sample_loss(lin):
    return lambda t: lin(t[None], wd, bd).float().square().sum()


cases = {
    "forward, no graph (no_grad)": (no_grad(cg.linear), no_grad(F.linear)),
    "forward, recording a graph": (lambda: cg.linear(x, w, b), lambda: F.linear(x, w, b)),
    "forward + backward": (fwd_bwd(cg.linear), fwd_bwd(F.linear)),
    "torch.func.jvp": (lambda: torch.func.jvp(lambda t: cg.linear(t, wd, bd), (xd,), (xd,)),
                       lambda: torch.func.jvp(lambda t: F.linear(t, wd, bd), (xd,), (xd,))),
    "torch.func.grad": (lambda: torch.func.grad(lambda t: cg.linear(t, wd, bd).float().sum())(xd),
                        lambda: torch.func.grad(lambda t: F.linear(t, wd, bd).float().sum())(xd)),
    # per-sample gradients of 8 rows (vmap of grad), and a square loss (a gradient that depends on the input)
    "vmap(grad), 8 rows": (lambda: torch.vmap(torch.func.grad(per_sample_loss(cg.linear)))(xd[:8]),
                           lambda: torch.vmap(torch.func.grad(per_sample_loss(F.linear)))(xd[:8])),
}
print(f"cutorch_gemm from {os.path.dirname(cg.__file__)}")
print(f"{'case':32s} {'ours us':>9s} {'torch us':>9s}")
for name, (ours, ref) in cases.items():
    print(f"{name:32s} {host_min_us(ours, reps=8, calls=30):9.1f} {host_min_us(ref, reps=8, calls=30):9.1f}")

xs = torch.randn(32, 1, 1024, device="cuda", dtype=dt)
vm = lambda: torch.vmap(lambda t: cg.linear(t, wd, bd))(xs)  # noqa: E731
one = lambda: cg.linear(xs.reshape(32, 1024), wd, bd)  # noqa: E731
torch.testing.assert_close(vm().reshape(32, 1024), one(), rtol=0, atol=0)
print(f"vmap over 32 rows: {wall_us(vm):.1f} us wall per call; the same rows in one call {wall_us(one):.1f} us")
