"""The Hopper family (TMA + wgmma), on sm_90 GPUs only: it must be the kernel that runs for
K-major fp16/bf16 operands, agree with the float64 reference element by element on awkward
shapes (edge tiles, K not a multiple of 64, M < 64), through every epilogue, and agree with
the SIMT family on the same inputs. Skipped elsewhere."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import ACTIVATIONS, HALF_DTYPES, check, dtype_id, ref_gemm

pytestmark = [
    pytest.mark.gpu,
    pytest.mark.skipif(not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] != 9
                       or not cg._C.sm90_available(), reason="needs an sm_90 GPU and sm_90a kernels"),
]

SHAPES = [(128, 256, 64), (129, 257, 72), (7, 300, 8), (64, 8, 8), (1000, 1000, 1000), (1, 520, 136),
          (300, 2000, 136), (2049, 520, 4104)]


def linear_operands(m, n, k, dtype):
    """x (M, K) row-major and W (N, K) row-major, used as b = W.t(): both K-major."""
    x = torch.randn(m, k, device="cuda", dtype=dtype)
    w = torch.randn(n, k, device="cuda", dtype=dtype)
    return x, w.t()


CONFIGS = {"coop": "Sm90_128x256x64_Coop_S4", "pingpong": "Sm90_64x256x64_Pingpong_S5"}


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("mnk", SHAPES + [(8960, 256, 320), (2048, 2048, 1024)],
                         ids=lambda s: "x".join(map(str, s)))
def test_sm90_mm_matches_reference(dtype, mnk, config, monkeypatch):
    # The last two shapes give CTAs several tiles with K >= the ring depth (the ping-pong
    # ordering case).
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    a, b = linear_operands(*mnk, dtype)
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and e.config == CONFIGS[config], str(e)
    torch.empty(mnk[0] * mnk[1] * 2, device="cuda", dtype=dtype).fill_(float("nan"))
    check(cg.mm(a, b), ref_gemm(a, b), dtype, what=f"sm90 mm {mnk}")


@pytest.mark.parametrize("config", list(CONFIGS))
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_sm90_gemm_epilogue(dtype, activation, config, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    m, n, k = 257, 520, 200
    a, b = linear_operands(m, n, k, dtype)
    bias = torch.randn(n, device="cuda", dtype=dtype)
    c = torch.randn(n, m, device="cuda", dtype=dtype).t()  # column-major C
    for out_dtype in (None, torch.float32):
        out = cg.gemm(a, b, bias=bias, c=c, alpha=0.75, beta=-0.5, activation=activation,
                      out_dtype=out_dtype)
        ref = ref_gemm(a, b, bias, c, 0.75, -0.5, activation)
        check(out, ref, dtype, out_dtype, what=f"sm90 gemm {activation} out={out_dtype}")


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
def test_sm90_agrees_with_simt(dtype, monkeypatch):
    a, b = linear_operands(384, 512, 320, dtype)
    fast = cg.mm(a, b, out_dtype=torch.float32)
    monkeypatch.setenv("CUTORCH_GEMM_ARCH", "simt")
    assert cg.explain("mm", a, b).kernel == "simt"
    slow = cg.mm(a, b, out_dtype=torch.float32)
    # Both accumulate in fp32 from the same 16-bit inputs; only the summation order differs.
    assert torch.allclose(fast, slow, rtol=1e-4, atol=1e-3 * fast.abs().max().item())


def test_sm90_falls_back_when_not_eligible():
    dt = torch.bfloat16
    x = torch.randn(64, 100, device="cuda", dtype=dt)
    w = torch.randn(96, 100, device="cuda", dtype=dt)
    # MN-major b (w itself as (K, N) would be (100, 96) row-major): not yet on sm90.
    b_mn = torch.randn(100, 96, device="cuda", dtype=dt)
    assert cg.explain("mm", x, b_mn).kernel == "simt"
    check(cg.mm(x, b_mn), ref_gemm(x, b_mn), dt, what="MN-major fallback")
    # Odd K: rows of 100 elements are 200 bytes apart, not a multiple of 16 for x[:, :99].
    xs, ws = x[:, :99], w[:, :99]
    assert cg.explain("mm", xs, ws.t()).kernel == "simt"
    check(cg.mm(xs, ws.t()), ref_gemm(xs, ws.t()), dt, what="misaligned fallback")
    # Aligned K-major operands do take the sm90 path.
    x96 = torch.randn(64, 96, device="cuda", dtype=dt)
    w96 = torch.randn(96, 96, device="cuda", dtype=dt)
    assert cg.explain("mm", x96, w96.t()).kernel == "sm90"
    check(cg.mm(x96, w96.t()), ref_gemm(x96, w96.t()), dt, what="aligned sm90")
