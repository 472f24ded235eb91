"""scaled_mm's autograd.Function (`_autograd.py` registers it). (mm, bmm and gemm: C++ Autograd and vmap
kernels, csrc/torch/autograd_kernels.cpp and vmap_kernels.cpp.)"""
from __future__ import annotations

import torch

from . import ops as _w
from ._autograd_util import _add, _below, _tangent_out, _vmap_loop

_ops = torch.ops.gemm


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
