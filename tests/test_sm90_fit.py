"""The fit-width cooperative tiles (Sm90_128xNx64_Coop, N = 80 ... 224; device/sm90_configs.h,
choose_sm90_fit): every width through mm / gemm / linear-style operands against the float64 reference,
with edge tiles in M and N, K shorter than a k-block and not a multiple of it, bias, alpha and an fp32
D; explain must name the width that ran; the same with an MN-major B and with both operands MN-major (the
backward's forms). The rule: where it applies on this GPU it runs (plain launches, and those with an activation whose
every tile defers its store), and launches it does not cover (an MN-major A with a K-major B, an MN-major B on rows
that are not 128-byte multiples, an fp32 D with an activation, C whose rows are not 4-byte aligned pairs, odd N, a forced
epilogue path) keep the other configs. (C that is: tests/test_sm90_c_loads.py.)
Skipped without an sm_90 GPU."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from cutorch_gemm import _C
from conftest import check, gpu, poison, ref_gemm, requires_sm90

pytestmark = [gpu, requires_sm90, pytest.mark.usefixtures("tile_kernels_only")]

WIDTHS = [80, 96, 112, 128, 144, 160, 176, 192, 208, 224]
# (M, N, K): partial tiles in M and N, K under one k-block; one full round of 1536^3-like tiles; K not a
# multiple of 64; several tiles per CTA (more tiles than SMs).
SHAPES = [(129, 298, 40), (1536, 1536, 1024), (1000, 1502, 776), (2304, 3000, 200)]


def _operands(m, n, k, dtype):
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    b = torch.randn(n, k, device="cuda", dtype=dtype).t()  # nn.Linear's weight view: K-major
    return a, b


def _check_mm_and_bias(a, b, dtype, what):
    """mm against the float64 reference (poisoned output, the same bits on a second run), then gemm with bias
    and alpha into the same 16-bit type."""
    m, n = a.shape[0], b.shape[1]
    poison(m * n * 4)
    out = cg.mm(a, b)
    check(out, ref_gemm(a, b), dtype, what=f"{what} mm")
    assert torch.equal(out, cg.mm(a, b)), "the same bits on a second run"
    bias = torch.randn(n, device="cuda", dtype=dtype)
    poison(m * n * 4)
    check(cg.gemm(a, b, bias=bias, alpha=0.5), ref_gemm(a, b, bias=bias, alpha=0.5), dtype, what=f"{what} bias")
    return bias


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("mnk", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sm90_fit_widths(width, mnk, dtype, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", f"coop{width}")
    m, n, k = mnk
    a, b = _operands(m, n, k, dtype)
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and f"_128x{width}x64_Coop" in e.config, str(e)
    # every width but 128 defers its store where every tile can (the deferring twins, and 192 its own; D rows of 16-byte
    # multiples)
    assert ("deferred store" in e.reason) == (width != 128 and n % 8 == 0), str(e)
    poison(m * n * 4)
    check(cg.mm(a, b), ref_gemm(a, b), dtype, what=f"fit {width} mm {mnk}")
    bias = torch.randn(n, device="cuda", dtype=dtype)
    e = cg.explain("gemm", a, b, bias=bias, alpha=0.5, out_dtype=torch.float32)
    assert f"_128x{width}x64_Coop" in e.config, str(e)
    poison(m * n * 4)
    out = cg.gemm(a, b, bias=bias, alpha=0.5, out_dtype=torch.float32)
    check(out, ref_gemm(a, b, bias=bias, alpha=0.5), dtype, torch.float32, what=f"fit {width} gemm {mnk}")
    # bias and alpha into a 16-bit D: the deferred packing for every width but 128
    poison(m * n * 4)
    check(cg.gemm(a, b, bias=bias, alpha=0.5), ref_gemm(a, b, bias=bias, alpha=0.5), dtype,
          what=f"fit {width} gemm 16-bit D {mnk}")


# MN-major B (dX = dY W: B row-major (K, N)) and both operands MN-major (dW = dY^T X: A M-contiguous), each width; B in
# whole 64-column boxes where the width is not a multiple of 64 (Sm90MnB: past the tile, or past N, where 320 with 144
# leaves a box wholly outside);
# rows of 128-byte multiples (the layouts' condition): N, and M (both MN-major) or K (a K-major A: rounded up to 64
# here) multiples of 64.
MN_SHAPES = [(192, 320, 40), (1536, 1536, 1024), (1024, 1472, 776), (2304, 3008, 200)]


def _mn_operands(m, n, k, dtype, layout):
    a = torch.randn(m, k, device="cuda", dtype=dtype)
    if layout == "both_mn":
        a = torch.randn(k, m, device="cuda", dtype=dtype).t()  # M-contiguous
    return a, torch.randn(k, n, device="cuda", dtype=dtype)  # N-contiguous


@pytest.mark.parametrize("layout", ["b_mn", "both_mn"])
@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("width", WIDTHS)
@pytest.mark.parametrize("mnk", MN_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sm90_fit_widths_mn_major(width, mnk, dtype, layout, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", f"coop{width}")
    m, n, k = mnk
    k = k if layout == "both_mn" else -(-k // 64) * 64
    a, b = _mn_operands(m, n, k, dtype, layout)
    e = cg.explain("mm", a, b)
    assert e.kernel == "sm90" and f"_128x{width}x64_Coop" in e.config and "clusters" not in e.reason, str(e)
    assert ("deferred store" in e.reason) == (width != 128), str(e)
    assert ("whole 64-column boxes" in e.reason) == (width % 64 != 0), str(e)
    bias = _check_mm_and_bias(a, b, dtype, f"fit {width} {layout} {mnk}")
    poison(m * n * 4)
    out = cg.gemm(a, b, bias=bias, out_dtype=torch.float32)
    check(out, ref_gemm(a, b, bias=bias), dtype, torch.float32, what=f"fit {width} {layout} fp32 D {mnk}")
    c = torch.randn(m, n, device="cuda", dtype=dtype)
    poison(m * n * 4)
    check(cg.gemm(a, b, c=c, beta=0.5), ref_gemm(a, b, c=c, beta=0.5), dtype, what=f"fit {width} {layout} C {mnk}")


@pytest.mark.parametrize("layout", ["b_mn", "both_mn"])
def test_sm90_fit_rule_mn_major(layout):
    """The training backward's forms of mid-size shapes take the rule's widths from 160 up (mn_b), 1536x1536x4096
    too (160 fills 87% of one round); 512x2560x2560 keeps the heuristic's config."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for m, n, k in [(1536, 1536, 4096), (1024, 2560, 4096), (2048, 1280, 1024), (512, 2560, 2560),
                    (3072, 3072, 4096)]:
        fit = _C.choose_sm90_fit(m, n, k, sms, mn_b=True)
        a, b = _mn_operands(m, n, k, torch.bfloat16, layout)
        e = cg.explain("mm", a, b)
        assert (e.config == fit and "fit-width" in e.reason) if fit else "fit-width" not in e.reason, str(e)
        if sms == 132:
            # (512x2560: only 80 fills the round)
            assert bool(fit) == ((m, n) != (512, 2560)), f"rule on 132 SMs: {m}x{n}x{k}: {fit!r}"
        out = cg.mm(a, b)
        check(out, ref_gemm(a, b), torch.bfloat16, what=f"rule {layout} {m}x{n}x{k}")
        assert torch.equal(out, cg.mm(a, b)), "the same bits on a second run"


@pytest.mark.parametrize("width", [80, 144, 224])
def test_sm90_fit_clusters(width, monkeypatch):
    """Rows that are not 128-byte multiples (K = 1000) take 2x1 clusters: half the B tile (N / 2 rows)
    multicast per CTA."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", f"coop{width}")
    a, b = _operands(1000, 1400, 1000, torch.bfloat16)
    e = cg.explain("mm", a, b)
    assert f"_128x{width}x64_Coop" in e.config and "2x1 clusters" in e.reason, str(e)
    check(cg.mm(a, b), ref_gemm(a, b), torch.bfloat16, what=f"fit {width} clusters")


# The big tiles (choose_sm90_big), forced here ("coop320", "coop192x192") so every shape runs them: plain mm, bias +
# alpha, an fp32 D and beta * C (D from registers) against float64, then D from registers forced.
# 128x320 (Sm90_128x320x64_Coop_S3): two m64n160k16 per k16 step, B in two 160-row boxes. Edge tiles in M and N (N
# short of one half, past one half, past one tile), K under one k-block and not a multiple of it, several tiles per
# CTA; rows that are not 128-byte multiples (K not a multiple of 64) take 2x1 clusters, each CTA multicasting one
# 160-row half.
C320_SHAPES = [(129, 298, 40), (200, 482, 72), (1000, 1000, 1000), (2560, 4096, 4096), (2304, 3000, 200),
               (300, 700, 128)]
# 192x192 (Sm90_192x192x64_Coop_S4): three consumer warpgroups, always in 2x1 pairs from two tile rows on (450 rows:
# three, the last pair's second CTA past M); M past one and two thirds of a tile, the same edge cases otherwise.
# 4224x8192x320: many tiles per CTA (11 x 43 pair tiles over 66 clusters, about 7 each; K of 5 k-blocks over 4 stages,
# so each tile starts at another stage). The others run at most two per CTA; the one stall seen with the 32 / 160
# register split (sixty-first session, benchmarks/RESULTS.md) was in a launch with more.
C192X192_SHAPES = [(129, 298, 40), (200, 200, 72), (1000, 1000, 1000), (3072, 3072, 3072), (2304, 3000, 200),
                   (450, 700, 128), (4224, 8192, 320)]
BIG_CASES = [("coop320", "Sm90_128x320x64_Coop_S3", s) for s in C320_SHAPES] + \
            [("coop192x192", "Sm90_192x192x64_Coop_S4", s) for s in C192X192_SHAPES]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("case", BIG_CASES, ids=lambda c: f"{c[0]}-{'x'.join(map(str, c[2]))}")
def test_sm90_big_tiles(case, dtype, monkeypatch):
    forced, name, (m, n, k) = case
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", forced)
    a, b = _operands(m, n, k, dtype)
    e = cg.explain("mm", a, b)
    assert e.config == name, str(e)
    # (the 320-wide tiles pair on unaligned rows only; the 192-row ones always: choose_sm90_cluster)
    pairs = m > 192 if forced == "coop192x192" else k % 64 != 0
    assert ("2x1 clusters" in e.reason) == pairs, str(e)
    what = f"{forced} {m}x{n}x{k}"
    bias = _check_mm_and_bias(a, b, dtype, what)
    poison(m * n * 4)
    out = cg.gemm(a, b, bias=bias, alpha=0.5, out_dtype=torch.float32)
    check(out, ref_gemm(a, b, bias=bias, alpha=0.5), dtype, torch.float32, what=f"{what} fp32 D")
    c = torch.randn(m, n, device="cuda", dtype=dtype)
    poison(m * n * 4)
    check(cg.gemm(a, b, c=c, beta=0.5), ref_gemm(a, b, c=c, beta=0.5), dtype, what=f"{what} C")
    # bias + an activation: on the tiles where D takes the TMA store (rows 16-byte aligned: N a multiple of 8), else
    # the rules' config
    for act in ("relu", "gelu", "gelu_tanh", "silu"):
        e = cg.explain("gemm", a, b, bias=bias, activation=act)
        assert (e.config == name) == (n % 8 == 0), str(e)
        poison(m * n * 4)
        check(cg.gemm(a, b, bias=bias, activation=act), ref_gemm(a, b, bias=bias, activation=act), dtype,
              what=f"{what} bias + {act}")
    # an MN-major B keeps the rules' config
    b_mn = b.contiguous()  # (K, N) row-major: MN-major
    assert cg.explain("mm", a, b_mn).config != name
    check(cg.mm(a, b_mn), ref_gemm(a, b_mn), dtype, what=f"{what} forced, b MN-major")
    # D from registers (the forced direct epilogue path; C above took it too)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", "direct")
    assert cg.explain("mm", a, b).config == name
    poison(m * n * 4)
    check(cg.mm(a, b), ref_gemm(a, b), dtype, what=f"{what} direct store")


def test_sm90_fit_rule_runs():
    """Shapes the rule gives fit tiles on this GPU run them, correctly and repeatably; where the big-tile rule
    (choose_sm90_big) takes the fit tile's place, its tile."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    ran = big_ran = 0
    for m, n, k in [(1536, 1536, 4096), (768, 3072, 2048), (1024, 2560, 4096), (2048, 1280, 1024),
                    (1024, 1536, 8960), (512, 3072, 4096),
                    (3072, 3072, 4096), (3328, 4096, 3072), (1536, 6144, 4096)]:  # (three, four, five rounds)
        fit = _C.choose_sm90_fit(m, n, k, sms)
        a, b = _operands(m, n, k, torch.bfloat16)
        e = cg.explain("mm", a, b)
        if not fit:
            assert "_Coop_" not in e.config or "x256x" in e.config, str(e)
            continue
        ran += 1
        big = _C.choose_sm90_big(fit, m, n, k, sms)
        big_ran += bool(big)
        assert (e.config == big and "big-tile rule" in e.reason) if big else \
            (e.config == fit and "fit-width" in e.reason), str(e)
        out = cg.mm(a, b)
        check(out, ref_gemm(a, b), torch.bfloat16, what=f"rule {m}x{n}x{k}")
        assert torch.equal(out, cg.mm(a, b)), "the same bits on a second run"
    if sms == 132:
        assert ran == 9, "on 132 SMs the rule takes every one of these shapes"
        assert big_ran == 3, "and the big-tile rule the last three (192x192 pairs)"
    # Rows that are not 128-byte multiples (K = 1000) take 2x1 clusters and the pair rule, never a direct-store
    # width: at 1536x1536x1000 the 64x128 ping-pong tiles' three rounds become one round of 128x192 pairs.
    a, b = _operands(1536, 1536, 1000, torch.bfloat16)
    e = cg.explain("mm", a, b)
    assert "fit-width" not in e.reason and not any(f"_128x{w}x64" in e.config for w in WIDTHS if w != 192), str(e)
    if sms == 132:
        assert "_128x192x64_Coop" in e.config and "2x1 clusters" in e.reason and "deferred store" in e.reason, str(e)
    check(cg.mm(a, b), ref_gemm(a, b), torch.bfloat16, what="rule, unaligned rows")


# Rows that are not 128-byte multiples: the pair rule's launches (choose_sm90_pairs), 128x192 deferring pairs and
# 128x256 pairs in place of ping-pong tiles; edge tiles in M and N, bias, alpha, an fp32 D and an N that is even
# but not a multiple of 8 (no TMA store: D from registers).
PAIR_SHAPES = [(2000, 3000, 1000), (3000, 3000, 1000), (1000, 3000, 2000), (2048, 5000, 3000), (777, 2998, 1000)]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("mnk", PAIR_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sm90_pair_rule_launches(mnk, dtype):
    m, n, k = mnk
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    a, b = _operands(m, n, k, dtype)
    e = cg.explain("mm", a, b)
    assert "2x1 clusters" in e.reason and "_Coop_" in e.config, str(e)
    if sms == 132 and mnk != (2048, 5000, 3000):
        assert "_128x192x64_Coop" in e.config, str(e)
    bias = _check_mm_and_bias(a, b, dtype, f"pairs {mnk}")
    poison(m * n * 4)
    check(cg.gemm(a, b, bias=bias, out_dtype=torch.float32), ref_gemm(a, b, bias=bias), dtype, torch.float32,
          what=f"pairs fp32 D {mnk}")


@pytest.mark.parametrize("case", ["gelu_tanh", "relu_bias", "c", "mn_major_b", "mn_major_a", "staged"])
def test_sm90_pair_rule_other_launches(case, monkeypatch):
    """Launches on rows that are not 128-byte multiples (K = 1000) in place of the heuristic's ping-pong tiles over
    more than one round (2000x3000x1000: 64x256, 384 tiles): those the fit tiles do not take, 128x256 pairs; bias +
    an activation the packing has (every tile defers its store) and C (the fit rule's launches), the plain launch's
    128x192 pairs."""
    m, n, k = 2000, 3000, 1000
    a, b = _operands(m, n, k, torch.bfloat16)
    kwargs = {}
    if case == "gelu_tanh":
        kwargs = {"activation": "gelu_tanh"}
    if case == "relu_bias":
        kwargs = {"activation": "relu", "bias": torch.randn(n, device="cuda", dtype=torch.bfloat16)}
    if case == "c":
        kwargs = {"c": torch.randn(m, n, device="cuda", dtype=torch.bfloat16), "beta": 0.5}
    if case == "mn_major_b":
        b = b.contiguous()  # N-contiguous rows of 3000 elements: 6000 bytes
    if case == "mn_major_a":
        a = a.t().contiguous().t()  # M-contiguous rows of 2000 elements: 4000 bytes
    if case == "staged":
        monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", "staged")
    e = cg.explain("gemm", a, b, **kwargs)
    if torch.cuda.get_device_properties(0).multi_processor_count == 132:
        # (bias + an activation the packing has defers every tile, and C the fit rule takes: the 192-wide pairs, as
        # the plain launch)
        wide = "Sm90_128x192x64_Coop_S5" if case in ("gelu_tanh", "relu_bias", "c") else "Sm90_128x256x64_Coop_S4"
        assert e.config == wide and "2x1 clusters" in e.reason, str(e)
        assert "not 128-byte multiples" in e.reason, str(e)
    poison(m * n * 4)
    check(cg.gemm(a, b, **kwargs), ref_gemm(a, b, **kwargs), torch.bfloat16, what=f"pairs {case}")


# The 240-wide pair tile (Sm90_128x240x64_Coop_S4, its last 64-column slice from column 176): forced on shapes
# with edge tiles in M and N (a last tile column of 8 columns, one of 200 that ends inside the overlapped slice),
# K under one k-block and not a multiple of it, aligned rows (no clusters) and unaligned ones (pairs), and several
# tiles per CTA (3000x5000x1000: four rounds).
PAIR240_SHAPES = [(300, 488, 1000), (129, 680, 40), (1000, 1400, 1000), (1536, 1536, 1024), (3000, 5000, 1000),
                  (2048, 5000, 3000)]


@pytest.mark.parametrize("dtype", [torch.bfloat16, torch.float16], ids=["bf16", "fp16"])
@pytest.mark.parametrize("mnk", PAIR240_SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_sm90_pair240_launches(mnk, dtype, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop240")
    m, n, k = mnk
    a, b = _operands(m, n, k, dtype)
    e = cg.explain("mm", a, b)
    assert "_128x240x64_Coop" in e.config and "deferred store" in e.reason, str(e)
    assert ("2x1 clusters" in e.reason) == (k % 64 != 0 and m > 128), str(e)
    bias = _check_mm_and_bias(a, b, dtype, f"pair240 {mnk}")
    # bias + an activation the packing has defers too
    for act in ("gelu_tanh", "relu", "gelu"):
        assert "x240x" in cg.explain("gemm", a, b, bias=bias, activation=act).config
        poison(m * n * 4)
        check(cg.gemm(a, b, bias=bias, activation=act), ref_gemm(a, b, bias=bias, activation=act), dtype,
              what=f"pair240 bias + {act} {mnk}")
    # Launches that do not defer every tile keep another config, even forced: an fp32 D, C
    e = cg.explain("gemm", a, b, bias=bias, out_dtype=torch.float32)
    assert "x240x" not in e.config, str(e)
    poison(m * n * 4)
    check(cg.gemm(a, b, bias=bias, out_dtype=torch.float32), ref_gemm(a, b, bias=bias), dtype, torch.float32,
          what=f"pair240 fp32 D {mnk}")
    c = torch.randn(m, n, device="cuda", dtype=dtype)
    assert "x240x" not in cg.explain("gemm", a, b, c=c, beta=1.0).config


def test_sm90_pair240_rule_runs():
    """The pair rule gives 3000x5000x1000 (and its transpose) the 240-wide pairs on 132 SMs; a D whose rows are
    not 16-byte multiples (N = 4998) cannot defer and keeps 128x256 pairs; the grid capped at a few CTAs runs
    many tiles per CTA through the overlapped slice."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for m, n, k in [(3000, 5000, 1000), (5000, 3000, 1000), (3000, 4998, 1000)]:
        a, b = _operands(m, n, k, torch.bfloat16)
        e = cg.explain("mm", a, b)
        if sms == 132:
            assert ("x240x" in e.config) == (n % 8 == 0), str(e)
        assert "2x1 clusters" in e.reason, str(e)
        poison(m * n * 4)
        out = cg.mm(a, b)
        check(out, ref_gemm(a, b), torch.bfloat16, what=f"rule {m}x{n}x{k}")
        assert torch.equal(out, cg.mm(a, b)), "the same bits on a second run"


def test_sm90_pair240_capped_grid(monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop240")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", "6")
    a, b = _operands(1000, 1928, 1000, torch.bfloat16)
    bias = torch.randn(1928, device="cuda", dtype=torch.bfloat16)
    poison(1000 * 1928 * 4)
    check(cg.gemm(a, b, bias=bias), ref_gemm(a, b, bias=bias), torch.bfloat16, what="pair240 capped grid")


@pytest.mark.parametrize("case", ["mn_major_a", "mn_major_b_odd_rows", "gelu_fp32_d", "relu_fit_defer_off",
                                  "c_odd_rows", "odd_n", "staged"])
def test_sm90_fit_not_taken(case, monkeypatch):
    """Launches outside the fit tiles' reach keep another config, even when forced: an MN-major A with a K-major B
    (no such fit kernels), an MN-major B on rows that are not 128-byte multiples, an activation into an fp32 D (no
    deferred store), an activation with the deferring twins switched off."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "fit")
    m, n, k = 1536, 1537 if case == "odd_n" else 1536, 1024
    a, b = _operands(m, n, k, torch.bfloat16)
    kwargs = {}
    if case == "mn_major_a":
        a = a.t().contiguous().t()
    if case == "mn_major_b_odd_rows":  # (rows of n + 8 elements: 3088 bytes)
        b = torch.randn(k, n + 8, device="cuda", dtype=torch.bfloat16)[:, :n]
    if case == "gelu_fp32_d":
        kwargs = {"activation": "gelu", "bias": torch.randn(n, device="cuda", dtype=torch.bfloat16),
                  "out_dtype": torch.float32}
    if case == "relu_fit_defer_off":
        kwargs = {"activation": "relu"}
        monkeypatch.setenv("CUTORCH_GEMM_SM90_FIT_DEFER", "off")
    if case == "c_odd_rows":  # (rows n + 1 elements apart: no aligned pairs)
        kwargs = {"c": torch.randn(m, n + 1, device="cuda", dtype=torch.bfloat16)[:, :n], "beta": 1.0}
    if case == "staged":
        monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", "staged")
    e = cg.explain("gemm", a, b, **kwargs)
    assert e.kernel == "sm90" and "fit-width" not in e.reason, str(e)
    assert not any(f"_128x{w}x64" in e.config for w in WIDTHS), str(e)
    out_dtype = kwargs.pop("out_dtype", torch.bfloat16)
    check(cg.gemm(a, b, out_dtype=out_dtype, **kwargs), ref_gemm(a, b, **kwargs), torch.bfloat16, out_dtype, what=case)


# Launches with an activation (relu, GELU, GELU-tanh, SiLU; bias or not) whose every tile defers its store take the fit
# widths too (sm90_fit_act_ok): the deferring twins, and 192, which defers itself.
ACT_WIDTHS = [80, 112, 144, 192, 224]


@pytest.mark.parametrize("activation", ["relu", "gelu", "gelu_tanh", "silu"])
@pytest.mark.parametrize("width", ACT_WIDTHS)
# (D rows of 16-byte multiples: partial tiles in M and N, one k-block, several tiles per CTA; K = 1000: rows that are
# not 128-byte multiples, 2x1 clusters)
@pytest.mark.parametrize("mnk", [(129, 296, 64), (1000, 1504, 832), (2304, 3000, 192), (1000, 1400, 1000)],
                         ids=lambda s: "x".join(map(str, s)))
def test_sm90_fit_activation_widths(width, activation, mnk, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", f"coop{width}")
    m, n, k = mnk
    a, b = _operands(m, n, k, torch.bfloat16)
    bias = torch.randn(n, device="cuda", dtype=torch.bfloat16)
    for kwargs in ({"activation": activation, "bias": bias}, {"activation": activation, "alpha": 0.5}):
        e = cg.explain("gemm", a, b, **kwargs)
        assert f"_128x{width}x64_Coop" in e.config and "deferred store" in e.reason, str(e)
        assert ("2x1 clusters" in e.reason) == (k % 64 != 0), str(e)
        poison(m * n * 4)
        out = cg.gemm(a, b, **kwargs)
        check(out, ref_gemm(a, b, **kwargs), torch.bfloat16, what=f"fit {width} {activation} {mnk} {sorted(kwargs)}")
        assert torch.equal(out, cg.gemm(a, b, **kwargs)), "the same bits on a second run"


def test_sm90_fit_activation_rule(monkeypatch):
    """The rules give bias + activation launches the tile they give plain ones (1536x1536x4096: 144 wide on 132 SMs);
    the 128-wide tile forced with an activation keeps the heuristic's config (its direct store has no
    activation); fp16 too."""
    sms = torch.cuda.get_device_properties(0).multi_processor_count
    for dtype in (torch.bfloat16, torch.float16):
        for m, n, k in [(1536, 1536, 4096), (1024, 2560, 4096), (3072, 3072, 4096)]:
            a, b = _operands(m, n, k, dtype)
            bias = torch.randn(n, device="cuda", dtype=dtype)
            plain = cg.explain("mm", a, b)
            for act in ("gelu", "gelu_tanh", "silu"):
                e = cg.explain("gemm", a, b, bias=bias, activation=act)
                assert e.config == plain.config, (str(e), str(plain))
                if sms == 132:  # (3072x3072x4096: the big-tile rule's 192x192 pairs)
                    assert "fit-width" in e.reason or "big-tile rule" in e.reason, str(e)
                    assert "_128x256x64" not in e.config, str(e)
                poison(m * n * 4)
                check(cg.gemm(a, b, bias=bias, activation=act), ref_gemm(a, b, bias=bias, activation=act), dtype,
                      what=f"rule {act} {m}x{n}x{k}")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop128")
    a, b = _operands(1536, 1536, 1024, torch.bfloat16)
    bias = torch.randn(1536, device="cuda", dtype=torch.bfloat16)
    e = cg.explain("gemm", a, b, bias=bias, activation="relu")
    assert "_128x128x64" not in e.config, str(e)
    check(cg.gemm(a, b, bias=bias, activation="relu"), ref_gemm(a, b, bias=bias, activation="relu"), torch.bfloat16,
          what="coop128 forced, relu")
