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
def _scaled_mm_fake(a, b, scale_a, scale_b, bias=None, *, out_dtype=torch.bfloat16):
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
