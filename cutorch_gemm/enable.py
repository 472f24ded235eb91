"""`cutorch_gemm.enable()`: route torch.matmul / @ / torch.mm / torch.bmm / torch.addmm /
F.linear to cutorch_gemm inside a `with` block (or a decorated function). Calls our ops do not
cover fall through to PyTorch unchanged; leaving the block (normally or by an exception)
restores PyTorch exactly as it was, and blocks nest.

Under torch.compile(fullgraph=True) (torch 2.14, tests/test_models.py): Dynamo traces the mode's
__torch_function__, so the routed calls become torch.ops.gemm.* nodes in the graph (with our
backward), in every order: a compiled function called inside `with enable():`, `with enable():`
inside the compiled function, and a compiled `@enable()` function. Dynamo guards on the active
torch-function modes: the same compiled function called outside and inside the block gets one
graph for each (stock / ours) and never runs the other's."""
from __future__ import annotations

import functools

import torch
import torch.nn.functional as F
from torch.overrides import TorchFunctionMode

from . import ops
from .dropin import _why_not, linear, matmul

_MATMULS = {torch.matmul, torch.Tensor.matmul, torch.Tensor.__matmul__}


def _addmm(inp, a, b, *, beta=1, alpha=1, out=None):
    if out is not None or a.dim() != 2 or b.dim() != 2 or _why_not(inp, a, b) is not None:
        return None
    m, n = a.shape[0], b.shape[1]
    if inp.dim() == 1 and inp.shape[0] == n and beta == 1:
        return ops.gemm(a, b, bias=inp, alpha=float(alpha))
    if inp.dim() > 2 or any(s not in (1, t) for s, t in zip(inp.shape[::-1], (n, m))):
        return None  # not broadcastable to (M, N): PyTorch raises its own error
    # A broadcast input ((N,) with beta != 1, (1, N), (M, 1), a scalar) is c as a stride-0 view: every kernel
    # reads c through its strides (tests/test_ops.py::test_gemm_broadcast_c), and autograd sums c's gradient
    # back over the broadcast dimensions through the expand.
    return ops.gemm(a, b, c=inp.expand(m, n), alpha=float(alpha), beta=float(beta))


class _Mode(TorchFunctionMode):
    def __torch_function__(self, func, types, args=(), kwargs=None):
        kwargs = kwargs or {}
        try:
            if func in _MATMULS and not kwargs and len(args) == 2:
                return matmul(*args)
            if func in (torch.mm, torch.Tensor.mm) and not kwargs and _why_not(*args) is None:
                return ops.mm(*args)
            if func in (torch.bmm, torch.Tensor.bmm) and not kwargs and _why_not(*args) is None:
                return ops.bmm(*args)
            if func is F.linear:
                return linear(*args, **kwargs)
            if func in (torch.addmm, torch.Tensor.addmm):
                out = _addmm(*args, **kwargs)
                if out is not None:
                    return out
        except (ValueError, TypeError):
            pass  # a case our checks refuse: PyTorch decides (and raises its own error if any)
        return func(*args, **kwargs)


class enable:
    """Context manager and decorator. Inside it, float CUDA matmuls run on cutorch_gemm."""

    def __enter__(self):
        self._mode = _Mode()
        self._mode.__enter__()
        return self

    def __exit__(self, *exc):
        self._mode.__exit__(*exc)
        return False

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with enable():
                return fn(*args, **kwargs)
        return wrapper
