"""Hopper tf32 (fp32 operands read as tf32 by wgmma, K-major a and b; both configs, bias + activations) and its
2x1 cluster rule. Split off from test_sm90.py; the tf32 split-K case stays there with the 16-bit split-K tests."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import CLUSTER_NOTE, TF32_BOUND, gpu, linear_operands, poison, ref_gemm, requires_sm90

pytestmark = [gpu, requires_sm90, pytest.mark.usefixtures("tile_kernels_only")]

TF32_CONFIGS = {"coop": "Sm90_128x256x32_Coop_S4", "pingpong": "Sm90_64x256x32_Pingpong_S5"}


@pytest.mark.parametrize("config", list(TF32_CONFIGS))
@pytest.mark.parametrize("mnk", [(128, 256, 32), (129, 257, 72), (7, 300, 8), (1, 520, 136), (1000, 1000, 1000),
                                 (2049, 520, 4104)], ids=lambda s: "x".join(map(str, s)))
def test_sm90_tf32(mnk, config, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    torch.backends.cuda.matmul.allow_tf32 = True  # the autouse fixture restores it
    a, b = linear_operands(*mnk, torch.float32)
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and e.config == TF32_CONFIGS[config] and "tf32" in e.reason, str(e)
    bias = torch.randn(mnk[1], device="cuda")
    for out, ref in ((cg.mm(a, b), ref_gemm(a, b)),
                     (cg.gemm(a, b, bias=bias, activation="gelu"), ref_gemm(a, b, bias, activation="gelu"))):
        assert out.dtype == torch.float32 and out.shape == mnk[:2]
        err = float((out.double().cpu() - ref.cpu()).norm() / ref.cpu().norm())
        assert err < TF32_BOUND, f"sm90 tf32 {mnk} {config}: rel err {err:.2e}"


def test_sm90_tf32_mn_major_goes_to_sm80(monkeypatch):
    torch.backends.cuda.matmul.allow_tf32 = True
    a, b = linear_operands(256, 256, 256, torch.float32)
    e = cg.explain("mm", a, b.contiguous())  # b row-major: MN-major
    assert e.kernel == "sm80" and "K-major operands only" in e.reason, str(e)


# tf32 on the mid-K rule (fifty-ninth session): K counted in 32-element slices, the mid-K clause only (no short-K
# pairs, no stream-K in pairs). (M, N, K), pairs on 132 SMs.
TF32_MID_K_CASES = [((4096, 4096, 4096), True),    # 128 slices, 512 tiles: 3.9 rounds
                    ((8192, 8192, 8192), True),    # 2048 tiles, 15.5 rounds: pairs instead of unclustered stream-K
                    ((4096, 4096, 1056), True),    # 33 slices
                    ((4096, 4096, 1024), False),   # 32 slices
                    ((3072, 3072, 3072), False)]   # 288 tiles: 27% of 3 rounds idle, unclustered stream-K's


@pytest.mark.parametrize("case", TF32_MID_K_CASES, ids=lambda c: "x".join(map(str, c[0])))
def test_sm90_tf32_mid_k_cluster_rule(case, monkeypatch):
    for var in ("CUTORCH_GEMM_SM90_CONFIG", "CUTORCH_GEMM_SM90_CLUSTER", "CUTORCH_GEMM_SM90_STREAMK",
                "CUTORCH_GEMM_SM90_GRID", "CUTORCH_GEMM_SM90_STREAMK_PAIRS"):
        monkeypatch.delenv(var, raising=False)
    torch.backends.cuda.matmul.allow_tf32 = True  # the autouse fixture restores it
    (m, n, k), pairs = case
    a, b = linear_operands(m, n, k, torch.float32)
    bias = torch.randn(n, device="cuda")
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and e.config == "Sm90_128x256x32_Coop_S4", str(e)
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        assert (CLUSTER_NOTE in e.reason) == pairs, str(e)
        assert ("stream-K over" in e.reason) == ((m, n, k) == (3072, 3072, 3072)), str(e)
        if pairs:
            assert "(K > 1024 (32 K slices)" in e.reason, str(e)
    for what, fn, ref in (("mm", lambda: cg.mm(a, b), lambda: ref_gemm(a, b)),
                          ("gemm bias+gelu_tanh", lambda: cg.gemm(a, b, bias=bias, activation="gelu_tanh"),
                           lambda: ref_gemm(a, b, bias, activation="gelu_tanh"))):
        poison(m * n * 4)
        out = fn()
        r = ref().double()
        assert out.dtype == torch.float32 and out.shape == (m, n) and bool(torch.isfinite(out).all()), what
        diff = (out.double() - r).abs()
        err = float(diff.norm() / r.norm())
        assert err < TF32_BOUND, f"tf32 mid-K {what} {m}x{n}x{k}: rel err {err:.2e}"
        rms = float(r.square().mean().sqrt())
        worst = float((diff / (r.abs() + rms)).max())  # every element written and near its reference
        assert worst < 2e-2, f"tf32 mid-K {what} {m}x{n}x{k}: worst element error {worst:.2e} (of |ref| + rms)"
        del out, r, diff
