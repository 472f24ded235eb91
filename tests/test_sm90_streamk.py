"""Stream-K in the Hopper cooperative kernel (sm90 only): the last round of a dense launch cut along K,
each cut tile's fp32 partials added in k order by the CTA that holds its last k-blocks. Forced on small
problems (a capped grid) over every layout and epilogue, and by the rule on the shapes it was made for:
large launches and launches whose last round is at most a quarter full (where the wave rule now keeps
the cooperative config). Skipped elsewhere."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import (ACTIVATIONS, HALF_DTYPES, check, dtype_id, gpu, linear_operands, make, ref_gemm,
                      requires_sm90)

pytestmark = [gpu, requires_sm90, pytest.mark.usefixtures("tile_kernels_only")]


# ---- stream-K (the last round of a dense cooperative launch cut along K) ----------------------
# Small problems exercise it by capping the persistent grid (CUTORCH_GEMM_SM90_GRID) below the
# tile count and forcing the rule (CUTORCH_GEMM_SM90_STREAMK=on); each case names (M, N, K, grid).
# CUTORCH_GEMM_SM90_CLUSTER=1: operand rows that are not 128-byte multiples would take 2x1 clusters,
# which have no stream-K; CUTORCH_GEMM_SM90_SPLIT_FILL=1000: so few tiles would take split-K (the binding
# decides it first, against the GPU's SMs, not the capped grid). Each test asks explain that stream-K runs.
STREAMK_CASES = [(640, 512, 320, 7),      # 10 tiles over 7 CTAs: every tile cut, k-blocks 5
                 (300, 520, 72, 4),        # edge tiles, K of 2 slices (one CTA's piece is 1 slice)
                 (1000, 1000, 1000, 5),    # 32 tiles: 2 whole rounds, then stream-K
                 (129, 2000, 4104, 3)]     # K not a multiple of 64, an edge row tile


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("case", STREAMK_CASES, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("layouts", [("row", "col"), ("row", "row"), ("col", "row"), ("col", "col")], ids="-".join)
@pytest.mark.parametrize("mode", ["on", "last"])
def test_sm90_streamk_matches_reference(dtype, case, layouts, mode, monkeypatch):
    m, n, k, grid = case
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_STREAMK", mode)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", str(grid))
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CLUSTER", "1")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_SPLIT_FILL", "1000")
    a = make((m, k), dtype, "cuda", layouts[0])
    b = make((k, n), dtype, "cuda", layouts[1])
    e = cg.explain("mm", a, b)
    # An M-contiguous a of 129 or 300 rows is not 16-byte aligned for TMA: the sm80 family takes it.
    assert e.kernel == "sm90" or (layouts[0] == "col" and m % 8), str(e)
    # "last" cuts only the last round's one tile of 300x520x72: 2 k-blocks cannot feed 4 CTAs.
    if e.kernel == "sm90" and not (mode == "last" and k == 72):
        assert "stream-K over" in e.reason, str(e)
    torch.empty(m * n * 2, device="cuda", dtype=dtype).fill_(float("nan"))
    out = cg.mm(a, b)
    check(out, ref_gemm(a, b), dtype, what=f"stream-K mm {case} {layouts}")
    torch.testing.assert_close(cg.mm(a, b), out, rtol=0, atol=0)  # deterministic
    monkeypatch.setenv("CUTORCH_GEMM_SM90_STREAMK", "off")
    check(cg.mm(a, b), ref_gemm(a, b), dtype, what="the same without stream-K")


@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_sm90_streamk_epilogues(activation, monkeypatch):
    """The owner of a cut tile runs the whole epilogue: bias, C, alpha / beta, activation, fp32 D."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_STREAMK", "on")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", "6")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CLUSTER", "1")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_SPLIT_FILL", "1000")
    m, n, k = 520, 600, 456
    a, b = linear_operands(m, n, k, torch.bfloat16)
    assert "stream-K over" in cg.explain("mm", a, b).reason
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    c = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    for out_dtype in (None, torch.float32):
        out = cg.gemm(a, b, bias=bias, c=c, alpha=0.5, beta=2.0, activation=activation, out_dtype=out_dtype)
        check(out, ref_gemm(a, b, bias, c, 0.5, 2.0, activation), torch.bfloat16, out_dtype,
              what=f"stream-K gemm {activation} out={out_dtype}")
        out = cg.gemm(a, b, bias=bias, activation=activation, out_dtype=out_dtype)
        check(out, ref_gemm(a, b, bias, None, 1.0, 0.0, activation), torch.bfloat16, out_dtype,
              what=f"stream-K gemm bias {activation} out={out_dtype}")


def test_sm90_streamk_default_rule_and_tf32(monkeypatch):
    """Without forcing: 1024x38144 bf16 (1192 tiles; 4 left for a 132-SM last round) takes the
    rule's "wide" stream-K on an H100 / H200; tf32 goes through it too (forced, capped grid)."""
    monkeypatch.delenv("CUTORCH_GEMM_SM90_CONFIG", raising=False)
    monkeypatch.delenv("CUTORCH_GEMM_SM90_STREAMK", raising=False)
    a, b = linear_operands(1024, 38144, 256, torch.bfloat16)
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        assert "stream-K over the last 136 of 1192 tiles" in cg.explain("mm", a, b).reason
    check(cg.mm(a, b), ref_gemm(a, b), torch.bfloat16, what="stream-K by the rule")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_STREAMK", "on")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", "5")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CLUSTER", "1")  # (200 fp32 K: rows not 128-byte multiples)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_SPLIT_FILL", "1000")
    old = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = True
    try:
        a, b = linear_operands(700, 600, 200, torch.float32)
        e = cg.explain("mm", a, b)
        assert e.config == "Sm90_128x256x32_Coop_S4" and "stream-K over" in e.reason, str(e)
        out = cg.mm(a, b)
        ref = ref_gemm(a, b)
        err = float((out.double() - ref).norm() / ref.norm())
        assert err < 2e-3, err  # tf32 products
    finally:
        torch.backends.cuda.matmul.allow_tf32 = old


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
def test_sm90_sparse_last_round_by_the_rule(dtype, monkeypatch):
    """Without forcing (132 SMs): 1280x3584x4096 has 140 tiles of 128x256, a last round of 8 (6%) and 64 K
    slices: "wide" stream-K over all 140. 1536x6144x4096 (288 tiles, 18%) would take ping-pong 64x256 by the
    wave rule; it keeps the cooperative config because that launch takes stream-K. (b is read MN-major: with both
    operands K-major these bias + GELU-tanh launches take the fit-width tiles, tests/test_sm90_fit.py.)"""
    for var in ("CUTORCH_GEMM_SM90_CONFIG", "CUTORCH_GEMM_SM90_STREAMK", "CUTORCH_GEMM_SM90_GRID",
                "CUTORCH_GEMM_SM90_CLUSTER"):
        monkeypatch.delenv(var, raising=False)
    full = torch.cuda.get_device_properties(0).multi_processor_count == 132
    for (m, n, k), tiles in (((1280, 3584, 4096), 140), ((1536, 6144, 4096), 288)):
        a = torch.randn(m, k, device="cuda", dtype=dtype)
        b = torch.randn(k, n, device="cuda", dtype=dtype)
        bias = torch.randn(n, device="cuda", dtype=dtype)
        e = cg.explain("gemm", a, b, bias=bias, activation="gelu_tanh")
        if full:
            assert e.config == "Sm90_128x256x64_Coop_S4" and f"of {tiles} tiles" in e.reason, str(e)
        torch.empty(m * n * 2, device="cuda", dtype=dtype).fill_(float("nan"))
        out = cg.gemm(a, b, bias=bias, activation="gelu_tanh")
        check(out, ref_gemm(a, b, bias, activation="gelu_tanh"), dtype, what=f"sparse last round {m}x{n}x{k}")
        torch.testing.assert_close(cg.gemm(a, b, bias=bias, activation="gelu_tanh"), out, rtol=0, atol=0)


# "full" (forced): one partial round of cooperative tiles spread over every SM (or the capped grid), every
# tile cut, a CTA holding under one tile's k-blocks; K- and N-multiples of 64 keep the operands' rows
# 128-byte aligned (otherwise the launch takes 2x1 clusters, which have no stream-K), and
# CUTORCH_GEMM_SM90_SPLIT_FILL=1000 keeps split-K (which comes first) off the few-tile cases. (M, N, K, grid cap)
FULL_CASES = [(1000, 1024, 1024, 0),    # 32 tiles x 16 k-blocks over 132 CTAs: ~4 pieces a tile
              (320, 512, 4160, 0),      # 6 tiles x 65 k-blocks: ~22 pieces a tile
              (768, 3072, 2048, 0),     # 72 tiles: one to two pieces a tile
              (129, 2048, 4096, 40),    # an edge row tile, a capped grid of 40 CTAs
              (700, 3072, 1024, 0)]     # 72 tiles, an edge row tile, 16 k-blocks


@pytest.mark.parametrize("case", FULL_CASES, ids=lambda c: "x".join(map(str, c)))
def test_sm90_streamk_full_round(case, monkeypatch):
    m, n, k, grid = case
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_STREAMK", "full")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_SPLIT_FILL", "1000")
    if grid:
        monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", str(grid))
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)            # unpadded rows: 128-byte multiples
    b = torch.randn(n, k, device="cuda", dtype=torch.bfloat16).t()
    tiles = -(-m // 128) * -(-n // 256)
    ctas = grid or torch.cuda.get_device_properties(0).multi_processor_count
    assert f"stream-K over the last {tiles} of {tiles} tiles" in cg.explain("mm", a, b).reason
    assert f"over the {ctas} CTAs" in cg.explain("mm", a, b).reason
    torch.empty(m * n * 2, device="cuda", dtype=torch.bfloat16).fill_(float("nan"))
    out = cg.mm(a, b)
    check(out, ref_gemm(a, b), torch.bfloat16, what=f"full stream-K mm {case}")
    torch.testing.assert_close(cg.mm(a, b), out, rtol=0, atol=0)  # deterministic
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    check(cg.gemm(a, b, bias=bias, activation="gelu_tanh"), ref_gemm(a, b, bias, activation="gelu_tanh"),
          torch.bfloat16, what=f"full stream-K gemm {case}")
    out32 = cg.gemm(a, b, out_dtype=torch.float32)
    check(out32, ref_gemm(a, b), torch.bfloat16, torch.float32, what=f"full stream-K fp32 D {case}")


@pytest.mark.parametrize("mnk", [(768, 3072, 8192), (896, 3584, 6144)], ids=lambda s: "x".join(map(str, s)))
def test_sm90_streamk_full_by_the_rule(mnk, monkeypatch):
    """Stream-K unforced: one cooperative round 55-74% full with tiles 96+ K slices deep takes the "full" form
    on a 132-SM GPU (device/sm90_cluster_streamk.h, sm90_streamk_full); the cooperative config then stays. (The fit-width
    rule is switched off, CUTORCH_GEMM_SM90_CONFIG=nofit: it would give 896x3584x6144 its 208-wide tiles, b
    MN-major or not, tests/test_sm90_fit.py.)"""
    for var in ("CUTORCH_GEMM_SM90_STREAMK", "CUTORCH_GEMM_SM90_GRID"):
        monkeypatch.delenv(var, raising=False)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "nofit")
    m, n, k = mnk
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    e = cg.explain("mm", a, b)
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        tiles = -(-m // 128) * -(-n // 256)
        assert e.config == "Sm90_128x256x64_Coop_S4" and f"last {tiles} of {tiles} tiles" in e.reason, str(e)
    out = cg.mm(a, b)
    check(out, ref_gemm(a, b), torch.bfloat16, what=f"full stream-K by the rule {mnk}")
    torch.testing.assert_close(cg.mm(a, b), out, rtol=0, atol=0)


# Stream-K in 2x1 clusters (by default K > 4096; CUTORCH_GEMM_SM90_STREAMK_PAIRS=on forces it here at shallow K): a
# cluster's two CTAs cutting the same K ranges of their pair tile's two tiles, each with its own partial slots.
# (M, N, K, grid cap in CTAs)
PAIR_CASES = [(1000, 1024, 1024, 6),   # 16 pair tiles over 3 clusters
              (1152, 1000, 1000, 6),   # 9 tile rows: the last pair's second tile lies past M; K not a multiple of 64
              (640, 512, 320, 8)]      # 6 pair tiles over 4 clusters: "on" cuts them all


@pytest.mark.parametrize("case", PAIR_CASES, ids=lambda c: "x".join(map(str, c)))
@pytest.mark.parametrize("layouts", [("row", "col"), ("col", "row")], ids="-".join)
@pytest.mark.parametrize("mode", ["on", "last"])
def test_sm90_streamk_in_pairs(case, layouts, mode, monkeypatch):
    m, n, k, grid = case
    for name, value in (("CONFIG", "coop"), ("STREAMK", mode), ("GRID", str(grid)), ("CLUSTER", "2"),
                        ("STREAMK_PAIRS", "on"), ("SPLIT_FILL", "1000")):
        monkeypatch.setenv(f"CUTORCH_GEMM_SM90_{name}", value)
    dtype = torch.bfloat16
    a = make((m, k), dtype, "cuda", layouts[0])
    b = make((k, n), dtype, "cuda", layouts[1])
    bias = make((n,), dtype, "cuda")
    e = cg.explain("gemm", a, b, bias=bias, activation="gelu_tanh")
    assert e.kernel == "sm90" and "2x1 clusters" in e.reason and "pair tiles" in e.reason, str(e)
    torch.empty(m * n * 2, device="cuda", dtype=dtype).fill_(float("nan"))
    out = cg.mm(a, b)
    check(out, ref_gemm(a, b), dtype, what=f"stream-K in pairs mm {case} {layouts}")
    torch.testing.assert_close(cg.mm(a, b), out, rtol=0, atol=0)  # deterministic
    check(cg.gemm(a, b, bias=bias, activation="gelu_tanh"), ref_gemm(a, b, bias, activation="gelu_tanh"), dtype,
          what=f"stream-K in pairs gemm {case}")
    check(cg.gemm(a, b, out_dtype=torch.float32), ref_gemm(a, b), dtype, torch.float32,
          what=f"stream-K in pairs fp32 D {case}")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_STREAMK_PAIRS", "off")
    assert "pair tiles" not in cg.explain("mm", a, b).reason
    check(cg.mm(a, b), ref_gemm(a, b), dtype, what="the same pairs without stream-K")
