"""Drop-in entry points: `matmul` with torch.matmul's semantics and `linear` with F.linear's
(plus an optional fused activation). What our ops cover runs on them; everything else falls
back to PyTorch, so neither ever fails where PyTorch works. `route_matmul` / `route_linear` say
which path a call takes (used by `explain_dropin` and by `enable()`).
"""
from __future__ import annotations

from typing import Optional

import torch
import torch.nn.functional as F

from . import ops

_OUR_DTYPES = (torch.float16, torch.bfloat16, torch.float32, torch.float64)

# CPU tensors go to PyTorch (our CPU ops are references). The CPU test suite sets this to True
# to run the routing and reshaping logic through the reference ops.
ROUTE_CPU = False
_ACT_FN = {
    None: lambda x: x,
    "none": lambda x: x,
    "relu": F.relu,
    "gelu": F.gelu,
    "gelu_tanh": lambda x: F.gelu(x, approximate="tanh"),
    "silu": F.silu,
}


def _tracing_tensor(t: torch.Tensor) -> bool:
    """A FakeTensor or FunctionalTensor: the stand-ins torch.export and AOTAutograd trace a model
    with, not a user's subclass (torch.export saw every layer fall back to aten.linear)."""
    from torch._subclasses.fake_tensor import FakeTensor
    from torch._subclasses.functional_tensor import FunctionalTensor
    return isinstance(t, (FakeTensor, FunctionalTensor))


_PLAIN = (torch.Tensor, torch.nn.Parameter)


def _why_not(*tensors: torch.Tensor) -> Optional[str]:
    """None when our ops take these operands, else the reason for the fallback."""
    t0 = tensors[0]
    # The common case in few attribute reads (every call of a drop-in layer pays for this check:
    # ~3 us of host time on the CPU for the general loop below, ~0.5 us here).
    if type(t0) in _PLAIN and t0.dtype in _OUR_DTYPES and (t0.is_cuda or (ROUTE_CPU and t0.is_cpu)):
        dtype, device = t0.dtype, t0.device
        for t in tensors:
            if (type(t) not in _PLAIN or t.dtype != dtype or t.device != device or t.layout != torch.strided
                    or t.is_nested):
                break
        else:
            return None
    for t in tensors:
        if not isinstance(t, torch.Tensor) or (type(t) is not torch.Tensor and not isinstance(t, torch.nn.Parameter)
                                               and not _tracing_tensor(t)):
            return "tensor subclass"
        not_dense = ops.not_dense(t)
        if not_dense is not None:
            return f"{not_dense} (the ops take dense tensors)"
        if t.dtype not in _OUR_DTYPES:
            return f"dtype {t.dtype}"
        if t.dtype != t0.dtype:
            return "mixed dtypes (PyTorch's promotion rules apply)"
        if t.device != t0.device:
            return "operands on different devices"
        if t.device.type != "cuda" and not (ROUTE_CPU and t.device.type == "cpu"):
            return f"{t.device.type} tensors (our CPU ops are references, PyTorch's are faster)"
    return None


def route_matmul(a: torch.Tensor, b: torch.Tensor) -> str:
    """'mm', 'bmm' or 'torch: <reason>' for cutorch_gemm.matmul(a, b)."""
    why = _why_not(a, b)
    if why is not None:
        return f"torch: {why}"
    if a.dim() == 0 or b.dim() == 0:
        return "torch: 0-d operand"
    if a.dim() == 1 and b.dim() == 1:
        return "torch: dot product"
    if b.dim() <= 2:
        return "mm"
    return "bmm"


def matmul(a: torch.Tensor, b: torch.Tensor) -> torch.Tensor:
    """torch.matmul with the same semantics (1-D operands, batch broadcasting, every dtype).

    Float CUDA operands of one dtype run on `mm` (a batch folded into rows when b is 2-D) or
    `bmm` (broadcast batches, expanded views: stride-0 batches are not copied when they
    collapse); everything else is torch.matmul.
    """
    route = route_matmul(a, b)
    if route.startswith("torch"):
        return torch.matmul(a, b)
    if ops.direct((a, b)):
        # plain tensors, nothing watching: the steps below in one C++ call (csrc/torch/fast_calls.cpp)
        return ops._C.fast_matmul(a, b)
    a2 = a.unsqueeze(0) if a.dim() == 1 else a
    b2 = b.unsqueeze(-1) if b.dim() == 1 else b
    if route == "mm":
        # (..., M, K) @ (K, N): fold the batch into rows (a view when a's rows are uniform).
        lead = a2.shape[:-1]
        rows = 1
        for d in lead:
            rows *= d
        out = ops.mm(a2.reshape(rows, a2.shape[-1]), b2).reshape(*lead, b2.shape[-1])
    else:
        batch = torch.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
        nb = 1
        for d in batch:
            nb *= d
        a3 = a2.expand(*batch, *a2.shape[-2:]).reshape(nb, *a2.shape[-2:])
        b3 = b2.expand(*batch, *b2.shape[-2:]).reshape(nb, *b2.shape[-2:])
        out = ops.bmm(a3, b3).reshape(*batch, a2.shape[-2], b2.shape[-1])
    if a.dim() == 1:
        out = out.squeeze(-2)
    if b.dim() == 1:
        out = out.squeeze(-1)
    return out


def route_linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None) -> str:
    """'gemm' or 'torch: <reason>' for cutorch_gemm.linear."""
    tensors = (x, weight) if bias is None else (x, weight, bias)
    why = _why_not(*tensors)
    if why is not None:
        return f"torch: {why}"
    if x.dim() == 0 or weight.dim() != 2:
        return "torch: shapes outside (..., K) x (N, K)"
    if bias is not None and (bias.dim() != 1 or bias.shape[0] != weight.shape[0]):
        # (F.linear broadcasts a bias of shape (1,) or (); gemm takes (N,))
        return f"torch: bias of shape {tuple(bias.shape)}, not (N={weight.shape[0]},)"
    return "gemm"


def linear(x: torch.Tensor, weight: torch.Tensor, bias: Optional[torch.Tensor] = None,
           activation: Optional[str] = None) -> torch.Tensor:
    """F.linear(x, weight, bias) followed by `activation` (none | relu | gelu | gelu_tanh | silu),
    fused into one GEMM epilogue when our ops take the operands and autograd does not record the
    call (training applies PyTorch's activation to the GEMM output, which saves what its backward
    needs).

    Args:
        x: (..., K). weight: (N, K), the nn.Linear layout (read through a transposed view).
        bias: optional (N,).
    Returns:
        (..., N).
    """
    if activation not in _ACT_FN:
        raise ValueError(f"linear: unknown activation {activation!r}; expected one of none, relu, "
                         "gelu, gelu_tanh, silu")
    if route_linear(x, weight, bias).startswith("torch"):
        return _ACT_FN[activation](F.linear(x, weight, bias))
    if ops.direct((x, weight, bias)):
        # plain tensors, nothing watching: the steps below in one C++ call (csrc/torch/fast_calls.cpp)
        return ops._C.fast_linear(x, weight, bias, "none" if activation is None else activation)
    rows = 1
    for d in x.shape[:-1]:
        rows *= d
    x2 = x.reshape(rows, x.shape[-1]) if x.dim() != 2 else x
    # NOTE: when autograd records this call, the activation runs as PyTorch's own op on the
    # GEMM output: its backward then reads the saved pre-activation, where the fused op's
    # backward must recompute it with a second GEMM (measured on an H200: a GELU MLP
    # forward+backward at 0.53x stock fused, 0.88x unfused). Inference keeps the fused epilogue.
    # (torch.jit.trace: always fused, so the traced graph does not depend on the grad mode, which its
    # check run changes; the fused op's backward is correct, one GEMM dearer)
    recorded = (torch.is_grad_enabled() and any(t is not None and t.requires_grad for t in (x, weight, bias))
                and not torch.jit.is_tracing())
    fused = activation if activation not in (None, "none") and not recorded else "none"
    if bias is None and fused == "none":  # (`mm`: the same kernels as gemm's, fewer arguments to pass in)
        out = ops.mm(x2, weight.t())
    else:
        out = ops.gemm(x2, weight.t(), bias=bias, activation=fused)
    if fused == "none" and activation not in (None, "none"):
        out = _ACT_FN[activation](out)
    return out.reshape(*x.shape[:-1], weight.shape[0]) if x.dim() != 2 else out
