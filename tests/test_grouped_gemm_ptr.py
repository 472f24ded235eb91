"""grouped_gemm's persistent pointer-array launch on sm90: one kernel over the tiles of problems
of different shapes, each with its own tensor maps and arguments. Empty problems, K = 0, one row, odd N
(staged epilogue), bias and activations, fp32 output, both configs, both b majornesses; calls
that do not qualify fall back to one launch per problem and say why. sm_90 GPUs only."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from benchmarks.bench_grouped import group_sizes
from conftest import HALF_DTYPES, check, count_repeat_mismatches, dtype_id, gpu, ref_gemm, requires_sm90

pytestmark = [gpu, requires_sm90]

# (M, N, K): partial tiles, one row, odd N, an empty problem, K = 0, a large one.
SHAPES = [(300, 520, 136), (1, 256, 64), (129, 77, 200), (0, 64, 64), (64, 96, 0), (1000, 1024, 512), (64, 8, 8)]


def problems(dtype, b_major):
    a, b = [], []
    for m, n, k in SHAPES:
        if b_major == "mn" and n * 2 % 16:
            n += 8 - n % 8  # a row-major b needs 16-byte aligned rows for TMA
        a.append(torch.randn(m, k, device="cuda", dtype=dtype))
        if b_major == "k":
            b.append(torch.randn(n, k, device="cuda", dtype=dtype).t())  # w.t(): K-major
        else:
            b.append(torch.randn(k, n, device="cuda", dtype=dtype))      # row-major: MN-major
    return a, b


@pytest.mark.parametrize("config", ["coop", "pingpong"])
@pytest.mark.parametrize("b_major", ["k", "mn"])
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
def test_sm90_pointer_array(monkeypatch, config, b_major, dtype):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    a, b = problems(dtype, b_major)
    e = cg.explain("grouped_gemm", a, b)
    assert e.kernel == "sm90" and "pointer-array" in e.reason, str(e)
    torch.empty(8 << 20, device="cuda", dtype=dtype).fill_(float("nan"))  # poison the allocator's blocks
    for kw in ({}, {"out_dtype": torch.float32}):
        outs = cg.grouped_gemm(a, b, **kw)
        assert len(outs) == len(a)
        for i, (o, ai, bi) in enumerate(zip(outs, a, b)):
            check(o, ref_gemm(ai, bi), dtype, kw.get("out_dtype"), what=f"problem {i} {tuple(o.shape)} {kw}")


@pytest.mark.parametrize("activation", ["gelu", "silu"])
def test_sm90_pointer_array_bias_activation(monkeypatch, activation):
    dtype = torch.bfloat16
    a, b = problems(dtype, "k")
    bias = [torch.randn(n, device="cuda", dtype=dtype) for _, n, _ in SHAPES]
    outs = cg.grouped_gemm(a, b, bias=bias, activation=activation)
    for i, (o, ai, bi, bs) in enumerate(zip(outs, a, b, bias)):
        check(o, ref_gemm(ai, bi, bs, activation=activation), dtype, what=f"problem {i} bias {activation}")


def test_sm90_pointer_array_fallbacks(monkeypatch):
    dtype = torch.float16
    a, b = problems(dtype, "k")
    big_a = [torch.randn(2048, 64, device="cuda", dtype=dtype) for _ in range(2)]
    big_b = [torch.randn(4096, 64, device="cuda", dtype=dtype).t() for _ in range(2)]
    e = cg.explain("grouped_gemm", big_a, big_b)  # 256 tiles each: one launch per problem
    assert "one launch per problem" in e.reason and "fill the GPU" in e.reason, str(e)
    for i, (o, ai, bi) in enumerate(zip(cg.grouped_gemm(big_a, big_b), big_a, big_b)):
        check(o, ref_gemm(ai, bi), dtype, what=f"big problem {i}")
    # CUTORCH_GEMM_GROUPED_PTR=on / off: the size rule's two sides forced (A/B runs)
    monkeypatch.setenv("CUTORCH_GEMM_GROUPED_PTR", "on")
    e = cg.explain("grouped_gemm", big_a, big_b)
    assert "pointer-array" in e.reason, str(e)
    for i, (o, ai, bi) in enumerate(zip(cg.grouped_gemm(big_a, big_b), big_a, big_b)):
        check(o, ref_gemm(ai, bi), dtype, what=f"big problem {i}, pointer-array forced")
    monkeypatch.setenv("CUTORCH_GEMM_GROUPED_PTR", "off")
    e = cg.explain("grouped_gemm", a, b)
    assert "one launch per problem" in e.reason and "CUTORCH_GEMM_GROUPED_PTR=off" in e.reason, str(e)
    for i, (o, ai, bi) in enumerate(zip(cg.grouped_gemm(a, b), a, b)):
        check(o, ref_gemm(ai, bi), dtype, what=f"problem {i}, one launch each forced")
    monkeypatch.delenv("CUTORCH_GEMM_GROUPED_PTR")
    mixed_b = [b[0], b[1].contiguous()] + b[2:]  # one MN-major b among K-major ones
    e = cg.explain("grouped_gemm", a, mixed_b)
    assert "one launch per problem" in e.reason and "majorness" in e.reason, str(e)
    for i, (o, ai, bi) in enumerate(zip(cg.grouped_gemm(a, mixed_b), a, mixed_b)):
        check(o, ref_gemm(ai, bi), dtype, what=f"fallback problem {i}")


def test_sm90_pointer_array_sorted_by_k(monkeypatch):
    """CUTORCH_GEMM_GROUPED_SORT_K=1 reorders the problems' tiles by decreasing K; every output
    still belongs to its own problem."""
    monkeypatch.setenv("CUTORCH_GEMM_GROUPED_SORT_K", "1")
    dtype = torch.bfloat16
    shapes = [(64, 128, 64), (200, 264, 1024), (1, 72, 8), (130, 128, 520)]
    a = [torch.randn(m, k, device="cuda", dtype=dtype) for m, _, k in shapes]
    b = [torch.randn(n, k, device="cuda", dtype=dtype).t() for _, n, k in shapes]
    for i, (o, ai, bi) in enumerate(zip(cg.grouped_gemm(a, b), a, b)):
        check(o, ref_gemm(ai, bi), dtype, what=f"sorted problem {i}")


@pytest.mark.parametrize("config", ["", "coop", "pingpong"], ids=["rule", "coop", "pingpong"])
def test_sm90_pointer_array_repeated_calls(monkeypatch, config):
    """The pointer-array launch called 1000 times in a row on MoE-like problems (64 experts of 1024x1024,
    0-784 rows each), with the size rule's pick (the ping-pong kernel here) and with each config forced:
    no launch fails, and every 100th call's outputs equal the first call's bit for bit (the kernels are
    deterministic), the first call's matching the float64 reference. The ping-pong kernel faulted within
    ~20-400 such calls (H200, thirty-third session) until its consumers released the stages in ring order
    (the ping-pong kernels' release gate, collective/sm90_pingpong_turns.cuh). With
    CUTORCH_GEMM_SM90_PP_GATE=off the rule's case fails again with "unspecified launch failure" (H200,
    thirty-fourth session)."""
    if config:
        monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    dtype = torch.bfloat16
    rows = group_sizes(64, 4096, "skewed", torch.Generator().manual_seed(3))  # (the benchmark's routing)
    x = torch.randn(4096, 1024, device="cuda", dtype=dtype)
    wt = torch.randn(64, 1024, 1024, device="cuda", dtype=dtype) * 1024 ** -0.5
    starts = [sum(rows[:e]) for e in range(64)]
    a = [x[s:s + r] for s, r in zip(starts, rows)]
    b = [wt[e].t() for e in range(64)]
    e = cg.explain("grouped_gemm", a, b)
    want = "Sm90_128x256x64_Coop_S4" if config == "coop" else "Sm90_64x256x64_Pingpong_S5"
    assert "pointer-array" in e.reason and e.config == want, str(e)
    first = cg.grouped_gemm(a, b)
    for i, (o, ai, bi) in enumerate(zip(first, a, b)):
        check(o, ref_gemm(ai, bi), dtype, what=f"problem {i} ({rows[i]} rows)")
    mismatched = count_repeat_mismatches(lambda: cg.grouped_gemm(a, b), first, calls=1000)
    assert mismatched == 0, f"{mismatched} outputs of the sampled calls differ from the first call's"
