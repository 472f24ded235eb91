"""grouped_gemm's autograd.Function (`_autograd.py` registers it). (grouped_mm: C++ Autograd and vmap kernels,
csrc/torch/autograd_grouped.cpp, vmap_kernels.cpp.)"""
from __future__ import annotations

import torch

from . import ops as _w
from ._autograd_util import _acc, _acc_out, _add, _below, _sum_rows, _tangent_out, _vmap_loop, act_grad

_ops = torch.ops.gemm


# ---- grouped_gemm ---------------------------------------------------------------------------
# The Function takes the lists flattened (autograd.Function sees Tensor arguments only):
# (n, has_bias, activation, out_dtype, *a, *b, *bias).

def _split(n, has_bias, tensors):
    a, b = list(tensors[:n]), list(tensors[n:2 * n])
    return a, b, (list(tensors[2 * n:3 * n]) if has_bias else None)


class _GroupedGemm(torch.autograd.Function):
    @staticmethod
    def forward(n, has_bias, activation, out_dtype, *tensors):
        a, b, bias = _split(n, has_bias, tensors)
        with _below():
            return tuple(_ops.grouped_gemm.default(a, b, bias, activation=activation, out_dtype=out_dtype))

    @staticmethod
    def setup_context(ctx, inputs, output):
        n, has_bias, activation, out_dtype = inputs[:4]
        ctx.save_for_backward(*inputs[4:])
        ctx.save_for_forward(*inputs[4:])
        ctx.n, ctx.has_bias, ctx.activation = n, has_bias, activation
        ctx.out_meta = [(o.shape, o.dtype) for o in output]

    @staticmethod
    def backward(ctx, *grads):
        n, act = ctx.n, ctx.activation
        a, b, bias = _split(n, ctx.has_bias, ctx.saved_tensors)
        dtype = a[0].dtype
        dz = list(grads)  # without an activation: the gradients as they come (no fp32 round trip)
        if act != "none":
            z = _w.grouped_gemm(a, b, bias=bias, out_dtype=_acc_out(dtype))
            dz = [d.to(_acc(dtype)) * act_grad(zi, act) for d, zi in zip(dz, z)]
        g = [d.to(dtype) for d in dz]
        need = ctx.needs_input_grad[4:]
        # Under torch's legacy vmap (autograd.functional.jacobian / hessian with vectorize=True,
        # gradcheck's batched-gradient check) the gradients are its BatchedTensors, for which a
        # Tensor[] op has no per-entry fallback: one mm per problem there (the same math).
        gg = _w.grouped_gemm if not _in_legacy_vmap() else (
            lambda xs, ys: [_w.mm(x, y) for x, y in zip(xs, ys)])
        ga = gg(g, [bi.t() for bi in b]) if any(need[:n]) else [None] * n
        gb = gg([ai.t() for ai in a], g) if any(need[n:2 * n]) else [None] * n
        gbias = [_sum_rows(d, bi.dtype) for d, bi in zip(dz, bias)] if bias is not None else []
        return (None, None, None, None, *ga, *gb, *gbias)

    @staticmethod
    def jvp(ctx, _n, _has_bias, _act, _od, *tangents):
        n, act = ctx.n, ctx.activation
        a, b, bias = _split(n, ctx.has_bias, ctx.saved_tensors)
        ta, tb, tbias = _split(n, ctx.has_bias, tangents)
        od = _acc_out(a[0].dtype)
        outs = []
        for i in range(n):  # (a Python loop: forward-mode AD over a problem list is rare)
            dz = _add(_w.mm(ta[i], b[i], out_dtype=od) if ta[i] is not None else None,
                      _w.mm(a[i], tb[i], out_dtype=od) if tb[i] is not None else None)
            if tbias is not None and tbias[i] is not None:
                dz = _add(dz, tbias[i].to(_acc(a[i].dtype)))
            shape, dtype = ctx.out_meta[i]
            if dz is not None and act != "none":
                z = _w.gemm(a[i], b[i], bias=None if bias is None else bias[i], out_dtype=od)
                dz = dz * act_grad(z, act)
            outs.append(_tangent_out(dz, shape, dtype, a[i]))
        return tuple(outs)

    @staticmethod
    def vmap(info, in_dims, n, has_bias, activation, out_dtype, *tensors):
        # One grouped_gemm per batch entry (the op has no batched form), stacked along dim 0.
        def call(*ts):
            a, b, bias = _split(n, has_bias, ts)
            return tuple(_w.grouped_gemm(a, b, bias=bias, activation=activation, out_dtype=out_dtype))
        return _vmap_loop(info, in_dims[4:], call, tensors)


def _in_legacy_vmap() -> bool:
    """True inside torch's legacy vmap (torch._vmap_internals: it adds the VmapMode key, which
    Python's DispatchKey does not name, to the thread's dispatch include set; autograd's engine
    threads inherit it). One check per backward, ~0.7 us."""
    return "VmapMode" in str(torch._C._dispatch_tls_local_include_set())


def _nothing_to_differentiate(a, b, bias) -> bool:
    """An empty problem list, or lists of different lengths (the op raises its own error)."""
    return len(a) == 0 or len(a) != len(b) or (bias is not None and len(bias) != len(a))


def _grouped_gemm_flat(a, b, bias=None, *, activation="none", out_dtype=None):
    return (len(a), bias is not None, activation, out_dtype, *a, *b, *(bias if bias is not None else []))
