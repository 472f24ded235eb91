"""autograd.Functions of the element-wise ops: swiglu, moe_combine (`_autograd.py` registers them)."""
from __future__ import annotations

import torch

from . import ops as _w
from ._autograd_util import (_acc, _add, _below, _swiglu_grad, _swiglu_tangent, _tangent_out, _vmap_loop)

_ops = torch.ops.gemm


# ---- swiglu ---------------------------------------------------------------------------------

def _swiglu_backward_composite(grad: torch.Tensor, gate_up: torch.Tensor) -> torch.Tensor:
    """swiglu_backward from differentiable PyTorch ops (math in the accumulator dtype, rounded
    once): the backward when it is itself differentiated (double backward, hessian, torch.func)."""
    acc = _acc(gate_up.dtype)
    return _swiglu_grad(grad.to(acc), gate_up.to(acc)).to(gate_up.dtype)


class _Swiglu(torch.autograd.Function):
    @staticmethod
    def vmap(info, in_dims, gate_up):
        return _w.swiglu(gate_up.movedim(in_dims[0], 0)), 0  # (the op takes any leading dims)

    @staticmethod
    def forward(gate_up):
        with _below():
            return _ops.swiglu.default(gate_up)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.set_materialize_grads(False)  # absent tangents stay None: no GEMMs on zeros
        ctx.save_for_backward(inputs[0])
        ctx.save_for_forward(inputs[0])

    @staticmethod
    def backward(ctx, grad):
        if grad is None:  # (set_materialize_grads(False): no gradient reached the output)
            return None
        (gate_up,) = ctx.saved_tensors
        if torch.is_grad_enabled():  # create_graph: the gradient must be differentiable itself
            return _swiglu_backward_composite(grad, gate_up)
        return _ops.swiglu_backward(grad.to(gate_up.dtype).contiguous(), gate_up)

    @staticmethod
    def jvp(ctx, t):
        (gate_up,) = ctx.saved_tensors
        acc = _acc(gate_up.dtype)
        return _swiglu_tangent(t.to(acc), gate_up.to(acc)).to(gate_up.dtype)


def _pack_swiglu(gate_up):
    return (gate_up,)


# ---- moe_combine ----------------------------------------------------------------------------

def _moe_combine_backward_composite(grad, y, inv, weights, k):
    """moe_combine_backward from differentiable PyTorch ops (sums in the accumulator dtype):
    grad_y[inv[t*k+j]] = w[t, j] * grad[t], grad_w[t, j] = <grad[t], y[inv[t*k+j]]>; entries of
    inv outside [0, T*k) contribute nothing (as in the op)."""
    acc = _acc(y.dtype)
    rows = y.shape[0]
    valid = (inv >= 0) & (inv < rows)
    idx = torch.where(valid, inv, torch.zeros_like(inv)).long()
    g_slot = grad.to(acc).repeat_interleave(k, dim=0)  # (T*k, H): token t's gradient for each slot
    w = valid.to(acc) if weights is None else weights.to(torch.float32).to(acc).reshape(-1) * valid.to(acc)
    grad_y = torch.zeros(y.shape, dtype=acc, device=y.device).index_add(0, idx, g_slot * w[:, None])
    grad_w = None
    if weights is not None:
        grad_w = ((g_slot * y.to(acc).index_select(0, idx)).sum(-1) * valid.to(acc)).reshape(-1, k)
    return grad_y.to(y.dtype), grad_w


class _MoeCombine(torch.autograd.Function):
    @staticmethod
    def vmap(info, in_dims, y, inv, weights, k):
        return _vmap_loop(info, in_dims, lambda y_, inv_, w_, k_: _w.moe_combine(y_, inv_, w_, k_),
                          (y, inv, weights, k))

    @staticmethod
    def forward(y, inv, weights, k):
        with _below():
            return _ops.moe_combine.default(y, inv, weights, k)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.set_materialize_grads(False)  # absent tangents stay None: no GEMMs on zeros
        y, inv, weights, k = inputs
        ctx.k = k
        ctx.weights_dtype = None if weights is None else weights.dtype
        ctx.y_meta = (y.shape, y.dtype)
        # y is needed only for the weights' gradient (and for a differentiable backward).
        ctx.save_for_backward(y if weights is not None or torch.is_grad_enabled() else None, inv, weights)
        ctx.save_for_forward(y, inv, weights)
        ctx.out_meta = (output.shape, output.dtype)

    @staticmethod
    def backward(ctx, grad):
        if grad is None:  # (set_materialize_grads(False): no gradient reached the output)
            return (None,) * 4
        y, inv, weights = ctx.saved_tensors
        shape, dtype = ctx.y_meta
        need = ctx.needs_input_grad
        if torch.is_grad_enabled() and y is not None:  # create_graph: a differentiable backward
            grad_y, grad_w = _moe_combine_backward_composite(grad, y, inv, weights, ctx.k)
        else:
            if y is None:  # no weights: y's values do not enter the backward (a stride-0 stand-in)
                y = grad.new_zeros((), dtype=dtype).expand(shape)
            grad_y, grad_w = _ops.moe_combine_backward(grad.to(dtype).contiguous(), y, inv, weights, ctx.k)
        gw = grad_w.to(ctx.weights_dtype) if weights is not None and need[2] else None
        return (grad_y if need[0] else None), None, gw, None

    @staticmethod
    def jvp(ctx, ty, _inv, tw, _k):
        y, inv, weights = ctx.saved_tensors
        t = _add(_w.moe_combine(ty, inv, weights, ctx.k) if ty is not None else None,
                 _w.moe_combine(y, inv, tw, ctx.k) if tw is not None else None)
        return _tangent_out(t, *ctx.out_meta, y)


def _pack_moe_combine(y, inv, weights, k):
    return y, inv, weights, k
