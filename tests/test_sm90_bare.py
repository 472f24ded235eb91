"""The Hopper kernel's bare compact builds (kernel/sm90_gemm_ws_kernel.cuh, kBare; sm90_has_bare): D = A B alone
(dense or batched, no bias, alpha 1, a 16-bit D, both operands K-major) on the 128x256 cooperative, 64x128 and 64x64
ping-pong tiles runs a kernel with no other epilogue compiled in. Everything else keeps the compact or general kernel.

Each case checks which kernel ran (the kernel's name in the profiler: its last template flag is kBare), the float64
reference's answer, and the compact kernel's bits (CUTORCH_GEMM_SM90_BARE=off): the bare kernel rounds the same
accumulator the same way. The cases: one tile per CTA (the 64x128 ping-pong stores those tiles from two idle
pipeline stages, Sm90Params::one_tile: compared bitwise with the compact kernel's one-buffer store), edge tiles in M
and N, several tiles per CTA (a capped grid), K under one k-block, 2x1 pairs (rows that are not 128-byte multiples),
batched, bf16 and fp16; and the launches that must not take it (alpha, bias, an fp32 D, an MN-major operand,
stream-K).
Skipped without an sm_90 GPU."""
from __future__ import annotations

import re

import pytest
import torch
from torch.profiler import ProfilerActivity, profile

import cutorch_gemm as cg
from conftest import check, forced_sm90_operands, gpu, poison, ref_bmm, ref_gemm, requires_sm90, sm90_case_id

pytestmark = [gpu, requires_sm90, pytest.mark.usefixtures("tile_kernels_only")]


def _sm90_flags(fn):
    """fn()'s result and the bool template flags of the sm90_gemm_ws_kernel it launched (kAMn, kBMn, kSwiGlu,
    kPtrArray, kPlainTma, kGroupEnds, kBare), from the profiler's demangled kernel name."""
    fn()
    torch.cuda.synchronize()
    with profile(activities=[ProfilerActivity.CUDA]) as prof:
        out = fn()
        torch.cuda.synchronize()
    names = {e.name for e in prof.events()
             if e.device_type == torch.autograd.DeviceType.CUDA and "sm90_gemm_ws_kernel<" in e.name}
    assert len(names) == 1, f"expected one sm90_gemm_ws_kernel launch, got {sorted(names)}"
    # (the profiler demangles them as true / false, ncu as (bool)1 / (bool)0)
    flags = re.findall(r"\b(true|false)\b|\(bool\)([01])", names.pop().split(">(")[0])
    assert len(flags) == 7, f"expected the kernel's seven bool flags, got {flags}"
    return out, [word == "true" or bit == "1" for word, bit in flags]


def _bare_and_same_bits(monkeypatch, fn):
    """fn() takes the bare kernel, and the compact one (CUTORCH_GEMM_SM90_BARE=off) gives the same bits."""
    monkeypatch.delenv("CUTORCH_GEMM_SM90_BARE", raising=False)
    out, flags = _sm90_flags(fn)
    assert flags[6] and flags[4], f"expected the bare compact kernel, flags {flags}"
    monkeypatch.setenv("CUTORCH_GEMM_SM90_BARE", "off")
    poison(out.numel() * 2)
    other, flags_off = _sm90_flags(fn)
    monkeypatch.delenv("CUTORCH_GEMM_SM90_BARE", raising=False)
    assert not flags_off[6], "CUTORCH_GEMM_SM90_BARE=off still ran the bare kernel"
    assert torch.equal(out, other), "the bare kernel's bits differ from the compact kernel's"
    return out


# (config, M, N, K, grid cap or None, what explain must name)
CASES = [
    ("coop", 2048, 2048, 256, None, "Sm90_128x256x64_Coop_S4"),          # one tile per CTA
    ("coop", 1000, 1000, 200, None, "Sm90_128x256x64_Coop_S4"),          # edge tiles in M and N
    ("coop", 4096, 2048, 320, "8", "Sm90_128x256x64_Coop_S4"),           # 32 tiles per CTA (no stream-K)
    ("coop", 1536, 2048, 40, None, "Sm90_128x256x64_Coop_S4"),           # K under one k-block, 2x1 pairs
    ("pingpong128", 1024, 1024, 1024, None, "Sm90_64x128x64_Pingpong_S8"),
    ("pingpong128", 1000, 1000, 136, None, "Sm90_64x128x64_Pingpong_S8"),
    ("pingpong128", 1024, 2048, 512, "7", "Sm90_64x128x64_Pingpong_S8"),  # several tiles per CTA
    ("pingpong64", 512, 1024, 1024, None, "Sm90_64x64x64_Pingpong_S12"),
    ("pingpong64", 300, 520, 72, None, "Sm90_64x64x64_Pingpong_S12"),
    ("pingpong64", 640, 704, 320, "5", "Sm90_64x64x64_Pingpong_S12"),
]


@pytest.mark.parametrize("case", CASES, ids=sm90_case_id)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_sm90_bare_mm(case, dtype, monkeypatch):
    config, m, n, k, _, name = case
    a, b, e = forced_sm90_operands(monkeypatch, case, dtype)
    assert e.kernel == "sm90" and name in e.config and "; bare: the compact kernel" in e.reason, e.reason
    out = _bare_and_same_bits(monkeypatch, lambda: cg.mm(a, b))
    check(out, ref_gemm(a, b), dtype, what=f"bare {config} mm {m}x{n}x{k}")


@pytest.mark.parametrize("config", ["coop", "pingpong128", "pingpong64"])
def test_sm90_bare_bmm(config, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    a = torch.randn(3, 700, 264, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(3, 520, 264, device="cuda", dtype=torch.bfloat16).transpose(1, 2)
    assert "; bare: the compact kernel" in cg.explain("bmm", a, b).reason
    out = _bare_and_same_bits(monkeypatch, lambda: cg.bmm(a, b))
    check(out, ref_bmm(a, b), torch.bfloat16, what=f"bare {config} bmm")


NOT_BARE = {
    "alpha": dict(alpha=0.5),
    "bias": dict(bias=True),
    "fp32_out": dict(out_dtype=torch.float32),
}


@pytest.mark.parametrize("config", ["coop", "pingpong128"])
@pytest.mark.parametrize("what", list(NOT_BARE))
def test_sm90_not_bare(config, what, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    m, n, k = 1000, 1024, 200
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    kw = dict(NOT_BARE[what])
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16) if kw.pop("bias", False) else None
    assert "bare" not in cg.explain("gemm", x, w.t(), bias=bias, **kw).reason
    out, flags = _sm90_flags(lambda: cg.gemm(x, w.t(), bias=bias, **kw))
    assert not flags[6], f"{what}: the bare kernel must not run (flags {flags})"
    ref = ref_gemm(x, w.t(), bias=bias, alpha=kw.get("alpha", 1.0))
    check(out, ref, torch.bfloat16, kw.get("out_dtype"), what=f"{config} {what}")


@pytest.mark.parametrize("layout", ["nn", "tn"])
def test_sm90_not_bare_mn_major(layout, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    m, n, k = 1024, 1024, 256
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    if layout == "tn":
        a = torch.randn(k, m, device="cuda", dtype=torch.bfloat16).t()
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)  # MN-major b
    assert "bare" not in cg.explain("mm", a, b).reason
    out, flags = _sm90_flags(lambda: cg.mm(a, b))
    assert not flags[6], f"an MN-major operand must not take the bare kernel (flags {flags})"
    check(out, ref_gemm(a, b), torch.bfloat16, what=f"coop {layout}")


def test_sm90_not_bare_streamk(monkeypatch):
    # (test_sm90_streamk.py's forced form: 10 tiles of 128x256 over a grid of 7, every tile cut along K)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_STREAMK", "on")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", "7")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CLUSTER", "1")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_SPLIT_FILL", "1000")
    x = torch.randn(640, 320, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(512, 320, device="cuda", dtype=torch.bfloat16)
    e = cg.explain("mm", x, w.t())
    assert "stream-K over" in e.reason and "bare" not in e.reason, str(e)
    out, flags = _sm90_flags(lambda: cg.mm(x, w.t()))
    assert not flags[6], f"a stream-K launch must not take the bare kernel (flags {flags})"
    check(out, ref_gemm(x, w.t()), torch.bfloat16, what="stream-K mm")
