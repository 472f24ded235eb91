"""autograd.Functions of the grouped ops: grouped_mm, grouped_gemm (`_autograd.py` registers them)."""
from __future__ import annotations

import torch

from . import ops as _w
from ._autograd_util import (_acc, _acc_out, _add, _below, _pre_activation_grad, _sum_rows, _swiglu_grad, _swiglu_tangent,
                             _tangent_out, _vmap_loop, act_grad)

_ops = torch.ops.gemm


# ---- grouped_mm -----------------------------------------------------------------------------

def _group_ids(offs: torch.Tensor, extent: int) -> torch.Tensor:
    """Group of each row (column) along the grouped extent; len(offs) past the last group.
    Computed on the device from offs (no host synchronisation)."""
    idx = torch.arange(extent, device=offs.device, dtype=offs.dtype)
    return torch.searchsorted(offs, idx, right=True)


class _GroupedMm(torch.autograd.Function):
    @staticmethod
    def vmap(info, in_dims, a, b, offs, bias, activation, out_dtype):
        return _vmap_loop(info, in_dims, lambda a_, b_, o_, bias_, *_: _w.grouped_mm(
            a_, b_, o_, bias=bias_, activation=activation, out_dtype=out_dtype),
            (a, b, offs, bias, activation, out_dtype))

    @staticmethod
    def forward(a, b, offs, bias, activation, out_dtype):
        with _below():
            return _ops.grouped_mm.default(a, b, offs, bias, activation=activation, out_dtype=out_dtype)

    @staticmethod
    def setup_context(ctx, inputs, output):
        ctx.set_materialize_grads(False)  # absent tangents stay None: no GEMMs on zeros
        a, b, offs, bias, activation, out_dtype = inputs
        ctx.save_for_backward(a, b, offs, bias)
        ctx.save_for_forward(a, b, offs, bias)
        ctx.kw = dict(activation=activation, out_dtype=out_dtype)
        ctx.out_meta = (output.shape, output.dtype)

    @staticmethod
    def backward(ctx, grad):
        if grad is None:  # (set_materialize_grads(False): no gradient reached the output)
            return (None,) * 6
        a, b, offs, bias = ctx.saved_tensors
        act = ctx.kw["activation"]
        if act == "swiglu":  # z = a @ b + bias recomputed in the accumulator dtype, full width
            dz = _swiglu_grad(grad, _w.grouped_mm(a, b, offs, bias=bias, out_dtype=_acc_out(a.dtype)))
        else:
            dz = _pre_activation_grad(grad, act, a.dtype,
                                      lambda od: _w.grouped_mm(a, b, offs, bias=bias, out_dtype=od))
        g = dz.to(a.dtype)
        need = ctx.needs_input_grad
        # The backward forms (see ops.grouped_mm): 2Dx3D <-> 2Dx2D (dW) and 3Dx2D <-> 2Dx2D.
        ga = _w.grouped_mm(g, b.transpose(-2, -1), offs) if need[0] else None
        gb = _w.grouped_mm(a.transpose(-2, -1), g, offs) if need[1] else None
        gbias = None
        if bias is not None and need[3]:
            dz = dz.to(_acc(a.dtype))  # bias sums accumulate in fp32
            if a.dim() == 2 and b.dim() == 3:  # per-group sums of rows; rows past offs[-1] excluded
                ids = _group_ids(offs, dz.shape[0])
                acc = dz.new_zeros((offs.shape[0] + 1, dz.shape[1])).index_add(0, ids, dz)
                gbias = acc[:-1]
            elif a.dim() == 3 and b.dim() == 2:  # bias per output column, columns past offs[-1] zero
                ids = _group_ids(offs, dz.shape[1])
                gbias = dz.sum(0) * (ids < offs.shape[0]).to(dz.dtype)
            else:  # (G, M, N) outputs
                gbias = dz.sum(1)
            gbias = gbias.to(bias.dtype)
        return ga, gb, None, gbias, None, None

    @staticmethod
    def jvp(ctx, ta, tb, _offs, tbias, *_):
        # dZ = dA @ B + A @ dB + dbias (per group, as the op places the bias), then the activation's
        # derivative at Z (SwiGLU: of silu(gate) * up over Z's two halves).
        a, b, offs, bias = ctx.saved_tensors
        act = ctx.kw["activation"]
        od = _acc_out(a.dtype)
        if tbias is not None and ta is None:
            ta = torch.zeros_like(a)  # (the bias term rides on the dA @ B call, placed by the op)
        dz = _add(_w.grouped_mm(ta, b, offs, bias=tbias, out_dtype=od) if ta is not None else None,
                  _w.grouped_mm(a, tb, offs, out_dtype=od) if tb is not None else None)
        shape, dtype = ctx.out_meta
        if dz is None:
            return _tangent_out(None, shape, dtype, a)
        if act != "none":
            z = _w.grouped_mm(a, b, offs, bias=bias, out_dtype=od)
            dz = _swiglu_tangent(dz, z) if act == "swiglu" else dz * act_grad(z, act)
        return _tangent_out(dz, shape, dtype, a)


def _pack_grouped_mm(a, b, offs=None, bias=None, *, activation="none", out_dtype=None):
    return a, b, offs, bias, activation, out_dtype


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
        dz = list(grads)  # without an activation: the gradients as they come (_pre_activation_grad)
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
