"""`explain`: which kernel and config a call would use, and why (no kernel runs).

    >>> cutorch_gemm.explain("mm", a, b)
    Explanation(kernel='simt', config='Simt_128x128x8_T8x8', splits=1, ...)
"""
from __future__ import annotations

import dataclasses
import os

import torch

from . import _C, _shapes

ARCH_ENV = "CUTORCH_GEMM_ARCH"
_FORCEABLE = ("auto", "simt", "sm80", "sm90")


@dataclasses.dataclass
class Explanation:
    op: str
    device: str
    kernel: str        # kernel family: "cpu_reference" or "simt" (tensor-core families come later)
    config: str        # the named config (one struct in csrc/include/cutorch_gemm/device/)
    splits: int        # split-K slices (1: none)
    layouts: str       # operand layouts as the kernel sees them
    reason: str

    def __str__(self) -> str:
        split = f", split-K x{self.splits}" if self.splits > 1 else ""
        return (f"gemm.{self.op} on {self.device}: kernel={self.kernel} config={self.config}{split}"
                f" [{self.layouts}]\n  why: {self.reason}")


def _layout(t: torch.Tensor) -> str:
    rows, cols = t.shape[-2], t.shape[-1]
    return _C.classify_layout(rows, cols, t.stride(-2), t.stride(-1))


def _problem(op: str, args, kwargs):
    """(a, b, m, n, k, batch, grouped) of the call, validating it like the op does."""
    if op in ("mm", "gemm"):
        a, b = args[0], args[1]
        bias = kwargs.get("bias", args[2] if len(args) > 2 else None)
        c = kwargs.get("c", args[3] if len(args) > 3 else None)
        m, n, _ = _shapes.gemm(f"gemm.{op}", a, b, bias, c, kwargs.get("activation", "none"),
                               kwargs.get("out_dtype"))
        return a, b, m, n, a.shape[1], 1, False
    if op == "bmm":
        a, b = args[0], args[1]
        shape, _ = _shapes.bmm(a, b, kwargs.get("out_dtype"))
        return a, b, shape[1], shape[2], a.shape[2], shape[0], False
    if op == "grouped_mm":
        a, b = args[0], args[1]
        offs = kwargs.get("offs", args[2] if len(args) > 2 else None)
        bias = kwargs.get("bias", args[3] if len(args) > 3 else None)
        shape, _, layout = _shapes.grouped(a, b, offs, bias, kwargs.get("activation", "none"),
                                           kwargs.get("out_dtype"))
        if layout == "2d3d":
            return a, b, a.shape[0], b.shape[2], a.shape[1], b.shape[0], True
        if layout == "3d2d":
            return a, b, a.shape[1], b.shape[1], a.shape[2], a.shape[0], True
        if layout == "2d2d":
            return a, b, a.shape[0], b.shape[1], a.shape[1], shape[0], True
        return a, b, a.shape[1], b.shape[2], a.shape[2], a.shape[0], False
    if op == "grouped_gemm":
        a_list, b_list = args[0], args[1]
        if not a_list:
            raise ValueError("gemm.grouped_gemm: explain needs at least one problem")
        a, b = a_list[0], b_list[0]
        return a, b, a.shape[0], b.shape[1], a.shape[1], 1, False
    raise ValueError(f"explain: unknown op '{op}'; expected mm, gemm, bmm, grouped_mm or grouped_gemm")


def explain(op: str, *args, **kwargs) -> Explanation:
    """Names the kernel family and config `torch.ops.gemm.<op>(*args, **kwargs)` would run, and why.

    Honours ``CUTORCH_GEMM_ARCH`` (auto | simt | sm80 | sm90), read at call time.
    """
    a, b, m, n, k, batch, grouped = _problem(op, args, kwargs)
    layouts = f"a {_layout(a)}, b {_layout(b)}"
    if a.device.type != "cuda":
        acc = "fp64" if a.dtype == torch.float64 else "fp32"
        return Explanation(op, str(a.device), "cpu_reference", f"aten_{acc}_accumulate", 1, layouts,
                           f"{a.device.type} tensors run the reference: ATen products in {acc}, the "
                           "fusion functor, one rounding to out_dtype")
    if not _C.cuda_built():
        raise RuntimeError("cutorch_gemm was built without CUDA kernels (CPU-only extension)")
    forced = os.environ.get(ARCH_ENV, "auto").strip().lower() or "auto"
    if forced not in _FORCEABLE:
        raise ValueError(f"{ARCH_ENV}={forced!r}; expected one of {', '.join(_FORCEABLE)}")
    prop = torch.cuda.get_device_properties(a.device)
    dtype = str(a.dtype).replace("torch.", "")
    plan = _C.choose_simt_config(prop.major, prop.minor, dtype, m, n, k, batch,
                                 prop.multi_processor_count, grouped)
    why = [f"sm_{prop.major}{prop.minor}"]
    if forced == "simt":
        why.append(f"{ARCH_ENV}=simt forces the SIMT family")
    else:
        why.append("the SIMT family is the only one built so far (tensor-core families: issues 3 and 4)"
                   + (f"; {ARCH_ENV}={forced} has no kernels yet" if forced != "auto" else ""))
    if op == "grouped_gemm":
        why.append("one launch per problem (first problem shown)")
    why.append(plan["reason"])
    vec = []
    for name, t, contig_k in (("a", a, _layout(a) == "row"), ("b", b, _layout(b) == "col")):
        if _layout(t) == "strided":
            vec.append(f"{name} strided: scalar loads")
        else:
            vec.append(f"{name} {'K' if contig_k else 'MN'}-major")
    why.append(", ".join(vec))
    return Explanation(op, str(a.device), "simt", plan["config"], plan["splits"], layouts, "; ".join(why))
