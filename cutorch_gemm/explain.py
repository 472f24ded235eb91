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
    kernel: str        # kernel family: "cpu_reference", "sm90" (TMA + wgmma) or "simt"
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


def _k_major(t: torch.Tensor, name: str) -> bool:
    """The reduction dimension is contiguous (a: row-major (M, K); b: column-major (K, N)).
    Size-1 dimensions count as stride 1, as in the binding."""
    dim = -1 if name == "a" else -2
    return t.shape[dim] == 1 or t.stride(dim) == 1


def _tma_ok(a: torch.Tensor, b: torch.Tensor, k: int) -> bool:
    """The binding's TMA condition: 16-byte aligned bases and row strides, rows k apart or more."""
    def ok(t, row_stride):
        es = t.element_size()
        return t.data_ptr() % 16 == 0 and (row_stride * es) % 16 == 0 and row_stride >= k
    k_padded = (k + 7) // 8 * 8  # a single row / column: the binding reports a padded stride
    a_rows = (k_padded if _k_major(a, "a") else 1) if a.shape[-2] == 1 else a.stride(-2)
    b_rows = (k_padded if _k_major(b, "b") else 1) if b.shape[-1] == 1 else b.stride(-1)
    return ok(a, a_rows) and ok(b, b_rows)


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
    with torch.cuda.device(a.device):
        sm90_built = _C.sm90_available()
    fam = _C.choose_family(prop.major, dtype, _k_major(a, "a"), _k_major(b, "b"),
                           _tma_ok(a, b, k), op in ("mm", "gemm", "grouped_gemm"), k > 0, sm90_built,
                           "" if forced == "auto" else forced)
    if fam["family"] == "sm90" and m > 0 and n > 0:
        sm90_forced = os.environ.get("CUTORCH_GEMM_SM90_CONFIG", "").strip().lower()
        config = _C.choose_sm90_config(m, n, k, prop.multi_processor_count, sm90_forced)
        return Explanation(op, str(a.device), "sm90", config, 1, layouts,
                           f"sm_{prop.major}{prop.minor}; {fam['reason']}"
                           + (f"; CUTORCH_GEMM_SM90_CONFIG={sm90_forced}" if sm90_forced else ""))
    plan = _C.choose_simt_config(prop.major, prop.minor, dtype, m, n, k, batch,
                                 prop.multi_processor_count, grouped)
    why = [f"sm_{prop.major}{prop.minor}", fam["reason"]]
    if forced == "sm80":
        why.append(f"{ARCH_ENV}=sm80 has no kernels yet (issue 3)")
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
