"""Fake (meta) kernels: output shape, dtype and strides (always contiguous, like the real ops)
for torch.compile and other tracing."""
from __future__ import annotations

import torch

from . import _shapes


@torch.library.register_fake("gemm::mm")
def _mm_fake(a, b, *, out_dtype=None):
    m, n, dt = _shapes.mm(a, b, out_dtype)
    return a.new_empty((m, n), dtype=dt)


@torch.library.register_fake("gemm::gemm")
def _gemm_fake(a, b, bias=None, c=None, *, alpha=1.0, beta=0.0, activation="none", out_dtype=None):
    m, n, dt = _shapes.gemm("gemm.gemm", a, b, bias, c, activation, out_dtype)
    return a.new_empty((m, n), dtype=dt)


@torch.library.register_fake("gemm::bmm")
def _bmm_fake(a, b, *, out_dtype=None):
    shape, dt = _shapes.bmm(a, b, out_dtype)
    return a.new_empty(shape, dtype=dt)


@torch.library.register_fake("gemm::grouped_mm")
def _grouped_mm_fake(a, b, offs=None, bias=None, *, activation="none", out_dtype=None):
    shape, dt, _ = _shapes.grouped(a, b, offs, bias, activation, out_dtype)
    return a.new_empty(shape, dtype=dt)


@torch.library.register_fake("gemm::grouped_gemm")
def _grouped_gemm_fake(a, b, bias=None, *, activation="none", out_dtype=None):
    if len(a) != len(b):
        raise ValueError(f"gemm.grouped_gemm: a and b must be lists of the same length, got {len(a)} and {len(b)}")
    if bias is not None and len(bias) != len(a):
        raise ValueError(f"gemm.grouped_gemm: bias must be a list of the same length as a ({len(a)}), got {len(bias)}")
    outs = []
    for i, (ai, bi) in enumerate(zip(a, b)):
        m, n, dt = _shapes.gemm("gemm.grouped_gemm", ai, bi, None if bias is None else bias[i], None,
                                activation, out_dtype)
        outs.append(ai.new_empty((m, n), dtype=dt))
    return outs


@torch.library.register_fake("gemm::scaled_mm")
def _scaled_mm_fake(a, b, scale_a, scale_b, bias=None, *, out_dtype=torch.bfloat16, use_fast_accum=False):
    m, n, dt, _, _ = _shapes.scaled_mm(a, b, scale_a, scale_b, bias, out_dtype)
    return a.new_empty((m, n), dtype=dt)


def _swiglu_width(op: str, gate_up, grad=None) -> int:
    """F for a (..., 2F) gate_up; the checks of csrc/torch/checks.cpp (check_swiglu)."""
    if gate_up.dim() < 1:
        raise ValueError(f"{op}: gate_up must have at least one dimension (..., 2F), got a scalar")
    if gate_up.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(f"{op}: gate_up has dtype {gate_up.dtype}; expected float16, bfloat16, float32 or float64")
    if gate_up.shape[-1] % 2:
        raise ValueError(f"{op}: gate_up's last dimension must be even ([gate | up], 2F), got shape "
                         f"{tuple(gate_up.shape)}")
    f = gate_up.shape[-1] // 2
    if grad is not None:
        want = (*gate_up.shape[:-1], f)
        if tuple(grad.shape) != want:
            raise ValueError(f"{op}: grad must have shape {want} (gate_up's with half its last extent), "
                             f"got {tuple(grad.shape)}")
        if grad.dtype != gate_up.dtype:
            raise TypeError(f"{op}: grad has dtype {grad.dtype} but gate_up has dtype {gate_up.dtype}; "
                            "expected the same dtype")
    return f


@torch.library.register_fake("gemm::swiglu")
def _swiglu_fake(gate_up):
    f = _swiglu_width("gemm.swiglu", gate_up)
    return gate_up.new_empty((*gate_up.shape[:-1], f))


@torch.library.register_fake("gemm::swiglu_backward")
def _swiglu_backward_fake(grad, gate_up):
    _swiglu_width("gemm.swiglu_backward", gate_up, grad)
    return gate_up.new_empty(gate_up.shape)


def _moe_combine_shape(op: str, y, inv, weights, k, grad=None):
    """(T, H); the checks of csrc/torch/checks.cpp (check_moe_combine)."""
    if k < 1:
        raise ValueError(f"{op}: k (slots per token) must be >= 1, got {k}")
    if y.dim() != 2:
        raise ValueError(f"{op}: y must be 2-D (T * k, H), got shape {tuple(y.shape)}")
    if y.dtype not in (torch.float16, torch.bfloat16, torch.float32, torch.float64):
        raise TypeError(f"{op}: y has dtype {y.dtype}; expected float16, bfloat16, float32 or float64")
    if y.shape[0] % k:
        raise ValueError(f"{op}: y's rows ({y.shape[0]}) must be a multiple of k={k} (T * k pairs)")
    t, h = y.shape[0] // k, y.shape[1]
    if inv.dim() != 1 or inv.shape[0] != y.shape[0]:
        raise ValueError(f"{op}: inv must be 1-D of length T * k = {y.shape[0]}, got shape {tuple(inv.shape)}")
    if inv.dtype not in (torch.int64, torch.int32):
        raise TypeError(f"{op}: inv has dtype {inv.dtype}; expected int64 or int32")
    if weights is not None:
        if tuple(weights.shape) != (t, k):
            raise ValueError(f"{op}: weights must have shape (T={t}, k={k}), got {tuple(weights.shape)}")
        if not weights.dtype.is_floating_point:
            raise TypeError(f"{op}: weights has dtype {weights.dtype}; expected a floating dtype")
    if grad is not None:
        if tuple(grad.shape) != (t, h):
            raise ValueError(f"{op}: grad must have shape (T={t}, H={h}), got {tuple(grad.shape)}")
        if grad.dtype != y.dtype:
            raise TypeError(f"{op}: grad has dtype {grad.dtype} but y has dtype {y.dtype}; expected the same dtype")
    return t, h


@torch.library.register_fake("gemm::moe_combine")
def _moe_combine_fake(y, inv, weights, k):
    t, h = _moe_combine_shape("gemm.moe_combine", y, inv, weights, k)
    return y.new_empty((t, h))


@torch.library.register_fake("gemm::moe_combine_backward")
def _moe_combine_backward_fake(grad, y, inv, weights, k):
    t, _ = _moe_combine_shape("gemm.moe_combine_backward", y, inv, weights, k, grad)
    gw = y.new_empty((t, k) if weights is not None else (0,), dtype=torch.float32)
    return y.new_empty(y.shape), gw

