"""The skinny kernel (M <= 64 against a streamed weight: D^T = W x^T on mma.sync with fragments
loaded from global memory, device/sm80_skinny.h). CUTORCH_GEMM_SKINNY=force sends every launch
its operand rule accepts to it (and "sm80", set for every test here, keeps the rule but passes
over the Hopper skinny kernel), so awkward sizes (1, 7, 65, 129, primes, K below one step per
warp, N not a multiple of the CTA's 32 rows) run here; the auto rule is checked on the decode
shapes it exists for. Float64 references, fresh inputs, poisoned outputs."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import (ACTIVATIONS, HALF_DTYPES, check, check_repeatable_and_graph_replay, dtype_id, linear_operands,
                      make, poison, ref_gemm)

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < 8
                       or not cg._C.sm80_available(), reason="needs an sm_80+ GPU and sm_80-family kernels"),
]


@pytest.fixture(autouse=True)
def _clean_env(monkeypatch):
    for name in ("CUTORCH_GEMM_ARCH", "CUTORCH_GEMM_SKINNY", "CUTORCH_GEMM_SM90_CONFIG"):
        monkeypatch.delenv(name, raising=False)
    # This file tests the mma.sync kernel and its rule on every GPU: "sm80" keeps the rule but
    # passes over the Hopper skinny kernel (tests/test_sm90_skinny.py) that takes these shapes
    # on sm_90.
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "sm80")


def expect_skinny(op, *args, **kwargs):
    e = cg.explain(op, *args, **kwargs)
    assert e.kernel == "sm80" and "Skinny" in e.config, str(e)
    return e


def expect_not_skinny(op, *args, **kwargs):
    e = cg.explain(op, *args, **kwargs)
    assert "Skinny" not in e.config, str(e)
    return e


# Every token-count config (1..64) and its edges, N around the CTA's 32 rows, K from a single
# 8-wide chunk (most warps idle) to several steps per warp with a short last one.
FORCED_SHAPES = [
    (1, 1, 8), (1, 7, 24), (7, 65, 1000), (8, 129, 264), (9, 33, 40), (16, 1000, 512), (17, 31, 136),
    (31, 257, 2056), (32, 96, 4096), (33, 129, 1000), (47, 61, 744), (63, 200, 8), (64, 4099, 2048),
]


@pytest.mark.parametrize("warps", ["w8", "w16"])
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("mnk", FORCED_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_skinny_forced_shapes(monkeypatch, dtype, mnk, warps):
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", warps)
    m, n, k = mnk
    x, b = linear_operands(m, n, k, dtype)
    expect_skinny("mm", x, b)
    poison(m * n * 2)
    check(cg.mm(x, b), ref_gemm(x, b), dtype, what=f"skinny {mnk}")


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_skinny_epilogue(monkeypatch, dtype, activation):
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "force")
    m, n, k = 13, 301, 392
    x, b = linear_operands(m, n, k, dtype, x_layout="padded")  # row stride k + 8
    bias = torch.randn(n, device="cuda").to(dtype)
    for c in (torch.randn(m, n, device="cuda").to(dtype), torch.randn(n, m, device="cuda").to(dtype).t()):
        for out_dtype in (None, torch.float32):
            expect_skinny("gemm", x, b, bias=bias, c=c, alpha=0.75, beta=-0.5, activation=activation)
            poison(m * n * 4)
            out = cg.gemm(x, b, bias=bias, c=c, alpha=0.75, beta=-0.5, activation=activation, out_dtype=out_dtype)
            check(out, ref_gemm(x, b, bias, c, 0.75, -0.5, activation), dtype, out_dtype,
                  what=f"skinny gemm {activation} c {c.stride()} out={out_dtype}")


@pytest.mark.parametrize("mnk", [(16, 4096, 4096), (1, 8192, 8192), (32, 4096, 4096), (7, 4096, 14336), (16, 512, 512)],
                         ids=lambda s: "x".join(map(str, s)))
def test_skinny_auto_rule_on_decode_shapes(mnk):
    m, n, k = mnk
    x, b = linear_operands(m, n, k, torch.bfloat16)
    expect_skinny("mm", x, b)
    poison(m * n * 2)
    check(cg.mm(x, b), ref_gemm(x, b), torch.bfloat16, what=f"skinny auto {mnk}")
    # Through the drop-in entry points too: F.linear's layout is exactly the kernel's.
    w = b.t()
    check(cg.linear(x, w), ref_gemm(x, b), torch.bfloat16, what=f"linear {mnk}")


def test_skinny_refusals_fall_back_correctly():
    dtype = torch.float16
    w_t = linear_operands(16, 4096, 4096, dtype)[1]
    cases = {
        "M = 33": linear_operands(33, 4096, 4096, dtype),
        "K % 8 != 0": linear_operands(16, 4096, 4097, dtype),
        "b row-major (N contiguous)": (make((16, 4096), dtype, "cuda"), make((4096, 4096), dtype, "cuda")),
        "a column-major": (make((16, 4096), dtype, "cuda", "col"), w_t),
        "x row stride not a 16-byte multiple": (make((16, 4096), dtype, "cuda", "padded", pad=3), w_t),
        "M = 32 with N / 32 > SMs": linear_operands(32, 32 * torch.cuda.get_device_properties(0).multi_processor_count + 32, 1024, dtype),
    }
    for what, (x, b) in cases.items():
        expect_not_skinny("mm", x, b)
        poison(x.shape[0] * b.shape[1] * 2)
        check(cg.mm(x, b), ref_gemm(x, b), dtype, what=what)


def test_skinny_off_and_forced_family_skip_it(monkeypatch):
    x, b = linear_operands(16, 4096, 4096, torch.bfloat16)
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "off")
    expect_not_skinny("mm", x, b)
    monkeypatch.setenv("CUTORCH_GEMM_SKINNY", "sm80")
    monkeypatch.setenv("CUTORCH_GEMM_ARCH", "sm80")
    expect_not_skinny("mm", x, b)


def test_skinny_is_deterministic_and_graph_replayable():
    x, b = linear_operands(16, 4096, 4096, torch.bfloat16)
    expect_skinny("mm", x, b)
    check_repeatable_and_graph_replay(x, b, torch.bfloat16, "skinny (warp-ordered K sum)")


def test_skinny_bmm_single_batch_and_3d_linear():
    dtype = torch.bfloat16
    x3 = torch.randn(2, 8, 4096, device="cuda").to(dtype)  # (batch, tokens, K): 16 rows folded
    w = torch.randn(4096, 4096, device="cuda").to(dtype)
    out = cg.linear(x3, w)
    check(out.reshape(16, 4096), ref_gemm(x3.reshape(16, 4096), w.t()), dtype, what="linear on (2, 8, K)")
    a, b = x3[:1], w.t().unsqueeze(0)
    expect_skinny("bmm", a, b)
    poison(8 * 4096 * 2)
    check(cg.bmm(a, b)[0], ref_gemm(a[0], b[0]), dtype, what="bmm with one batch entry")
