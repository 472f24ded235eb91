"""The K-split pair of the compact 64x64 ping-pong kernel (collective/sm90_ksplit_pair.cuh; rule: sm90_configs.h's
sm90_ksplit_ok): where every CTA has one tile at most, both consumer warpgroups take the CTA's tile, k-blocks
alternating, and the second one's fragment is added through shared memory.

The rule's cases run on the CPU (the binding). On an sm_90 GPU each case checks explain's verdict, the float64
reference's answer with the pair on and off (CUTORCH_GEMM_SM90_KSPLIT=off), and that the pair really ran: with an fp32
D its summation order (two partial sums) gives other bits than one warpgroup's, while a launch the rule declines gives
the same bits either way. Cases: odd and even k-block counts, K tails, edge tiles, bias and alpha, fp16, batched,
split-K chunks, and launches with several tiles per CTA (which must not take it)."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import check, gpu, poison, ref_bmm, ref_gemm, requires_sm90

_C = pytest.importorskip("cutorch_gemm._C")

PAIR = "K-split pair"


# ---- the rule (CPU) ----

@pytest.mark.parametrize("items,ctas,cluster,grouped_k,block_n,k_blocks,producers,stages,forced,want", [
    (128, 128, 1, False, 64, 64, 4, 12, "", True),     # 512x1024x4096 on 64x64 tiles
    (128, 128, 1, False, 64, 12, 4, 12, "", True),     # the smallest default count
    (128, 128, 1, False, 64, 11, 4, 12, "", False),
    (128, 128, 1, False, 64, 2, 4, 12, "on", True),    # forced: from 2 k-blocks
    (128, 128, 1, False, 64, 1, 4, 12, "on", False),
    (128, 128, 1, False, 64, 64, 4, 12, "off", False),
    (256, 132, 1, False, 64, 64, 4, 12, "", False),    # two tiles on some CTAs
    (128, 128, 2, False, 64, 64, 4, 12, "", False),    # 2x1 clusters
    (128, 128, 1, True, 64, 64, 4, 12, "", False),     # grouped-K ranges
    (128, 128, 1, False, 128, 64, 2, 8, "", False),    # the 64x128 tiles (measured slower)
    (128, 128, 1, False, 64, 64, 4, 5, "", False),     # odd stages: a stage would see both warpgroups
    (128, 128, 1, False, 64, 64, 4, 6, "", False),     # 2 x producers > stages
])
def test_ksplit_rule(items, ctas, cluster, grouped_k, block_n, k_blocks, producers, stages, forced, want):
    assert _C.sm90_ksplit_ok(items, ctas, cluster, grouped_k, block_n, k_blocks, producers, stages, forced) is want


# explain's note (cutorch_gemm/_sm90_notes.py) from the config's name, on CPU tensors: (config, M, N, K, kwargs, env,
# whether it names the pair)
NOTE_CASES = [
    ("Sm90_64x64x64_Pingpong_S12", 512, 1024, 4096, {}, {}, True),
    ("Sm90_64x64x64_Pingpong_S12", 512, 1024, 704, {}, {}, False),           # 11 k-blocks
    ("Sm90_64x64x64_Pingpong_S12", 512, 1024, 768, {}, {}, True),            # 12
    ("Sm90_64x64x64_Pingpong_S12", 1024, 1024, 4096, {}, {}, False),         # 256 tiles on 132 SMs
    ("Sm90_64x128x64_Pingpong_S8", 512, 1024, 4096, {}, {}, False),          # not the 64x128 tiles
    ("Sm90_128x256x64_Coop_S4", 512, 1024, 4096, {}, {}, False),
    ("Sm90_64x64x64_Pingpong_S12", 512, 1020, 4096, {}, {}, False),          # D rows not 16-byte aligned: no TMA store
    ("Sm90_64x64x64_Pingpong_S12", 512, 1020, 4096, {"out_dtype": torch.float32}, {}, True),
    ("Sm90_64x64x64_Pingpong_S12", 512, 1024, 4096, {"activation": "relu"}, {}, False),
    ("Sm90_64x64x64_Pingpong_S12", 512, 1024, 4096, {}, {"CUTORCH_GEMM_SM90_KSPLIT": "off"}, False),
    ("Sm90_64x64x64_Pingpong_S12", 512, 1024, 128, {}, {"CUTORCH_GEMM_SM90_KSPLIT": "on"}, True),
    ("Sm90_64x64x64_Pingpong_S12", 512, 1024, 4096, {}, {"CUTORCH_GEMM_SM90_EPILOGUE": "general"}, False),
]


@pytest.mark.parametrize("case", NOTE_CASES, ids=lambda c: f"{c[0]}-{c[1]}x{c[2]}x{c[3]}-{len(c[4]) + len(c[5])}")
def test_ksplit_explain_note(case, monkeypatch):
    from cutorch_gemm._sm90_notes import _ksplit_note
    config, m, n, k, kwargs, env, want = case
    for name in ("CUTORCH_GEMM_SM90_KSPLIT", "CUTORCH_GEMM_SM90_EPILOGUE", "CUTORCH_GEMM_SM90_PRODUCERS"):
        monkeypatch.delenv(name, raising=False)
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    a = torch.empty(1, 1, dtype=torch.bfloat16)
    note = _ksplit_note(config, a, "none", m, n, k, 1, 1, 0, "", 132, kwargs)
    assert (PAIR in note) == want, note


# ---- the kernel (GPU) ----

def _mm_f32(a, b, **kw):
    return cg.gemm(a, b, out_dtype=torch.float32, **kw)


def _pair_and_not(monkeypatch, fn, expect_pair: bool, what: str):
    """fn() with the pair's rule as is and with CUTORCH_GEMM_SM90_KSPLIT=off (an fp32 D): other bits where the pair
    ran, the same where the rule declined."""
    monkeypatch.delenv("CUTORCH_GEMM_SM90_KSPLIT", raising=False)
    poison(4 << 20)
    out = fn()
    monkeypatch.setenv("CUTORCH_GEMM_SM90_KSPLIT", "off")
    poison(4 << 20)
    off = fn()
    monkeypatch.delenv("CUTORCH_GEMM_SM90_KSPLIT", raising=False)
    if expect_pair:
        assert not torch.equal(out, off), f"{what}: the same bits with the pair off: did the pair run?"
    else:
        assert torch.equal(out, off), f"{what}: the rule declines the pair, yet the bits changed"
    return out, off


# (M, N, K, kwargs, pair expected)
CASES = [
    (512, 1024, 4096, {}, True),                 # 64 k-blocks, 128 tiles
    (512, 1024, 1000, {}, True),                 # 16 k-blocks, the last partial
    (448, 960, 1480, {}, True),                  # 24 k-blocks (the last partial), edge tiles in N
    (300, 520, 1096, {}, True),                  # 18 k-blocks, edge tiles in M and N
    (256, 1024, 1152, {"alpha": 0.5}, True),     # 18 k-blocks (odd per warpgroup: 9 each)
    (512, 512, 832, {"bias": True}, True),       # 13 k-blocks: 7 and 6
    (512, 1024, 704, {}, False),                 # 11 k-blocks: under the rule's 12
    (1024, 1024, 4096, {}, False),               # 256 tiles: two on some CTAs
]


@pytest.mark.parametrize("case", CASES, ids=lambda c: f"{c[0]}x{c[1]}x{c[2]}{''.join('-' + k for k in c[3])}")
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@gpu
@requires_sm90
def test_ksplit_pair_mm(case, dtype, monkeypatch):
    m, n, k, kw, pair = case
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "pingpong64")
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "off")
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    w = torch.randn(n, k, device="cuda", dtype=dtype)
    kw = dict(kw)
    bias = torch.randn(n, device="cuda", dtype=dtype) if kw.pop("bias", False) else None
    e = cg.explain("gemm", x, w.t(), bias=bias, out_dtype=torch.float32, **kw)
    assert "Sm90_64x64x64_Pingpong_S12" in e.config, str(e)
    assert (PAIR in e.reason) == pair, str(e)
    out, off = _pair_and_not(monkeypatch, lambda: _mm_f32(x, w.t(), bias=bias, **kw), pair, f"{m}x{n}x{k}")
    ref = ref_gemm(x, w.t(), bias=bias, alpha=kw.get("alpha", 1.0))
    check(out, ref, dtype, torch.float32, what=f"pair {m}x{n}x{k}")
    check(off, ref, dtype, torch.float32, what=f"one warpgroup {m}x{n}x{k}")
    # the 16-bit D of the same launch (the bare kernel where there is no bias or alpha)
    d16 = cg.gemm(x, w.t(), bias=bias, **kw)
    check(d16, ref, dtype, what=f"pair {m}x{n}x{k}, 16-bit D")


@gpu
@requires_sm90
def test_ksplit_pair_bmm(monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "pingpong64")
    a = torch.randn(4, 256, 1024, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4, 320, 1024, device="cuda", dtype=torch.bfloat16).transpose(1, 2)  # 4 x 4 x 5 = 80 tiles
    assert PAIR in cg.explain("bmm", a, b).reason
    out = cg.bmm(a, b)
    check(out, ref_bmm(a, b), torch.bfloat16, what="pair bmm")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_KSPLIT", "off")
    check(cg.bmm(a, b), ref_bmm(a, b), torch.bfloat16, what="one warpgroup bmm")


@gpu
@requires_sm90
def test_ksplit_pair_forced_short_k(monkeypatch):
    # forced on: from 2 k-blocks (one each), and 3 (two and one); K = 64 (one k-block) never pairs
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "pingpong64")
    for k, pair in ((128, True), (136, True), (64, False)):
        x = torch.randn(512, k, device="cuda", dtype=torch.bfloat16)
        w = torch.randn(768, k, device="cuda", dtype=torch.bfloat16)
        monkeypatch.setenv("CUTORCH_GEMM_SM90_KSPLIT", "on")
        assert (PAIR in cg.explain("gemm", x, w.t(), out_dtype=torch.float32).reason) == pair
        out = _mm_f32(x, w.t())
        check(out, ref_gemm(x, w.t()), torch.bfloat16, torch.float32, what=f"forced pair K={k}")
