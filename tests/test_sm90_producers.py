"""The Hopper kernel's producer warps (collective/sm90_producer.cuh): 1 to 4 warps issue the k-blocks
in turn (each config's kProducerWarps by default; CUTORCH_GEMM_SM90_PRODUCERS overrides it). The
issue order changes when bytes arrive, never what the wgmmas read: every count must give the float64
reference's answer and the default count's bits exactly, for every config, with tiles whose k-block
counts are not multiples of the warp count (3 warps against rings of 4, 5, 8 and 12 stages), several
tiles per CTA, 2x1 clusters, grouped launches (the warp-wide scan) and the pointer-array launch.
Skipped without an sm_90 GPU."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import (check, count_repeat_mismatches, gpu, offs_from_sizes, poison, ref_gemm, ref_grouped_mm,
                      requires_sm90)

pytestmark = [gpu, requires_sm90, pytest.mark.usefixtures("tile_kernels_only")]

CONFIGS = ["coop", "pingpong", "pingpong128", "pingpong64"]
# (M, N, K): one k-block; 7 k-blocks over one tile wave; a capped grid's several tiles per CTA with 5
# k-blocks each; 16 k-blocks.
SHAPES = [(129, 257, 40), (300, 520, 440), (8960, 256, 320), (1024, 1024, 1000)]


def _run_counts(monkeypatch, fn):
    """fn() under the default count, then under 1-4 warps: each result bit-equal to the default's."""
    monkeypatch.delenv("CUTORCH_GEMM_SM90_PRODUCERS", raising=False)
    base = fn()
    for n in (1, 2, 3, 4):
        monkeypatch.setenv("CUTORCH_GEMM_SM90_PRODUCERS", str(n))
        poison(base.numel() * 2 if torch.is_tensor(base) else 1 << 20)
        out = fn()
        outs, bases = (out, base) if isinstance(out, list) else ([out], [base])
        for o, b in zip(outs, bases):
            assert torch.equal(o, b), f"{n} producer warps differ from the default"
    return base


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sm90_producer_warps_mm(config, mnk, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    if mnk[0] == 8960:
        monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", "7")  # several tiles per CTA
    m, n, k = mnk
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90", str(e)
    if config == "coop" and k * 2 % 128:  # rows not 128-byte multiples: 2x1 clusters (the last-acquire path)
        assert "2x1 clusters" in e.reason, str(e)
    out = _run_counts(monkeypatch, lambda: cg.mm(a, b))
    check(out, ref_gemm(a, b), torch.bfloat16, what=f"sm90 {config} mm {mnk}")


@pytest.mark.parametrize("config", ["coop", "pingpong64"])
def test_sm90_producer_warps_grouped_mm(config, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    sizes = [5, 64, 0, 63, 65, 1, 128, 7] * 5  # 40 groups: the scan crosses a warp
    offs = offs_from_sizes(sizes, "cuda")
    a = torch.randn(sum(sizes), 520, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(len(sizes), 520, 264, device="cuda", dtype=torch.bfloat16)
    assert cg.explain("grouped_mm", a, b, offs).kernel == "sm90"
    out = _run_counts(monkeypatch, lambda: cg.grouped_mm(a, b, offs))
    check(out, ref_grouped_mm(a, b, offs), torch.bfloat16, what=f"sm90 {config} grouped_mm")


def test_sm90_producer_warps_pointer_array(monkeypatch):
    shapes = [(300, 520, 136), (1, 256, 64), (0, 64, 64), (64, 96, 0), (1000, 1024, 512)]
    a = [torch.randn(m, k, device="cuda", dtype=torch.float16) for m, n, k in shapes]
    b = [torch.randn(n, k, device="cuda", dtype=torch.float16).t() for m, n, k in shapes]
    assert "pointer-array" in cg.explain("grouped_gemm", a, b).reason
    outs = _run_counts(monkeypatch, lambda: list(cg.grouped_gemm(a, b)))
    for i, (o, ai, bi) in enumerate(zip(outs, a, b)):
        check(o, ref_gemm(ai, bi), torch.float16, what=f"problem {i}")


@pytest.mark.parametrize("producers", ["", "4"], ids=["default", "4warps"])
@pytest.mark.parametrize("config", ["pingpong", "pingpong128", "pingpong64"])
def test_sm90_pingpong_repeated_calls(config, producers, monkeypatch):
    """Repeated dense ping-pong launches with short tiles (5 k-blocks) and several per CTA, so the consumers
    hand the ring over at nearly every tile: 500 calls in a row, every 100th call's output equal to the first
    call's bit for bit. The hand-over is where the release gate (collective/sm90_pingpong_turns.cuh) keeps the
    stage releases in ring order. NOTE: this test passed with the gate off too (H200, thirty-fourth session):
    the dense kernels never showed the race, so it guards repeated launches in general; the pointer-array
    test in tests/test_grouped_gemm_ptr.py is the one that faults without the gate."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    if producers:
        monkeypatch.setenv("CUTORCH_GEMM_SM90_PRODUCERS", producers)
    a = torch.randn(2048, 320, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(4096, 320, device="cuda", dtype=torch.bfloat16).t()
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and "Pingpong" in e.config, str(e)
    first = cg.mm(a, b)
    check(first, ref_gemm(a, b), torch.bfloat16, what=f"sm90 {config} mm 2048x4096x320")
    mismatched = count_repeat_mismatches(lambda: cg.mm(a, b), first, calls=500)
    assert mismatched == 0, f"{mismatched} sampled calls differ from the first call"
