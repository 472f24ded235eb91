"""Typed Python wrappers over ``torch.ops.gemm.*``.

Every wrapper calls exactly one op; the ops themselves check their inputs (in C++ for real
tensors, in ``_fake.py`` under torch.compile) and raise ``ValueError`` (shape, device, value)
or ``TypeError`` (dtype) naming the offending argument and what was expected.

Supported dtypes everywhere: float16, bfloat16, float32, float64. Accumulation is fp32 for
16-bit and fp32 inputs, fp64 for fp64. ``out_dtype`` may be None (same as the inputs), the
inputs' dtype, or float32 when the inputs are float16/bfloat16.
"""
from __future__ import annotations

from typing import Optional, Sequence

import torch

from . import _C

ACTIVATIONS = ("none", "relu", "gelu", "gelu_tanh", "silu")

_below_autograd = torch._C._AutoDispatchBelowAutograd


def _any_requires_grad(tensors) -> bool:
    # (isinstance: a list argument may hold a non-tensor; the op then raises its own error)
    for t in tensors:
        if isinstance(t, torch.Tensor) and t.requires_grad:
            return True
    return False


def _plain(tensors) -> bool:
    """Every tensor a plain torch.Tensor or nn.Parameter (no subclass with its own dispatch: a
    FakeTensor, a FunctionalTensor, a user's), and no torch function mode, jit tracer or autocast
    around the call: then the C++ entry points (``_FAST``) do exactly what dispatching the op would.
    (Autocast casts the operands in its dispatch key, above Autograd: an entry point below it would
    skip the cast.)"""
    for t in tensors:
        if t is not None and type(t) is not torch.Tensor and type(t) is not torch.nn.Parameter:
            return False
    return not (torch._C._is_torch_function_mode_enabled() or torch.jit.is_tracing()
                or torch._C._is_any_autocast_enabled())


_fw_ad = torch.autograd.forward_ad


def has_tangent(tensors) -> bool:
    """True when one of ``tensors`` carries a forward-mode AD tangent (``forward_ad.make_dual``,
    ``torch.func.jvp``) at the current dual level."""
    if _fw_ad._current_level < 0:  # outside every dual_level(): nothing to look up
        return False
    return any(isinstance(t, torch.Tensor) and _tangent_of(t) for t in tensors)


def _tangent_of(t: torch.Tensor) -> bool:
    try:
        return _fw_ad.unpack_dual(t).tangent is not None
    except RuntimeError:
        # torch's legacy vmap (gradcheck's batched forward-mode check) has no unpack_dual for its
        # BatchedTensors: say yes, the op itself is right either way.
        return True


def transformed(tensors) -> bool:
    """True when a call on ``tensors`` runs under a torch.func transform (grad, vjp, jvp, jacrev, jacfwd,
    hessian, vmap) or an input carries a forward-mode tangent: the op itself then (its C++ autograd and vmap
    kernels act level by level), not a C++ entry point (``_FAST``, which takes plain calls only)."""
    return torch._C._are_functorch_transforms_active() or has_tangent(tensors)


def direct(tensors) -> bool:
    """Whether a wrapper may call its C++ entry point (``_FAST``, ``_C.fast_linear``) with ``tensors``: plain
    ones (``_plain``), no torch.compile tracing and no torch.func transform or forward-mode tangent."""
    return not torch.compiler.is_compiling() and _plain(tensors) and not transformed(tensors)


# Ops called from C++ (csrc/torch/fast_calls.cpp): through the dispatcher without torch.ops' Python
# argument parsing (a call that records a graph: through the op's C++ Autograd kernel). Host microseconds
# per call: most of a small GEMM's, all of a host-bound step's.
_FAST = {
    torch.ops.gemm.mm: _C.fast_mm,
    torch.ops.gemm.bmm: _C.fast_bmm,
    torch.ops.gemm.gemm: _C.fast_gemm,
    torch.ops.gemm.grouped_mm: _C.fast_grouped_mm,
    torch.ops.gemm.scaled_mm: _C.fast_scaled_mm,
}


def _call(op, tensors, *args, **kwargs):
    """``op(*args, **kwargs)``, by the cheapest route that does what calling the op would (every op's autograd
    and vmap kernels are C++: csrc/torch/autograd_*.cpp, vmap_kernels.cpp):
    - under torch.func transforms and forward-mode AD: the op itself (``op.default``);
    - on plain tensors (``_plain``): from C++ (``_FAST``) where there is an entry point; else below the
      autograd key when nothing records a graph;
    - otherwise, and under torch.compile, export and jit.trace, the op itself (``op.default``)."""
    try:
        if not torch.compiler.is_compiling():
            if transformed(tensors):
                # What the transforms need is in the dispatcher, after the Autocast kernels (which cast where
                # autograd sees the 16-bit operands).
                return op.default(*args, **kwargs)
            if _plain(tensors):
                fast = _FAST.get(op)
                if fast is not None:
                    try:
                        return fast(*args, **kwargs)
                    except TypeError as e:  # an argument of the wrong type (offs=[...], out_dtype="float")
                        if "incompatible function arguments" not in str(e):
                            raise  # (the op's own TypeErrors: dtypes)
                    return op.default(*args, **kwargs)  # whose schema error names the argument
            if not (torch.is_grad_enabled() and _any_requires_grad(tensors)):
                # Nothing to record: what the Autograd kernel would do, minus its dispatch.
                with _below_autograd():
                    return op.default(*args, **kwargs)
        return op.default(*args, **kwargs)  # (the same Python frame as above: jit.trace's check compares them)
    except NotImplementedError:
        _raise_if_not_dense(op, tensors)
        raise


def not_dense(t: torch.Tensor) -> Optional[str]:
    """What keeps `t` from the ops ("a torch.sparse_coo tensor", "a nested tensor"), or None for a
    dense (strided) tensor."""
    if t.is_nested:
        return "a nested tensor"
    return None if t.layout == torch.strided else f"a {t.layout} tensor"


def _raise_if_not_dense(op, tensors) -> None:
    """A clear TypeError where the dispatcher found no kernel because an operand is sparse or
    nested (the ops take dense, strided tensors; cutorch_gemm.matmul / linear fall back to PyTorch)."""
    name = op._qualified_op_name.split("::")[-1]
    names = _TENSOR_ARGS.get(name, ())
    for i, t in enumerate(tensors):
        what = not_dense(t) if isinstance(t, torch.Tensor) else None
        if what is not None:
            arg = names[i] if i < len(names) else f"tensor argument {i}"
            raise TypeError(f"gemm.{name}: {arg} is {what}; the ops take dense (strided) tensors "
                            f"(cutorch_gemm.matmul / linear hand such operands to PyTorch)") from None


# The tensors each wrapper passes to _call, by name (grouped_gemm: its lists, flattened).
_TENSOR_ARGS = {"mm": ("a", "b"), "bmm": ("a", "b"), "gemm": ("a", "b", "bias", "c"), "grouped_mm": ("a", "b", "bias"),
                "scaled_mm": ("a", "b", "scale_a", "scale_b", "bias"), "swiglu": ("gate_up",),
                "moe_combine": ("y", "weights")}


def _act(activation: Optional[str]) -> str:
    """The ops' activation string: None means "none" (like nn.Linear-style keyword defaults)."""
    return "none" if activation is None else activation


def _real(op: str, name: str, value) -> float:
    """A scalar argument (alpha, beta) as the float the op takes. Real numbers, numpy scalars and one-element real
    tensors pass (float() of them); a string, None or a complex number is a TypeError naming the argument (float()
    alone took alpha="2" and said nothing of which argument a complex one was)."""
    if type(value) is float:  # the common case, first: this runs on every call
        return value
    if not (value is None or isinstance(value, (str, bytes, complex))
            or (isinstance(value, torch.Tensor) and (value.numel() != 1 or value.is_complex()))):
        try:
            return float(value)
        except (TypeError, ValueError):
            pass
    raise TypeError(f"gemm.{op}: {name} must be a real number, got {type(value).__name__} {value!r}")


def mm(a: torch.Tensor, b: torch.Tensor, *, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """Matrix product ``a @ b``.

    Args:
        a: (M, K), any strides; float16, bfloat16, float32, float64, or int8.
        b: (K, N), same dtype and device as ``a``, any strides.
        out_dtype: dtype of the result (None: ``a.dtype``; float32 allowed for 16-bit inputs).
            int8 inputs give an exact int32 result (like ``torch._int_mm``; None or int32).

    Returns:
        (M, N) contiguous tensor.
    """
    return _call(torch.ops.gemm.mm, (a, b), a, b, out_dtype=out_dtype)


def gemm(a: torch.Tensor, b: torch.Tensor, *, bias: Optional[torch.Tensor] = None,
         c: Optional[torch.Tensor] = None, alpha: float = 1.0, beta: float = 0.0,
         activation: Optional[str] = "none", out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """Fused GEMM: ``D = act(alpha * (a @ b) + beta * c + bias)``, one rounding at the end.

    Args:
        a: (M, K).
        b: (K, N).
        bias: optional (N,), broadcast over rows, dtype of ``a``.
        c: optional (M, N), any strides, dtype of ``a``. Read only when ``beta != 0``
            (BLAS convention: with beta == 0, NaN/Inf in ``c`` do not propagate).
        alpha, beta: scalars.
        activation: one of "none" (or None), "relu", "gelu" (erf), "gelu_tanh", "silu". The Hopper kernels'
            register epilogues evaluate them in fp32 with fast forms: GELU's erf within 1e-6 |x|, GELU-tanh's
            tanh the hardware's (relative error ~2^-11), before D's one rounding.
        out_dtype: dtype of D (None: ``a.dtype``; float32 allowed for 16-bit inputs).

    Returns:
        D, (M, N) contiguous.
    """
    return _call(torch.ops.gemm.gemm, (a, b, bias, c), a, b, bias=bias, c=c, alpha=_real("gemm", "alpha", alpha),
                 beta=_real("gemm", "beta", beta), activation=_act(activation), out_dtype=out_dtype)


def bmm(a: torch.Tensor, b: torch.Tensor, *, out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """Batched matrix product: a (B, M, K) @ b (B, K, N) -> (B, M, N) contiguous.

    Batch strides may be anything (including 0, i.e. an expanded operand).
    """
    return _call(torch.ops.gemm.bmm, (a, b), a, b, out_dtype=out_dtype)


def grouped_mm(a: torch.Tensor, b: torch.Tensor, offs: Optional[torch.Tensor] = None, *,
               bias: Optional[torch.Tensor] = None, activation: Optional[str] = "none",
               out_dtype: Optional[torch.dtype] = None) -> torch.Tensor:
    """Grouped GEMM with ``torch._grouped_mm`` semantics; ``offs`` is int32 cumulative group ends.

    Layouts (G groups):
        2D x 3D: a (T, K), b (G, K, N), offs (G,) along T -> (T, N). Group g is rows
            [offs[g-1], offs[g]) of ``a``; rows at or past offs[-1] are zero.
            bias: (G, N).
        3D x 2D: a (G, M, K), b (K, T), offs (G,) along T -> (M, T). Group g is columns
            [offs[g-1], offs[g]) of ``b``; columns at or past offs[-1] are zero. bias: (T,).
        2D x 2D: a (M, T), b (T, N), offs (G,) along the reduction -> (G, M, N): group g
            multiplies columns [offs[g-1], offs[g]) of ``a`` by those rows of ``b`` (the MoE
            weight gradient). An empty group gives act(bias[g]). bias: (G, N).
        3D x 3D: a (G, M, K), b (G, K, N), offs None -> (G, M, N). bias: (G, N).

    ``activation`` is one of :func:`gemm`'s, or "swiglu" (2D x 3D and 3D x 3D only): b's N is
    laid out [gate | up] (an MoE up-projection, N = 2F), the result is
    ``silu(z[..., :F]) * z[..., F:]`` with ``z = a @ b + bias``, of width F, rounded once.

    ``offs`` stays on the device: no host synchronisation. On the CPU, offsets that decrease
    or exceed the grouped extent raise ValueError; on the GPU they are clamped (never an
    out-of-bounds access).
    """
    return _call(torch.ops.gemm.grouped_mm, (a, b, bias), a, b, offs, bias=bias, activation=_act(activation),
                 out_dtype=out_dtype)


def grouped_gemm(a: Sequence[torch.Tensor], b: Sequence[torch.Tensor], *,
                 bias: Optional[Sequence[torch.Tensor]] = None,
                 activation: Optional[str] = "none",
                 out_dtype: Optional[torch.dtype] = None) -> list[torch.Tensor]:
    """A list of independent problems, each its own shape: ``out[i] = act(a[i] @ b[i] + bias[i])``.

    Args:
        a: list of (M_i, K_i).
        b: list of (K_i, N_i), same length as ``a``.
        bias: optional list, same length as ``a``, of (N_i,) tensors (all or none).
        activation, out_dtype: as in :func:`gemm`, shared by all problems.

    Returns:
        list of (M_i, N_i) contiguous tensors.
    """
    a_list, b_list = list(a), list(b)
    bias_list = None if bias is None else list(bias)
    if not a_list and not b_list and not bias_list:  # no problems (the op needs a tensor to dispatch on)
        return []
    tensors = a_list + b_list + (bias_list or [])
    return list(_call(torch.ops.gemm.grouped_gemm, tensors, a_list, b_list, bias=bias_list,
                      activation=_act(activation), out_dtype=out_dtype))


def scaled_mm(a: torch.Tensor, b: torch.Tensor, scale_a: torch.Tensor, scale_b: torch.Tensor, *,
              bias: Optional[torch.Tensor] = None, out_dtype: torch.dtype = torch.bfloat16,
              use_fast_accum: bool = False) -> torch.Tensor:
    """8-bit float GEMM with scales: ``D = scale_a * scale_b * (a @ b) + bias``, like ``torch._scaled_mm``.

    Args:
        a: (M, K), torch.float8_e4m3fn or torch.float8_e5m2, any strides (row-major is the
            fast layout on Hopper).
        b: (K, N), either 8-bit format (independently of ``a``), any strides (column-major,
            i.e. ``w.t()`` of a row-major (N, K) weight, is the fast layout on Hopper).
        scale_a: float32, one element (per-tensor) or (M, 1) (one per row of ``a``).
        scale_b: float32, one element (per-tensor) or (1, N) (one per column of ``b``).
        bias: optional (N,), bfloat16, float16 or float32.
        out_dtype: bfloat16 (default), float16 or float32.
        use_fast_accum: as ``torch._scaled_mm``'s. False (default): on Hopper each 128-K block's
            products are added to an fp32 accumulator (bit-identical to torch's default). True:
            they are chained over all of K in the tensor core, whose 8-bit accumulation keeps
            fewer bits, so the error grows with K (as torch's fast mode); faster. The CPU
            reference and the non-Hopper path are exact either way.

    Products and sums are exact-input fp32 (the 8-bit values upcast exactly); the scales and the
    bias are applied to the fp32 sums, then D is rounded once. Gradients flow to the scales and
    the bias, not to the 8-bit operands.

    Returns:
        D, (M, N) contiguous.
    """
    return _call(torch.ops.gemm.scaled_mm, (a, b, scale_a, scale_b, bias), a, b, scale_a, scale_b, bias,
                 out_dtype=out_dtype, use_fast_accum=bool(use_fast_accum))


def swiglu(gate_up: torch.Tensor) -> torch.Tensor:
    """SwiGLU over the last dimension laid out [gate | up]: ``silu(gate) * up``.

    The element-wise half of a gated MLP (Llama's ``down(silu(gate(x)) * up(x))``) when the
    GEMM output must be kept for the backward; in one pass (math in fp32, one rounding), where
    PyTorch's ``F.silu(gate) * up`` takes two. The layout is that of
    ``grouped_mm(..., activation="swiglu")``, which fuses the same function into its epilogue.

    Args:
        gate_up: (..., 2F), float16, bfloat16, float32 or float64, any strides.

    Returns:
        (..., F) contiguous. Differentiable (backward: ``torch.ops.gemm.swiglu_backward``).
    """
    return _call(torch.ops.gemm.swiglu, (gate_up,), gate_up)


def moe_combine(y: torch.Tensor, inv: torch.Tensor, weights: Optional[torch.Tensor], k: int) -> torch.Tensor:
    """The Mixture-of-Experts combine: ``out[t] = sum_j weights[t, j] * y[inv[t * k + j]]``.

    ``y`` holds each token's k expert outputs as rows in any order (``nn.GroupedExperts`` keeps
    them sorted by expert); ``inv[t * k + j]`` is the row of token t's j-th slot. One pass, sums
    in fp32 (fp64 for fp64) in slot order, one rounding: deterministic, where a weighting pass
    plus ``index_add_`` uses atomics.

    Args:
        y: (T * k, H), float16, bfloat16, float32 or float64.
        inv: (T * k,) int64 or int32 row indices (a permutation of the rows; an index outside
            [0, T * k) contributes nothing).
        weights: (T, k) floating (used in fp32), or None for a plain sum.
        k: slots per token.

    Returns:
        (T, H) of y's dtype. Differentiable in y and weights (backward:
        ``torch.ops.gemm.moe_combine_backward``).
    """
    tensors = (y,) if weights is None else (y, weights)
    return _call(torch.ops.gemm.moe_combine, tensors, y, inv, weights, int(k))

