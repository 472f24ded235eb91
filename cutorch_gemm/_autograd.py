"""Autograd for every op: reverse mode (backward, double backward), forward mode (jvp) and the
torch.func transforms (grad, jacrev, jacfwd, hessian, vmap).

Each op has an autograd.Function (forward below the autograd key, setup_context, backward, jvp,
a vmap rule). Two ways in:
- the op's Autograd kernel (registered here, in place of torch.library.register_autograd, whose
  generated kernel ignores forward-mode tangents: `forward_ad` and `torch.func.jvp` got a zero
  tangent): applies the Function when an input requires grad or carries a tangent;
- the Python wrappers (ops._call): under a torch.func transform they apply the Function
  themselves, from Python, because torch.func cannot reach an autograd.Function applied inside
  the dispatcher (raw `torch.ops.gemm.*` calls then raise, saying so).

Backward is built from the same ops: dA = dZ @ B^T and dB = A^T @ dZ are `mm` / `gemm` on
transposed views (no copies); the grouped weight gradient is the 2D x 2D form of `grouped_mm`.
With an activation, the pre-activation Z is recomputed by the same op in fp32 (one extra GEMM
instead of saving Z). Backward and jvp call the wrappers (`ops.*`), so they are differentiable
again (double backward, hessian) and transform-aware.
"""
from __future__ import annotations

import math

import torch

from . import ops as _w
from .ops import _no_graph

_ops = torch.ops.gemm
_below = torch._C._AutoDispatchBelowAutograd


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


def _add(x, y):
    """x + y where either may be None (an absent tangent)."""
    if x is None:
        return y
    return x if y is None else x + y


def _tangent_out(t, shape, dtype, like: torch.Tensor) -> torch.Tensor:
    """A jvp's result: `t` (None: no tangent term at all, zeros) broadcast to the output's
    shape and cast to its dtype."""
    if t is None:
        return torch.zeros(shape, dtype=dtype, device=like.device)
    return t.expand(shape).to(dtype) if tuple(t.shape) != tuple(shape) else t.to(dtype)


def _batched(t, d, size):
    """t with its vmapped dimension first (an unbatched t broadcast to `size` entries, stride 0)."""
    return t.movedim(d, 0) if d is not None else t.expand(size, *t.shape)


def _vmap_loop(info, in_dims, call, args):
    """The generic vmap rule: `call(*args)` once per batch entry (the ops have no batched form
    there), the results stacked along dim 0. A batch of zero entries takes the shapes from the
    op's fake kernel on meta tensors."""
    if info.batch_size == 0:
        metas = [a.new_empty([s for i, s in enumerate(a.shape) if i != d], device="meta")
                 if isinstance(a, torch.Tensor) and d is not None else
                 (a.to("meta") if isinstance(a, torch.Tensor) else a) for a, d in zip(args, in_dims)]
        with _below():
            shaped = call(*metas)
        many = isinstance(shaped, (list, tuple))
        outs = shaped if many else (shaped,)
        device = next(a.device for a in args if isinstance(a, torch.Tensor))
        empty = tuple(torch.empty((0, *o.shape), dtype=o.dtype, device=device) for o in outs)
        return (empty, (0,) * len(empty)) if many else (empty[0], 0)
    per = [call(*[a if d is None else a.select(d, i) for a, d in zip(args, in_dims)])
           for i in range(info.batch_size)]
    if isinstance(per[0], (list, tuple)):
        return tuple(torch.stack([p[j] for p in per]) for j in range(len(per[0]))), (0,) * len(per[0])
    return torch.stack(per), 0


# ---- mm -------------------------------------------------------------------------------------

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
        if grad is None:  # (set_materialize_grads(False): no gradient reached the output)
            return (None,) * 3
        a, b = ctx.saved_tensors
        g = grad.to(a.dtype)
        ga = _w.mm(g, b.t()) if ctx.needs_input_grad[0] else None
        gb = _grad_b(a, g, b, _w.mm) if ctx.needs_input_grad[1] else None
        return ga, gb, None

    @staticmethod
    def jvp(ctx, ta, tb, _):
        a, b = ctx.saved_tensors
        od = ctx.out_dtype
        t = _add(_w.mm(ta, b, out_dtype=od) if ta is not None else None,
                 _w.mm(a, tb, out_dtype=od) if tb is not None else None)
        return _tangent_out(t, *ctx.out_meta, a)

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
        ga = _w.gemm(g, b.t(), alpha=alpha) if need[0] else None
        gb = _grad_b(a, g, b, lambda x, y: _w.gemm(x, y, alpha=alpha)) if need[1] else None
        gbias = dz.sum(0, dtype=_acc(a.dtype)).to(bias.dtype) if bias is not None and need[2] else None
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
        if grad is None:  # (set_materialize_grads(False): no gradient reached the output)
            return (None,) * 3
        a, b = ctx.saved_tensors
        g = grad.to(a.dtype)
        ga = _w.bmm(g, b.transpose(1, 2)) if ctx.needs_input_grad[0] else None
        gb = _w.bmm(a.transpose(1, 2), g) if ctx.needs_input_grad[1] else None
        return ga, gb, None

    @staticmethod
    def jvp(ctx, ta, tb, _):
        a, b = ctx.saved_tensors
        od = ctx.out_dtype
        t = _add(_w.bmm(ta, b, out_dtype=od) if ta is not None else None,
                 _w.bmm(a, tb, out_dtype=od) if tb is not None else None)
        return _tangent_out(t, *ctx.out_meta, a)

    @staticmethod
    def vmap(info, in_dims, a, b, out_dtype):
        # The vmapped batch and bmm's own batch flattened into one.
        n = info.batch_size
        a_b, b_b = _batched(a, in_dims[0], n), _batched(b, in_dims[1], n)
        g = a_b.shape[1]
        out = _w.bmm(a_b.reshape(n * g, *a_b.shape[2:]), b_b.reshape(n * g, *b_b.shape[2:]), out_dtype=out_dtype)
        return out.reshape(n, g, *out.shape[1:]), 0


# ---- grouped_mm -----------------------------------------------------------------------------

def _group_ids(offs: torch.Tensor, extent: int) -> torch.Tensor:
    """Group of each row (column) along the grouped extent; len(offs) past the last group.
    Computed on the device from offs (no host synchronisation)."""
    idx = torch.arange(extent, device=offs.device, dtype=offs.dtype)
    return torch.searchsorted(offs, idx, right=True)


def _swiglu_grad(grad: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """dL/dz for D = silu(gate) * up, z = [gate | up] (recomputed, accumulator dtype)."""
    gate, up = z.chunk(2, dim=-1)
    s = torch.sigmoid(gate)
    g = grad.to(z.dtype)
    return torch.cat([g * up * (s * (1.0 + gate * (1.0 - s))), g * gate * s], dim=-1)


def _swiglu_tangent(dz: torch.Tensor, z: torch.Tensor) -> torch.Tensor:
    """The tangent of silu(gate) * up for z = [gate | up] and its tangent dz (same dtype)."""
    gate, up = z.chunk(2, dim=-1)
    d_gate, d_up = dz.chunk(2, dim=-1)
    s = torch.sigmoid(gate)
    return d_gate * up * (s * (1.0 + gate * (1.0 - s))) + d_up * gate * s


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
            return _ops.scaled_mm.default(a, b, scale_a, scale_b, bias, out_dtype=out_dtype, use_fast_accum=use_fast_accum)

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
        gbias = [d.sum(0, dtype=_acc(dtype)).to(bi.dtype) for d, bi in zip(dz, bias)] if bias is not None else []
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


def _grouped_gemm_flat(a, b, bias=None, *, activation="none", out_dtype=None):
    return (len(a), bias is not None, activation, out_dtype, *a, *b, *(bias if bias is not None else []))


# ---- registration ---------------------------------------------------------------------------

_FUNCTIONS = {
    "mm": (_Mm, _pack_mm),
    "gemm": (_Gemm, _pack_gemm),
    "bmm": (_Bmm, _pack_mm),
    "grouped_mm": (_GroupedMm, _pack_grouped_mm),
    "scaled_mm": (_ScaledMm, _pack_scaled_mm),
    "swiglu": (_Swiglu, _pack_swiglu),
    "moe_combine": (_MoeCombine, _pack_moe_combine),
}


def _needs_function(tensors) -> bool:
    """An autograd graph to record or a forward-mode tangent to carry."""
    if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors):
        return True
    return _w.has_tangent(tensors)


def _apply(name, fn, flat):
    if torch._C._are_functorch_transforms_active():
        raise RuntimeError(
            f"torch.ops.gemm.{name} was called under a torch.func transform (grad, jvp, jacrev, jacfwd, "
            f"hessian, vmap of those): call cutorch_gemm.{name} instead, which supports them (the raw op's "
            f"autograd runs inside the dispatcher, where torch.func cannot follow it)")
    out = fn.apply(*flat)
    return list(out) if name == "grouped_gemm" else out


def _old_style(fn):
    """`fn` as an old-style Function (forward(ctx, ...) running fn's forward and setup_context),
    for the Autograd kernels: torch binds a new-style Function's default arguments through
    inspect.signature on every apply, ~9 us of host time per call (CPU, 2x2 mm: 19.6 -> 10.2 us
    for a forward that records a graph). torch.func needs the new style (ops._call applies it)."""
    def forward(ctx, *args):
        out = fn.forward(*args)
        fn.setup_context(ctx, args, out)
        return out

    return type(f"{fn.__name__}Kernel", (torch.autograd.Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(fn.backward), "jvp": staticmethod(fn.jvp)})


def _make_kernel(name, fn, pack):
    op = getattr(_ops, name).default
    fn = _old_style(fn)

    def kernel(keyset, *args, **kwargs):
        flat = pack(*args, **kwargs)
        if _needs_function(flat):
            return _apply(name, fn, flat)
        with _below():
            return op.redispatch(keyset & torch._C._after_autograd_keyset, *args, **kwargs)

    return kernel


def _grouped_gemm_kernel(keyset, a, b, bias=None, *, activation="none", out_dtype=None):
    if len(a) == 0 or len(a) != len(b) or (bias is not None and len(bias) != len(a)):
        with _below():  # nothing to differentiate, or the op raises
            return _ops.grouped_gemm(a, b, bias, activation=activation, out_dtype=out_dtype)
    flat = _grouped_gemm_flat(a, b, bias, activation=activation, out_dtype=out_dtype)
    # Nothing to record (inference, or no input requires grad): the op below autograd directly.
    # The Function's apply over 2-3 tensors per problem is host time on every call (128 problems,
    # H200 host: ~360 us of a ~1.2 ms call whose kernel takes ~0.3 ms).
    if not _needs_function(flat[4:]):
        with _below():
            return _ops.grouped_gemm.default(a, b, bias, activation=activation, out_dtype=out_dtype)
    return _apply("grouped_gemm", _GroupedGemmKernel, flat)


_GroupedGemmKernel = _old_style(_GroupedGemm)


def function_call(op, args, kwargs):
    """``op(*args, **kwargs)`` through its autograd.Function, applied from Python (ops._call under
    torch.func transforms and forward-mode AD)."""
    name = op._qualified_op_name.split("::")[-1] if hasattr(op, "_qualified_op_name") else op.__name__
    if name == "grouped_gemm":
        a, b = args[0], args[1]
        bias = kwargs.get("bias", args[2] if len(args) > 2 else None)
        if len(a) == 0 or len(a) != len(b) or (bias is not None and len(bias) != len(a)):
            return op(*args, **kwargs)  # (the op raises, or there is nothing to differentiate)
        return list(_GroupedGemm.apply(*_grouped_gemm_flat(*args, **kwargs)))
    fn, pack = _FUNCTIONS[name]
    return fn.apply(*pack(*args, **kwargs))


_lib = torch.library.Library("gemm", "IMPL")
for _name, (_fn, _pack) in _FUNCTIONS.items():
    _lib.impl(_name, _make_kernel(_name, _fn, _pack), "Autograd", with_keyset=True)
_lib.impl("grouped_gemm", _grouped_gemm_kernel, "Autograd", with_keyset=True)
_w._FUNCTION_CALL = function_call
