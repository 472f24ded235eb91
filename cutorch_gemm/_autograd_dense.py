"""autograd.Functions of the dense ops: mm, gemm, bmm, scaled_mm (`_autograd.py` registers them).

NOTE: the wrappers' common recorded calls (mm, bmm, gemm without an activation, on plain tensors) use
C++ Functions with the same backward formulas (csrc/torch/fast_calls.cpp): a change to the mm / bmm /
gemm backward here belongs there too (tests/test_autograd_paths.py compares the two)."""
from __future__ import annotations

import torch

from . import ops as _w
from ._autograd_util import (_acc, _acc_out, _add, _batched, _below, _grad_b, _pre_activation_grad, _sum_rows, _tangent_out,
                             _vmap_loop, act_grad)

_ops = torch.ops.gemm


# ---- mm -------------------------------------------------------------------------------------

def _product_backward(ctx, grad, grads):
    """backward of D = A @ B (mm, bmm): `grads(a, g, b, need_a, need_b)` gives (dA, dB), each
    None where not needed."""
    if grad is None:  # (set_materialize_grads(False): no gradient reached the output)
        return None, None, None
    a, b = ctx.saved_tensors
    g = grad.to(a.dtype)
    need = ctx.needs_input_grad
    ga, gb = grads(a, g, b, need[0], need[1])
    return ga, gb, None


def _product_jvp(ctx, ta, tb, op):
    """jvp of D = A @ B: dA @ B + A @ dB (a term per present tangent), in D's dtype."""
    a, b = ctx.saved_tensors
    od = ctx.out_dtype
    t = _add(op(ta, b, out_dtype=od) if ta is not None else None,
             op(a, tb, out_dtype=od) if tb is not None else None)
    return _tangent_out(t, *ctx.out_meta, a)


class _Mm(torch.autograd.Function):
    @staticmethod
    def forward(a, b, out_dtype):
        with _below():
            return _ops.mm.default(a, b, out_dtype=out_dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.set_materialize_grads(False)  # absent tangents stay None: no GEMMs on zeros
        a, b, out_dtype = inputs
        ctx.save_for_backward(a, b)
        ctx.save_for_forward(a, b)
        ctx.out_dtype = out_dtype
        ctx.out_meta = (output.shape, output.dtype)

    @staticmethod
    def backward(ctx, grad):
        return _product_backward(ctx, grad, lambda a, g, b, need_a, need_b: (
            _w.mm(g, b.t()) if need_a else None, _grad_b(a, g, b, _w.mm) if need_b else None))

    @staticmethod
    def jvp(ctx, ta, tb, _):
        return _product_jvp(ctx, ta, tb, _w.mm)

    @staticmethod
    def vmap(info, in_dims, a, b, out_dtype):
        # A batch of products is one bmm (an unbatched operand broadcast with a zero batch stride).
        if a.dtype == torch.int8:
            return _vmap_loop(info, in_dims, lambda x, y, od: _w.mm(x, y, out_dtype=od), (a, b, out_dtype))
        n = info.batch_size
        return _w.bmm(_batched(a, in_dims[0], n), _batched(b, in_dims[1], n), out_dtype=out_dtype), 0


def _pack_mm(a, b, *, out_dtype=None):
    return a, b, out_dtype


# ---- gemm -----------------------------------------------------------------------------------

class _Gemm(torch.autograd.Function):
    @staticmethod
    def forward(a, b, bias, c, alpha, beta, activation, out_dtype):
        with _below():
            return _ops.gemm.default(a, b, bias, c, alpha=alpha, beta=beta, activation=activation, out_dtype=out_dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.set_materialize_grads(False)  # absent tangents stay None: no GEMMs on zeros
        a, b, bias, c, alpha, beta, activation, out_dtype = inputs
        ctx.save_for_backward(a, b, bias, c)
        ctx.save_for_forward(a, b, bias, c)
        ctx.kw = dict(alpha=alpha, beta=beta, activation=activation, out_dtype=out_dtype)
        ctx.out_meta = (output.shape, output.dtype)

    @staticmethod
    def backward(ctx, grad):
        if grad is None:  # (set_materialize_grads(False): no gradient reached the output)
            return (None,) * 8
        a, b, bias, c = ctx.saved_tensors
        kw = ctx.kw
        act, alpha, beta = kw["activation"], kw["alpha"], kw["beta"]
        dz = _pre_activation_grad(grad, act, a.dtype,
                                  lambda od: _w.gemm(a, b, bias=bias, c=c, alpha=alpha, beta=beta, out_dtype=od))
        g = dz.to(a.dtype)
        need = ctx.needs_input_grad
        # (alpha 1, nn.Linear's case: `mm`, the same kernels with fewer arguments to pass in, host time)
        prod = _w.mm if alpha == 1.0 else (lambda x, y: _w.gemm(x, y, alpha=alpha))
        ga = prod(g, b.t()) if need[0] else None
        gb = _grad_b(a, g, b, prod) if need[1] else None
        gbias = _sum_rows(dz, bias.dtype) if bias is not None and need[2] else None
        gc = None
        if c is not None and need[3]:
            gc = (dz * beta).to(c.dtype) if beta != 0.0 else torch.zeros_like(c)
        return ga, gb, gbias, gc, None, None, None, None

    @staticmethod
    def jvp(ctx, ta, tb, tbias, tc, *_):
        # dD = act'(Z) * (alpha * (dA @ B + A @ dB) + beta * dC + dbias), in the accumulator dtype.
        a, b, bias, c = ctx.saved_tensors
        kw = ctx.kw
        alpha, beta, act = kw["alpha"], kw["beta"], kw["activation"]
        od = _acc_out(a.dtype)
        dz = _add(_w.gemm(ta, b, alpha=alpha, out_dtype=od) if ta is not None else None,
                  _w.gemm(a, tb, alpha=alpha, out_dtype=od) if tb is not None else None)
        if tc is not None and beta != 0.0:  # (c is not read at beta 0: neither is its tangent)
            dz = _add(dz, tc.to(_acc(a.dtype)) * beta)
        if tbias is not None:
            dz = _add(dz, tbias.to(_acc(a.dtype)))
        shape, dtype = ctx.out_meta
        if dz is None:
            return _tangent_out(None, shape, dtype, a)
        if act != "none":
            dz = dz * act_grad(_w.gemm(a, b, bias=bias, c=c, alpha=alpha, beta=beta, out_dtype=od), act)
        return _tangent_out(dz, shape, dtype, a)

    @staticmethod
    def vmap(info, in_dims, a, b, bias, c, alpha, beta, activation, out_dtype):
        kw = dict(alpha=alpha, beta=beta, activation=activation, out_dtype=out_dtype)
        if in_dims[1] is not None or in_dims[2] is not None:  # a batch of weights: one gemm each
            return _vmap_loop(info, in_dims, lambda a_, b_, bias_, c_, *_: _w.gemm(a_, b_, bias=bias_, c=c_, **kw),
                              (a, b, bias, c, alpha, beta, activation, out_dtype))
        # One weight: the batch folds into M (a, and c where given, as (batch * M) rows).
        n = info.batch_size
        a_b = _batched(a, in_dims[0], n)
        m, k = a_b.shape[1], a_b.shape[2]
        c2 = None if c is None else _batched(c, in_dims[3], n).reshape(n * m, b.shape[1])
        out = _w.gemm(a_b.reshape(n * m, k), b, bias=bias, c=c2, **kw)
        return out.reshape(n, m, b.shape[1]), 0


def _pack_gemm(a, b, bias=None, c=None, *, alpha=1.0, beta=0.0, activation="none", out_dtype=None):
    return a, b, bias, c, alpha, beta, activation, out_dtype


# ---- bmm ------------------------------------------------------------------------------------

class _Bmm(torch.autograd.Function):
    @staticmethod
    def forward(a, b, out_dtype):
        with _below():
            return _ops.bmm.default(a, b, out_dtype=out_dtype)

    setup_context = _Mm.setup_context

    @staticmethod
    def backward(ctx, grad):
        return _product_backward(ctx, grad, lambda a, g, b, need_a, need_b: (
            _w.bmm(g, b.transpose(1, 2)) if need_a else None, _w.bmm(a.transpose(1, 2), g) if need_b else None))

    @staticmethod
    def jvp(ctx, ta, tb, _):
        return _product_jvp(ctx, ta, tb, _w.bmm)

    @staticmethod
    def vmap(info, in_dims, a, b, out_dtype):
        # The vmapped batch and bmm's own batch flattened into one.
        n = info.batch_size
        a_b, b_b = _batched(a, in_dims[0], n), _batched(b, in_dims[1], n)
        g = a_b.shape[1]
        out = _w.bmm(a_b.reshape(n * g, *a_b.shape[2:]), b_b.reshape(n * g, *b_b.shape[2:]), out_dtype=out_dtype)
        return out.reshape(n, g, *out.shape[1:]), 0


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
