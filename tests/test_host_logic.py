"""Unit tests of the host-device C++ logic exposed in cutorch_gemm._C (rasterization swizzle,
split-K ranges, the epilogue fusion functor, layout classification, the SIMT heuristic),
and of cutorch_gemm.explain. All on the CPU."""
from __future__ import annotations

import re

import pytest
import torch

import cutorch_gemm as cg
from conftest import ACTIVATIONS, make, offs_from_sizes, ref_act

_C = pytest.importorskip("cutorch_gemm._C")


# --------------------------------------------------------------------------------------
# raster_tile
# --------------------------------------------------------------------------------------

RASTER_CASES = [(1, 1, 1), (1, 7, 4), (7, 1, 4), (5, 3, 1), (8, 8, 8), (9, 13, 4),
                (13, 9, 4), (16, 3, 8), (3, 16, 8), (7, 5, 16), (33, 17, 5), (64, 64, 8),
                (4, 10, 3), (100, 7, 6)]


@pytest.mark.parametrize("tm,tn,group", RASTER_CASES)
def test_raster_tile_bijection(tm, tn, group):
    seen = set()
    for lid in range(tm * tn):
        m, n = _C.raster_tile(lid, tm, tn, group)
        assert 0 <= m < tm and 0 <= n < tn, f"id {lid} -> ({m}, {n}) outside {tm}x{tn}"
        seen.add((m, n))
    assert len(seen) == tm * tn, "raster_tile is not a bijection"


@pytest.mark.parametrize("tm,tn,group", RASTER_CASES)
def test_raster_tile_walks_down_m_in_groups(tm, tn, group):
    """Ids are laid out group-row-block by group-row-block; inside a block of
    ``g = min(group, rows left)`` tile-rows, consecutive ids walk down M first, then step
    one column to the right."""
    lid = 0
    for m0 in range(0, tm, group):
        g = min(group, tm - m0)
        for n in range(tn):
            for r in range(g):
                got = tuple(_C.raster_tile(lid, tm, tn, group))
                assert got == (m0 + r, n), (
                    f"id {lid} -> {got}, expected {(m0 + r, n)} "
                    f"(tiles {tm}x{tn}, group {group})")
                lid += 1


def test_raster_tile_group1_is_row_major():
    for lid in range(6 * 4):
        assert tuple(_C.raster_tile(lid, 6, 4, 1)) == (lid // 4, lid % 4)


# raster_tile_fast / fast_divide: the multiply-and-shift form of the same lookup (core/fast_divide.h), for the
# Hopper kernels' fixed grids (Sm90TileScheduler::get)

@pytest.mark.parametrize("tm,tn,group", RASTER_CASES + [(129, 3, 8), (3, 129, 8), (1000, 2, 6), (17, 17, 17),
                                                        (31, 5, 32), (250, 4, 7)])
def test_raster_tile_fast_matches_raster_tile(tm, tn, group):
    for lid in range(tm * tn):
        assert tuple(_C.raster_tile_fast(lid, tm, tn, group)) == tuple(_C.raster_tile(lid, tm, tn, group)), (
            f"id {lid}, tiles {tm}x{tn}, group {group}")


def test_fast_divide_is_floor_division():
    import random
    rng = random.Random(7)
    top = 2**31
    divisors = [1, 2, 3, 5, 7, 64, 127, 128, 129, 1000, 65537, 2**20 - 1, 2**30 + 1, top - 1, top]
    divisors += [rng.randrange(1, top + 1) for _ in range(40)]
    for d in divisors:
        ns = {0, 1, top - 1, top - 2, d - 1, d, d + 1, 2 * d - 1, 2 * d, 3 * d + 1}
        ns |= {rng.randrange(top) for _ in range(30)}
        for n in sorted(x for x in ns if 0 <= x < top):
            assert _C.fast_divide(n, d) == n // d, f"{n} // {d}"


@pytest.mark.parametrize("n,d", [(-1, 3), (2**31, 3), (5, 0), (5, 2**31 + 1)])
def test_fast_divide_rejects_out_of_range(n, d):
    with pytest.raises(ValueError, match="fast_divide: need"):
        _C.fast_divide(n, d)


# --------------------------------------------------------------------------------------
# splitk_range
# --------------------------------------------------------------------------------------

SPLITK_CASES = [(0, 32, 1), (0, 32, 4), (1, 32, 1), (1, 32, 3), (31, 32, 2), (32, 32, 1),
                (33, 32, 2), (64, 32, 2), (100, 32, 3), (100, 64, 4), (1000, 32, 7),
                (4096, 64, 16), (16384, 64, 13), (20000, 32, 9), (20000, 128, 157),
                (65, 16, 5), (255, 8, 32), (7, 8, 5)]


@pytest.mark.parametrize("k,bk,splits", SPLITK_CASES)
def test_splitk_range(k, bk, splits):
    ranges = [tuple(_C.splitk_range(k, bk, splits, i)) for i in range(splits)]
    ktiles = -(-k // bk)
    # consecutive ranges tile [0, k) exactly
    assert ranges[0][0] == 0, ranges
    assert ranges[-1][1] == k, ranges
    for (b0, e0), (b1, e1) in zip(ranges, ranges[1:]):
        assert e0 == b1, f"gap/overlap between splits: {ranges}"
    for b, e in ranges:
        assert b <= e, ranges
        assert b % bk == 0 or b == e == k, f"split begins at {b}, not a multiple of {bk}"
    sizes = [e - b for b, e in ranges]
    body = sizes[:-1]
    if body:
        assert max(body) - min(body) <= bk, f"unbalanced splits {sizes} (block_k {bk})"
        assert sizes[-1] <= max(body) + bk, f"last split too big {sizes}"
    if ktiles >= splits:
        assert all(s > 0 for s in sizes), (
            f"{ktiles} k-tiles >= {splits} splits but some split is empty: {sizes}")


def test_splitk_single_split_is_everything():
    for k in (0, 1, 63, 64, 65, 12345):
        assert tuple(_C.splitk_range(k, 64, 1, 0)) == (0, k)


# --------------------------------------------------------------------------------------
# epilogue_ref: the C++ fusion functor, elementwise on the CPU
# --------------------------------------------------------------------------------------

def _ref_epilogue64(acc, alpha, beta, c, bias, activation):
    """The functor in float64 with the explicit activation formulas of conftest.ref_act
    (written independently of the C++ code under test)."""
    x = alpha * acc.double()
    if c is not None and beta != 0:
        x = x + beta * c.double()
    if bias is not None:
        x = x + bias.double()
    return ref_act(x, activation)


@pytest.mark.parametrize("dtype,rtol,atol", [(torch.float64, 1e-12, 1e-14),
                                             (torch.float32, 1e-5, 1e-6)],
                         ids=["float64", "float32"])
@pytest.mark.parametrize("activation", ACTIVATIONS)
@pytest.mark.parametrize("with_c,with_bias,alpha,beta",
                         [(False, False, 1.0, 0.0), (True, True, 0.75, -1.5),
                          (False, True, -2.0, 0.0), (True, False, 1.0, 1.0)],
                         ids=["plain", "c_bias", "bias_alpha", "c"])
def test_epilogue_ref(dtype, rtol, atol, activation, with_c, with_bias, alpha, beta):
    M, N = 37, 53
    # a wide range of values, including the tails where gelu/silu saturate
    acc = (torch.randn(M, N, dtype=torch.float64) * 4).to(dtype)
    acc[0, :11] = torch.tensor([-20., -8., -3., -1., -1e-3, 0.0, 1e-3, 1., 3., 8., 20.])
    c = torch.randn(M, N, dtype=torch.float64).to(dtype) if with_c else None
    bias = torch.randn(N, dtype=torch.float64).to(dtype) if with_bias else None
    out = _C.epilogue_ref(acc, alpha, beta, c, bias, activation)
    assert out.shape == acc.shape
    ref = _ref_epilogue64(acc, alpha, beta, c, bias, activation)
    torch.testing.assert_close(out.double(), ref, rtol=rtol, atol=atol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_epilogue_ref_beta0_ignores_c(dtype):
    acc = torch.randn(5, 6, dtype=dtype)
    c = torch.full((5, 6), float("nan"), dtype=dtype)
    bias = torch.randn(6, dtype=dtype)
    out = _C.epilogue_ref(acc, 1.5, 0.0, c, bias, "gelu_tanh")
    assert torch.isfinite(out).all()
    torch.testing.assert_close(out.double(), _ref_epilogue64(acc, 1.5, 0.0, None, bias,
                                                             "gelu_tanh"),
                               rtol=1e-5, atol=1e-6)


def test_epilogue_ref_bad_activation():
    with pytest.raises((ValueError, TypeError, RuntimeError), match=r"\bactivation\b"):
        _C.epilogue_ref(torch.randn(2, 3), 1.0, 0.0, None, None, "swish")


# --------------------------------------------------------------------------------------
# classify_layout
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("rows,cols,sr,sc,expected", [
    (4, 5, 5, 1, "row"),          # contiguous
    (4, 5, 8, 1, "row"),          # padded leading dimension
    (4, 5, 1, 4, "col"),          # transposed view
    (4, 5, 1, 6, "col"),          # padded column-major
    (4, 5, 10, 2, "strided"),     # two non-unit strides
    (4, 5, 2, 8, "strided"),
    (4, 5, 0, 0, "strided"),
    (4, 5, 0, 1, "row"),          # broadcast rows
    (4, 5, 1, 0, "col"),          # broadcast columns
    (1, 5, 5, 1, "row"),
    (1, 5, 1, 1, "row"),          # one row: both strides 1 -> row
    (4, 1, 1, 1, "row"),          # one column: both strides 1 -> row
    # a stride of an extent-1 dimension is irrelevant (like torch's is_contiguous): one
    # column is row-major whatever its column stride, one row is column-major when its
    # column stride is not 1
    (4, 1, 1, 4, "row"),
    (4, 1, 3, 9, "row"),
    (1, 5, 7, 3, "col"),
    (1, 1, 1, 1, "row"),
    (7, 3, 3, 1, "row"),
    (7, 3, 1, 7, "col"),
])
def test_classify_layout(rows, cols, sr, sc, expected):
    assert _C.classify_layout(rows, cols, sr, sc) == expected


def test_classify_layout_agrees_with_tensor_views():
    for t, exp in [(make((6, 9), layout="row"), "row"), (make((6, 9), layout="col"), "col"),
                   (make((6, 9), layout="padded"), "row"),
                   (torch.randn(12, 18)[::2, ::2], "strided")]:
        assert _C.classify_layout(t.shape[0], t.shape[1], t.stride(0), t.stride(1)) == exp


# --------------------------------------------------------------------------------------
# choose_simt_config
# --------------------------------------------------------------------------------------

SIMT_DTYPES = ["float16", "bfloat16", "float32", "float64"]


def _block_k(config: str):
    """BK from a config name that spells its tile as MxNxK (None when it does not)."""
    m = re.search(r"(\d+)x(\d+)x(\d+)", config)
    return int(m.group(3)) if m else None


@pytest.mark.parametrize("dtype", SIMT_DTYPES)
@pytest.mark.parametrize("sm", [(7, 5), (8, 0), (8, 6), (9, 0)], ids=lambda s: f"sm{s[0]}{s[1]}")
def test_simt_config_keys(dtype, sm):
    r = _C.choose_simt_config(sm[0], sm[1], dtype, 1000, 257, 65, 1, 132)
    assert set(r) >= {"config", "splits", "reason"}, r
    assert isinstance(r["config"], str) and r["config"]
    assert isinstance(r["reason"], str) and r["reason"]
    assert isinstance(r["splits"], int) and r["splits"] >= 1


@pytest.mark.parametrize("dtype", SIMT_DTYPES)
def test_simt_config_full_gpu_no_split(dtype):
    r = _C.choose_simt_config(9, 0, dtype, 4096, 4096, 4096, 1, 132)
    assert r["splits"] == 1, r


@pytest.mark.parametrize("dtype", SIMT_DTYPES)
def test_simt_config_small_mn_big_k_splits(dtype):
    r = _C.choose_simt_config(9, 0, dtype, 256, 256, 16384, 1, 132)
    assert r["splits"] > 1, r


@pytest.mark.parametrize("dtype", SIMT_DTYPES)
@pytest.mark.parametrize("mnkb", [(256, 256, 16384, 1), (64, 64, 20000, 1), (16, 16, 64, 1),
                                  (8, 8, 9, 1), (1, 1, 1, 1), (32, 32, 33, 1),
                                  (128, 128, 300, 1), (64, 64, 4096, 4), (1, 4096, 8192, 1)],
                         ids=lambda s: "x".join(map(str, s)))
def test_simt_config_splits_at_most_k_tiles(dtype, mnkb):
    m, n, k, batch = mnkb
    r = _C.choose_simt_config(9, 0, dtype, m, n, k, batch, 132)
    assert 1 <= r["splits"] <= max(1, k), r
    bk = _block_k(r["config"])
    if bk is not None:
        assert r["splits"] <= max(1, -(-k // bk)), f"{r}: more splits than {bk}-wide k tiles"
    if k == 1:
        assert r["splits"] == 1


def test_simt_config_batch_fills_gpu():
    """A batch that already fills the GPU needs no split."""
    r = _C.choose_simt_config(9, 0, "float32", 256, 256, 16384, 512, 132)
    assert r["splits"] == 1, r


def test_simt_config_is_pure():
    a = _C.choose_simt_config(8, 0, "bfloat16", 300, 500, 7000, 1, 108)
    b = _C.choose_simt_config(8, 0, "bfloat16", 300, 500, 7000, 1, 108)
    assert a == b


# --------------------------------------------------------------------------------------
# explain
# --------------------------------------------------------------------------------------

def _explain_calls():
    a, b = make((33, 17)), make((17, 9), layout="col")
    return [
        ("mm", (a, b), {}),
        ("gemm", (a, b), {"bias": make((9,)), "activation": "gelu"}),
        ("bmm", (make((2, 5, 3)), make((2, 3, 4))), {}),
        ("grouped_mm", (make((10, 4)), make((3, 4, 5)), offs_from_sizes([3, 0, 6])), {}),
        ("grouped_gemm", ([make((3, 4)), make((5, 6))], [make((4, 2)), make((6, 7))]), {}),
    ]


@pytest.mark.parametrize("i", range(5), ids=["mm", "gemm", "bmm", "grouped_mm", "grouped_gemm"])
def test_explain(i):
    op, args, kwargs = _explain_calls()[i]
    e = cg.explain(op, *args, **kwargs)
    for attr in ("kernel", "config", "reason"):
        v = getattr(e, attr)
        assert isinstance(v, str) and v, f"explain({op}).{attr} = {v!r}"
    s = str(e)
    assert (e.kernel in s or e.config in s) and e.reason in s, s


def test_explain_does_not_compute():
    """explain only describes; inputs are untouched."""
    a, b = make((8, 4)), make((4, 3))
    a0, b0 = a.clone(), b.clone()
    cg.explain("mm", a, b)
    assert torch.equal(a, a0) and torch.equal(b, b0)


def test_variant_note_names_the_kernel_build(monkeypatch):
    """explain names the cooperative kernel's build that runs a deferring launch (sm90_launch.cuh):
    the compact one on fixed tile grids unless CUTORCH_GEMM_SM90_EPILOGUE=general, kGroupEnds for
    grouped-M forwards with a K-major A unless CUTORCH_GEMM_SM90_GROUP_ENDS=off; nothing otherwise."""
    from cutorch_gemm.explain import _variant_note
    monkeypatch.delenv("CUTORCH_GEMM_SM90_EPILOGUE", raising=False)
    monkeypatch.delenv("CUTORCH_GEMM_SM90_GROUP_ENDS", raising=False)
    d = "; ... (the deferred store)"
    for mode in ("none", "k"):
        for a_mn in (False, True):
            assert "the compact kernel" in _variant_note(mode, a_mn, d, False)
    assert "kGroupEnds" in _variant_note("m", False, d, False)
    assert _variant_note("m", True, d, False) == "" and _variant_note("n", False, d, False) == ""
    assert _variant_note("none", False, "", False) == "" and _variant_note("m", False, d, True) == ""
    monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", "general")
    assert _variant_note("none", False, d, False) == "" and "kGroupEnds" in _variant_note("m", False, d, False)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_GROUP_ENDS", "off")
    assert _variant_note("m", False, d, False) == ""


def test_bare_configs_come_from_the_library():
    """explain asks the library which configs have a bare compact kernel (sm90_configs.h's Sm90BareConfigs, the list
    the kernels' sm90_has_bare reads) instead of keeping a copy: the 128x256 cooperative, 64x128 and 64x64 ping-pong
    configs, and no other name."""
    from cutorch_gemm import _C
    bare = ("Sm90_128x256x64_Coop_S4", "Sm90_64x128x64_Pingpong_S8", "Sm90_64x64x64_Pingpong_S12")
    others = ("Sm90_64x256x64_Pingpong_S5", "Sm90_128x240x64_Coop_S4", "Sm90_128x192x64_Coop_S5",
              "Sm90_128x144x64_Coop_S6", "Sm90_128x256x128_Coop_S4", "Sm90_Skinny_64xT16", "sm90_128x256x64_coop_s4", "")
    assert all(_C.sm90_bare_config(c) for c in bare)
    assert not any(_C.sm90_bare_config(c) for c in others)


def test_bare_note_mirrors_the_launch(monkeypatch):
    """explain's bare note (the kernel's kBare, sm90_launch.cuh's bare): sm90_has_bare's three configs, 16-bit
    K-major operands, dense or batched, D = A B alone (no bias, activation, C, alpha or other out dtype), no split-K
    or stream-K; the cooperative config only where the compact kernel runs, the ping-pong ones where D takes the TMA
    store (N a multiple of 8; no forced epilogue but "fused"); never with CUTORCH_GEMM_SM90_BARE=off."""
    from cutorch_gemm.explain import _bare_note
    for name in ("CUTORCH_GEMM_SM90_BARE", "CUTORCH_GEMM_SM90_EPILOGUE"):
        monkeypatch.delenv(name, raising=False)
    a16, a32 = make((4, 4), torch.bfloat16), make((4, 4))
    coop, pp, pp64 = "Sm90_128x256x64_Coop_S4", "Sm90_64x128x64_Pingpong_S8", "Sm90_64x64x64_Pingpong_S12"
    compact = "; the compact kernel (...)"

    def note(config=pp, a=a16, k_major=True, mode="none", n=1024, splits=1, sk="", variant="", **kw):
        return _bare_note(config, a, k_major, mode, n, splits, sk, variant, kw)

    assert "bare" in note() and "bare" in note(pp64) and "bare" in note(coop, variant=compact)
    assert note(coop) == ""                                  # the cooperative config: only as the compact kernel
    assert note("Sm90_64x256x64_Pingpong_S5") == "" and note("Sm90_128x192x64_Coop_S5", variant=compact) == ""
    assert note(a=a32) == "" and note(k_major=False) == "" and note(mode="m") == "" and note(mode="k") == ""
    assert note(splits=2) == "" and note(sk="; stream-K over ...") == "" and note(n=1020) == ""
    assert note(bias=torch.zeros(4)) == "" and note(activation="relu") == "" and note(alpha=0.5) == ""
    assert note(out_dtype=torch.float32) == "" and "bare" in note(out_dtype=torch.bfloat16)
    assert note(c=torch.zeros(4, 4), beta=1.0) == "" and "bare" in note(c=torch.zeros(4, 4), beta=0.0)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", "staged")
    assert note() == "" and "bare" in note(coop, variant=compact)  # (the compact note already says where it runs)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", "fused")
    assert "bare" in note()
    monkeypatch.setenv("CUTORCH_GEMM_SM90_BARE", "off")
    assert note() == "" and note(coop, variant=compact) == ""


def test_defer_note_follows_the_launch_rule(monkeypatch):
    """explain's copy of the deferred store's rule (sm90_launch.cuh's defer_store): cooperative
    16-bit launches with a 16-bit D, any activation (exact GELU: not on 128x256 tiles); not C, split-K,
    grouped-N, N off the 16-byte TMA rows, bias pairs that are not 4-byte aligned, nor with
    CUTORCH_GEMM_SM90_DEFER=off. The fused SwiGLU: F = N / 2 even."""
    from cutorch_gemm.explain import _defer_note
    monkeypatch.delenv("CUTORCH_GEMM_SM90_DEFER", raising=False)
    monkeypatch.delenv("CUTORCH_GEMM_SM90_EPILOGUE", raising=False)
    a = torch.zeros(4, 8, dtype=torch.bfloat16)
    coop, pingpong = "Sm90_128x256x64_Coop_S4", "Sm90_64x256x64_Pingpong_S5"

    def deferred(config=coop, a=a, mode="none", n=1024, splits=1, **kwargs):
        return "the deferred store" in _defer_note(config, a, mode, n, splits, kwargs)

    assert deferred() and deferred(mode="m") and deferred(mode="k")
    assert all(deferred(activation=act) for act in ("none", "relu", "gelu_tanh", "silu"))
    # exact GELU: the other cooperative widths only (its erf cost the 256-wide tiles ~0.5% there)
    assert not deferred(activation="gelu") and deferred(config="Sm90_128x144x64_Coop_S6", activation="gelu")
    assert not deferred(config=pingpong)
    assert not deferred(a=a.float()) and not deferred(a=a.half(), out_dtype=torch.float32)
    assert deferred(out_dtype=torch.bfloat16)
    assert not deferred(splits=2) and not deferred(mode="n") and not deferred(n=1020)
    assert not deferred(c=torch.zeros(1), beta=1.0) and deferred(c=torch.zeros(1), beta=0.0)
    buf = torch.zeros(2 * 1024 + 2, dtype=torch.bfloat16)
    assert buf.data_ptr() % 4 == 0
    assert deferred(bias=buf[:1024]) and not deferred(bias=buf[1:1025])
    assert deferred(bias=buf[:2048].view(2, 1024)) and not deferred(bias=buf[:2 * 1023].view(2, 1023), n=1023)
    assert deferred(activation="swiglu", n=1028) and not deferred(activation="swiglu", n=1026)
    assert not deferred(activation="swiglu", bias=buf[1:1029], n=1028)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", "staged")
    assert not deferred() and not deferred(activation="swiglu", n=1028)
    # "general" / "fused" keep a plain D's TMA store (the general kernel defers it); "direct" does not.
    # Every forced path takes an activation off the packed registers.
    for epi, plain in (("general", True), ("fused", True), ("direct", False)):
        monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", epi)
        assert deferred() == plain and deferred(bias=buf[:1024]) == plain, epi
        assert not deferred(activation="relu") and not deferred(activation="gelu_tanh"), epi
    monkeypatch.setenv("CUTORCH_GEMM_SM90_EPILOGUE", "")
    monkeypatch.setenv("CUTORCH_GEMM_SM90_DEFER", "off")
    assert not deferred() and not deferred(activation="swiglu", n=1028)


def test_cluster_note_says_why(monkeypatch):
    """explain's cluster note names the rule that paired the CTAs (choose_sm90_cluster): forced, rows that are not
    128-byte multiples, the short-K rule (K <= 2048, 8+ rounds) or the mid-K one (K > 2048, 3.5+ nearly full
    rounds of 128x256 tiles); none where the rule keeps one CTA (the fit widths at mid K among them)."""
    from cutorch_gemm.explain import _cluster_note
    monkeypatch.delenv("CUTORCH_GEMM_SM90_CLUSTER", raising=False)
    coop = "Sm90_128x256x64_Coop_S4"

    def note(m, n, k, config=coop, dense=True, dtype=torch.bfloat16):
        a = torch.empty(m, k, dtype=dtype)
        b = torch.empty(n, k, dtype=dtype).t()
        return _cluster_note(config, True, False, m, a, b, dense, n, k, 132,
                             block_k=32 if dtype == torch.float32 else 64)

    assert "(K > 2048" in note(4096, 4096, 4096)                   # 512 tiles: 3.9 rounds, 3% idle
    assert "(K > 2048" in note(8192, 8192, 8192)                   # 2048 tiles: 15.5 rounds, 3% idle
    # 16 x 32 = 512 tiles of 128x240 or 128x160 (3.9 rounds, 3% idle): 240 wide takes the mid-K pairs, a fit width not
    assert "(K > 2048" in note(2048, 7680, 4096, "Sm90_128x240x64_Coop_S4")
    assert note(2048, 5120, 4096, "Sm90_128x160x64_Coop_S5") == ""
    assert "(K > 2048" not in note(2048, 5120, 4096)               # (its 128x256 tiles: 2.4 rounds)
    assert note(2176, 8192, 4096) == ""                            # 18% idle: stream-K's
    assert note(4096, 4096, 2048) == ""                            # short K under 8 rounds
    assert "(K <= 2048 (32 K slices) over 8" in note(8192, 8192, 1024)  # 2048 tiles: 15.5 rounds
    assert "(operand rows are not 128-byte" in note(1024, 1024, 1000)
    assert note(4096, 4096, 4096, dense=False) == ""               # (fp8 / batched / split: the row rule only)
    # tf32 (32-element K slices): the mid-K clause past 32 slices (K > 1024), never the short-K one
    tf32, tf32_coop = torch.float32, "Sm90_128x256x32_Coop_S4"
    assert "(K > 1024 (32 K slices)" in note(4096, 4096, 4096, tf32_coop, dtype=tf32)
    assert "(K > 1024" in note(4096, 4096, 1056, tf32_coop, dtype=tf32)        # 33 slices
    assert note(4096, 4096, 1024, tf32_coop, dtype=tf32) == ""                 # 32 slices
    assert note(8192, 8192, 1024, tf32_coop, dtype=tf32) == ""                 # (16-bit's short-K clause would pair)
    assert note(2176, 8192, 4096, tf32_coop, dtype=tf32) == ""                 # 18% idle
    # 8-bit (128-element K slices): both clauses, counted in its slices
    f8, f8_coop = torch.float8_e4m3fn, "Sm90_128x256x128_Coop_S4"

    def note8(m, n, k):
        a = torch.empty(m, k, dtype=torch.uint8).view(f8)
        b = torch.empty(n, k, dtype=torch.uint8).view(f8).t()
        return _cluster_note(f8_coop, True, False, m, a, b, True, n, k, 132, block_k=128)
    assert "(K <= 4096 (32 K slices) over 8" in note8(8192, 14336, 4096)      # 27 rounds
    assert note8(4096, 4096, 4096) == ""                                       # 3.9 rounds
    assert "(K > 4096 (32 K slices)" in note8(8192, 8192, 8192)
    assert note8(8192, 14336, 896) == ""                                       # 7 slices
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CLUSTER", "2")
    assert "(forced: CUTORCH_GEMM_SM90_CLUSTER=2)" in note(256, 256, 256)
    monkeypatch.setenv("CUTORCH_GEMM_SM90_CLUSTER", "1")
    assert note(1024, 1024, 1000) == ""


# --------------------------------------------------------------------------------------
# the C++ entry points release the GIL
# --------------------------------------------------------------------------------------

@pytest.mark.parametrize("entry", ["fast_mm", "fast_matmul", "fast_linear"])
def test_entry_points_release_the_gil(entry):
    """A long op called through a C++ entry point (csrc/torch/fast_calls.cpp) lets the process's other Python
    threads run, as torch.ops' calls do: while a second thread runs a ~0.2 s CPU reference product, this one
    keeps waking from 1 ms sleeps (held, the GIL would hold it for the whole product)."""
    import threading
    import time
    a = torch.randn(2000, 2000, dtype=torch.float64)
    fn = {"fast_mm": lambda: _C.fast_mm(a, a), "fast_matmul": lambda: _C.fast_matmul(a, a),
          "fast_linear": lambda: _C.fast_linear(a, a, None, "none")}[entry]
    done, failed, took = threading.Event(), [], []

    def work():
        t = time.perf_counter()
        try:
            fn()
        except Exception as exc:  # (reported below; the loop must end either way)
            failed.append(exc)
        finally:
            took.append(time.perf_counter() - t)
            done.set()
    worker = threading.Thread(target=work)
    last = time.perf_counter()
    worker.start()
    gap = 0.0
    while not done.is_set():
        time.sleep(0.001)
        now = time.perf_counter()
        gap, last = max(gap, now - last), now
    worker.join()
    assert not failed, failed
    took = took[0]
    if took < 0.05:
        pytest.skip(f"the product took {took * 1e3:.0f} ms: too short to tell")
    assert gap < 0.5 * took, f"this thread stalled {gap * 1e3:.0f} ms of the {took * 1e3:.0f} ms product"
