"""The activation rule (device/sm90_fit_rules.h, choose_sm90_act) on the GPU: opt-in since the fiftieth session
(CUTORCH_GEMM_SM90_ACT_PINGPONG=on), it moves dense launches with an activation from the cooperative 128x256 tiles
to the 64x256 ping-pong ones within its bounds (K <= 4096, M*N*K <= 2^39). By default they stay cooperative. Both
configs match the float64 reference on poisoned memory. The rule's pure logic: tests/test_sm90_fit_rules.py.
Skipped without an sm_90 GPU."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import ACTIVATIONS, HALF_DTYPES, check, dtype_id, gpu, linear_operands, poison, ref_gemm, requires_sm90

pytestmark = [gpu, requires_sm90, pytest.mark.usefixtures("tile_kernels_only")]

COOP, PINGPONG = "Sm90_128x256x64_Coop_S4", "Sm90_64x256x64_Pingpong_S5"


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("mnk", [(2048, 2048, 1024), (1537, 2312, 4096), (2048, 2048, 4160)],
                         ids=lambda s: "x".join(map(str, s)))
def test_sm90_activation_takes_pingpong(dtype, activation, mnk, monkeypatch):
    """The activation rule (device/sm90_fit_rules.h, choose_sm90_act), opted in with CUTORCH_GEMM_SM90_ACT_PINGPONG=on:
    a dense launch that is left on the cooperative 128x256 tiles by default runs 64x256 ping-pong tiles where the
    epilogue has an activation, K <= 4096 and M*N*K <= 2^39 (explain names the config); without an activation or
    past K = 4096 the config stays. Both configs match the float64 reference on poisoned memory."""
    m, n, k = mnk
    a, b = linear_operands(m, n, k, dtype)
    bias = 4 * torch.randn(n, device="cuda", dtype=dtype)
    monkeypatch.delenv("CUTORCH_GEMM_SM90_ACT_PINGPONG", raising=False)
    base = cg.explain("gemm", a, b, bias=bias, activation=activation).config
    if m == 2048:  # (one round of 128x256 tiles, which no other rule replaces)
        assert base == COOP, base
    poison(m * n * 2)
    out_base = cg.gemm(a, b, bias=bias, activation=activation)
    check(out_base, ref_gemm(a, b, bias, None, 1.0, 0.0, activation), dtype, what=f"{activation} {mnk} {base}")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_ACT_PINGPONG", "on")
    e = cg.explain("gemm", a, b, bias=bias, activation=activation)
    takes = base == COOP and activation != "none" and k <= 4096 and m * n * k <= 1 << 39
    assert e.kernel == "sm90" and e.config == (PINGPONG if takes else base), str(e)
    poison(m * n * 2)
    out = cg.gemm(a, b, bias=bias, activation=activation)
    check(out, ref_gemm(a, b, bias, None, 1.0, 0.0, activation), dtype, what=f"{activation} {mnk} {e.config}")


@pytest.mark.parametrize("mnk,takes", [((16384, 14336, 1024), True), ((16384, 8192, 4096), True),
                                       ((12288, 14336, 4096), False), ((16384, 14336, 4096), False)],
                         ids=lambda v: "x".join(map(str, v)) if isinstance(v, tuple) else str(v))
def test_sm90_activation_rule_problem_bound(mnk, takes, monkeypatch):
    """The activation rule's M*N*K bound (2^39) as explain applies it to large nn.Linear launches, opted in (explain
    only: the launches themselves are the large ones header_ab measured); by default they stay cooperative."""
    m, n, k = mnk
    a = torch.empty(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.empty(n, k, device="cuda", dtype=torch.bfloat16).t()
    bias = torch.empty(n, device="cuda", dtype=torch.bfloat16)
    monkeypatch.delenv("CUTORCH_GEMM_SM90_ACT_PINGPONG", raising=False)
    e = cg.explain("gemm", a, b, bias=bias, activation="gelu_tanh")
    assert e.kernel == "sm90" and e.config == COOP, str(e)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_ACT_PINGPONG", "on")
    e = cg.explain("gemm", a, b, bias=bias, activation="gelu_tanh")
    assert e.kernel == "sm90" and e.config == (PINGPONG if takes else COOP), str(e)
    if takes:
        assert "M*N*K <= 2^39" in e.reason, e.reason
