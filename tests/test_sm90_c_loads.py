"""beta * C in the Hopper kernels (sm90 only). Loaded by TMA (sm90_store_tile_tma's kC): one dense 16-bit problem
whose C is row-major with 16-byte aligned rows reads C slice by slice into the TMA-store buffers and adds it in
registers. Every general config (cooperative, ping-pong 64x256 / 64x128 / 64x64), every activation, with and
without bias, edge tiles in M and N (a tile's last 64-column slices past N), stream-K pieces, 2x1 clusters; C
views the path must decline (padded rows that are not 16-byte multiples, a misaligned base, column-major,
broadcast rows) still agree with the float64 reference through the other paths. Read as column pairs into
registers (sm90_direct_c): the fit-width tiles, which store D from there, forced and by the rule. Skipped
elsewhere."""
from __future__ import annotations

import pytest
import torch

import cutorch_gemm as cg
from conftest import ACTIVATIONS, HALF_DTYPES, check, dtype_id, gpu, linear_operands, poison, ref_gemm, requires_sm90

pytestmark = [gpu, requires_sm90, pytest.mark.usefixtures("tile_kernels_only")]

CONFIGS = ["coop", "pingpong", "pingpong128", "pingpong64"]
# (M, N, K): edge tiles both ways; N = 392 leaves a 256-wide tile's last slice past N (no load, no store);
# M = 7: one partial row tile; K = 8: one short k-block.
SHAPES = [(257, 520, 200), (64, 136, 64), (7, 72, 8), (129, 392, 72), (1000, 1000, 1000), (300, 2000, 136)]
NOTE = "beta * C loaded by TMA"


def _c_operands(m, n, k, dtype, bias):
    a, b = linear_operands(m, n, k, dtype)
    c = torch.randn(m, n, device="cuda", dtype=dtype)
    return a, b, c, (torch.randn(n, device="cuda", dtype=dtype) if bias else None)


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
@pytest.mark.parametrize("activation", ACTIVATIONS)
def test_c_by_tma_matches_reference(config, dtype, activation, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_SPLIT_FILL", "1000")  # (no split-K: its partials take another epilogue)
    for i, (m, n, k) in enumerate(SHAPES):
        a, b, c, bias = _c_operands(m, n, k, dtype, bias=i % 2 == 0)
        alpha, beta = (0.75, -0.5) if i % 3 else (1.0, 1.0)
        e = cg.explain("gemm", a, b, bias=bias, c=c, alpha=alpha, beta=beta, activation=activation)
        assert e.kernel == "sm90" and e.splits == 1 and NOTE in e.reason, str(e)
        poison(m * n * 2)
        out = cg.gemm(a, b, bias=bias, c=c, alpha=alpha, beta=beta, activation=activation)
        check(out, ref_gemm(a, b, bias, c, alpha, beta, activation), dtype,
              what=f"C by TMA {config} {activation} {(m, n, k)} bias={bias is not None}")


@pytest.mark.parametrize("config", CONFIGS)
@pytest.mark.parametrize("activation", ["none", "gelu"])
def test_c_by_tma_several_tiles_per_cta(config, activation, monkeypatch):
    """A capped grid: each CTA's warpgroups run many tiles, so the C barriers' parities carry from tile to tile;
    N = 392 and 1000 leave the last tile column's last slices past N (neither loaded nor waited for)."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_GRID", "3")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_SPLIT_FILL", "1000")
    for m, n, k in ((1000, 392, 264), (700, 1000, 136)):
        a, b, c, bias = _c_operands(m, n, k, torch.bfloat16, bias=True)
        assert NOTE in cg.explain("gemm", a, b, bias=bias, c=c, beta=0.5, activation=activation).reason
        poison(m * n * 2)
        out = cg.gemm(a, b, bias=bias, c=c, beta=0.5, activation=activation)
        check(out, ref_gemm(a, b, bias, c, 1.0, 0.5, activation), torch.bfloat16,
              what=f"C by TMA, grid 3, {config} {activation} {(m, n, k)}")


@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
def test_c_by_tma_agrees_with_the_fused_path(dtype, monkeypatch):
    """The same C through the element-wise fused path (CUTORCH_GEMM_SM90_EPILOGUE=fused): one rounding of the same
    fp32 sums each way, so at most one bf16 / fp16 ulp apart."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    a, b, c, bias = _c_operands(520, 1032, 320, dtype, bias=True)
    fast = cg.gemm(a, b, bias=bias, c=c, beta=2.0, activation="gelu_tanh")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", "fused")
    assert NOTE not in cg.explain("gemm", a, b, bias=bias, c=c, beta=2.0, activation="gelu_tanh").reason
    slow = cg.gemm(a, b, bias=bias, c=c, beta=2.0, activation="gelu_tanh")
    ulp = torch.finfo(dtype).eps * slow.float().abs().clamp_min(1.0)
    assert bool(((fast.float() - slow.float()).abs() <= ulp).all())


@pytest.mark.parametrize("case", [(640, 512, 320, 7), (1000, 1000, 1000, 5), (129, 2000, 4104, 3)],
                         ids=lambda c: "x".join(map(str, c)))
def test_c_by_tma_under_stream_k(case, monkeypatch):
    """Stream-K pieces that end in partials run no epilogue, so load no C; the tile's owner loads it."""
    m, n, k, grid = case
    for name, value in (("CONFIG", "coop"), ("STREAMK", "on"), ("GRID", str(grid)), ("CLUSTER", "1"),
                        ("SPLIT_FILL", "1000")):
        monkeypatch.setenv(f"CUTORCH_GEMM_SM90_{name}", value)
    a, b, c, bias = _c_operands(m, n, k, torch.bfloat16, bias=True)
    e = cg.explain("gemm", a, b, bias=bias, c=c, beta=-1.5, activation="silu")
    assert "stream-K over" in e.reason and NOTE in e.reason, str(e)
    poison(m * n * 2)
    out = cg.gemm(a, b, bias=bias, c=c, beta=-1.5, activation="silu")
    check(out, ref_gemm(a, b, bias, c, 1.0, -1.5, "silu"), torch.bfloat16, what=f"C by TMA, stream-K {case}")
    assert torch.equal(out, cg.gemm(a, b, bias=bias, c=c, beta=-1.5, activation="silu"))


@pytest.mark.parametrize("mnk", [(640, 1024, 512), (333, 776, 136)], ids=lambda s: "x".join(map(str, s)))
def test_c_by_tma_in_clusters(mnk, monkeypatch):
    """2x1 clusters (an odd tile-row count: the last pair's second tile lies past M, its C rows out of bounds)."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CLUSTER", "2")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_SPLIT_FILL", "1000")
    a, b, c, _ = _c_operands(*mnk, torch.float16, bias=False)
    e = cg.explain("gemm", a, b, c=c, beta=1.0)
    assert "cluster" in e.reason and NOTE in e.reason, str(e)
    poison(mnk[0] * mnk[1] * 2)
    check(cg.gemm(a, b, c=c, beta=1.0), ref_gemm(a, b, None, c, 1.0, 1.0), torch.float16, what=f"clusters {mnk}")


def _c_views(m, n, dtype):
    """C views of one (m, n) problem: (name, tensor, whether the TMA path takes it)."""
    padded = torch.randn(m, n + 8, device="cuda", dtype=dtype)[:, :n]     # rows 16-byte multiples apart
    odd = torch.randn(m, n + 3, device="cuda", dtype=dtype)[:, :n]        # rows n + 3 elements apart
    shifted = torch.randn(m * n + 1, device="cuda", dtype=dtype)[1:].view(m, n)  # base 2 bytes past 16
    col = torch.randn(n, m, device="cuda", dtype=dtype).t()
    rows = torch.randn(1, n, device="cuda", dtype=dtype).expand(m, n)       # one row for all (stride 0)
    return [("padded", padded, True), ("odd stride", odd, False), ("misaligned", shifted, False),
            ("column-major", col, False), ("broadcast rows", rows, False)]


@pytest.mark.parametrize("config", ["coop", "pingpong"])
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
def test_c_views_take_or_decline_the_tma_path(config, dtype, monkeypatch):
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_SPLIT_FILL", "1000")
    m, n, k = 300, 520, 136
    a, b = linear_operands(m, n, k, dtype)
    for name, c, takes in _c_views(m, n, dtype):
        e = cg.explain("gemm", a, b, c=c, beta=0.5, activation="relu")
        assert e.kernel == "sm90" and (NOTE in e.reason) == takes, f"{name}: {e}"
        poison(m * n * 2)
        out = cg.gemm(a, b, c=c, beta=0.5, activation="relu")
        check(out, ref_gemm(a, b, None, c, 1.0, 0.5, "relu"), dtype, what=f"C {name} {config}")


def test_c_by_tma_declines_an_fp32_d(monkeypatch):
    """An fp32 D keeps the fused path (the C slices share the 16-bit D slices' buffers)."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", "coop")
    a, b, c, bias = _c_operands(257, 520, 200, torch.bfloat16, bias=True)
    kw = dict(bias=bias, c=c, beta=1.0, activation="gelu", out_dtype=torch.float32)
    assert NOTE not in cg.explain("gemm", a, b, **kw).reason
    check(cg.gemm(a, b, **kw), ref_gemm(a, b, bias, c, 1.0, 1.0, "gelu"), torch.bfloat16, torch.float32,
          what="C with an fp32 D")


@pytest.mark.parametrize("config", ["coop", "pingpong"])
def test_c_with_an_mn_major_b(config, monkeypatch):
    """b = a row-major (K, N) weight (the dX form): C alone by TMA everywhere; with an activation not on the
    cooperative tile (its kernel has the C epilogue without activations, sm90_c_acts), which takes the fused path."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", config)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_SPLIT_FILL", "1000")
    m, n, k = 257, 520, 200
    a = torch.randn(m, k, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(k, n, device="cuda", dtype=torch.bfloat16)
    c = torch.randn(m, n, device="cuda", dtype=torch.bfloat16)
    for activation in ("none", "gelu"):
        e = cg.explain("gemm", a, b, c=c, beta=1.0, activation=activation)
        takes = activation == "none" or config != "coop"
        assert e.kernel == "sm90" and (NOTE in e.reason) == takes, f"{activation}: {e}"
        poison(m * n * 2)
        out = cg.gemm(a, b, c=c, beta=1.0, activation=activation)
        check(out, ref_gemm(a, b, None, c, 1.0, 1.0, activation), torch.bfloat16, what=f"b MN-major {activation}")


FIT_WIDTHS = [80, 112, 144, 160, 224]
DIRECT = "beta * C read as column pairs"


@pytest.mark.parametrize("width", FIT_WIDTHS)
@pytest.mark.parametrize("dtype", HALF_DTYPES, ids=dtype_id)
def test_c_in_the_fit_width_tiles(width, dtype, monkeypatch):
    """Edge tiles in M and N (N = 298, 1502: the last tile column partial), K under one k-block, several tiles per
    CTA, bias (every other shape), alpha and beta, a 16-bit and an fp32 D, 2x1 clusters (K = 1000)."""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CONFIG", f"coop{width}")
    for i, (m, n, k) in enumerate([(129, 298, 40), (1000, 1502, 776), (2304, 3000, 200), (1000, 1400, 1000)]):
        a, b, c, bias = _c_operands(m, n, k, dtype, bias=i % 2 == 1)
        for out_dtype in (None, torch.float32):
            kw = dict(bias=bias, c=c, alpha=0.5, beta=-1.5, out_dtype=out_dtype)
            e = cg.explain("gemm", a, b, **kw)
            assert f"_128x{width}x64_Coop" in e.config and DIRECT in e.reason, str(e)
            poison(m * n * 4)
            check(cg.gemm(a, b, **kw), ref_gemm(a, b, bias, c, 0.5, -1.5), dtype, out_dtype,
                  what=f"fit {width} C {(m, n, k)} out={out_dtype}")


@pytest.mark.parametrize("mnk", [(1536, 1536, 4096), (1024, 2560, 4096), (512, 2560, 2560)],
                         ids=lambda s: "x".join(map(str, s)))
def test_c_takes_the_fit_rule(mnk):
    """Mid-size addmm-like launches take the fit widths as plain ones do (the same rule), C from registers; a C with
    a padded row stride too; one whose rows are not 4-byte aligned pairs keeps the other configs."""
    m, n, k = mnk
    a, b, c, _ = _c_operands(m, n, k, torch.bfloat16, bias=False)
    plain = cg.explain("mm", a, b).config
    e = cg.explain("gemm", a, b, c=c, beta=1.0)
    assert e.config == plain and "_Coop_" in plain and DIRECT in e.reason, f"{plain}: {e}"
    poison(m * n * 2)
    check(cg.gemm(a, b, c=c, beta=1.0), ref_gemm(a, b, None, c, 1.0, 1.0), torch.bfloat16, what=f"fit rule C {mnk}")
    padded = torch.randn(m, n + 2, device="cuda", dtype=torch.bfloat16)[:, :n]
    assert DIRECT in cg.explain("gemm", a, b, c=padded, beta=1.0).reason
    check(cg.gemm(a, b, c=padded, beta=1.0), ref_gemm(a, b, None, padded, 1.0, 1.0), torch.bfloat16,
          what=f"fit rule padded C {mnk}")
    odd = torch.randn(m, n + 1, device="cuda", dtype=torch.bfloat16)[:, :n]
    e = cg.explain("gemm", a, b, c=odd, beta=1.0)
    assert DIRECT not in e.reason and e.config != plain, str(e)
    check(cg.gemm(a, b, c=odd, beta=1.0), ref_gemm(a, b, None, odd, 1.0, 1.0), torch.bfloat16, what=f"odd C {mnk}")
