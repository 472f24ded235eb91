"""The dense ops' autograd pieces in Python (`_autograd.py` registers them): scaled_mm's autograd.Function,
and the vmap rules of mm, bmm and gemm, whose gradients and tangents are C++ (their Autograd kernels,
csrc/torch/autograd_kernels.cpp)."""
from __future__ import annotations

import torch

from . import ops as _w
from ._autograd_util import _add, _batched, _below, _tangent_out, _vmap_loop

_ops = torch.ops.gemm


# ---- vmap rules of mm, bmm, gemm (torch.library.register_vmap: the ops' FuncTorchBatched kernels) -----------
# Each takes the op's arguments as its Python kernel gets them (tensors positional, in_dims one per positional
# argument; gemm's bias and c may be absent from the tail) and returns (output, its batch dimension).

def mm_vmap(info, in_dims, a, b, out_dtype=None):
    # A batch of products is one bmm (an unbatched operand broadcast with a zero batch stride).
    if a.dtype == torch.int8:
        return _vmap_loop(info, in_dims, lambda x, y: _w.mm(x, y, out_dtype=out_dtype), (a, b))
    n = info.batch_size
    return _w.bmm(_batched(a, in_dims[0], n), _batched(b, in_dims[1], n), out_dtype=out_dtype), 0


def bmm_vmap(info, in_dims, a, b, out_dtype=None):
    # The vmapped batch and bmm's own batch flattened into one.
    n = info.batch_size
    a_b, b_b = _batched(a, in_dims[0], n), _batched(b, in_dims[1], n)
    g = a_b.shape[1]
    out = _w.bmm(a_b.reshape(n * g, *a_b.shape[2:]), b_b.reshape(n * g, *b_b.shape[2:]), out_dtype=out_dtype)
    return out.reshape(n, g, *out.shape[1:]), 0


def gemm_vmap(info, in_dims, a, b, bias=None, c=None, alpha=1.0, beta=0.0, activation="none", out_dtype=None):
    kw = dict(alpha=alpha, beta=beta, activation=activation, out_dtype=out_dtype)
    dims = tuple(in_dims) + (None,) * (4 - len(in_dims))
    if dims[1] is not None or dims[2] is not None:  # a batch of weights or biases: one gemm each
        return _vmap_loop(info, dims, lambda a_, b_, bias_, c_: _w.gemm(a_, b_, bias=bias_, c=c_, **kw),
                          (a, b, bias, c))
    # One weight: the batch folds into M (a, and c where given, as (batch * M) rows).
    n = info.batch_size
    a_b = _batched(a, dims[0], n)
    m, k = a_b.shape[1], a_b.shape[2]
    c2 = None if c is None else _batched(c, dims[3], n).reshape(n * m, b.shape[1])
    out = _w.gemm(a_b.reshape(n * m, k), b, bias=bias, c=c2, **kw)
    return out.reshape(n, m, b.shape[1]), 0


# ---- scaled_mm ------------------------------------------------------------------------------
# D = sa * sb * (a @ b) + bias. Gradients flow to bias and to the scales; the 8-bit operands get
# none (like torch._scaled_mm, which has no backward at all): fp8 training recipes quantize the
# upstream gradient themselves and call scaled_mm on it.

_NO_FP8_GRAD = ("gemm.scaled_mm: no gradient for the 8-bit operands a and b (quantize the upstream gradient and "
                "call scaled_mm on it); gradients flow to scale_a, scale_b and bias only")


class _ScaledMm(torch.autograd.Function):
    @staticmethod
    def vmap(info, in_dims, a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum):
        return _vmap_loop(info, in_dims, lambda a_, b_, sa, sb, bias_, *_: _w.scaled_mm(
            a_, b_, sa, sb, bias=bias_, out_dtype=out_dtype, use_fast_accum=use_fast_accum),
            (a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum))

    @staticmethod
    def forward(a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum):
        with _below():
            return _ops.scaled_mm.default(a, b, scale_a, scale_b, bias, out_dtype=out_dtype,
                                          use_fast_accum=use_fast_accum)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.set_materialize_grads(False)  # absent tangents stay None: no GEMMs on zeros
        a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum = inputs
        ctx.save_for_backward(a, b, scale_a, scale_b, bias)
        ctx.save_for_forward(a, b, scale_a, scale_b, bias)
        ctx.fast = bool(use_fast_accum)
        ctx.out_meta = (output.shape, output.dtype)

    @staticmethod
    def _product(ctx, a, b, scale_a, scale_b):
        """scale_a * scale_b * (a @ b) in fp32 (a scale of None: one)."""
        one = torch.ones((), device=a.device, dtype=torch.float32)
        return _w.scaled_mm(a, b, one if scale_a is None else scale_a, one if scale_b is None else scale_b,
                            out_dtype=torch.float32, use_fast_accum=ctx.fast)

    @staticmethod
    def backward(ctx, grad):
        if grad is None:  # (set_materialize_grads(False): no gradient reached the output)
            return (None,) * 7
        a, b, scale_a, scale_b, bias = ctx.saved_tensors
        need = ctx.needs_input_grad
        if need[0] or need[1]:
            raise RuntimeError(_NO_FP8_GRAD)
        g = grad.to(torch.float32)

        def scale_grad(scale, product, dim):
            # d/d scale of sum(g * scale * product): per row / column, or over everything.
            if scale.numel() == 1:
                return (g * product).sum().reshape(scale.shape)
            return (g * product).sum(dim, keepdim=True)

        g_sa = g_sb = g_bias = None
        if need[2]:
            g_sa = scale_grad(scale_a, _ScaledMm._product(ctx, a, b, None, scale_b.detach()), 1)
        if need[3]:
            g_sb = scale_grad(scale_b, _ScaledMm._product(ctx, a, b, scale_a.detach(), None), 0)
        if bias is not None and need[4]:
            g_bias = g.sum(0).to(bias.dtype)
        return None, None, g_sa, g_sb, g_bias, None, None

    @staticmethod
    def jvp(ctx, ta, tb, t_sa, t_sb, t_bias, *_):
        a, b, scale_a, scale_b, bias = ctx.saved_tensors
        if ta is not None or tb is not None:
            raise RuntimeError(_NO_FP8_GRAD)
        t = None
        if t_sa is not None:
            t = _ScaledMm._product(ctx, a, b, t_sa, scale_b)
        if t_sb is not None:
            t = _add(t, _ScaledMm._product(ctx, a, b, scale_a, t_sb))
        if t_bias is not None:
            t = _add(t, t_bias.to(torch.float32))
        return _tangent_out(t, *ctx.out_meta, scale_a)


def _pack_scaled_mm(a, b, scale_a, scale_b, bias=None, *, out_dtype=torch.bfloat16, use_fast_accum=False):
    return a, b, scale_a, scale_b, bias, out_dtype, use_fast_accum
