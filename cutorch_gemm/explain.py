"""`explain`: which kernel and config a call would use, and why (no kernel runs).

    >>> cutorch_gemm.explain("mm", a, b)
    Explanation(kernel='simt', config='Simt_128x128x8_T8x8', splits=1, ...)
"""
from __future__ import annotations

import dataclasses
import os

import torch

from . import _C, _shapes
from ._sm90_notes import _bare_note, _c_note, _defer_note, _ksplit_note, _tile_width, _variant_note
from ._sm90_rules import (_ACT_NOTE, _BIG_WHY, _C192X192_NOTE, _C320_NOTE, _FIT192_NOTE, _FIT_NOTE, _MID_NOTES,
                          _PAIR240_NOTE, _PAIRS_NOTE, _cluster_note, _decode_note, _fit_config, _grouped_skinny_plan,
                          _l2_hint_on, _mn_b_note, _operands_rows_128b, _split_fill, _split_kind, _stream_note,
                          _streamk_note, _strides)

ARCH_ENV = "CUTORCH_GEMM_ARCH"
_FORCEABLE = ("auto", "simt", "sm80", "sm90")


@dataclasses.dataclass
class Explanation:
    op: str
    device: str
    kernel: str        # kernel family: "cpu_reference", "sm90" (TMA + wgmma), "sm80" (mma.sync) or "simt"
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


def _sm90_operands(a: torch.Tensor, b: torch.Tensor, k: int, batch: int):
    """The binding's sm90_operand verdicts (ok, mn_major) for a and b."""
    out = []
    for t, k_dim, mn_dim in ((a, -1, -2), (b, -2, -1)):
        k_s, mn_s = _strides(t, k_dim, mn_dim, k)
        batch_stride = t.stride(0) if t.dim() == 3 and batch > 1 else 0
        out.append(_C.sm90_operand(k_s, mn_s, batch_stride, t.data_ptr() % 16 == 0, t.element_size()))
    return out


def _sm80_mn_major(a: torch.Tensor, b: torch.Tensor) -> bool:
    """Whether the sm80 launcher reads a or b MN-major: the binding's strides (set_2d: a size-1
    dim has stride 1; a single row / column, or K = 1, gets a padded stride) and launch_sm80's rule
    (the M or N stride is 1 and the K stride is not)."""
    def st(t, d):
        return 1 if t.size(d) == 1 else t.stride(d)
    a_sm, a_sk, b_sk, b_sn = st(a, -2), st(a, -1), st(b, -2), st(b, -1)
    m, k, n = a.size(-2), a.size(-1), b.size(-1)
    k_padded = (k + 7) // 8 * 8
    if m == 1 and a_sk == 1:
        a_sm = k_padded
    if n == 1 and b_sk == 1:
        b_sn = k_padded
    if k == 1 and a_sm == 1 and m > 1:
        a_sk = (m + 7) // 8 * 8
    if k == 1 and b_sn == 1 and n > 1:
        b_sk = (n + 7) // 8 * 8
    return (a_sk != 1 and a_sm == 1) or (b_sk != 1 and b_sn == 1)


def _sm80_operand_note(name: str, t: torch.Tensor, k_dim: int, mn_dim: int) -> str:
    """How the sm80 loaders read an operand: which shared-memory slice and how wide a copy."""
    k_s = t.stride(k_dim) if t.size(k_dim) > 1 else 1
    mn_s = t.stride(mn_dim) if t.size(mn_dim) > 1 else 1
    if k_s != 1 and mn_s == 1:
        major, row = "MN-major", k_s
    elif k_s == 1:
        major, row = "K-major", mn_s
    else:
        return f"{name} strided: element-wise copies"
    bits = t.data_ptr() | (row * t.element_size())
    width = next((w for w in (16, 8, 4) if bits % w == 0), 0)
    return f"{name} {major}, " + (f"{width}-byte cp.async" if width else "element-wise copies")


def _problem(op: str, args, kwargs):
    """(a, b, m, n, k, batch, grouped) of the call, validating it like the op does."""
    if op == "mm":
        a, b = args[0], args[1]
        m, n, _ = _shapes.mm(a, b, kwargs.get("out_dtype", args[2] if len(args) > 2 else None))
        return a, b, m, n, a.shape[1], 1, False
    if op == "gemm":
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
    raise ValueError(f"explain: unknown op '{op}'; expected mm, gemm, bmm, grouped_mm, grouped_gemm or scaled_mm")


def _forced_arch() -> str:
    forced = os.environ.get(ARCH_ENV, "auto").strip().lower() or "auto"
    if forced not in _FORCEABLE:
        raise ValueError(f"{ARCH_ENV}={forced!r}; expected one of {', '.join(_FORCEABLE)}")
    return forced


def _scaled_sm90_refusal(a: torch.Tensor, b: torch.Tensor, m: int, n: int, k: int) -> str:
    """Why the sm90 8-bit kernels cannot take a scaled_mm call, "" when they can: the binding's
    rule (scaled_mm_sm90_refusal in csrc/torch/cuda/scaled_mm_cuda.cpp)."""
    forced = _forced_arch()
    if forced in ("simt", "sm80"):
        return f"{ARCH_ENV}={forced}"
    with torch.cuda.device(a.device):
        if torch.cuda.get_device_properties(a.device).major != 9 or not _C.sm90_available():
            return "no sm_90a kernels for this GPU"
    if m == 0 or n == 0 or k == 0:
        return "an empty extent"
    k16 = (k + 15) // 16 * 16
    a_ok, a_mn = _C.sm90_operand(1 if k == 1 else a.stride(1), k16 if m == 1 else a.stride(0), 0,
                                 a.data_ptr() % 16 == 0, 1)
    if not a_ok or a_mn:
        return "a is not K-major (row-major) with 16-byte aligned rows"
    b_ok, b_mn = _C.sm90_operand(1 if k == 1 else b.stride(0), k16 if n == 1 else b.stride(1), 0,
                                 b.data_ptr() % 16 == 0, 1)
    if not b_ok or b_mn:
        return "b is not K-major (column-major) with 16-byte aligned columns"
    return ""


def _explain_scaled_mm(args, kwargs) -> Explanation:
    a, b, scale_a, scale_b = args[:4]
    bias = kwargs.get("bias", args[4] if len(args) > 4 else None)
    m, n, _, rows, cols = _shapes.scaled_mm(a, b, scale_a, scale_b, bias, kwargs.get("out_dtype", torch.bfloat16))
    k = a.shape[1]
    layouts = f"a {_layout(a)}, b {_layout(b)}"
    scaling = (f"scale_a {'per row' if rows else 'per tensor'}, scale_b {'per column' if cols else 'per tensor'}"
               + (", bias" if bias is not None else ""))
    if a.device.type != "cuda":
        return Explanation("scaled_mm", str(a.device), "cpu_reference", "aten_fp32_accumulate", 1, layouts,
                           f"{a.device.type} tensors run the reference: exact fp32 upcasts, fp32 products, "
                           f"{scaling} in fp32, one rounding to out_dtype")
    if not _C.cuda_built():
        raise RuntimeError("cutorch_gemm was built without CUDA kernels (CPU-only extension)")
    refusal = _scaled_sm90_refusal(a, b, m, n, k)
    prop = torch.cuda.get_device_properties(a.device)
    if not refusal:
        forced = os.environ.get("CUTORCH_GEMM_SM90_CONFIG", "").strip().lower()
        config = _C.choose_sm90_config(m, n, k, 1, prop.multi_processor_count, forced, elem_bytes=1,
                                       fast_accum=bool(kwargs.get("use_fast_accum", False)))
        kinds = f"{str(a.dtype).replace('torch.float8_', '')} x {str(b.dtype).replace('torch.float8_', '')}"
        accum = ("products chained over all of K in the tensor core (use_fast_accum)"
                 if kwargs.get("use_fast_accum", False) else "each 128-K block promoted to the fp32 accumulator")
        splits, chunk = 1, 0
        if "x192x" not in config:  # the binding's split-K rule (16-bit rule, 128-element K slices)
            splits, chunk = _C.choose_sm90_split(m, n, k, prop.multi_processor_count, _split_kind(config),
                                                 _split_fill(), block_k=128)
        where = ("the fp32 accumulators in the epilogue" if splits == 1 else
                 f"the sum of split-K x{splits}'s fp32 partials (K ranges of {chunk}: the tiles alone would "
                 "leave SMs idle), in split order")
        cluster_note = _cluster_note(config, True, False, m, a, b, splits == 1, n, k, prop.multi_processor_count,
                                     block_k=128)
        return Explanation("scaled_mm", str(a.device), "sm90", config, splits, layouts,
                           f"sm_{prop.major}{prop.minor}; TMA + 8-bit wgmma ({kinds}), both operands K-major, "
                           f"{accum}; "
                           f"{scaling} applied to {where}"
                           + cluster_note + _stream_note(config, m, "none", 1, b, chunk if splits > 1 else 0,
                                                         cluster_note))
    inner = explain("gemm", a.to(torch.bfloat16), b.to(torch.bfloat16), out_dtype=torch.float32)
    return Explanation("scaled_mm", str(a.device), inner.kernel, inner.config, inner.splits, layouts,
                       f"exact bf16 upcasts of a and b ({refusal}), then the bf16 GEMM: {inner.reason}; "
                       f"{scaling} applied afterwards in fp32")


def explain(op: str, *args, **kwargs) -> Explanation:
    """Names the kernel family and config `torch.ops.gemm.<op>(*args, **kwargs)` would run, and why.

    Honours ``CUTORCH_GEMM_ARCH`` (auto | simt | sm80 | sm90), read at call time.
    """
    if op == "scaled_mm":
        return _explain_scaled_mm(args, kwargs)
    e = _explain_gemm(op, args, kwargs)
    if op == "grouped_gemm":
        return _explain_grouped_gemm(e, args, kwargs)
    if op == "grouped_mm" and kwargs.get("activation") == "swiglu" and not e.config.startswith("Sm90_Skinny_"):
        a = args[0]
        b = args[1]
        up_aligned = "b MN-major" not in e.reason or (b.shape[-1] // 2 * b.element_size()) % 16 == 0
        fused = (e.kernel == "sm90" and _layout(a) == "row" and up_aligned
                 and a.dtype in (torch.float16, torch.bfloat16))  # the binding's sm90_swiglu_ran
        if fused:
            e.splits = 1  # the SwiGLU variant never splits K
            e.reason = e.reason.split("; split-K x")[0]
            e.reason += ("; swiglu fused into the epilogue: each B tile holds 128 gate and the matching 128 up "
                         "columns, D gets silu(gate) * up")
        else:
            e.reason = e.reason.split("; each tile's silu(gate) * up")[0]  # (no fused SwiGLU to defer)
            e.reason += ("; swiglu unfused: the GEMM writes z = a @ b + bias (full width) in the accumulator "
                         "dtype, then silu(gate) * up runs as a separate element-wise pass"
                         + ("" if up_aligned else " (b MN-major with N/2 columns not 16-byte aligned: the up "
                            "half's TMA boxes cannot start there)"))
    return e


def _explain_grouped_gemm(first: Explanation, args, kwargs) -> Explanation:
    """The pointer-array launch's rule (the binding's grouped_gemm_sm90_ptr): two or more
    fp16/bf16 problems that on average do not fill the GPU (sm90_ptr_array_pays), each with K > 0
    on the sm90 family with a K-major a, one b majorness."""
    if first.kernel == "cpu_reference":
        return first
    a_list, b_list = list(args[0]), list(args[1])
    why = None
    if len(a_list) < 2:
        why = "a single problem"
    elif a_list[0].device.type != "cuda" or a_list[0].dtype not in (torch.float16, torch.bfloat16):
        why = "the pointer-array kernel takes fp16/bf16 CUDA tensors"
    elif _ptr_knob() == "off":
        why = "CUTORCH_GEMM_GROUPED_PTR=off"
    elif _ptr_knob() != "on" and not _ptr_array_pays(a_list, b_list):
        why = "the problems' 128x256 tiles fill the GPU on average: one launch each is faster"
    else:
        b_majors = set()
        for i, (a, b) in enumerate(zip(a_list, b_list)):
            if 0 in (a.shape[0], a.shape[1], b.shape[1]):
                continue
            sub = _explain_gemm("gemm", (a, b), {}, skinny=False)  # the binding asks the family rule
            if sub.kernel != "sm90" or "a MN-major" in sub.reason:
                why = f"problem {i} is not on the sm90 family with a K-major a ({sub.reason})"
                break
            b_majors.add("b MN-major" in sub.reason)
        if why is None and len(b_majors) > 1:
            why = "the problems' b operands differ in majorness"
    if why is None:
        prop = torch.cuda.get_device_properties(a_list[0].device)
        ms = [a.shape[0] for a in a_list]
        ns = [b.shape[1] for b in b_list]
        config = _C.choose_sm90_config(round(sum(ms) / len(ms)), round(sum(ns) / len(ns)),
                                       max(a.shape[1] for a in a_list), len(a_list), prop.multi_processor_count,
                                       os.environ.get("CUTORCH_GEMM_SM90_CONFIG", "").strip().lower())
        return Explanation("grouped_gemm", first.device, "sm90", config, 1, first.layouts,
                           f"pointer-array: one persistent launch over the tiles of all {len(a_list)} problems "
                           "(each its own tensor maps and arguments, tile counts computed on the host); "
                           "first problem's layouts shown")
    first.reason += f"; one launch per problem (first problem shown): {why}"
    return first


def _ptr_knob() -> str:
    """CUTORCH_GEMM_GROUPED_PTR (on / off), read as the binding reads it."""
    return os.environ.get("CUTORCH_GEMM_GROUPED_PTR", "").strip().lower()


def _ptr_array_pays(a_list, b_list) -> bool:
    """The binding's sm90_ptr_array_pays: the problems' 128x256 tiles, on average, fewer than the SMs."""
    sms = torch.cuda.get_device_properties(a_list[0].device).multi_processor_count
    tiles = sum(-(-a.shape[0] // 128) * -(-b.shape[1] // 256) for a, b in zip(a_list, b_list))
    return tiles < len(a_list) * sms


def _explain_gemm(op: str, args, kwargs, skinny: bool = True) -> Explanation:
    a, b, m, n, k, batch, grouped = _problem(op, args, kwargs)
    layouts = f"a {_layout(a)}, b {_layout(b)}"
    if a.device.type != "cuda":
        acc = "fp64" if a.dtype == torch.float64 else "fp32"
        return Explanation(op, str(a.device), "cpu_reference", f"aten_{acc}_accumulate", 1, layouts,
                           f"{a.device.type} tensors run the reference: ATen products in {acc}, the "
                           "fusion functor, one rounding to out_dtype")
    if not _C.cuda_built():
        raise RuntimeError("cutorch_gemm was built without CUDA kernels (CPU-only extension)")
    forced = _forced_arch()
    prop = torch.cuda.get_device_properties(a.device)
    dtype = str(a.dtype).replace("torch.", "")
    with torch.cuda.device(a.device):
        sm90_built = _C.sm90_available()
        sm80_built = _C.sm80_available()
    op_a, op_b = _sm90_operands(a, b, k, batch)
    mode = "none"
    if op == "grouped_mm" and grouped:
        mode = {(2, 3): "m", (3, 2): "n", (2, 2): "k"}[(a.dim(), b.dim())]
    if skinny and mode == "none" and m > 0 and n > 0 and k > 0 and a.dtype in (torch.float16, torch.bfloat16):
        # the binding's skinny rule (small M, K-contiguous a and b), checked before the families
        a_k, a_m = _strides(a, -1, -2, k)
        b_k, b_n = _strides(b, -2, -1, k)
        knob = os.environ.get("CUTORCH_GEMM_SKINNY", "").strip().lower()
        splits_env = os.environ.get("CUTORCH_GEMM_SKINNY_SPLITS", "").strip()
        forced_splits = int(splits_env) if splits_env.isdigit() else 0
        sk90 = _C.sm90_skinny_plan(prop.major, sm90_built, dtype, batch, m, n, k, a_m, a_k, b_k, b_n,
                                   a.data_ptr() % 16 == 0, b.data_ptr() % 16 == 0,
                                   "" if forced == "auto" else forced, knob, prop.multi_processor_count,
                                   forced_splits, os.environ.get("CUTORCH_GEMM_SKINNY_RING", ""))
        if sk90["taken"]:
            return Explanation(op, str(a.device), "sm90", sk90["config"], sk90["splits"], layouts,
                               f"sm_{prop.major}{prop.minor}; M = {m} against a streamed weight: the Hopper "
                               "skinny kernel (D^T = W x^T: TMA streams 64-row W boxes into wgmma with the "
                               f"{sk90['config'].split('T')[-1]} token columns on N; K split over a cluster of "
                               f"{sk90['splits']} CTA(s) whose partial tiles are summed in distributed shared memory; "
                               f"a {sk90['stages']}-stage ring"
                               + (" where its CTAs are all resident at once, else 6" if sk90["stages"] == 12 else "")
                               + ")"
                               + ("; W's TMA loads carry the L2 evict-first policy" if _l2_hint_on() else "")
                               + (f"; CUTORCH_GEMM_SKINNY={knob}" if knob else ""))
        sk = _C.skinny_plan(prop.major, sm80_built, dtype, batch, m, n, k, a_m, a_k, b_k, b_n,
                            a.data_ptr() % 16 == 0, b.data_ptr() % 16 == 0,
                            "" if forced == "auto" else forced, knob, prop.multi_processor_count)
        if sk["taken"]:
            return Explanation(op, str(a.device), "sm80", sk["config"], 1, layouts,
                               f"sm_{prop.major}{prop.minor}; M = {m} against a streamed weight: the "
                               "skinny kernel (D^T = W x^T on mma.sync, fragments loaded from global memory, "
                               "K split over the CTA's warps and summed in shared memory)"
                               + (f"; CUTORCH_GEMM_SKINNY={knob}" if knob else ""))
    if (mode == "m" and m > 0 and n > 0 and k > 0 and batch > 0 and a.dtype in (torch.float16, torch.bfloat16)):
        # the binding's grouped skinny rule (MoE decode), checked before the families
        swiglu = kwargs.get("activation", "none") == "swiglu"
        gs = _grouped_skinny_plan(a, b, m, n, k, batch, prop, sm90_built, dtype, forced, swiglu)
        if gs["taken"]:
            return Explanation(op, str(a.device), "sm90", gs["config"], gs["splits"], layouts,
                               f"sm_{prop.major}{prop.minor}; M = {m} rows over {batch} groups (decode): the "
                               "grouped Hopper skinny kernel (each non-empty group's D^T = W_g x_g^T: TMA streams "
                               "64-row boxes of the group's weight into wgmma; work items are the 64-row W tiles "
                               f"of at most {gs['slots']} groups with rows, found from the device offsets"
                               + ("; a persistent grid, the next item's loads under this one's epilogue)"
                                  if gs["splits"] == 1 else
                                  f"; K split over a cluster of {gs['splits']} CTAs, partial tiles summed in "
                                  "distributed shared memory)")
                               + ("; W's TMA loads carry the L2 evict-first policy" if _l2_hint_on() else "")
                               + ("; swiglu fused: an item is 32 output columns, its W box the matching 32 gate "
                                  "and 32 up rows, D gets silu(gate) * up" if swiglu else ""))
    fam = _C.choose_family(prop.major, dtype, op_a, op_b, mode, k > 0, sm90_built, sm80_built,
                           torch.backends.cuda.matmul.allow_tf32, "" if forced == "auto" else forced)
    m_per, n_per = m, n
    if op == "grouped_mm" and a.dim() == 2 and b.dim() == 3:    # groups along M
        m_per = -(-m // batch)
    if op == "grouped_mm" and a.dim() == 3 and b.dim() == 2:    # groups along N
        n_per = -(-n // batch)
    if fam["family"] == "sm90" and m > 0 and n > 0 and batch > 0:
        sm90_forced = os.environ.get("CUTORCH_GEMM_SM90_CONFIG", "").strip().lower()
        swiglu = kwargs.get("activation", "none") == "swiglu"
        # the binding's 64x128 config: fp16 / bf16 launches that are dense, batched or grouped along
        # M (CUTORCH_GEMM_SM90_GROUPED_NARROW=off: not grouped), not SwiGLU; grouped along M, the
        # groups that can have tiles are at most the rows (heuristic_extents)
        grouped_narrow = os.environ.get("CUTORCH_GEMM_SM90_GROUPED_NARROW", "").strip().lower() != "off"
        narrow = (a.dtype in (torch.float16, torch.bfloat16) and not swiglu
                  and (mode == "none" or (mode == "m" and grouped_narrow)))
        problems = max(1, min(batch, m)) if mode == "m" and not swiglu else batch
        # one dense problem (fp16 / bf16, or tf32): would the cooperative config take stream-K (the
        # wave rule keeps it then)
        coop_sk = (mode == "none" and batch == 1 and a.element_size() in (2, 4) and not swiglu
                   and _C.sm90_coop_streamk(
                       m, n, k, prop.multi_processor_count,
                       _operands_rows_128b(a, b),
                       os.environ.get("CUTORCH_GEMM_SM90_CLUSTER", "").strip(),
                       os.environ.get("CUTORCH_GEMM_SM90_STREAMK", "").strip().lower(),
                       block_k=32 if a.element_size() == 4 else 64))
        config = _C.choose_sm90_config(m_per, n_per, k, problems, prop.multi_processor_count, sm90_forced,
                                       elem_bytes=a.element_size(), narrow=narrow, coop_streamk=coop_sk)
        # The mid-size rule that acted (choose_sm90_config: one dense fp16 / bf16 problem)
        mid_note = ""
        if not sm90_forced and narrow and problems == 1:
            mid_note = _MID_NOTES.get(_C.sm90_mid_size_rule(m_per, n_per, k, prop.multi_processor_count), "")
        fit = _fit_config(a, b, op_a, op_b, mode, batch, m, n, k, prop.multi_processor_count, sm90_forced, kwargs,
                          config, coop_sk)
        # (the 192-wide fit tile and the 240-wide pairs defer their store like the 128x256 one; the pair rule may
        # also give the latter)
        direct_fit = bool(fit) and (fit.startswith("Sm90_192x192x")
                                    or not any(w in fit for w in ("x192x", "x240x", "x256x")))
        # (fit widths that are not multiples of 64 run their deferring twin where every tile defers: launch_sm90_fit)
        if direct_fit and _tile_width(fit) % 64 != 0 and _defer_note(fit, a, mode, n, 1, kwargs) and \
                os.environ.get("CUTORCH_GEMM_SM90_FIT_DEFER", "").strip().lower() != "off":
            direct_fit = False
        if fit:
            config, mid_note = fit, (_PAIRS_NOTE if not _operands_rows_128b(a, b) and not sm90_forced
                                     else _FIT_NOTE if direct_fit
                                     else _PAIR240_NOTE if "x240x" in fit else _FIT192_NOTE)
            mid_note += _mn_b_note(fit, op_b[1])
            if "x320x" in fit or fit.startswith("Sm90_192x192x"):  # (choose_sm90_big)
                why = (f"forced: CUTORCH_GEMM_SM90_CONFIG={sm90_forced}" if sm90_forced
                       else _BIG_WHY.format(min_k=_C.SM90_BIG_MIN_K, max_k=_C.SM90_BIG_MAX_K))
                mid_note = (_C320_NOTE if "x320x" in fit else _C192X192_NOTE).format(why=why)
        fit = fit if "x256x" not in fit else ""  # (the binding's split-K rule still sees a 128x256 config)
        # the activation rule (choose_sm90_act, opt-in): the 128x256 tiles the rules above left, with an activation
        if a.dtype in (torch.float16, torch.bfloat16) and mode == "none" and batch == 1:
            act = _C.choose_sm90_act(config, m, n, k, kwargs.get("activation", "none") not in (None, "none"),
                                     _operands_rows_128b(a, b), not (op_a[1] or op_b[1]), sm90_forced,
                                     os.environ.get("CUTORCH_GEMM_SM90_ACT_PINGPONG", "").strip().lower() == "on")
            if act:
                config, mid_note = act, _ACT_NOTE.format(max_k=_C.SM90_ACT_PINGPONG_MAX_K,
                                                         max_mnk=_C.SM90_ACT_PINGPONG_MAX_MNK_LOG2)
        splits, chunk = 1, 0
        if mode == "none" and batch == 1 and not fit:
            # the binding's split-K rule for one dense problem
            splits, chunk = _C.choose_sm90_split(m, n, k, prop.multi_processor_count, _split_kind(config),
                                                 _split_fill())
        split_note = (f"; split-K x{splits} (K ranges of {chunk}: the tiles alone would leave SMs idle), fp32 "
                      "partials summed in split order with the epilogue" if splits > 1 else "")
        # one dense 16-bit or tf32 problem (the launch's `dense`); tf32's K slices are 32 elements
        dense = mode == "none" and batch == 1 and splits == 1 and a.element_size() in (2, 4)
        cluster_note = _cluster_note(config, mode in ("none", "k"), swiglu, m_per, a, b, dense, n, k,
                                     prop.multi_processor_count, op_b[1], 32 if a.element_size() == 4 else 64)
        streamk_note = ""
        if mode == "none" and batch == 1 and splits == 1 and "_Coop_" in config and not cluster_note and not fit:
            streamk_note = _streamk_note(m, n, k, a.element_size(), prop.multi_processor_count)
        elif (mode == "none" and batch == 1 and splits == 1 and config.startswith("Sm90_128x256x") and "_Coop_" in config
              and cluster_note):
            streamk_note = _streamk_note(m, n, k, a.element_size(), prop.multi_processor_count, pairs=True)
        half_note = ""
        # (the kernel's condition: not with both operands MN-major, see sm90_gemm_ws_kernel.cuh)
        both_mn = op_a[1] and op_b[1]  # (ok, mn_major)
        if mode == "m" and "_Coop_" in config and not both_mn and _C.choose_sm90_half_tiles(
                k, n, a.element_size(), os.environ.get("CUTORCH_GEMM_SM90_HALF_TILES", "").strip()):
            half_note = ("; a group's last tile computes only its first 64 rows when the rest lie past the "
                         "group's end (a group's B fits L2)")
        defer_note = "" if direct_fit else _defer_note(config, a, mode, n_per, splits, kwargs)
        defer_note += _c_note(config, a, op_b[1], mode, batch, n, splits, kwargs, direct_fit)
        variant_note = _variant_note(mode, op_a[1], defer_note, swiglu)
        bare_note = _bare_note(config, a, not op_a[1] and not op_b[1], mode, n, splits, streamk_note, variant_note,
                               kwargs)
        variant_note += bare_note
        variant_note += _ksplit_note(config, a, mode, m_per, n, k, batch, splits, chunk, cluster_note,
                                     prop.multi_processor_count, kwargs)
        variant_note += _stream_note(config, m_per, mode, batch, b, chunk if splits > 1 else 0, cluster_note)
        if not swiglu:
            variant_note += _decode_note(config, mode, m, batch)

        return Explanation(op, str(a.device), "sm90", config, splits, layouts,
                           f"sm_{prop.major}{prop.minor}; {fam['reason']}"
                           + (f"; CUTORCH_GEMM_SM90_CONFIG={sm90_forced}" if sm90_forced else "") + mid_note + split_note
                           + cluster_note + streamk_note + half_note + defer_note + variant_note)
    if fam["family"] == "sm80":
        env = {name: os.environ.get(name, "").strip().lower()
               for name in ("CUTORCH_GEMM_SM80_CONFIG", "CUTORCH_GEMM_SPLIT_K")}
        smem = torch.cuda.get_device_properties(a.device).shared_memory_per_block_optin
        plan = _C.choose_sm80_plan(dtype, m_per, n_per, k, batch, prop.multi_processor_count, smem,
                                   mode != "none", env["CUTORCH_GEMM_SM80_CONFIG"], env["CUTORCH_GEMM_SPLIT_K"],
                                   _sm80_mn_major(a, b))
        why = [f"sm_{prop.major}{prop.minor}", fam["reason"], plan["reason"]]
        if plan["splits"] > 1:
            why.append(f"{plan['split_mode']} split-K x{plan['splits']}")
        why.append(_sm80_operand_note("a", a, a.dim() - 1, a.dim() - 2)
                   + ", " + _sm80_operand_note("b", b, b.dim() - 2, b.dim() - 1))
        return Explanation(op, str(a.device), "sm80", plan["config"], plan["splits"], layouts, "; ".join(why))
    plan = _C.choose_simt_config(prop.major, prop.minor, dtype, m, n, k, batch,
                                 prop.multi_processor_count, grouped)
    why = [f"sm_{prop.major}{prop.minor}", fam["reason"]]
    why.append(plan["reason"])
    vec = []
    for name, t, contig_k in (("a", a, _layout(a) == "row"), ("b", b, _layout(b) == "col")):
        if _layout(t) == "strided":
            vec.append(f"{name} strided: scalar loads")
        else:
            vec.append(f"{name} {'K' if contig_k else 'MN'}-major")
    why.append(", ".join(vec))
    return Explanation(op, str(a.device), "simt", plan["config"], plan["splits"], layouts, "; ".join(why))
