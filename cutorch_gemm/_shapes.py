"""Shape and dtype rules of the ops, in Python, for the fake kernels (torch.compile traces
them with symbolic sizes). The C++ checks (csrc/torch/checks.cpp) are the same rules for real
tensors; both raise ValueError / TypeError naming the argument."""
from __future__ import annotations

from typing import Optional

import torch

FLOATS = (torch.float16, torch.bfloat16, torch.float32, torch.float64)
ACTS = ("none", "relu", "gelu", "gelu_tanh", "silu")


def _check(cond, exc, msg):
    if not cond:
        raise exc(msg)


def _input(op, name, t, rank, expected):
    _check(t.dim() == rank, ValueError, f"{op}: {name} must be a {rank}-D tensor {expected}, got shape {tuple(t.shape)}")
    hint = (" (int8 x int8 -> int32 is gemm.mm only)" if t.dtype == torch.int8
            else " (or int8 x int8 -> int32)" if op == "gemm.mm" else "")
    _check(t.dtype in FLOATS, TypeError,
           f"{op}: {name} has dtype {t.dtype}; expected float16, bfloat16, float32 or float64{hint}")


def _same(op, name, t, a):
    _check(t.dtype == a.dtype, TypeError, f"{op}: {name} has dtype {t.dtype} but a has dtype {a.dtype}; expected the same dtype")
    _check(t.device == a.device, ValueError, f"{op}: {name} is on {t.device} but a is on {a.device}; expected the same device")


def out_dtype(op, a_dtype, out: Optional[torch.dtype]) -> torch.dtype:
    if out is None or out == a_dtype:
        return a_dtype
    ok = a_dtype in (torch.float16, torch.bfloat16) and out == torch.float32
    _check(ok, TypeError, f"{op}: unsupported out_dtype {out} for inputs of dtype {a_dtype}")
    return out


def activation(op, act: str):
    _check(act in ACTS, ValueError, f"{op}: unknown activation '{act}'; expected one of {', '.join(ACTS)}")


def _bias(op, bias, a, expected):
    _same(op, "bias", bias, a)
    _check(tuple(bias.shape) == tuple(expected), ValueError,
           f"{op}: bias must have shape {tuple(expected)}, got {tuple(bias.shape)}")


def mm(a, b, out=None):
    """gemm.mm: the gemm rules, plus int8 x int8 -> int32 (like torch._int_mm). (M, N, out_dtype)."""
    op = "gemm.mm"
    if a.dtype != torch.int8:
        return gemm(op, a, b, out=out)
    _check(a.dim() == 2, ValueError, f"{op}: a must be a 2-D tensor (M, K), got shape {tuple(a.shape)}")
    _check(b.dim() == 2, ValueError, f"{op}: b must be a 2-D tensor (K, N), got shape {tuple(b.shape)}")
    _check(b.dtype == torch.int8, TypeError,
           f"{op}: b has dtype {b.dtype} but a has dtype int8; expected int8 (int8 x int8 -> int32)")
    _check(b.device == a.device, ValueError, f"{op}: b is on {b.device} but a is on {a.device}; expected the same device")
    _check(b.shape[0] == a.shape[1], ValueError,
           f"{op}: b must have shape (K={a.shape[1]}, N) to match a of shape {tuple(a.shape)}, got {tuple(b.shape)}")
    _check(out is None or out == torch.int32, TypeError,
           f"{op}: unsupported out_dtype {out} for int8 inputs; expected None or int32")
    return a.shape[0], b.shape[1], torch.int32


def gemm(op, a, b, bias=None, c=None, act="none", out=None):
    """Returns (M, N, out_dtype)."""
    _input(op, "a", a, 2, "(M, K)")
    _input(op, "b", b, 2, "(K, N)")
    _same(op, "b", b, a)
    _check(b.shape[0] == a.shape[1], ValueError,
           f"{op}: b must have shape (K={a.shape[1]}, N) to match a of shape {tuple(a.shape)}, got {tuple(b.shape)}")
    dt = out_dtype(op, a.dtype, out)
    activation(op, act)
    m, n = a.shape[0], b.shape[1]
    if bias is not None:
        _bias(op, bias, a, (n,))
    if c is not None:
        _same(op, "c", c, a)
        _check(c.dim() == 2 and c.shape[0] == m and c.shape[1] == n, ValueError,
               f"{op}: c must have shape (M={m}, N={n}), got {tuple(c.shape)}")
    return m, n, dt


def bmm(a, b, out=None):
    op = "gemm.bmm"
    _input(op, "a", a, 3, "(B, M, K)")
    _input(op, "b", b, 3, "(B, K, N)")
    _same(op, "b", b, a)
    _check(b.shape[0] == a.shape[0] and b.shape[1] == a.shape[2], ValueError,
           f"{op}: b must have shape (B={a.shape[0]}, K={a.shape[2]}, N) to match a of shape {tuple(a.shape)}, got {tuple(b.shape)}")
    return (a.shape[0], a.shape[1], b.shape[2]), out_dtype(op, a.dtype, out)


def grouped(a, b, offs, bias, act, out):
    """Returns (out_shape, out_dtype, layout) with layout in {"2d3d", "3d2d", "2d2d", "3d3d"}."""
    op = "gemm.grouped_mm"
    _check(a.dim() in (2, 3) and b.dim() in (2, 3), ValueError,
           f"{op}: a and b must be 2-D or 3-D, got a {tuple(a.shape)} and b {tuple(b.shape)}")
    _input(op, "a", a, a.dim(), "(M, K)" if a.dim() == 2 else "(G, M, K)")
    _input(op, "b", b, b.dim(), "(K, N)" if b.dim() == 2 else "(G, K, N)")
    _same(op, "b", b, a)
    dt = out_dtype(op, a.dtype, out)
    swiglu = act == "swiglu"
    if not swiglu:
        _check(act in ACTS, ValueError,
               f"{op}: unknown activation '{act}'; expected one of {', '.join(ACTS)}, swiglu")
    _check(a.shape[-1] == b.shape[-2], ValueError,
           f"{op}: b's reduction dimension (size(-2)) must equal a's (size(-1)={a.shape[-1]}), got b of shape {tuple(b.shape)}")
    if a.dim() == 3 and b.dim() == 3:
        _check(offs is None, ValueError, f"{op}: offs must be None for 3D x 3D (batched) inputs")
        _check(a.shape[0] == b.shape[0], ValueError, f"{op}: b must have shape (G={a.shape[0]}, K, N), got {tuple(b.shape)}")
        g, shape, layout = a.shape[0], (a.shape[0], a.shape[1], b.shape[2]), "3d3d"
    else:
        _check(offs is not None, ValueError, f"{op}: offs is required for {a.dim()}D x {b.dim()}D inputs")
        _check(offs.dtype == torch.int32, TypeError, f"{op}: offs must have dtype int32, got {offs.dtype}")
        _check(offs.dim() == 1, ValueError, f"{op}: offs must be 1-D (G,), got shape {tuple(offs.shape)}")
        _check(offs.device == a.device, ValueError, f"{op}: offs is on {offs.device} but a is on {a.device}")
        if a.dim() == 2 and b.dim() == 3:
            g, shape, layout = b.shape[0], (a.shape[0], b.shape[2]), "2d3d"
        elif a.dim() == 3:
            g, shape, layout = a.shape[0], (a.shape[1], b.shape[1]), "3d2d"
        else:
            g, shape, layout = offs.shape[0], (offs.shape[0], a.shape[0], b.shape[1]), "2d2d"
        _check(offs.shape[0] == g, ValueError, f"{op}: offs must have shape (G={g},), got {tuple(offs.shape)}")
    if bias is not None:
        _bias(op, bias, a, (shape[-1],) if layout == "3d2d" else (g, shape[-1]))
    if swiglu:
        _check(layout in ("2d3d", "3d3d"), ValueError,
               f"{op}: activation 'swiglu' needs 2D x 3D (groups along M) or 3D x 3D inputs, whose N is "
               f"[gate | up]; got a {tuple(a.shape)} and b {tuple(b.shape)}")
        _check(shape[-1] % 2 == 0, ValueError,
               f"{op}: activation 'swiglu' splits N into [gate | up] halves: N must be even, got b of shape "
               f"{tuple(b.shape)}")
        shape = (*shape[:-1], shape[-1] // 2)
    return shape, dt, layout


FP8 = (torch.float8_e4m3fn, torch.float8_e5m2)
SCALED_OUT = (torch.bfloat16, torch.float16, torch.float32)


def _scale(op, name, scale, a, per, per_what):
    """True when `scale` has one value per row / column (`per`), False for one value in all."""
    _check(scale.dtype == torch.float32, TypeError, f"{op}: {name} has dtype {scale.dtype}; expected float32")
    _check(scale.device == a.device, ValueError,
           f"{op}: {name} is on {scale.device} but a is on {a.device}; expected the same device")
    if scale.numel() == 1:
        return False
    _check(tuple(scale.shape) == tuple(per), ValueError,
           f"{op}: {name} must have one element (per-tensor scaling) or shape {tuple(per)} (one per "
           f"{per_what}), got shape {tuple(scale.shape)}")
    return True


def scaled_mm(a, b, scale_a, scale_b, bias=None, out=torch.bfloat16):
    """gemm.scaled_mm: returns (M, N, out_dtype, scale_a per row?, scale_b per column?)."""
    op = "gemm.scaled_mm"
    for name, t, shape in (("a", a, "(M, K)"), ("b", b, "(K, N)")):
        _check(t.dim() == 2, ValueError, f"{op}: {name} must be a 2-D tensor {shape}, got shape {tuple(t.shape)}")
        _check(t.dtype in FP8, TypeError,
               f"{op}: {name} has dtype {t.dtype}; expected torch.float8_e4m3fn or torch.float8_e5m2 "
               "(16-bit and wider inputs: gemm.mm)")
    _check(b.device == a.device, ValueError, f"{op}: b is on {b.device} but a is on {a.device}; expected the same device")
    _check(b.shape[0] == a.shape[1], ValueError,
           f"{op}: b must have shape (K={a.shape[1]}, N) to match a of shape {tuple(a.shape)}, got {tuple(b.shape)}")
    m, n = a.shape[0], b.shape[1]
    rows = _scale(op, "scale_a", scale_a, a, (m, 1), "row of a")
    cols = _scale(op, "scale_b", scale_b, a, (1, n), "column of b")
    _check(out in SCALED_OUT, TypeError, f"{op}: unsupported out_dtype {out}; expected bfloat16, float16 or float32")
    if bias is not None:
        _check(bias.dtype in SCALED_OUT, TypeError,
               f"{op}: bias has dtype {bias.dtype}; expected bfloat16, float16 or float32")
        _check(bias.device == a.device, ValueError,
               f"{op}: bias is on {bias.device} but a is on {a.device}; expected the same device")
        _check(tuple(bias.shape) == (n,), ValueError, f"{op}: bias must have shape ({n},), got {tuple(bias.shape)}")
    return m, n, out, rows, cols
