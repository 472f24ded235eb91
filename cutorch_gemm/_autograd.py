"""Autograd for every op: reverse mode (backward, double backward), forward mode (jvp) and the
torch.func transforms (grad, jacrev, jacfwd, hessian, vmap).

mm, bmm, gemm, grouped_mm, scaled_mm, swiglu and moe_combine: C++ Autograd kernels
(csrc/torch/autograd_kernels.cpp, autograd_grouped.cpp, autograd_scaled.cpp, autograd_pointwise.cpp: plain
autograd Nodes and forward-mode tangents, as ATen's own ops have them), which torch.func's grad / vjp / jacrev /
jvp / jacfwd levels run level by level, and C++ vmap kernels (csrc/torch/vmap_kernels.cpp: the FuncTorchBatched
key). Raw calls and the wrappers alike go through the dispatcher, under every transform.

grouped_gemm (lists of problems) has an autograd.Function (`_autograd_grouped.py`, helpers in
`_autograd_util.py`), registered here. Two ways in:
- the op's Autograd kernel (registered here, in place of torch.library.register_autograd, whose
  generated kernel ignores forward-mode tangents: `forward_ad` and `torch.func.jvp` got a zero
  tangent): applies the Function when an input requires grad or carries a tangent;
- the Python wrapper (ops._call): under a torch.func transform it applies the Function itself, from
  Python, because torch.func cannot reach an autograd.Function applied inside the dispatcher (a raw
  `torch.ops.gemm.grouped_gemm` call then raises, saying so).

Backward is built from the same ops: dA = dZ @ B^T and dB = A^T @ dZ per problem, on transposed
views (no copies). With an activation, the pre-activation Z is recomputed by the same op in fp32 (one
extra GEMM instead of saving Z). Backward and jvp call the wrappers (`ops.*`), so they are
differentiable again (double backward, hessian) and transform-aware.
"""
from __future__ import annotations

import inspect

import torch

from . import ops as _w
from ._autograd_grouped import _GroupedGemm, _grouped_gemm_flat, _nothing_to_differentiate
from ._autograd_util import _below

_ops = torch.ops.gemm

# Under a torch.func transform, torch binds a new-style Function's arguments with
# inspect.signature(forward) on every apply (torch.autograd.function._bind_default_args, called from
# C++). inspect.signature returns a function's __signature__ when it has one: computed once here, it
# took torch.func.grad of a small linear from 459 to 408 us (CPU machine, reference ops).
_GroupedGemm.forward.__signature__ = inspect.signature(_GroupedGemm.forward)


def _needs_function(tensors) -> bool:
    """An autograd graph to record or a forward-mode tangent to carry."""
    if torch.is_grad_enabled() and any(isinstance(t, torch.Tensor) and t.requires_grad for t in tensors):
        return True
    return _w.has_tangent(tensors)


def _old_style(fn):
    """`fn` as an old-style Function (forward(ctx, ...) running fn's forward and setup_context),
    for the Autograd kernel: torch binds a new-style Function's default arguments through
    inspect.signature on every apply, ~9 us of host time per call (CPU, 2x2 mm: 19.6 -> 10.2 us
    for a forward that records a graph). torch.func needs the new style (ops._call applies it)."""
    def forward(ctx, *args):
        out = fn.forward(*args)
        fn.setup_context(ctx, args, out)
        return out

    return type(f"{fn.__name__}Kernel", (torch.autograd.Function,), {
        "forward": staticmethod(forward), "backward": staticmethod(fn.backward), "jvp": staticmethod(fn.jvp)})


_GroupedGemmKernel = _old_style(_GroupedGemm)


def _grouped_gemm_kernel(keyset, a, b, bias=None, *, activation="none", out_dtype=None):
    if _nothing_to_differentiate(a, b, bias):
        with _below():  # (or the op raises)
            return _ops.grouped_gemm(a, b, bias, activation=activation, out_dtype=out_dtype)
    flat = _grouped_gemm_flat(a, b, bias, activation=activation, out_dtype=out_dtype)
    # Nothing to record (inference, or no input requires grad): the op below autograd directly.
    # The Function's apply over 2-3 tensors per problem is host time on every call (128 problems,
    # H200 host: ~360 us of a ~1.2 ms call whose kernel takes ~0.3 ms).
    if not _needs_function(flat[4:]):
        with _below():
            return _ops.grouped_gemm.default(a, b, bias, activation=activation, out_dtype=out_dtype)
    if torch._C._are_functorch_transforms_active():
        raise RuntimeError(
            "torch.ops.gemm.grouped_gemm was called under a torch.func transform (grad, jvp, jacrev, jacfwd, "
            "hessian, vmap of those): call cutorch_gemm.grouped_gemm instead, which supports them (the raw op's "
            "autograd runs inside the dispatcher, where torch.func cannot follow it)")
    return list(_GroupedGemmKernel.apply(*flat))


def function_call(op, args, kwargs):
    """``grouped_gemm(*args, **kwargs)`` through its autograd.Function, applied from Python (ops._call
    under torch.func transforms and forward-mode AD)."""
    if _nothing_to_differentiate(args[0], args[1], kwargs.get("bias")):  # (the wrapper passes bias by keyword)
        return op(*args, **kwargs)  # (or the op raises)
    return list(_GroupedGemm.apply(*_grouped_gemm_flat(*args, **kwargs)))


_lib = torch.library.Library("gemm", "IMPL")
_lib.impl("grouped_gemm", _grouped_gemm_kernel, "Autograd", with_keyset=True)
_w._FUNCTION_CALL = function_call
