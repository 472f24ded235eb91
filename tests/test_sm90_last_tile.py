"""Where the Hopper kernel stages a CTA's last tile (kernel/sm90_gemm_ws_kernel.cuh, its end): the deferring
cooperative kernels store the last tile's slices from the pipeline's idle stages (sm90_store_last_tile_fresh): the
bare kernels each slice as soon as it is written, the others all at once; CUTORCH_GEMM_SM90_LAST_FRESH=all stores
all at once in every kernel, =off sends the slices through the epilogue slot's buffers.

Staging changes where D's bytes wait in shared memory, never their values: every form must give the float64
reference's answer and the default form's bits exactly. The cases: one tile per CTA (the whole grid's last
tiles), several tiles per CTA (a capped grid), edge tiles in M and N, the 192- and 240-wide tiles, a fit width's
deferring twin, 2x1 pairs (rows that are not 128-byte multiples), and bias + GELU-tanh, bf16 and fp16.
Skipped without an sm_90 GPU."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import check, forced_sm90_operands, gpu, poison, ref_gemm, requires_sm90, sm90_case_id

pytestmark = [gpu, requires_sm90, pytest.mark.usefixtures("tile_kernels_only")]


def _same_bits_both_ways(monkeypatch, knob: str, value: str, fn):
    """fn() by default, then with knob=value: bit-equal."""
    monkeypatch.delenv(knob, raising=False)
    base = fn()
    monkeypatch.setenv(knob, value)
    poison(base.numel() * 2)
    other = fn()
    monkeypatch.delenv(knob, raising=False)
    assert torch.equal(base, other), f"{knob}={value} changed the result"
    return base


# (config, M, N, K, grid cap or None, what explain must name)
COOP_CASES = [
    ("coop", 2048, 2048, 256, None, "Sm90_128x256x64_Coop_S4"),     # one tile per CTA
    ("coop", 1000, 1000, 200, None, "Sm90_128x256x64_Coop_S4"),     # edge tiles in M and N
    ("coop", 4096, 2048, 320, "9", "Sm90_128x256x64_Coop_S4"),      # several tiles per CTA
    ("coop", 640, 776, 40, None, "Sm90_128x256x64_Coop_S4"),        # K under one k-block, 2x1 pairs
    ("coop192", 768, 1000, 136, None, "Sm90_128x192x64_Coop_S5"),
    ("coop240", 1000, 1000, 256, None, "Sm90_128x240x64_Coop_S4"),
    ("coop240", 3000, 1000, 1000, "5", "Sm90_128x240x64_Coop_S4"),  # pairs, several per CTA
    ("coop144", 1536, 1536, 512, None, "Sm90_128x144x64_Coop_S6"),  # a fit width's deferring twin
    ("coop160", 777, 1288, 192, None, "Sm90_128x160x64_Coop_S5"),  # (N a multiple of 8: D by TMA)
]


@pytest.mark.parametrize("case", COOP_CASES, ids=sm90_case_id)
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
def test_sm90_last_tile_from_stages(case, dtype, monkeypatch):
    config, m, n, k, _, name = case
    a, b, e = forced_sm90_operands(monkeypatch, case, dtype)
    assert e.kernel == "sm90" and name in e.config, str(e)
    out = _same_bits_both_ways(monkeypatch, "CUTORCH_GEMM_SM90_LAST_FRESH", "off", lambda: cg.mm(a, b))
    _same_bits_both_ways(monkeypatch, "CUTORCH_GEMM_SM90_LAST_FRESH", "all", lambda: cg.mm(a, b))
    check(out, ref_gemm(a, b), dtype, what=f"{config} mm {m}x{n}x{k}")


@pytest.mark.parametrize("config", ["coop", "coop240"])
def test_sm90_last_tile_from_stages_bias_gelu(config, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    m, n, k = 1000, 1000, 320
    x = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    w = torch.randn(n, k, device="cuda", dtype=torch.bfloat16)
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)

    def run():
        return cg.gemm(x, w.t(), bias=bias, activation="gelu_tanh")

    out = _same_bits_both_ways(monkeypatch, "CUTORCH_GEMM_SM90_LAST_FRESH", "off", run)
    check(out, ref_gemm(x, w.t(), bias=bias, activation="gelu_tanh"), torch.bfloat16,
          what=f"{config} bias + GELU-tanh")
