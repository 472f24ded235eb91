"""Autograd for every op (torch.library.register_autograd). Backward is built from the same
ops: dA = dZ @ B^T and dB = A^T @ dZ are `mm` / `gemm` on transposed views (no copies); the
grouped weight gradient is the 2D x 2D form of `grouped_mm`. With an activation, the
pre-activation Z is recomputed by the same op in fp32 (one extra GEMM instead of saving Z).
"""
from __future__ import annotations

import math

import torch

from .ops import _no_graph

_ops = torch.ops.gemm


def act_grad(z: torch.Tensor, act: str) -> torch.Tensor:
    """d act(z) / dz, evaluated in z's dtype."""
    if act == "relu":
        return (z > 0).to(z.dtype)
    if act == "gelu":
        cdf = 0.5 * (1.0 + torch.erf(z * (1.0 / math.sqrt(2.0))))
        pdf = torch.exp(-0.5 * z * z) * (1.0 / math.sqrt(2.0 * math.pi))
        return cdf + z * pdf
    if act == "gelu_tanh":
        k = math.sqrt(2.0 / math.pi)
        t = torch.tanh(k * (z + 0.044715 * z * z * z))
        return 0.5 * (1.0 + t) + 0.5 * z * (1.0 - t * t) * k * (1.0 + 3.0 * 0.044715 * z * z)
    if act == "silu":
        s = torch.sigmoid(z)
        return s * (1.0 + z * (1.0 - s))
    raise ValueError(f"unknown activation '{act}'")


def _acc(dtype: torch.dtype) -> torch.dtype:
    return torch.float64 if dtype == torch.float64 else torch.float32


def _acc_out(dtype: torch.dtype):
    """out_dtype that makes an op return the accumulator dtype for inputs of `dtype`."""
    return None if dtype in (torch.float32, torch.float64) else torch.float32


def _pre_activation_grad(grad: torch.Tensor, act: str, dtype: torch.dtype, recompute) -> torch.Tensor:
    """dL/dZ for D = act(Z): grad in the accumulator dtype times act'(Z), with Z recomputed by
    `recompute(out_dtype)` (the same op without its activation). Without an activation, grad
    itself: a round trip through fp32 cost ~0.5 ms per 8192x14336 bf16 gradient (H100), with
    nothing to gain (the GEMMs read the 16-bit gradient either way; bias sums accumulate in fp32)."""
    if act == "none":
        return grad
    dz = grad.to(_acc(dtype))
    return dz * act_grad(recompute(_acc_out(dtype)), act)


def _grad_b(a: torch.Tensor, g: torch.Tensor, b: torch.Tensor, mm) -> torch.Tensor:
    """dB = A^T @ G, in b's layout when b is a transposed view of a row-major matrix (nn.Linear's
    W.t()): computed as (G^T @ A)^T, so W's gradient arrives contiguous instead of being copied
    into the parameter's layout by autograd (a 117 MB copy per 14336x4096 bf16 weight)."""
    if b.dim() == 2 and b.stride(0) == 1 and b.stride(1) != 1:
        return mm(g.t(), a).t()
    return mm(a.t(), g)


# ---- mm -------------------------------------------------------------------------------------

def _mm_setup(ctx, inputs, keyword_only_inputs, output):
    ctx.save_for_backward(*inputs)


def _mm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    g = grad.to(a.dtype)
    ga = _ops.mm(g, b.t()) if ctx.needs_input_grad[0] else None
    gb = _grad_b(a, g, b, _ops.mm) if ctx.needs_input_grad[1] else None
    return ga, gb


# ---- gemm -----------------------------------------------------------------------------------

def _gemm_setup(ctx, inputs, keyword_only_inputs, output):
    a, b, bias, c = inputs
    ctx.save_for_backward(a, b, bias, c)
    ctx.kw = dict(keyword_only_inputs)


def _gemm_backward(ctx, grad):
    a, b, bias, c = ctx.saved_tensors
    kw = ctx.kw
    act, alpha, beta = kw["activation"], kw["alpha"], kw["beta"]
    dz = _pre_activation_grad(grad, act, a.dtype,
                              lambda od: _ops.gemm(a, b, bias, c, alpha=alpha, beta=beta, out_dtype=od))
    g = dz.to(a.dtype)
    need = ctx.needs_input_grad
    ga = _ops.gemm(g, b.t(), alpha=alpha) if need[0] else None
    gb = _grad_b(a, g, b, lambda x, y: _ops.gemm(x, y, alpha=alpha)) if need[1] else None
    gbias = dz.sum(0, dtype=_acc(a.dtype)).to(bias.dtype) if bias is not None and need[2] else None
    gc = None
    if c is not None and need[3]:
        gc = (dz * beta).to(c.dtype) if beta != 0.0 else torch.zeros_like(c)
    return ga, gb, gbias, gc


# ---- bmm ------------------------------------------------------------------------------------

def _bmm_backward(ctx, grad):
    a, b = ctx.saved_tensors
    g = grad.to(a.dtype)
    ga = _ops.bmm(g, b.transpose(1, 2)) if ctx.needs_input_grad[0] else None
    gb = _ops.bmm(a.transpose(1, 2), g) if ctx.needs_input_grad[1] else None
    return ga, gb


# ---- grouped_mm -----------------------------------------------------------------------------

def _group_ids(offs: torch.Tensor, extent: int) -> torch.Tensor:
    """Group of each row (column) along the grouped extent; len(offs) past the last group.
    Computed on the device from offs (no host synchronisation)."""
    idx = torch.arange(extent, device=offs.device, dtype=offs.dtype)
    return torch.searchsorted(offs, idx, right=True)


def _grouped_setup(ctx, inputs, keyword_only_inputs, output):
    a, b, offs, bias = inputs
    ctx.save_for_backward(a, b, offs, bias)
    ctx.kw = dict(keyword_only_inputs)


def _swiglu_grad(grad: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """dL/dz for D = silu(gate) * up, z = [gate | up] (recomputed, accumulator dtype)."""
    gate, up = z.chunk(2, dim=-1)
    s = torch.sigmoid(gate)
    g = grad.to(z.dtype)
    return torch.cat([g * up * (s * (1.0 + gate * (1.0 - s))), g * gate * s], dim=-1)


def _grouped_backward(ctx, grad):
    a, b, offs, bias = ctx.saved_tensors
    act = ctx.kw["activation"]
    if act == "swiglu":  # z = a @ b + bias recomputed in the accumulator dtype, full width
        dz = _swiglu_grad(grad, _ops.grouped_mm(a, b, offs, bias, out_dtype=_acc_out(a.dtype)))
    else:
        dz = _pre_activation_grad(grad, act, a.dtype, lambda od: _ops.grouped_mm(a, b, offs, bias, out_dtype=od))
    g = dz.to(a.dtype)
    need = ctx.needs_input_grad
    # The backward forms (see ops.grouped_mm): 2Dx3D <-> 2Dx2D (dW) and 3Dx2D <-> 2Dx2D.
    ga = _ops.grouped_mm(g, b.transpose(-2, -1), offs) if need[0] else None
    gb = _ops.grouped_mm(a.transpose(-2, -1), g, offs) if need[1] else None
    gbias = None
    if bias is not None and need[3]:
        dz = dz.to(_acc(a.dtype))  # bias sums accumulate in fp32
        if a.dim() == 2 and b.dim() == 3:  # per-group sums of rows; rows past offs[-1] excluded
            ids = _group_ids(offs, dz.shape[0])
            acc = dz.new_zeros((offs.shape[0] + 1, dz.shape[1])).index_add_(0, ids, dz)
            gbias = acc[:-1]
        elif a.dim() == 3 and b.dim() == 2:  # bias per output column, columns past offs[-1] zero
            ids = _group_ids(offs, dz.shape[1])
            gbias = dz.sum(0) * (ids < offs.shape[0]).to(dz.dtype)
        else:  # (G, M, N) outputs
            gbias = dz.sum(1)
        gbias = gbias.to(bias.dtype)
    return ga, gb, None, gbias


# ---- scaled_mm ------------------------------------------------------------------------------
# D = sa * sb * (a @ b) + bias. Gradients flow to bias and to the scales; the 8-bit operands get
# none (like torch._scaled_mm, which has no backward at all): fp8 training recipes quantize the
# upstream gradient themselves and call scaled_mm on it.

def _scaled_setup(ctx, inputs, keyword_only_inputs, output):
    ctx.save_for_backward(*inputs)
    ctx.fast = bool(keyword_only_inputs.get("use_fast_accum", False))


def _scaled_backward(ctx, grad):
    a, b, scale_a, scale_b, bias = ctx.saved_tensors
    need = ctx.needs_input_grad
    if need[0] or need[1]:
        raise RuntimeError("gemm.scaled_mm: no gradient for the 8-bit operands a and b (quantize the upstream "
                           "gradient and call scaled_mm on it); gradients flow to scale_a, scale_b and bias only")
    g = grad.to(torch.float32)
    one = torch.ones((), device=g.device, dtype=torch.float32)

    def scale_grad(scale, product, dim):
        # d/d scale of sum(g * scale * product): per row / column, or over everything.
        if scale.numel() == 1:
            return (g * product).sum().reshape(scale.shape)
        return (g * product).sum(dim, keepdim=True)

    g_sa = g_sb = g_bias = None
    if need[2]:
        g_sa = scale_grad(scale_a, _ops.scaled_mm(a, b, one, scale_b.detach(), out_dtype=torch.float32,
                                                  use_fast_accum=ctx.fast), 1)
    if need[3]:
        g_sb = scale_grad(scale_b, _ops.scaled_mm(a, b, scale_a.detach(), one, out_dtype=torch.float32,
                                                  use_fast_accum=ctx.fast), 0)
    if bias is not None and need[4]:
        g_bias = g.sum(0).to(bias.dtype)
    return None, None, g_sa, g_sb, g_bias


# ---- grouped_gemm ---------------------------------------------------------------------------
# NOTE: not register_autograd: for ops with Tensor[] arguments it returns one gradient too many
# to its list wrapper in torch 2.11 ("Expected the return from backward to be of the same
# structure as the inputs"). This is the same mechanism by hand: an autograd.Function over the
# flattened lists, registered as the op's Autograd kernel, calling the op below autograd.

class _GroupedGemmFunction(torch.autograd.Function):
    @staticmethod
    def forward(ctx, n, has_bias, activation, out_dtype, *tensors):
        a, b = list(tensors[:n]), list(tensors[n:2 * n])
        bias = list(tensors[2 * n:3 * n]) if has_bias else None
        with torch._C._AutoDispatchBelowAutograd():
            outs = _ops.grouped_gemm(a, b, bias, activation=activation, out_dtype=out_dtype)
        ctx.save_for_backward(*tensors)
        ctx.n, ctx.has_bias, ctx.activation = n, has_bias, activation
        return tuple(outs)

    @staticmethod
    def backward(ctx, *grads):
        n, act = ctx.n, ctx.activation
        tensors = ctx.saved_tensors
        a, b = list(tensors[:n]), list(tensors[n:2 * n])
        bias = list(tensors[2 * n:3 * n]) if ctx.has_bias else None
        dtype = a[0].dtype
        dz = list(grads)  # without an activation: the gradients as they come (_pre_activation_grad)
        if act != "none":
            z = _ops.grouped_gemm(a, b, bias, out_dtype=_acc_out(dtype))
            dz = [d.to(_acc(dtype)) * act_grad(zi, act) for d, zi in zip(dz, z)]
        g = [d.to(dtype) for d in dz]
        need = ctx.needs_input_grad[4:]
        ga = list(_ops.grouped_gemm(g, [bi.t() for bi in b])) if any(need[:n]) else [None] * n
        gb = list(_ops.grouped_gemm([ai.t() for ai in a], g)) if any(need[n:2 * n]) else [None] * n
        gbias = [d.sum(0, dtype=_acc(dtype)).to(bi.dtype) for d, bi in zip(dz, bias)] if bias is not None else []
        return (None, None, None, None, *ga, *gb, *gbias)


def _grouped_gemm_autograd(a, b, bias=None, *, activation="none", out_dtype=None):
    if len(a) == 0 or len(a) != len(b) or (bias is not None and len(bias) != len(a)):
        with torch._C._AutoDispatchBelowAutograd():  # nothing to differentiate, or the op raises
            return _ops.grouped_gemm(a, b, bias, activation=activation, out_dtype=out_dtype)
    tensors = [*a, *b, *(bias if bias is not None else [])]
    # Nothing to record (inference, or no input requires grad; the wrappers' rule): the op below
    # autograd directly. The Function's apply over 2-3 tensors per problem is host time on every
    # call (128 problems, H200 host: ~360 us of a ~1.2 ms call whose kernel takes ~0.3 ms).
    if _no_graph(*tensors):
        with torch._C._AutoDispatchBelowAutograd():
            return _ops.grouped_gemm(a, b, bias, activation=activation, out_dtype=out_dtype)
    return list(_GroupedGemmFunction.apply(len(a), bias is not None, activation, out_dtype, *tensors))


_lib = torch.library.Library("gemm", "IMPL")
_lib.impl("grouped_gemm", _grouped_gemm_autograd, "Autograd")


torch.library.register_autograd("gemm::mm", _mm_backward, setup_context=_mm_setup)
torch.library.register_autograd("gemm::gemm", _gemm_backward, setup_context=_gemm_setup)
torch.library.register_autograd("gemm::bmm", _bmm_backward, setup_context=_mm_setup)
torch.library.register_autograd("gemm::grouped_mm", _grouped_backward, setup_context=_grouped_setup)
torch.library.register_autograd("gemm::scaled_mm", _scaled_backward, setup_context=_scaled_setup)


# ---- swiglu ---------------------------------------------------------------------------------

def _swiglu_setup(ctx, inputs, output):
    ctx.save_for_backward(inputs[0])


def _swiglu_backward(ctx, grad):
    (gate_up,) = ctx.saved_tensors
    return _ops.swiglu_backward(grad.to(gate_up.dtype).contiguous(), gate_up)


torch.library.register_autograd("gemm::swiglu", _swiglu_backward, setup_context=_swiglu_setup)


# ---- moe_combine ----------------------------------------------------------------------------

def _moe_combine_setup(ctx, inputs, output):
    y, inv, weights, k = inputs
    ctx.k = k
    ctx.weights_dtype = None if weights is None else weights.dtype
    # y is needed only for the weights' gradient.
    ctx.save_for_backward(y if weights is not None else None, inv, weights)
    ctx.y_meta = (y.shape, y.dtype)


def _moe_combine_backward(ctx, grad):
    y, inv, weights = ctx.saved_tensors
    shape, dtype = ctx.y_meta
    if y is None:  # no weights: y's values do not enter the backward (a stride-0 stand-in)
        y = grad.new_zeros((), dtype=dtype).expand(shape)
    grad_y, grad_w = _ops.moe_combine_backward(grad.to(dtype).contiguous(), y, inv, weights, ctx.k)
    need = ctx.needs_input_grad
    gw = grad_w.to(ctx.weights_dtype) if weights is not None and need[2] else None
    return (grad_y if need[0] else None), None, gw, None


torch.library.register_autograd("gemm::moe_combine", _moe_combine_backward, setup_context=_moe_combine_setup)

