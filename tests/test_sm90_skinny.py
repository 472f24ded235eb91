"""The Hopper skinny kernel (small M against a streamed weight: D^T = W x^T, TMA boxes of 64 W
rows into wgmma with the tokens on N, K split over a cluster and summed in distributed shared
memory; device/sm90_skinny.h). CUTORCH_GEMM_SKINNY=sm90 sends every launch its operand rule
accepts (M <= 128) to it and CUTORCH_GEMM_SKINNY_SPLITS fixes the K split, so every token
config, split count and awkward size runs here. Float64 references, fresh inputs, poisoned
outputs."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import (ACTIVATIONS, HALF_DTYPES, check, check_repeatable_and_graph_replay, dtype_id, gpu,
                      linear_operands, make, poison, ref_gemm, requires_sm90)

pytestmark = [gpu, requires_sm90]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("CUTORCH_GEMM_ARCH", "CUTORCH_GEMM_SKINNY", "CUTORCH_GEMM_SKINNY_SPLITS", "CUTORCH_GEMM_SKINNY_RING",
                 "CUTORCH_GEMM_SM90_CONFIG"):
        monkeypatch.delenv(name, raising=False)


def expect_sm90_skinny(op, *args, splits=None, **kwargs):
    e = cg.explain(op, *args, **kwargs)
    assert e.kernel == "sm90" and e.config.startswith("Sm90_Skinny_"), str(e)
    if splits is not None:
        assert e.splits == splits, str(e)
    return e


# Every token config (16 / 32 / 64 / 128) and its edges; N around the CTA's 64 or 128 W rows; K from a
# single 8-wide chunk (one short block) to many blocks with a short last one.
FORCED_SHAPES = [
    (1, 1, 8), (1, 7, 24), (7, 65, 1000), (16, 129, 264), (17, 63, 72), (31, 257, 2056), (32, 96, 4096),
    (33, 129, 1000), (47, 61, 744), (64, 200, 8), (65, 4099, 2048), (100, 1000, 136), (128, 640, 1032),
]


@pytest.mark.parametrize("splits", [1, 2, 3, 8])
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("mnk", FORCED_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sm90_skinny_forced_shapes(monkeypatch, dtype, mnk, splits):
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "sm90")
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY_SPLITS", str(splits))
    m, n, k = mnk
    x, b = linear_operands(m, n, k, dtype)
    # More splits than K blocks: the rule clamps them (an empty K range would still be correct).
    expect_sm90_skinny("mm", x, b, splits=min(splits, -(-k // 64)))
    poison(m * n * 2)
    check(cg.mm(x, b), ref_gemm(x, b), dtype, what=f"sm90 skinny {mnk} splits {splits}")


# The 64-token launch's 12-stage ring (sm90_skinny_deep_ring; CUTORCH_GEMM_SKINNY_RING=deep takes it whatever K): no
# wrap, one and several, a short last K block, N past the last CTA's rows, one split and a cluster of 2, C and bias.
# It runs the same wgmma in the same order as the 6-stage ring, so the two agree bit for bit.
@pytest.mark.parametrize("splits", [1, 2])
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("mnk", [(64, 200, 8), (47, 61, 744), (33, 65, 904), (40, 129, 1608), (64, 640, 4160),
                                 (57, 1000, 3080)], ids=lambda s: "x".join(map(str, s)))
def test_sm90_skinny_deep_ring(monkeypatch, dtype, mnk, splits):
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "sm90")
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY_SPLITS", str(splits))
    m, n, k = mnk
    x, b = linear_operands(m, n, k, dtype)
    c, bias = make((m, n), dtype, "cuda"), make((n,), dtype, "cuda")
    out = {}
    for ring in ("deep", "short"):
        monkeypatch.setenv("CUTORCH_GEMM_SKINNY_RING", ring)
        kw = dict(bias=bias, c=c, alpha=0.75, beta=0.5, activation="gelu")
        e = expect_sm90_skinny("gemm", x, b, splits=min(splits, -(-k // 64)), **kw)
        assert f"{12 if ring == 'deep' else 6}-stage ring" in e.reason, str(e)
        poison(m * n * 2)
        out[ring] = cg.gemm(x, b, **kw)
        check(out[ring], ref_gemm(x, b, **kw), dtype,
              what=f"sm90 skinny {ring} ring {mnk} splits {splits}")
    assert torch.equal(out["deep"], out["short"])


def test_sm90_skinny_deep_ring_rule(monkeypatch):
    # the rule's choice where K per CTA passes 32 blocks, and not below (auto split: 2 at N = 4096)
    for k, stages in ((14336, 12), (4160, 12), (4096, 6)):
        x, b = linear_operands(64, 4096, k, torch.bfloat16)
        e = expect_sm90_skinny("mm", x, b, splits=2)
        assert f"{stages}-stage ring" in e.reason, str(e)
        poison(64 * 4096 * 2)
        check(cg.mm(x, b), ref_gemm(x, b), torch.bfloat16, what=f"sm90 skinny auto 64x4096x{k}")


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("splits", [1, 4])
def test_sm90_skinny_epilogue(monkeypatch, dtype, activation, splits):
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "sm90")
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY_SPLITS", str(splits))
    m, n, k = 13, 301, 392
    x, b = linear_operands(m, n, k, dtype, x_layout="padded")  # row stride k + 8
    bias = torch.randn(n, device="cuda").to(dtype)
    for c in (torch.randn(m, n, device="cuda").to(dtype), torch.randn(n, m, device="cuda").to(dtype).t()):
        for out_dtype in (None, torch.float32):
            expect_sm90_skinny("gemm", x, b, bias=bias, c=c, alpha=0.75, beta=-0.5, activation=activation)
            poison(m * n * 4)
            out = cg.gemm(x, b, bias=bias, c=c, alpha=0.75, beta=-0.5, activation=activation, out_dtype=out_dtype)
            check(out, ref_gemm(x, b, bias, c, 0.75, -0.5, activation), dtype, out_dtype,
                  what=f"sm90 skinny gemm {activation} c {c.stride()} out={out_dtype}")


@pytest.mark.parametrize("mnk", [(17, 4096, 4096), (32, 8192, 4096), (64, 4096, 14336), (24, 1024, 8192),
                                 (48, 1024, 256), (33, 512, 512), (1, 8192, 8192), (8, 14336, 4096),
                                 (16, 8192, 4096), (40, 2560, 8192), (24, 3072, 4160)],  # (clusters of 4 past the SMs)
                         ids=lambda s: "x".join(map(str, s)))
def test_sm90_skinny_auto_rule_on_decode_shapes(mnk):
    m, n, k = mnk
    x, b = linear_operands(m, n, k, torch.bfloat16)
    expect_sm90_skinny("mm", x, b)
    poison(m * n * 2)
    check(cg.mm(x, b), ref_gemm(x, b), torch.bfloat16, what=f"sm90 skinny auto {mnk}")
    w = b.t()  # F.linear's layout is exactly the kernel's
    check(cg.linear(x, w), ref_gemm(x, b), torch.bfloat16, what=f"linear {mnk}")


def test_sm90_skinny_refusals_fall_back_correctly():
    dtype = torch.float16
    w_t = linear_operands(16, 4096, 4096, dtype)[1]
    cases = {
        "M = 65 (auto rule: tiles)": linear_operands(65, 4096, 4096, dtype),
        "M = 16 (auto rule: the mma.sync skinny kernel)": linear_operands(16, 4096, 4096, dtype),
        "one K split, N / 128 tiles fill the SMs (auto rule: tiles)": linear_operands(32, 14336, 4096, dtype),
        "one K split, M > 32 (auto rule: tiles)": linear_operands(48, 8192, 1024, dtype),
        "K % 8 != 0": linear_operands(32, 4096, 4097, dtype),
        "b row-major (N contiguous)": (make((32, 4096), dtype, "cuda"), make((4096, 4096), dtype, "cuda")),
        "a column-major": (make((32, 4096), dtype, "cuda", "col"), w_t),
        "x row stride not a 16-byte multiple": (make((32, 4096), dtype, "cuda", "padded", pad=3), w_t),
    }
    for what, (x, b) in cases.items():
        e = cg.explain("mm", x, b)
        assert not e.config.startswith("Sm90_Skinny"), f"{what}: {e}"
        poison(x.shape[0] * b.shape[1] * 2)
        check(cg.mm(x, b), ref_gemm(x, b), dtype, what=what)


def test_sm90_skinny_knobs(monkeypatch):
    x, b = linear_operands(32, 4096, 4096, torch.bfloat16)
    expect_sm90_skinny("mm", x, b)
    for knob in ("sm80", "force", "w8"):  # the mma.sync skinny kernel
        monkeypatch.setenv("CUTORCH_GEMM_SKINNY", knob)
        e = cg.explain("mm", x, b)
        assert e.kernel == "sm80" and "Skinny" in e.config, f"{knob}: {e}"
        check(cg.mm(x, b), ref_gemm(x, b), torch.bfloat16, what=f"knob {knob}")
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "off")
    assert "Skinny" not in cg.explain("mm", x, b).config
    monkeypatch.delenv("CUTORCH_GEMM_SKINNY")
    monkeypatch.setenv("CUTORCH_GEMM_ARCH", "sm90")
    assert "Skinny" not in cg.explain("mm", x, b).config


@pytest.mark.parametrize("splits", [1, 4])
def test_sm90_skinny_is_deterministic_and_graph_replayable(monkeypatch, splits):
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "sm90")
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY_SPLITS", str(splits))
    x, b = linear_operands(16, 4096, 4096, torch.bfloat16)
    expect_sm90_skinny("mm", x, b, splits=splits)
    check_repeatable_and_graph_replay(x, b, torch.bfloat16, f"sm90 skinny (rank-ordered cluster sum), {splits} splits")


def test_sm90_skinny_strided_weight_and_3d_linear():
    dtype = torch.bfloat16
    # W with a padded row stride (a column slice of a wider weight), x a row slice.
    w_big = torch.randn(1000, 4096 + 64, device="cuda").to(dtype)
    w = w_big[:, 32:32 + 4096]
    x = torch.randn(60, 4096, device="cuda").to(dtype)[8:48]
    expect_sm90_skinny("mm", x, w.t())
    check(cg.mm(x, w.t()), ref_gemm(x, w.t()), dtype, what="strided W and x")
    x3 = torch.randn(2, 20, 4096, device="cuda").to(dtype)  # (batch, tokens, K): 40 rows folded
    w2 = torch.randn(4096, 4096, device="cuda").to(dtype)
    expect_sm90_skinny("mm", x3.reshape(40, 4096), w2.t())
    check(cg.linear(x3, w2).reshape(40, 4096), ref_gemm(x3.reshape(40, 4096), w2.t()), dtype,
          what="linear on (2, 20, K)")
