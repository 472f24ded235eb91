"""The Hopper (sm90) launch rules are pure functions in C++ (device/sm90_configs.h, device/sm90_cluster_streamk.h,
csrc/torch/cuda/cuda_common.cpp's helpers), shared by the binding and `explain`: which operands TMA reads, the config
heuristics and overrides, split-K, stream-K, clusters, the L2 policy; checked here on the CPU against the documented
rules, with explain's notes that follow them. (Split from test_dispatch_rules.py, which keeps the family and sm80
rules; the dense fit-width, pair and 240-wide rules: test_sm90_fit_rules.py.)"""
from __future__ import annotations

import pytest
import torch

from cutorch_gemm import _C


@pytest.mark.parametrize("k_stride, mn_stride, batch_stride, aligned, ok, mn_major", [
    (1, 4096, 0, True, True, False),        # K-major, 8192-byte rows
    (4096, 1, 0, True, True, True),         # MN-major (a weight read as (K, N) row-major)
    (1, 1000, 0, True, True, False),        # 2000-byte rows: a multiple of 16
    (1, 1001, 0, True, False, False),       # rows 2002 bytes apart: TMA cannot stride that
    (1, 4096, 0, False, False, False),      # base not 16-byte aligned
    (2, 4096, 0, True, False, False),       # neither dimension contiguous
    (1, 64, 64 * 100 + 4, True, False, False),  # batch stride not a 16-byte multiple
    (1, 64, 64 * 100, True, True, False),
])
def test_sm90_operand(k_stride, mn_stride, batch_stride, aligned, ok, mn_major):
    got = _C.sm90_operand(k_stride, mn_stride, batch_stride, aligned, 2)
    assert got[0] == ok
    if ok:
        assert got[1] == mn_major


@pytest.mark.parametrize("m, n, problems, expected", [
    (8192, 8192, 1, "Sm90_128x256x64_Coop_S4"),      # fills 132 SMs with 128x256 tiles
    (4096, 4096, 1, "Sm90_128x256x64_Coop_S4"),
    (128, 8192, 1, "Sm90_64x256x64_Pingpong_S5"),    # small M
    (1, 8192, 1, "Sm90_64x256x64_Pingpong_S5"),
    (1024, 1024, 1, "Sm90_64x256x64_Pingpong_S5"),   # 32 cooperative tiles < half of 132 SMs
    (1536, 1536, 1, "Sm90_128x256x64_Coop_S4"),      # 72 cooperative tiles (H100: coop faster)
    (2048, 2048, 1, "Sm90_128x256x64_Coop_S4"),      # 128
    (1024, 1024, 8, "Sm90_128x256x64_Coop_S4"),      # 8 problems: 256 tiles
    (96, 4096, 64, "Sm90_64x256x64_Pingpong_S5"),    # MoE groups of ~96 rows
    # wave quantization: ping-pong where its rounds fill better by more than ~10%
    (3072, 3072, 1, "Sm90_64x256x64_Pingpong_S5"),   # 288 coop tiles: 3 rounds, 73% full
    (1536, 6144, 1, "Sm90_64x256x64_Pingpong_S5"),   # 288
    (6144, 1536, 1, "Sm90_64x256x64_Pingpong_S5"),   # 288
    (5120, 5120, 1, "Sm90_128x256x64_Coop_S4"),      # 800: 87% vs 93% x 0.9
    (2560, 2560, 1, "Sm90_128x256x64_Coop_S4"),      # 200
    (4608, 4608, 1, "Sm90_128x256x64_Coop_S4"),      # 648: 98%
    (8192, 14336, 1, "Sm90_128x256x64_Coop_S4"),     # 3584: 97%
    (3072, 3072, 2, "Sm90_128x256x64_Coop_S4"),      # several problems: the rule is for one
])
def test_sm90_config_heuristic(m, n, problems, expected):
    assert _C.choose_sm90_config(m, n, 4096, problems, 132, "") == expected


def test_sm90_wave_rule_keeps_coop_where_it_takes_stream_k():
    """The wave rule's ping-pong switch does not apply where the cooperative launch would cut its
    sparse last round with stream-K (sm90_coop_streamk: one dense 16-bit problem, no 2x1 clusters)."""
    coop, pp = "Sm90_128x256x64_Coop_S4", "Sm90_64x256x64_Pingpong_S5"
    assert _C.choose_sm90_config(1536, 6144, 4096, 1, 132, "") == pp
    assert _C.choose_sm90_config(1536, 6144, 4096, 1, 132, "", coop_streamk=True) == coop
    assert _C.choose_sm90_config(1536, 6144, 4096, 1, 132, "pingpong", coop_streamk=True) == pp  # forced
    assert _C.choose_sm90_config(128, 8192, 4096, 1, 132, "", coop_streamk=True) == pp  # small M: not the wave rule
    # 288 tiles of 128x256, the last round 18% full, 64 K slices: stream-K
    assert _C.sm90_coop_streamk(1536, 6144, 4096, 132, True)
    assert _C.sm90_coop_streamk(2176, 8192, 4096, 132, True)              # 544 tiles, 12%
    assert not _C.sm90_coop_streamk(3072, 3072, 3072, 132, True)          # 48 K slices
    assert not _C.sm90_coop_streamk(2048, 5120, 4096, 132, True)          # 42% full
    assert not _C.sm90_coop_streamk(1536, 6144, 4096, 132, False)         # 2x1 clusters (rows not 128 B)
    assert not _C.sm90_coop_streamk(1536, 6144, 4096, 132, True, "2")     # forced clusters


def test_sm90_streamk_pairs_rule(monkeypatch):
    """Launches in 2x1 clusters take stream-K (planned over pair tiles and clusters) by default with 16-bit operands
    and K > 4096 (sm90_streamk_pairs); CUTORCH_GEMM_SM90_STREAMK_PAIRS=on / off force it either way. The wave and
    fit rules see it through sm90_coop_streamk."""
    monkeypatch.delenv("CUTORCH_GEMM_SM90_STREAMK_PAIRS", raising=False)
    # 8192^3: pairs (15.5 rounds, 3% idle); 1024 pair tiles over 66 clusters leave 34, "last" (128 K slices)
    assert _C.sm90_coop_pairs(8192, 8192, 8192, 132, True)
    assert _C.sm90_coop_streamk(8192, 8192, 8192, 132, True)
    # 8192x14336x4096: the mid-K pairs (K <= 4096), without stream-K by default
    assert _C.sm90_coop_pairs(8192, 14336, 4096, 132, True)
    assert not _C.sm90_coop_streamk(8192, 14336, 4096, 132, True)
    assert not _C.sm90_coop_streamk(1536, 6144, 8192, 132, False, "", "", 32)  # tf32 pairs (rows): not by default
    # the binding's plan (explain names it): (pair tiles, clusters, pair tiles cut)
    assert _C.sm90_streamk_pair_plan(8192, 8192, 8192, 64, 132) == (1024, 66, 34)
    assert _C.sm90_streamk_pair_plan(8192, 14336, 4096, 64, 132) == (1792, 66, 0)   # K <= 4096: off by default
    monkeypatch.setenv("CUTORCH_GEMM_SM90_STREAMK_PAIRS", "on")
    assert _C.sm90_coop_streamk(8192, 14336, 4096, 132, True)  # 1792 pair tiles over 66: "wide" on 10 + 66
    assert _C.sm90_streamk_pair_plan(8192, 14336, 4096, 64, 132) == (1792, 66, 76)
    assert _C.sm90_streamk_pair_plan(1000, 1024, 1024, 64, 132, 6)[:2] == (16, 3)   # a grid cap of 6 CTAs
    monkeypatch.setenv("CUTORCH_GEMM_SM90_STREAMK_PAIRS", "off")
    assert not _C.sm90_coop_streamk(8192, 8192, 8192, 132, True)
    assert _C.sm90_streamk_pair_plan(8192, 8192, 8192, 64, 132) == (1024, 66, 0)
    assert not _C.sm90_coop_streamk(1536, 6144, 4096, 132, True, "", "off")
    assert not _C.sm90_coop_streamk(2048, 2048, 4096, 132, True)          # 128 tiles: one partial round
    # tf32: K slices of 32 elements, so K = 3072 is 96 of them
    assert not _C.sm90_coop_streamk(3072, 3072, 3072, 132, True)
    assert _C.sm90_coop_streamk(3072, 3072, 3072, 132, True, block_k=32)
    # tf32 on the mid-K pairs (fifty-ninth session): no stream-K in pairs (not measured), so 8192^3 and
    # 8192x4096x14336 leave the unclustered stream-K they took before for pairs without it
    assert _C.sm90_coop_pairs(4096, 4096, 4096, 132, True, block_k=32)
    assert _C.sm90_coop_pairs(8192, 8192, 8192, 132, True, block_k=32)
    assert not _C.sm90_coop_streamk(8192, 8192, 8192, 132, True, block_k=32)
    assert not _C.sm90_coop_streamk(8192, 4096, 14336, 132, True, block_k=32)
    assert _C.sm90_coop_streamk(8192, 4096, 14336, 132, True, "1", block_k=32)  # unclustered: "last" on 100 tiles
    assert not _C.sm90_coop_pairs(4096, 4096, 1024, 132, True, block_k=32)   # 32 slices
    with pytest.raises(ValueError, match="block_k"):
        _C.sm90_coop_streamk(3072, 3072, 3072, 132, True, block_k=128)


def test_sm90_config_override():
    assert _C.choose_sm90_config(8192, 8192, 4096, 1, 132, "pingpong") == "Sm90_64x256x64_Pingpong_S5"
    assert _C.choose_sm90_config(16, 256, 64, 1, 132, "coop") == "Sm90_128x256x64_Coop_S4"


NARROW = "Sm90_64x128x64_Pingpong_S8"


@pytest.mark.parametrize("m,n,k,expected", [
    (1024, 1024, 1024, NARROW),                          # 64 wide tiles -> 128 narrow ones
    (128, 8192, 8192, NARROW),                           # 64 wide tiles
    (64, 4096, 14336, NARROW),                           # 16 wide tiles (8 splits) -> 32 (4 splits)
    (1, 8192, 8192, "Sm90_64x256x64_Pingpong_S5"),       # 32 wide tiles split 4 ways; 64 narrow would not split
    (32, 8192, 8192, "Sm90_64x256x64_Pingpong_S5"),      # the same exception up to 32 rows
    (64, 8192, 8192, NARROW),                            # above 32 rows the split loses
    (128, 4096, 4096, NARROW),
    (256, 8192, 4096, "Sm90_64x256x64_Pingpong_S5"),     # 128 wide tiles fill the GPU
    (2048, 2048, 2048, "Sm90_128x256x64_Coop_S4"),       # coop's
    # one partial round of 72 coop tiles: 288 narrow tiles fill their 3 rounds to 73%
    (1536, 1536, 1536, NARROW),
    (768, 3072, 2048, NARROW),
    (1024, 4096, 1024, "Sm90_128x256x64_Coop_S4"),       # 128 coop tiles: a full round
    (1280, 2048, 2048, NARROW),                          # 80 coop tiles: 61% against 320 narrow ones' 81%
    (1664, 2048, 2048, "Sm90_128x256x64_Coop_S4"),       # 104: 79% against 416's (4 rounds) 79%
])
def test_sm90_narrow_config_rule(m, n, k, expected):
    """The 64x128 config only where the caller allows it (fp16 / bf16, not grouped along N or K): when the
    64x256 tiles fill under half the SMs and, up to 32 rows, it does not give up a split-K the wide tiles
    would get; and where one partial round of cooperative tiles leaves more SMs idle than its rounds do."""
    assert _C.choose_sm90_config(m, n, k, 1, 132, "", narrow=True) == expected
    assert _C.choose_sm90_config(m, n, k, 1, 132, "", narrow=False) != NARROW
    assert _C.choose_sm90_config(8192, 8192, 4096, 1, 132, "pingpong128", narrow=True) == NARROW
    assert _C.choose_sm90_config(8192, 8192, 4096, 1, 132, "pingpong128") == "Sm90_64x256x64_Pingpong_S5"


COOP = "Sm90_128x256x64_Coop_S4"
NARROW64 = "Sm90_64x64x64_Pingpong_S12"


@pytest.mark.parametrize("m,n,k,expected", [
    (384, 1024, 8192, NARROW64),    # 48 narrow tiles (a quarter to half of 132), K >= 2048: 64x64
    (256, 1536, 8960, NARROW64),
    (512, 1024, 8192, NARROW64),    # 64
    (448, 1024, 16384, COOP),       # K >= 12288: cooperative tiles + split-K
    (512, 768, 14336, COOP),
    (384, 1536, 12288, COOP),       # 72 narrow tiles, past half: deep K takes cooperative tiles + split-K
    (256, 2816, 8192, COOP),        # 88 narrow tiles: two thirds of 132
    (512, 1536, 8192, NARROW),      # 96: past two thirds
    (512, 1024, 4096, NARROW64),    # 64 narrow tiles
    (512, 896, 4864, NARROW64),
    (512, 1024, 2048, NARROW64),
    (512, 1024, 1024, NARROW),      # K < 2048: not measured there
    (640, 1024, 4096, NARROW),      # 80 narrow tiles: past half of the SMs
    (256, 1024, 8192, NARROW),      # 32 narrow tiles: their own split-K (a quarter of the SMs)
    (128, 2048, 8192, NARROW),      # M < 256: not measured, the old rule
    (512, 512, 512, NARROW64),      # 32 narrow tiles, K <= 1024: 64x64 tiles
    (256, 1024, 1024, NARROW64),
    (256, 256, 256, NARROW64),
    (384, 768, 512, NARROW),        # 36 narrow tiles: more than a quarter of the SMs
    (256, 1024, 4096, NARROW),      # K > 1024: the narrow tiles' split-K
    (1024, 1024, 1024, NARROW),     # 128 narrow tiles
])
def test_sm90_mid_size_rules(m, n, k, expected):
    """One dense fp16 / bf16 problem of at least 256 rows whose 64x128 tiles leave SMs idle: small K <= 1024
    problems, and those whose 64x128 tiles fill a quarter to half of the SMs with 2048 <= K < 12288, the 64x64
    tiles; K >= 8192 whose 64x128 tiles fill a quarter (half below K = 12288) to two thirds of the SMs the
    cooperative tiles (with split-K)."""
    assert _C.choose_sm90_config(m, n, k, 1, 132, "", narrow=True) == expected
    rule = _C.sm90_mid_size_rule(m, n, k, 132)  # the rule that acted (explain names it)
    assert (rule == "coop_deep_k") == (expected == COOP)
    assert (rule in ("small_64", "half_round_64")) == (expected == NARROW64)
    assert _C.choose_sm90_config(m, n, k, 1, 132, "", narrow=False) not in (NARROW, NARROW64)
    assert _C.choose_sm90_config(m, n, k, 2, 132, "", narrow=True) not in (NARROW64,)  # batched: not these rules
    if expected == COOP:
        assert _C.choose_sm90_split(m, n, k, 132, "coop", 4, 64)[0] > 1  # the cooperative tiles then split K
    assert _C.choose_sm90_config(m, n, k, 1, 132, "pingpong64", narrow=True) == NARROW64


@pytest.mark.parametrize("m,n,problems,expected", [
    (1, 4096, 2, NARROW),                                # Mixtral down, one token: 32 wide tiles, no split
    (1, 1536, 8, NARROW),                                # Qwen3 up, one token: 8 groups hit, 48 wide tiles
    (1, 14336, 2, "Sm90_64x256x64_Pingpong_S5"),         # Mixtral up, one token: 112 wide tiles fill over half
    (8, 2048, 64, "Sm90_64x256x64_Pingpong_S5"),         # 512 wide tiles fill the GPU
])
def test_sm90_narrow_config_several_problems(m, n, problems, expected):
    """Several problems (grouped along M, batched) never split K, so the 32-row exception (keep
    64x256 where it would split) does not apply: 64x128 whenever 64x256 fills under half the SMs."""
    assert _C.choose_sm90_config(m, n, 4096, problems, 132, "", narrow=True) == expected


def test_sm90_narrow_split():
    """choose_sm90_split counts the narrow config's 128-wide tiles."""
    assert _C.choose_sm90_split(16, 4096, 4096, 132, "pingpong128")[0] == 4    # 32 tiles
    assert _C.choose_sm90_split(16, 4096, 4096, 132, "pingpong")[0] == 8       # 16 tiles
    assert _C.choose_sm90_split(1, 8192, 8192, 132, "pingpong128") == (1, 0)  # 64 tiles


def test_sm90_split_8bit_slices():
    """scaled_mm's split-K: the 16-bit rule with 128-element K slices (ranges of at least 4 slices,
    each a multiple of 128)."""
    assert _C.choose_sm90_split(64, 8192, 8192, 132, "pingpong", 4, block_k=128) == (4, 2048)   # 32 tiles
    assert _C.choose_sm90_split(64, 8192, 1024, 132, "pingpong", 4, block_k=128) == (2, 512)    # K: 8 slices
    assert _C.choose_sm90_split(33, 520, 2000, 132, "pingpong", 4, block_k=128) == (3, 768)     # 3 tiles
    assert _C.choose_sm90_split(64, 8192, 256, 132, "pingpong", 4, block_k=128) == (1, 0)       # K too short
    assert _C.choose_sm90_split(256, 8192, 8192, 132, "coop", 4, block_k=128) == (1, 0)         # 64 tiles
    with pytest.raises(ValueError, match="block_k"):
        _C.choose_sm90_split(64, 8192, 8192, 132, "pingpong", 4, block_k=32)


def test_sm90_config_names_per_element_size():
    assert _C.choose_sm90_config(4096, 4096, 4096, 1, 132, "", elem_bytes=1) == "Sm90_128x256x128_Coop_S4"
    assert _C.choose_sm90_config(64, 8192, 4096, 1, 132, "", elem_bytes=4) == "Sm90_64x256x32_Pingpong_S5"
    assert _C.choose_sm90_config(8192, 8192, 4096, 1, 132, "") == "Sm90_128x256x64_Coop_S4"


def test_sm90_f8_tile_rule():
    """8-bit cooperative launches take 128x256 tiles; 128x192 only when forced
    (CUTORCH_GEMM_SM90_CONFIG=coop192), and never for use_fast_accum (no chained 192-column kernel)."""
    wide, mid = "Sm90_128x256x128_Coop_S4", "Sm90_128x192x128_Coop_S5"
    f8 = dict(elem_bytes=1)
    assert _C.choose_sm90_config(8192, 8192, 8192, 1, 132, "", **f8) == wide
    assert _C.choose_sm90_config(4096, 4096, 4096, 1, 132, "", **f8) == wide
    assert _C.choose_sm90_config(2048, 2048, 2048, 1, 132, "coop192", **f8) == mid
    assert _C.choose_sm90_config(8192, 8192, 8192, 1, 132, "coop192", fast_accum=True, **f8) == wide
    assert _C.choose_sm90_config(8192, 8192, 8192, 1, 132, "coop", **f8) == wide
    assert _C.choose_sm90_config(64, 8192, 8192, 1, 132, "coop192", **f8) == mid  # forced: the cooperative family
    # small M: 64x64 tiles where 64x256 ones would fill under half the SMs (promoted only)
    narrow, pp = "Sm90_64x64x128_Pingpong_S12", "Sm90_64x256x128_Pingpong_S5"
    assert _C.choose_sm90_config(64, 8192, 8192, 1, 132, "", **f8) == narrow     # 32 wide tiles
    assert _C.choose_sm90_config(128, 8192, 8192, 1, 132, "", **f8) == narrow    # 64
    assert _C.choose_sm90_config(256, 8192, 8192, 1, 132, "", **f8) == pp        # 128: they fill the GPU
    assert _C.choose_sm90_config(64, 8192, 8192, 1, 132, "", fast_accum=True, **f8) == pp
    assert _C.choose_sm90_config(64, 8192, 8192, 1, 132, "pingpong", **f8) == pp
    assert _C.choose_sm90_config(4096, 4096, 4096, 1, 132, "pingpong64", **f8) == narrow
    assert _C.choose_sm90_config(4096, 4096, 4096, 1, 132, "pingpong64") == "Sm90_64x256x64_Pingpong_S5"  # 16-bit
    assert _C.choose_sm90_config(8192, 8192, 8192, 1, 132, "coop192") == "Sm90_128x256x64_Coop_S4"  # 16-bit


def test_sm90_cluster_rule():
    """2x1 clusters (B multicast) for cooperative launches with a fixed tile grid and two tile
    rows or more whose operand rows are not 128-byte multiples (L2-bound); ping-pong only when
    forced; never fused SwiGLU or grouped-M/N; CUTORCH_GEMM_SM90_CLUSTER=1 / 2 force it off / on."""
    assert _C.choose_sm90_cluster(True, True, False, 2, False) == 2
    assert _C.choose_sm90_cluster(True, True, False, 3, False) == 2    # odd: the last pair has a tile past M
    assert _C.choose_sm90_cluster(True, True, False, 64, True) == 1    # aligned rows: coupling costs 2-5%
    assert _C.choose_sm90_cluster(True, True, False, 1, False) == 1    # one tile row: nothing to share
    assert _C.choose_sm90_cluster(False, True, False, 64, False) == 1  # ping-pong: only when forced
    assert _C.choose_sm90_cluster(False, True, False, 64, True, "2") == 2
    assert _C.choose_sm90_cluster(True, False, False, 64, False) == 1  # grouped-M / grouped-N
    assert _C.choose_sm90_cluster(True, True, True, 64, False) == 1    # fused SwiGLU
    assert _C.choose_sm90_cluster(True, True, False, 64, False, "1") == 1
    assert _C.choose_sm90_cluster(True, True, False, 64, True, "2") == 2
    assert _C.choose_sm90_cluster(True, False, False, 64, True, "2") == 1  # still needs an eligible launch
    # one dense 16-bit problem, 512 <= K <= 2048 and 8 rounds of tiles or more: pairs even with aligned rows
    assert _C.choose_sm90_cluster(True, True, False, 64, True, "", True, 1024, 64 * 32, 132) == 2
    # K > 2048 and 3.5 rounds or more: pairs too (run alone at the power cap, they keep a higher clock; K > 4096 with
    # stream-K in pairs, sm90_streamk_pairs)
    assert _C.choose_sm90_cluster(True, True, False, 64, True, "", True, 4096, 64 * 32, 132) == 2
    assert _C.choose_sm90_cluster(True, True, False, 32, True, "", True, 4096, 32 * 16, 132) == 2  # 4096^3: 3.9
    assert _C.choose_sm90_cluster(True, True, False, 32, True, "", True, 4096, 32 * 14, 132) == 1  # 3.4 rounds
    assert _C.choose_sm90_cluster(True, True, False, 32, True, "", True, 2112, 32 * 16, 132) == 2
    assert _C.choose_sm90_cluster(True, True, False, 64, True, "", True, 4160, 64 * 32, 132) == 2  # deeper K
    assert _C.choose_sm90_cluster(True, True, False, 64, True, "", True, 8192, 64 * 32, 132) == 2  # 8192^3: 15.5
    assert _C.choose_sm90_cluster(True, True, False, 64, True, "", True, 14336, 64 * 16, 132) == 2  # 7.8 rounds
    assert _C.choose_sm90_cluster(True, True, False, 17, True, "", True, 8192, 17 * 32, 132) == 1  # 18% idle
    assert _C.choose_sm90_cluster(True, True, False, 12, True, "", True, 8192, 12 * 32, 132) == 1  # 2.9 rounds
    assert _C.choose_sm90_cluster(True, True, False, 64, True, "", False, 4096, 64 * 32, 132) == 1  # not dense
    assert _C.choose_sm90_cluster(True, True, False, 64, True, "1", True, 4096, 64 * 32, 132) == 1  # forced off
    # 2176x8192x4096: 544 tiles leave 18% of 5 rounds idle (stream-K's); 1/16 idle is the edge (4 rounds: 495)
    assert _C.choose_sm90_cluster(True, True, False, 17, True, "", True, 4096, 17 * 32, 132) == 1
    assert _C.choose_sm90_cluster(True, True, False, 33, True, "", True, 4096, 495, 132) == 2
    assert _C.choose_sm90_cluster(True, True, False, 33, True, "", True, 4096, 494, 132) == 1
    # not where pairing adds a round (seventy-third session): an odd tile-row count leaves the last pair half idle,
    # 2608x14336x4096: 21 x 56 tiles in 9 rounds, 11 x 56 pair tiles over 66 clusters in 10
    assert _C.choose_sm90_cluster(True, True, False, 21, True, "", True, 4096, 21 * 56, 132) == 1
    assert _C.choose_sm90_cluster(True, True, False, 15, True, "", True, 4096, 15 * 60, 132, 240) == 1  # 1808x14336
    assert _C.choose_sm90_cluster(True, True, False, 33, True, "", True, 4096, 33 * 16, 132) == 1  # 4224x4096: 4 / 5
    assert _C.choose_sm90_cluster(True, True, False, 63, True, "", True, 14336, 63 * 16, 132) == 2  # 8 rounds either way
    assert _C.choose_sm90_cluster(True, True, False, 65, True, "", True, 2048, 65 * 32, 132) == 2  # short K: 16 / 16
    assert _C.choose_sm90_cluster(True, True, False, 63, True, "", True, 1024, 63 * 32, 132) == 2  # 16 / 16
    assert _C.choose_sm90_cluster(True, True, False, 61, True, "", True, 1024, 61 * 24, 132) == 2  # 12 / 12
    assert _C.choose_sm90_cluster(True, True, False, 33, True, "", True, 1024, 33 * 32, 132) == 1  # 8 / 9
    # the mid-K rule is the 128 x 256 / 128 x 240 tiles' only (the fit widths were measured without pairs)
    assert _C.choose_sm90_cluster(True, True, False, 32, True, "", True, 4096, 512, 132, 240) == 2
    assert _C.choose_sm90_cluster(True, True, False, 32, True, "", True, 4096, 512, 132, 224) == 1
    assert _C.choose_sm90_cluster(True, True, False, 64, True, "", True, 1024, 64 * 32, 132, 224) == 2  # (short K)
    assert _C.choose_sm90_cluster(True, True, False, 8, True, "", True, 256, 8 * 149, 132) == 1  # (stream-K's)
    assert _C.choose_sm90_cluster(True, True, False, 32, True, "", True, 1024, 32 * 16, 132) == 1  # 4 rounds
    assert _C.choose_sm90_cluster(True, True, False, 64, True, "", False, 1024, 64 * 32, 132) == 1  # not dense
    assert _C.choose_sm90_cluster(False, True, False, 128, True, "", True, 1024, 128 * 64, 132) == 1  # ping-pong
    # tf32 (block_k 32, fifty-ninth session): the mid-K clause with K in 32-element slices, not the short-K one
    def tf32(tiles_m, k, tiles):
        return _C.choose_sm90_cluster(True, True, False, tiles_m, True, "", True, k, tiles, 132, 256, 128, 32)
    assert tf32(32, 4096, 32 * 16) == 2     # 4096^3: 128 slices, 3.9 rounds
    assert tf32(32, 1056, 32 * 16) == 2     # 33 slices
    assert tf32(32, 1024, 32 * 16) == 1     # 32 slices: not past the mid-K line
    assert tf32(64, 1024, 64 * 32) == 1     # 16-bit's short-K clause (8+ rounds) would pair this
    assert tf32(64, 8192, 64 * 32) == 2     # 8192^3
    assert tf32(17, 4096, 17 * 32) == 1     # 18% idle
    assert tf32(32, 4096, 32 * 14) == 1     # 3.4 rounds
    # 8-bit (block_k 128): both clauses in its slices
    def f8(tiles_m, k, tiles):
        return _C.choose_sm90_cluster(True, True, False, tiles_m, True, "", True, k, tiles, 132, 256, 128, 128)
    assert f8(32, 4096, 32 * 16) == 1       # 4096^3: 32 slices, 3.9 rounds
    assert f8(64, 4096, 64 * 56) == 2       # 8192x14336x4096: 32 slices, 27 rounds (short K)
    assert f8(64, 8192, 64 * 32) == 2       # 8192^3: 64 slices (mid K)
    assert f8(128, 8192, 128 * 32) == 2     # 16384x8192x8192
    assert f8(64, 896, 64 * 56) == 1        # 7 slices
    assert f8(32, 4224, 32 * 16) == 2       # 33 slices, 3.9 rounds
    with pytest.raises(ValueError, match="block_k"):
        _C.choose_sm90_cluster(True, True, False, 32, True, "", True, 4096, 512, 132, 256, 128, 48)


def test_sm90_b_streams():
    """B loads take the L2 evict-first policy only where B is streamed: <= 2 tile rows, B not shared
    between problems (a shared 2-D B in a batched launch is read once per batch entry)."""
    assert _C.sm90_b_streams(1, "batched")
    assert _C.sm90_b_streams(2, "batched")
    assert not _C.sm90_b_streams(3, "batched")
    assert not _C.sm90_b_streams(0, "batched")
    assert not _C.sm90_b_streams(1, "batched", batch=4)                  # one B for every entry
    assert _C.sm90_b_streams(1, "batched", batch=4, b_3d=True)           # a B per entry
    assert _C.sm90_b_streams(1, "batched", batch=4, k_chunk=1024)        # split-K: K ranges of one B
    assert _C.sm90_b_streams(2, "grouped_k", batch=8)
    assert not _C.sm90_b_streams(1, "grouped_m", batch=8)                # groups may span many rows
    assert not _C.sm90_b_streams(1, "grouped_n", batch=8)


def test_explain_stream_note_follows_the_rule(monkeypatch):
    """explain's note on the L2 policy asks the binding's rule with the launch's tile rows (64- or 128-row
    configs), and drops it for clustered launches and with CUTORCH_GEMM_L2_HINT=off."""
    import importlib
    ex = importlib.import_module("cutorch_gemm.explain")
    monkeypatch.delenv("CUTORCH_GEMM_L2_HINT", raising=False)
    w_t = torch.empty(4096, 8192).t()
    note = "evict-first"
    assert note in ex._stream_note("Sm90_64x128x64_Pingpong_S8", 128, "none", 1, w_t, 0, "")  # two 64-row tiles
    assert note not in ex._stream_note("Sm90_64x128x64_Pingpong_S8", 129, "none", 1, w_t, 0, "")
    assert note in ex._stream_note("Sm90_128x256x64_Coop_S4", 256, "none", 1, w_t, 0, "")
    assert note not in ex._stream_note("Sm90_128x256x64_Coop_S4", 256, "none", 1, w_t, 0, "; 2x1 clusters")
    assert note in ex._stream_note("Sm90_64x256x64_Pingpong_S5", 64, "none", 8, torch.empty(8, 512, 256), 0, "")
    assert note not in ex._stream_note("Sm90_64x256x64_Pingpong_S5", 64, "none", 8,
                                       torch.empty(1, 512, 256).expand(8, 512, 256), 0, "")  # one B, 8 entries
    assert note not in ex._stream_note("Sm90_64x256x64_Pingpong_S5", 64, "m", 8, torch.empty(8, 512, 256), 0, "")
    monkeypatch.setenv("CUTORCH_GEMM_L2_HINT", "off")
    assert ex._stream_note("Sm90_64x128x64_Pingpong_S8", 32, "none", 1, w_t, 0, "") == ""


def test_sm90_rows_128b():
    """The rows TMA reads: K-major -> the M/N stride, MN-major -> the K stride, in bytes."""
    assert _C.sm90_rows_128b(1, 4096, 2)          # K-major, 8192-byte rows
    assert not _C.sm90_rows_128b(1, 1000, 2)      # 2000-byte rows span two 128-byte lines
    assert _C.sm90_rows_128b(64, 1, 2)            # MN-major, K stride 64 elements = 128 bytes
    assert not _C.sm90_rows_128b(72, 1, 2)
    assert _C.sm90_rows_128b(1, 128, 1)           # 8-bit


def test_sm90_split_k_rule():
    """Split-K only when the tiles fill at most a quarter of the GPU, with K ranges of at least 4
    K slices (multiples of 64), and fp32 partials under 64 MB."""
    splits, chunk = _C.choose_sm90_split(16, 4096, 4096, 132, "pingpong")  # 16 tiles
    assert splits == 8 and chunk == 512
    assert _C.choose_sm90_split(8192, 8192, 4096, 132, "coop") == (1, 0)  # tiles fill the GPU
    assert _C.choose_sm90_split(128, 8192, 8192, 132, "pingpong") == (1, 0)  # 64 tiles: 2 splits lost (H100)
    assert _C.choose_sm90_split(16, 4096, 256, 132, "pingpong") == (1, 0)  # K too short to cut
    s, c = _C.choose_sm90_split(1, 256, 4160, 132, "pingpong")  # one tile: at most 16 ranges
    assert 2 <= s <= 16 and c % 64 == 0 and (s - 1) * c < 4160 <= s * c
    s, c = _C.choose_sm90_split(2048, 2048, 65536, 132, "coop")  # 128 tiles: no split
    assert s == 1
    s, c = _C.choose_sm90_split(1024, 2048, 65536, 132, "pingpong")  # partials capped at 64 MB
    assert s * 1024 * 2048 * 4 <= 64 << 20 or s == 1


def test_sm90_streamk_rule():
    """Stream-K: the last round's tiles ("last") or those plus one round ("wide"), where measured."""
    assert _C.choose_sm90_streamk(3584, 132, 64) == 20 + 132        # 8192x14336x4096: wide (4% of the tiles)
    assert _C.choose_sm90_streamk(1024, 132, 224) == 100            # 8192x4096x14336: last (10%, deep tiles)
    assert _C.choose_sm90_streamk(2048, 132, 128) == 68             # 8192^3: last
    assert _C.choose_sm90_streamk(4096, 132, 128) == 4 + 132        # 16384x8192x8192: 4 tiles left: wide
    assert _C.choose_sm90_streamk(1024, 132, 64) == 0               # 8192x4096x4096: shallow tiles, 23% wide
    assert _C.choose_sm90_streamk(688, 132, 64) == 28 + 132         # 2048x11008x4096: a sparse last round (21%)
    assert _C.choose_sm90_streamk(540, 132, 128) == 12 + 132        # ... (9%), deep tiles
    assert _C.choose_sm90_streamk(688, 132, 32) == 0                # ... but shallow tiles
    assert _C.choose_sm90_streamk(320, 132, 64) == 0                # 2048x5120x4096: 42% full
    assert _C.choose_sm90_streamk(512, 132, 64) == 0                # 4096^3: too much of the launch
    assert _C.choose_sm90_streamk(1056, 132, 64) == 0               # whole rounds
    # one partial round: a grid wider than the tiles is the "full" form (sm90_streamk_full chose it)
    assert _C.choose_sm90_streamk(128, 132, 64) == 128
    assert _C.choose_sm90_streamk(128, 132, 64, "off") == 0
    assert _C.choose_sm90_streamk(72, 132, 1) == 0                  # a k-block for each CTA at least
    plan = lambda m, n, k, forced="", cap=0, block_k=64: tuple(_C.sm90_streamk_plan(m, n, k, block_k, 132, cap, forced))
    assert plan(768, 3072, 8192) == (72, 132, 72)                   # 55% full, 128 K slices: "full"
    assert plan(896, 3584, 6144) == (98, 132, 98)                   # 74%, 96 K slices
    assert plan(768, 3072, 4096) == (72, 132, 72)                   # 64 K slices where at most 60% full
    assert plan(1024, 2560, 4096) == (80, 80, 0)                    # ... 61%: no
    assert plan(768, 3072, 3072) == (72, 72, 0)                     # 48 K slices: shallow
    assert plan(1024, 3584, 8192) == (112, 112, 0)                  # 85% full
    assert plan(640, 3072, 8192) == (60, 60, 0)                     # 45% full
    assert plan(768, 3072, 8192, block_k=32) == (72, 72, 0)         # tf32: not measured
    assert plan(768, 3072, 2048, "full") == (72, 132, 72)           # forced on any partial round
    assert plan(768, 3072, 2048, "full", cap=100) == (72, 100, 72)  # a capped grid
    assert plan(768, 3072, 8192, "off") == (72, 72, 0)
    assert plan(768, 3072, 8192, "last") == (72, 72, 0)             # another form forced
    # the cooperative config keeps such a launch (the wave rule's 64x128 tiles would take it otherwise)
    assert _C.sm90_coop_streamk(768, 3072, 8192, 132, True)
    assert not _C.sm90_coop_streamk(768, 3072, 8192, 132, False)    # 2x1 clusters: no stream-K
    assert not _C.sm90_coop_streamk(768, 3072, 2048, 132, True)
    coop = "Sm90_128x256x64_Coop_S4"
    assert _C.choose_sm90_config(768, 3072, 8192, 1, 132, "", narrow=True, coop_streamk=True) == coop
    assert _C.choose_sm90_config(768, 3072, 8192, 1, 132, "", narrow=True) == "Sm90_64x128x64_Pingpong_S8"
    assert _C.choose_sm90_streamk(3584, 132, 3) == 0                # tiles too shallow
    assert _C.choose_sm90_streamk(3584, 132, 3, "on") == 152        # ... unless forced
    assert _C.choose_sm90_streamk(3584, 132, 3, "wide") == 152
    assert _C.choose_sm90_streamk(3584, 132, 64, "off") == 0
    assert _C.choose_sm90_streamk(7, 5, 1, "on") == 7               # every tile, ranges of 1.4 tiles
    assert _C.choose_sm90_streamk(3584, 132, 0, "on") == 0          # K = 0
    assert _C.choose_sm90_streamk(300, 132, 1 << 22) == 0           # past the kernel's 32-bit math
    assert _C.choose_sm90_streamk(3584, 132, 64, "last") == 20      # the last round's tiles only
    assert _C.choose_sm90_streamk(7, 5, 1, "last") == 0             # 2 k-blocks for 5 CTAs


def test_sm90_half_tiles_rule():
    # grouped-M cooperative tiles skip a warpgroup's rows past a group's end where one group's B fits L2
    assert _C.choose_sm90_half_tiles(768, 2048, 2)          # Qwen3-30B-A3B down: 3 MiB
    assert _C.choose_sm90_half_tiles(2048, 2048, 2)         # OLMoE up: 8 MiB
    assert _C.choose_sm90_half_tiles(4096, 2048, 2)         # 16 MiB: the bound
    assert not _C.choose_sm90_half_tiles(4097, 2048, 2)
    assert not _C.choose_sm90_half_tiles(7168, 4096, 2)     # DeepSeek-V3 up: 56 MiB
    assert not _C.choose_sm90_half_tiles(4096, 28672, 2)    # Mixtral up
    assert _C.choose_sm90_half_tiles(2048, 2048, 4)         # tf32: 16 MiB
    assert not _C.choose_sm90_half_tiles(2048, 4096, 4)
    assert _C.choose_sm90_half_tiles(7168, 4096, 2, "on")
    assert not _C.choose_sm90_half_tiles(768, 2048, 2, "off")


def test_sm90_streamk_plan():
    """The plan the binding sizes its workspace with and explain reports: tiles, the persistent
    grid (capped), and the rule's count for that grid."""
    assert _C.sm90_streamk_plan(8192, 14336, 4096, 64, 132) == (3584, 132, 152)
    assert _C.sm90_streamk_plan(1024, 38144, 256, 64, 132) == (1192, 132, 136)
    assert _C.sm90_streamk_plan(4096, 4096, 4096, 64, 132) == (512, 132, 0)
    assert _C.sm90_streamk_plan(640, 512, 320, 64, 132, grid_cap=7, forced="on") == (10, 7, 10)
    assert _C.sm90_streamk_plan(100, 100, 100, 64, 132) == (1, 1, 0)
    assert _C.sm90_streamk_plan(700, 600, 200, 32, 132, grid_cap=5, forced="on") == (18, 5, 8)


def test_sm90_streamk_pieces_cover_every_k_block_once():
    """A model of the kernel's get_item: every (tile, k-block) of the stream-K tiles is computed by
    exactly one CTA, each tile has at most two pieces, the first piece is a partial and the
    owner's sk_first names the CTA holding the tile's first k-block, which is not higher than the
    owner and processes that partial before any piece it owns."""
    for tiles, ctas, kb, mode in [(3584, 132, 64, "on"), (1024, 132, 224, "on"), (7, 5, 3, "on"), (13, 4, 1, "on"),
                                  (9, 8, 5, "on"), (3584, 132, 64, "last"), (1024, 132, 224, "last"), (7, 5, 3, "last")]:
        sk = _C.choose_sm90_streamk(tiles, ctas, kb, mode)
        assert sk > 0
        dp = tiles - sk
        iters = sk * kb
        seen = {}
        for cta in range(ctas):
            s, e = cta * iters // ctas, (cta + 1) * iters // ctas
            order = list(range((e - 1) // kb, s // kb - 1, -1))
            for pos, t in enumerate(order):
                k0, k1 = max(s, t * kb) - t * kb, min(e, (t + 1) * kb) - t * kb
                role = 1 if k1 < kb else (2 if k0 > 0 else 0)
                first = ((t * kb + 1) * ctas - 1) // iters
                for k in range(k0, k1):
                    assert (t, k) not in seen
                    seen[(t, k)] = cta
                if role == 1:
                    assert pos == 0, "a CTA's partial comes first"
                if role == 2:
                    assert seen.get((t, 0)) == first < cta
                    # every CTA from `first` on computed a piece of t (the owner waits for each)
                    assert all(any(v == c for (tt, _), v in seen.items() if tt == t) for c in range(first, cta))
        assert len(seen) == iters and dp % ctas == 0


def test_explain_decode_note():
    """explain names the decode rule for grouped-M launches with fewer rows than groups."""
    import importlib
    ex = importlib.import_module("cutorch_gemm.explain")
    note = ex._decode_note("Sm90_64x128x64_Pingpong_S8", "m", 8, 128)
    assert "at most 8 of the 128 groups" in note and "64x128" in note
    assert "64x128" not in ex._decode_note("Sm90_64x256x64_Pingpong_S5", "m", 64, 128)
    assert ex._decode_note("Sm90_64x128x64_Pingpong_S8", "m", 128, 128) == ""   # a row per group or more
    assert ex._decode_note("Sm90_64x128x64_Pingpong_S8", "none", 8, 1) == ""
    assert "at most 1 of" in ex._decode_note("Sm90_64x128x64_Pingpong_S8", "m", 0, 8)
